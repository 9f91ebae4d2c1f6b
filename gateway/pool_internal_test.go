package gateway

import "testing"

// A process that frees up goes to a parked call of that process resuming
// first, then to the waiting caller running the fewest calls (first come
// among equals), never to a caller at its share.
func TestPoolDispatchOrder(t *testing.T) {
	live := func() *proc { return &proc{c: &conn{ctDone: make(chan struct{})}} }
	p1, p2 := live(), live()
	pp := &procPool{max: 2, perCaller: 2, held: map[string]int{}, procs: []*proc{p1, p2}}
	p1.busy, p2.busy = true, true
	p1.calls, p2.calls = 2, 1
	pp.held["a"] = 2 // a runs on both processes
	wa := pp.enqueue("a", nil)
	wc := pp.enqueue("c", nil) // first come, but running a call already
	wb := pp.enqueue("b", nil)
	resume := pp.enqueue("a", p1) // a's parked call of p1 resuming
	pp.held["c"] = 1              // c runs one call elsewhere (say)

	p2.busy = false // p2 frees up: b (no calls) before c (one) and a (at its share)
	pp.dispatch()
	if g := granted(wb); g == nil || g.p != p2 {
		t.Fatalf("p2 went to %v, want b", g)
	}
	p1.busy = false // p1 frees up: the call resuming there first
	pp.dispatch()
	if g := granted(resume); g == nil || g.p != p1 {
		t.Fatalf("p1 went elsewhere, want a's resuming call")
	}
	if granted(wa) != nil || granted(wc) != nil {
		t.Fatal("a waiter got a busy process")
	}
	if len(pp.waiters) != 2 {
		t.Fatalf("%d waiters left, want a's and c's new calls", len(pp.waiters))
	}
}

func granted(w *waiter) *grant {
	select {
	case g := <-w.ch:
		return &g
	default:
		return nil
	}
}
