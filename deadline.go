package weft

import (
	"context"
	"sync"
	"time"
)

// requestCtx is the context a request's handler runs under: its parent (the
// transport's context, cancelled when the client goes away) bounded by the
// request deadline (Options.RequestTimeout). It behaves as
// context.WithTimeout(parent, timeout) would, at a fraction of the cost for
// the common handler, which never asks for Done: one timer serves both the
// deadline and the early reply (onExpire), and nothing is registered with
// the parent until Done is first called.
//
//   - Err reports context.DeadlineExceeded once the deadline has passed and
//     the parent's error once the parent is done (whichever came first, then
//     always the same); Deadline reports the deadline.
//   - The first Done builds the real thing, context.WithDeadline(parent,
//     deadline), and from then on Done, Err and Value are that context's:
//     contexts derived from a requestCtx (context.WithCancel, WithTimeout,
//     AfterFunc) register with it directly, as they would with any
//     context of the standard library, and see DeadlineExceeded at the
//     deadline.
//   - Before that, Value is the parent's, and context.Cause reports Err
//     (or the cause the parent was cancelled with).
//
// release ends it when the handler returns (as the CancelFunc of
// context.WithTimeout would).
type requestCtx struct {
	parent   context.Context
	deadline time.Time
	timer    *time.Timer
	onExpire func(*Request) // the early reply at the deadline, or nil
	req      *Request       // onExpire's argument

	mu sync.Mutex
	// err is the first error seen before Done was called (the deadline, or
	// the parent's error): sticky. After Done, inner decides.
	err    error
	inner  context.Context // context.WithDeadline(parent, deadline), built by the first Done
	cancel context.CancelFunc
	closed chan struct{} // Done's channel when Done is first called after err was set
}

// newRequestCtx returns the context of a request bounded by timeout;
// onExpire(req), when onExpire is not nil, runs (on the timer's goroutine)
// once the deadline passes before release. (A function and its argument
// rather than a closure: one allocation less per request.)
func newRequestCtx(parent context.Context, timeout time.Duration, onExpire func(*Request), req *Request) *requestCtx {
	c := &requestCtx{parent: parent, deadline: time.Now().Add(timeout), onExpire: onExpire, req: req}
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	c.timer = time.AfterFunc(timeout, c.expire)
	return c
}

// expire runs at the deadline.
func (c *requestCtx) expire() {
	c.mu.Lock()
	if c.inner == nil && c.err == nil {
		if c.err = c.parent.Err(); c.err == nil {
			c.err = context.DeadlineExceeded
		}
	}
	c.mu.Unlock()
	if c.onExpire != nil {
		c.onExpire(c.req)
	}
}

// release ends the context (the handler returned): the timer is stopped
// (onExpire will not run unless it already started), and the context is
// cancelled if it was not done yet.
func (c *requestCtx) release() {
	c.timer.Stop()
	c.mu.Lock()
	cancel := c.cancel
	if c.inner == nil && c.err == nil {
		if c.err = c.parent.Err(); c.err == nil {
			c.err = context.Canceled
		}
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Deadline reports the request deadline (the parent's, when earlier).
func (c *requestCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done returns a channel closed when the context is done.
func (c *requestCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner != nil {
		return c.inner.Done()
	}
	if c.closed != nil {
		return c.closed
	}
	if c.err == nil {
		if err := c.parent.Err(); err != nil {
			c.err = err
		}
	}
	if c.err != nil {
		// Already done: a closed channel, and Err keeps its error.
		c.closed = make(chan struct{})
		close(c.closed)
		return c.closed
	}
	c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
	return c.inner.Done()
}

// Err reports why the context is done, or nil.
func (c *requestCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if c.inner != nil {
		return c.inner.Err()
	}
	if err := c.parent.Err(); err != nil {
		c.err = err
	}
	return c.err
}

// Value returns the parent's values.
func (c *requestCtx) Value(key any) any {
	c.mu.Lock()
	inner := c.inner
	c.mu.Unlock()
	if inner != nil {
		return inner.Value(key)
	}
	return c.parent.Value(key)
}

// String names the context (fmt, debugging).
func (c *requestCtx) String() string { return "weft.requestCtx" }
