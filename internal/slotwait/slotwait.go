// Package slotwait keeps the goroutines of one process that wait for
// answer slots of a session store's mailboxes (sessionstore.Store.Await),
// so that the store wakes them when a slot is filled or its session goes.
// The SQLite and PostgreSQL session stores share it; their waiters also
// poll, since another process may fill a slot without telling this one.
package slotwait

import "sync"

type key struct{ session, request string }

// Waiters is a set of waiting goroutines by session and slot. The zero
// value is ready to use; it is safe for concurrent use.
type Waiters struct {
	mu sync.Mutex
	m  map[key]map[chan struct{}]struct{}
}

// Add registers a waiter of the slot request of session. wake receives a
// value (buffered, never blocking the waker) each time the slot may have
// changed; remove unregisters the waiter and must be called once it stops
// waiting.
func (w *Waiters) Add(session, request string) (wake <-chan struct{}, remove func()) {
	k := key{session, request}
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[key]map[chan struct{}]struct{}{}
	}
	set := w.m[k]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.m[k] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.m[k], ch)
		if len(w.m[k]) == 0 {
			delete(w.m, k)
		}
	}
}

// Wake wakes the waiters of the slot request of session.
func (w *Waiters) Wake(session, request string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wakeAll(w.m[key{session, request}])
}

// WakeSession wakes the waiters of every slot of session (it was deleted
// or expired: their slots are gone).
func (w *Waiters) WakeSession(session string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, set := range w.m {
		if k.session == session {
			wakeAll(set)
		}
	}
}

// Len reports how many waiters are registered.
func (w *Waiters) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, set := range w.m {
		n += len(set)
	}
	return n
}

func wakeAll(set map[chan struct{}]struct{}) {
	for ch := range set {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
