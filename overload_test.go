package weft

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestGateOrder: with one slot, a freed slot goes to the queued caller
// running the fewest handlers and, among equals, the one served longest
// ago; a caller's own requests stay in order; the gate forgets callers
// that hold and queue nothing.
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
		if a, q := g.counts(); a != 0 || q != 0 || len(g.tenants) != 0 || len(g.ring) != 0 {
			t.Errorf("after all releases: active %d, queued %d, %d tenants, ring %d", a, q, len(g.tenants), len(g.ring))
		}
	})
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
		if a, q := g.counts(); a != 0 || q != 0 || len(g.tenants) != 0 || len(g.ring) != 0 {
			t.Errorf("at the end: active %d, queued %d, %d tenants, ring %d", a, q, len(g.tenants), len(g.ring))
		}
	})
}
