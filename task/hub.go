package task

import (
	"context"
	"fmt"
	"sync"
)

// DefaultSubscriberBuffer is the buffer size of a Hub subscription channel.
const DefaultSubscriberBuffer = 256

// Hub is an in-process Bus: it fans each published payload out to the
// current subscribers of its channel without ever blocking the publisher
// (a full subscriber buffer drops the event). The memory and SQLite stores
// use it; the PostgreSQL store uses one for local fan-out of what its
// listener receives. The zero value is not usable; call NewHub.
type Hub struct {
	buffer int

	mu     sync.Mutex
	subs   map[string]map[*hubSub]struct{}
	closed bool
}

type hubSub struct {
	ch   chan string
	stop func() bool
}

// NewHub returns an empty Hub whose subscriptions have buffer slots
// (DefaultSubscriberBuffer if buffer <= 0).
func NewHub(buffer int) *Hub {
	if buffer <= 0 {
		buffer = DefaultSubscriberBuffer
	}
	return &Hub{buffer: buffer, subs: make(map[string]map[*hubSub]struct{})}
}

// Publish delivers payload to every current subscriber of channel that has
// room in its buffer. It fails with ErrClosed after Close.
func (h *Hub) Publish(ctx context.Context, channel, payload string) error {
	if err := ValidateChannel(channel); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("task: hub publish on %q: %w", channel, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("task: hub publish on %q: %w", channel, ErrClosed)
	}
	for s := range h.subs[channel] {
		select {
		case s.ch <- payload:
		default: // slow subscriber: drop (events are hints)
		}
	}
	return nil
}

// Subscribe registers a subscriber for channel until ctx is done or the hub
// is closed, at which point the returned channel is closed.
func (h *Hub) Subscribe(ctx context.Context, channel string) (<-chan string, error) {
	if err := ValidateChannel(channel); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("task: hub subscribe to %q: %w", channel, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("task: hub subscribe to %q: %w", channel, ErrClosed)
	}
	s := &hubSub{ch: make(chan string, h.buffer)}
	set := h.subs[channel]
	if set == nil {
		set = make(map[*hubSub]struct{})
		h.subs[channel] = set
	}
	set[s] = struct{}{}
	s.stop = context.AfterFunc(ctx, func() { h.remove(channel, s) })
	return s.ch, nil
}

func (h *Hub) remove(channel string, s *hubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.subs[channel]
	if _, ok := set[s]; !ok {
		return // already removed by Close
	}
	delete(set, s)
	if len(set) == 0 {
		delete(h.subs, channel)
	}
	close(s.ch)
}

// Close closes every subscription channel; later Publish and Subscribe calls
// fail with ErrClosed. Close is idempotent.
func (h *Hub) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	for _, set := range h.subs {
		for s := range set {
			s.stop()
			close(s.ch)
		}
	}
	h.subs = nil
	return nil
}
