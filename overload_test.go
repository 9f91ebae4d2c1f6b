package weft

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestGateOrder: with one slot, a freed slot goes to the queued caller
// running the fewest handlers and, among equals, the one served longest
// ago; a caller's own requests stay in order.
func TestGateOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(1, 1, 16, 16, time.Hour)
		ctx := context.Background()
		key := func(name string) fairKey { return fairKey{'p', name} }
		first, err := g.acquire(ctx, key("a"))
		if err != nil {
			t.Fatal(err)
		}
		type grant struct {
			name string
			t    *tenant
		}
		got := make(chan grant, 16)
		queue := func(name string) {
			go func() {
				tn, err := g.acquire(ctx, key(name))
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				got <- grant{name, tn}
			}()
			synctest.Wait() // queued before the next one
		}
		for range 3 {
			queue("a")
		}
		queue("b")
		queue("c")
		var order []string
		release := first
		for range 5 {
			g.release(release)
			synctest.Wait()
			gr := <-got
			order = append(order, gr.name)
			release = gr.t
		}
		g.release(release)
		if want := []string{"b", "c", "a", "a", "a"}; !slices.Equal(order, want) {
			t.Errorf("slots went to %v, want %v", order, want)
		}
		checkGateIdle(t, g)
	})
}

// TestGateHandOver is the gate's side of issue 41: with every slot A's
// and A's backlog queued, a slot freed after B's request has queued is B's,
// whatever A has queued; a slot freed before B's request reaches the gate
// goes to A's oldest queued request (nobody else waits), and B then waits
// for the next one. TestFairQueueTurn once freed the slot on a signal that
// comes before the gate, and under load hit the second order.
func TestGateHandOver(t *testing.T) {
	for _, bFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("B queued first %v", bFirst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGate(2, 2, 8, 8, time.Hour)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				a, b := fairKey{'p', "a"}, fairKey{'p', "b"}
				var running []*tenant
				for range 2 {
					tn, err := g.acquire(ctx, a)
					if err != nil {
						t.Fatal(err)
					}
					running = append(running, tn)
				}
				granted := make(chan fairKey, 8)
				queue := func(k fairKey) {
					go func() {
						if tn, err := g.acquire(ctx, k); err == nil {
							granted <- tn.key
						}
					}()
					synctest.Wait()
				}
				for range 4 {
					queue(a)
				}
				if bFirst {
					queue(b)
				}
				g.release(running[0])
				synctest.Wait()
				if !bFirst {
					queue(b)
				}
				want := b
				if !bFirst {
					want = a
				}
				select {
				case got := <-granted:
					if got != want {
						t.Errorf("the freed slot went to %v, want %v", got, want)
					}
				default:
					t.Fatal("the freed slot went to nobody")
				}
				if !bFirst {
					// B is queued now: the next freed slot is B's.
					g.release(running[1])
					synctest.Wait()
					if got := <-granted; got != b {
						t.Errorf("the next freed slot went to %v, want %v", got, b)
					}
				}
			})
		})
	}
}

// checkGateIdle fails unless g holds and queues nothing.
func checkGateIdle(t *testing.T, g *gate) {
	t.Helper()
	if a, q := g.counts(); a != 0 || q != 0 || len(g.ring) != 0 {
		t.Errorf("idle gate: active %d, queued %d, ring %d", a, q, len(g.ring))
	}
	for k, tn := range g.tenants {
		if tn.running != 0 || len(tn.queue) != 0 || tn.inRing {
			t.Errorf("idle gate: caller %v runs %d, queues %d", k, tn.running, len(tn.queue))
		}
	}
}

// TestGateForgets: the gate keeps at most maxIdleTenants idle callers.
func TestGateForgets(t *testing.T) {
	g := newGate(4, 2, 8, 2, time.Second)
	for i := range 10 * maxIdleTenants {
		tn, err := g.acquire(context.Background(), fairKey{'a', fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		g.release(tn)
	}
	checkGateIdle(t, g)
	if len(g.tenants) > maxIdleTenants+1 || len(g.free) > maxIdleTenants {
		t.Errorf("after %d callers: %d known, %d free", 10*maxIdleTenants, len(g.tenants), len(g.free))
	}
}

// TestGateRefusals: a caller past its queue share is refused while the
// queue has room; a queued request gives up at the queue timeout or when
// its context ends; a full queue sheds the longest queue's newest request
// for a caller queueing less.
func TestGateRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(1, 1, 3, 2, time.Second)
		ctx := context.Background()
		a, b, c := fairKey{'p', "a"}, fairKey{'p', "b"}, fairKey{'p', "c"}
		held, err := g.acquire(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		res := make(chan error, 8)
		wait := func(k fairKey, ctx context.Context) {
			go func() {
				tn, err := g.acquire(ctx, k)
				if err == nil {
					g.release(tn)
				}
				res <- err
			}()
			synctest.Wait()
		}
		wait(a, ctx)
		wait(a, ctx)
		// a's share of the queue (2) is full, the queue (3) is not.
		if _, err := g.acquire(ctx, a); !errors.Is(err, errBusy) {
			t.Fatalf("past the caller's queue share: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		wait(b, cctx)
		// The queue is full: c (queueing nothing) takes a's newest place.
		wait(c, ctx)
		if err := <-res; !errors.Is(err, errBusy) {
			t.Fatalf("a's pushed-out request: %v", err)
		}
		cancel()
		if err := <-res; !errors.Is(err, context.Canceled) {
			t.Fatalf("b's cancelled request: %v", err)
		}
		// The rest time out: nobody releases the slot for a second.
		time.Sleep(time.Second)
		for range 2 {
			if err := <-res; !errors.Is(err, errBusy) {
				t.Fatalf("a timed-out request: %v", err)
			}
		}
		g.release(held)
		checkGateIdle(t, g)
	})
}

// BenchmarkGate is the uncontended cost of a handler slot: the fair gate's
// acquire and release for one caller, beside the buffered-channel
// semaphore the gate replaced (issue 25).
func BenchmarkGate(b *testing.B) {
	ctx := context.Background()
	id := Identity{}
	b.Run("fair", func(b *testing.B) {
		g := newGate(defaultMaxConcurrent, defaultMaxConcurrentPerIdentity, defaultMaxQueue, defaultMaxQueuePerIdentity, time.Second)
		b.ReportAllocs()
		for b.Loop() {
			tn, err := g.acquire(ctx, fairKeyOf(id, "127.0.0.1:40000"))
			if err != nil {
				b.Fatal(err)
			}
			g.release(tn)
		}
	})
	b.Run("channel", func(b *testing.B) {
		slots := make(chan struct{}, defaultMaxConcurrent)
		b.ReportAllocs()
		for b.Loop() {
			select {
			case slots <- struct{}{}:
			default:
				b.Fatal("full")
			}
			<-slots
		}
	})
}
