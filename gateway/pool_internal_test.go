package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// idleWire is a wire that carries nothing: the pool's processes in these
// tests, whose closing is what they observe.
type idleWire struct {
	once sync.Once
	ch   chan struct{}
}

func (w *idleWire) call(context.Context, string, exactjson.Value, *sink) (exactjson.Value, error) {
	return exactjson.Value{}, errUpstreamClosed
}
func (w *idleWire) notify(context.Context, string, exactjson.Value) error { return nil }
func (w *idleWire) setSession(string, string)                             {}
func (w *idleWire) done() <-chan struct{}                                 { return w.ch }
func (w *idleWire) err() error                                            { return nil }
func (w *idleWire) close() error {
	w.once.Do(func() { close(w.ch) })
	return nil
}

func liveProc(owner string, calls int) *proc {
	return &proc{c: &conn{w: &idleWire{ch: make(chan struct{})}}, owner: owner, calls: calls, busy: calls > 0}
}

func granted(w *waiter) *grant {
	select {
	case g := <-w.ch:
		return &g
	default:
		return nil
	}
}

// A process that frees up goes to a parked call of that process resuming
// first, then to a new call of the process's owner; a process no one owns
// goes to the waiting caller owning the fewest processes (first come among
// equals), never to a caller at its share, and never to another caller
// while the owner's calls are on it.
func TestPoolDispatchOrder(t *testing.T) {
	p1, p2 := liveProc("a", 2), liveProc("c", 1)
	pp := &procPool{max: 2, perCaller: 2, owned: map[string]int{"a": 1, "c": 1}, procs: []*proc{p1, p2}}
	wa := pp.enqueue("a", nil)
	wc := pp.enqueue("c", nil)
	wb := pp.enqueue("b", nil)    // owns none, but no process is free to own
	resume := pp.enqueue("a", p1) // a's parked call of p1 resuming

	p2.busy = false // c's call parks: p2 goes to c's next call, not to b
	pp.dispatch()
	if g := granted(wc); g == nil || g.p != p2 || p2.calls != 2 {
		t.Fatalf("p2 went to %v (calls %d), want c's new call", g, p2.calls)
	}
	if granted(wb) != nil {
		t.Fatal("b got a process c's calls are on")
	}
	p1.busy = false // p1 frees up: the call resuming there first
	pp.dispatch()
	if g := granted(resume); g == nil || g.p != p1 {
		t.Fatalf("p1 went elsewhere, want a's resuming call")
	}
	if granted(wa) != nil || granted(wb) != nil {
		t.Fatal("a waiter got a busy process")
	}

	// c's calls end, answered: p2 is no one's, and goes to b (owning
	// none) before a (owning p1).
	p2.busy, p2.calls = false, 0
	p2.owner = ""
	pp.disown("c")
	pp.dispatch()
	if g := granted(wb); g == nil || g.p != p2 || p2.owner != "b" || pp.owned["b"] != 1 {
		t.Fatalf("p2 went to %v (owner %q), want b", g, p2.owner)
	}
	if granted(wa) != nil || len(pp.waiters) != 1 {
		t.Fatalf("a's new call: granted, or %d waiters left, want it waiting", len(pp.waiters))
	}
}

// A caller owns at most perCaller processes, its parked calls' included:
// its new call runs on a free process it owns, else waits, even while
// another process is free.
func TestPoolShareCountsParkedCalls(t *testing.T) {
	p1, p2 := liveProc("a", 3), liveProc("", 0)
	p1.busy = true
	pp := &procPool{max: 2, perCaller: 1, owned: map[string]int{"a": 1}, procs: []*proc{p1, p2}}
	w := pp.enqueue("a", nil)
	pp.dispatch()
	if granted(w) != nil {
		t.Fatal("a's call got a second process beyond its share of 1")
	}
	p1.busy = false // the call attending p1 parks: a's next call runs there
	pp.dispatch()
	if g := granted(w); g == nil || g.p != p1 || p1.calls != 4 {
		t.Fatalf("a's call: %v, want a turn on p1, the process a owns", g)
	}
}

// A call that ends without the server's final answer taints its process:
// no new call runs there while its owner may take another process, the
// calls already on it finish there, and it is closed when they have.
func TestPoolTaintedProcessTakesNoCall(t *testing.T) {
	p1 := liveProc("a", 0)
	p1.owner = ""
	pp := &procPool{max: 2, perCaller: 2, owned: map[string]int{}, procs: []*proc{p1}}
	first := pp.enqueue("a", nil)
	pp.dispatch()
	g := granted(first)
	if g == nil || g.p != p1 {
		t.Fatalf("a's first call: %v, want p1", g)
	}
	abandoned := pp.turnOf(p1, "a")
	abandoned.park()
	second := pp.enqueue("a", nil)
	pp.dispatch()
	if g := granted(second); g == nil || g.p != p1 {
		t.Fatalf("a's second call: %v, want p1, where a's first waits", g)
	}
	kept := pp.turnOf(p1, "a")
	kept.park()

	abandoned.done(false) // refused, cancelled, never retried
	if !p1.tainted || p1.calls != 1 {
		t.Fatalf("p1 tainted %v with %d calls, want tainted, a's other call still on it", p1.tainted, p1.calls)
	}
	third := pp.enqueue("a", nil)
	pp.dispatch()
	if g := granted(third); g == nil || !g.dial {
		t.Fatalf("a's third call: %v, want a new process, not the tainted one", g)
	}
	pp.dialing-- // as dial would, on failure
	pp.disown("a")

	// At its share, a's new call runs on the tainted process it owns
	// rather than wait for the calls there to end.
	pp.perCaller = 1
	fourth := pp.enqueue("a", nil)
	pp.dispatch()
	if g := granted(fourth); g == nil || g.p != p1 || p1.calls != 2 {
		t.Fatalf("a's call at its share: %v, want the tainted process it owns", g)
	}
	pp.turnOf(p1, "a").done(true)
	if err := kept.resume(context.Background()); err != nil || !p1.busy {
		t.Fatalf("a's call on the tainted process resumes: %v, busy %v", err, p1.busy)
	}
	kept.done(true)
	select {
	case <-p1.c.done():
	case <-time.After(10 * time.Second):
		t.Fatal("the tainted process was not closed when its last call ended")
	}
	if len(pp.procs) != 0 || pp.owned["a"] != 0 {
		t.Fatalf("%d processes, a owns %d, want none", len(pp.procs), pp.owned["a"])
	}
}
