package weft

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type ctxKey struct{}

// TestRequestCtx: the request context behaves as context.WithTimeout on the
// parent would, however it is observed (Err polled, Done waited on, a
// context derived from it), for each way it ends: the deadline, the parent
// cancelled (the client went away), the handler returning (release).
func TestRequestCtx(t *testing.T) {
	const timeout = time.Second
	type end struct {
		name    string
		do      func(cancelParent context.CancelFunc, rc *requestCtx) // ends the context
		want    error
		expired bool // onExpire ran
	}
	ends := []end{
		{"deadline", func(context.CancelFunc, *requestCtx) { time.Sleep(timeout + time.Millisecond) }, context.DeadlineExceeded, true},
		{"parent cancelled", func(cancel context.CancelFunc, _ *requestCtx) { cancel() }, context.Canceled, false},
		{"released", func(_ context.CancelFunc, rc *requestCtx) { rc.release() }, context.Canceled, false},
	}
	observers := []struct {
		name string
		// before runs while the context is live; after checks it once ended.
		before func(t *testing.T, rc *requestCtx) func(t *testing.T, want error)
	}{
		{"Err only", func(t *testing.T, rc *requestCtx) func(*testing.T, error) {
			return func(t *testing.T, want error) {}
		}},
		{"Done waited on", func(t *testing.T, rc *requestCtx) func(*testing.T, error) {
			done := rc.Done()
			return func(t *testing.T, want error) {
				select {
				case <-done:
				default:
					t.Error("the Done channel taken before the end is not closed")
				}
			}
		}},
		{"derived WithCancel", func(t *testing.T, rc *requestCtx) func(*testing.T, error) {
			child, cancel := context.WithCancel(rc)
			t.Cleanup(cancel)
			return func(t *testing.T, want error) {
				synctest.Wait()
				if err := child.Err(); !errors.Is(err, want) {
					t.Errorf("derived context: Err = %v, want %v", err, want)
				}
				if d, ok := child.Deadline(); !ok || !d.Equal(rc.deadline) {
					t.Errorf("derived context: Deadline = %v %v", d, ok)
				}
			}
		}},
		{"derived WithTimeout (longer)", func(t *testing.T, rc *requestCtx) func(*testing.T, error) {
			child, cancel := context.WithTimeout(rc, time.Hour)
			t.Cleanup(cancel)
			return func(t *testing.T, want error) {
				synctest.Wait()
				if err := child.Err(); !errors.Is(err, want) {
					t.Errorf("derived context: Err = %v, want %v", err, want)
				}
			}
		}},
		{"context.AfterFunc", func(t *testing.T, rc *requestCtx) func(*testing.T, error) {
			var ran atomic.Bool
			context.AfterFunc(rc, func() { ran.Store(true) })
			return func(t *testing.T, want error) {
				synctest.Wait()
				if !ran.Load() {
					t.Error("context.AfterFunc did not run")
				}
			}
		}},
	}
	for _, e := range ends {
		for _, o := range observers {
			t.Run(e.name+"/"+o.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
					defer cancelParent()
					var expired atomic.Int32
					start := time.Now()
					rc := newRequestCtx(parent, timeout, func(*Request) { expired.Add(1) }, nil)
					if d, ok := rc.Deadline(); !ok || !d.Equal(start.Add(timeout)) {
						t.Errorf("Deadline = %v %v, want %v", d, ok, start.Add(timeout))
					}
					if rc.Value(ctxKey{}) != "v" {
						t.Error("the parent's value is not seen")
					}
					if err := rc.Err(); err != nil {
						t.Fatalf("Err before the end = %v", err)
					}
					after := o.before(t, rc)
					e.do(cancelParent, rc)
					synctest.Wait()
					if err := rc.Err(); err != e.want {
						t.Errorf("Err = %v, want %v", err, e.want)
					}
					select {
					case <-rc.Done():
					default:
						t.Error("Done is not closed")
					}
					if err := context.Cause(rc); err != e.want {
						t.Errorf("context.Cause = %v, want %v", err, e.want)
					}
					after(t, e.want)
					rc.release()
					cancelParent()
					time.Sleep(2 * timeout)
					if err := rc.Err(); err != e.want {
						t.Errorf("Err later = %v, want %v (it must not change)", err, e.want)
					}
					if n, want := expired.Load(), map[bool]int32{true: 1}[e.expired]; n != want {
						t.Errorf("onExpire ran %d times, want %d", n, want)
					}
				})
			})
		}
	}
}

// TestRequestCtxNoGoroutine: deriving contexts from the request context
// starts no goroutine (they register with it, as with the standard
// library's own contexts), and a handler that never asks for Done costs no
// registration with the parent.
func TestRequestCtxNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		rc := newRequestCtx(parent, time.Second, nil, nil)
		var cancels []context.CancelFunc
		for range 10 {
			_, c := context.WithCancel(rc)
			cancels = append(cancels, c)
			_, c = context.WithTimeout(rc, time.Hour)
			cancels = append(cancels, c)
		}
		if n := contextWatchers(); n != 0 {
			t.Errorf("deriving contexts started %d goroutines to watch the request context, want 0", n)
		}
		for _, c := range cancels {
			c()
		}
		rc.release()
	})
}

// contextWatchers counts the goroutines the context package started, on
// behalf of the calling goroutine, to watch a parent it cannot register
// with. Counting those, not every goroutine in the process, keeps the check
// independent of the tests running beside it.
func contextWatchers() int {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	self := make([]byte, 64)
	self = self[:runtime.Stack(self, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(self), "goroutine "), " ")
	return strings.Count(string(buf), "created by context.(*cancelCtx).propagateCancel in goroutine "+id+"\n")
}

// TestRequestCtxParentDeadline: a parent with an earlier deadline bounds the
// request context, which reports it and ends with it.
func TestRequestCtxParentDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		pd, _ := parent.Deadline()
		rc := newRequestCtx(parent, time.Second, nil, nil)
		defer rc.release()
		if d, _ := rc.Deadline(); !d.Equal(pd) {
			t.Errorf("Deadline = %v, want the parent's %v", d, pd)
		}
		time.Sleep(200 * time.Millisecond)
		if err := rc.Err(); err != context.DeadlineExceeded {
			t.Errorf("Err = %v, want %v", err, context.DeadlineExceeded)
		}
	})
}
