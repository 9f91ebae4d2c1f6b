package client

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/weftmcp/weft/exactjson"
)

// ListenFilter selects the notifications of a subscriptions/listen stream.
type ListenFilter struct {
	ToolsListChanged      bool
	PromptsListChanged    bool
	ResourcesListChanged  bool
	ResourceSubscriptions []string
	// TaskIDs asks for notifications/tasks (tasks extension).
	TaskIDs []string
}

func (f ListenFilter) value() exactjson.Value {
	var m []exactjson.Member
	for _, b := range []struct {
		k string
		v bool
	}{{"toolsListChanged", f.ToolsListChanged}, {"promptsListChanged", f.PromptsListChanged}, {"resourcesListChanged", f.ResourcesListChanged}} {
		if b.v {
			m = append(m, exactjson.Field(b.k, exactjson.Bool(true)))
		}
	}
	strs := func(ss []string) exactjson.Value {
		vs := make([]exactjson.Value, len(ss))
		for i, s := range ss {
			vs[i] = exactjson.String(s)
		}
		return exactjson.Array(vs...)
	}
	if len(f.ResourceSubscriptions) > 0 {
		m = append(m, exactjson.Field("resourceSubscriptions", strs(f.ResourceSubscriptions)))
	}
	if len(f.TaskIDs) > 0 {
		m = append(m, exactjson.Field("taskIds", strs(f.TaskIDs)))
	}
	return exactjson.Object(m...)
}

// Subscription is an open subscriptions/listen stream.
type Subscription struct {
	// Accepted is the notifications filter the server agreed to honour
	// (from notifications/subscriptions/acknowledged).
	Accepted exactjson.Value

	ch     chan Notification
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// Notifications returns the channel of notifications; it is closed when
// the stream ends (see Err).
func (s *Subscription) Notifications() <-chan Notification { return s.ch }

// All iterates over the notifications until the stream ends or the loop
// breaks (which does not close the subscription).
func (s *Subscription) All() iter.Seq[Notification] {
	return func(yield func(Notification) bool) {
		for n := range s.ch {
			if !yield(n) {
				return
			}
		}
	}
}

// Close ends the subscription and waits for the stream to close.
func (s *Subscription) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// Done is closed when the stream has ended.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err reports why the stream ended: nil for a graceful end by the server
// or by Close, otherwise the transport or server error.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Listen opens a subscriptions/listen stream and returns once the server
// has acknowledged it. Notifications arrive on the Subscription until ctx
// ends, Close is called, or the server ends the stream.
func (c *Client) Listen(ctx context.Context, f ListenFilter) (*Subscription, error) {
	lctx, cancel := context.WithCancel(ctx)
	sub := &Subscription{ch: make(chan Notification, 16), cancel: cancel, done: make(chan struct{})}
	acked := make(chan exactjson.Value, 1)
	gotAck := false
	notify := func(n Notification) {
		if !metaOf(n.Params).Has(metaSubscriptionID) &&
			(n.Method == "notifications/progress" || n.Method == "notifications/message") {
			c.dispatch(n) // never part of a listen stream
			return
		}
		if !gotAck && n.Method == "notifications/subscriptions/acknowledged" {
			gotAck = true
			nv, _ := n.Params.Get("notifications")
			acked <- nv
			return
		}
		select {
		case sub.ch <- n:
		case <-lctx.Done():
		}
	}
	params := exactjson.Object(exactjson.Field("notifications", f.value()))
	go func() {
		defer close(sub.done)
		defer close(sub.ch)
		_, err := c.roundTrip(lctx, "subscriptions/listen", params, nil, notify)
		if err != nil && lctx.Err() != nil && errors.Is(err, lctx.Err()) {
			err = nil // closed by the client
		}
		sub.mu.Lock()
		sub.err = err
		sub.mu.Unlock()
	}()
	select {
	case sub.Accepted = <-acked:
		return sub, nil
	case <-sub.done:
		cancel()
		if err := sub.Err(); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, protocolErrorf("subscriptions/listen ended before it was acknowledged")
	}
}
