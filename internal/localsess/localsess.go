// Package localsess is what one instance holds for the 2025-11-25 sessions
// it serves and that cannot move between instances: open GET streams,
// in-flight calls, and the digests by which the fleet names them on its
// event bus without revealing session ids.
package localsess

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// Local is what one instance holds for sessions: their open GET
// streams and in-flight calls. None of it moves between instances.
type Local[S Stream] struct {
	mu      sync.Mutex
	streams map[string]S
	calls   map[string]map[string]context.CancelFunc // session -> request id key -> cancel
	// byDigest finds a session with calls or a stream here from its
	// fleetDigest, for cancellations that arrive on another instance; kept
	// only when fleet (the server has a fleet event bus).
	byDigest map[string]string
	fleet    bool
}

// Stream is a session's event stream: End ends it.
type Stream interface {
	comparable
	End()
}

// New returns an empty registry; fleet keeps the digest index that
// cancellations from other instances are looked up in.
func New[S Stream](fleet bool) *Local[S] {
	return &Local[S]{streams: map[string]S{}, calls: map[string]map[string]context.CancelFunc{},
		byDigest: map[string]string{}, fleet: fleet}
}

// fleetDigest names a session, or a call of a session, on the fleet's
// event bus without putting the session id there: the first 16 bytes of
// SHA-256 over a label and the parts, in hex.
func fleetDigest(label string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(label))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// SessionDigest names a session on the fleet's event bus.
func SessionDigest(sid string) string { return fleetDigest("weft legacy session", sid) }

// CallDigest names a call of a session on the fleet's event bus.
func CallDigest(sid, key string) string { return fleetDigest("weft legacy call", sid, key) }

// track and untrack keep byDigest in step with the sessions that have calls
// or a stream here (l.mu held).
func (l *Local[S]) track(sid string) {
	if !l.fleet {
		return
	}
	if _, calls := l.calls[sid]; !calls {
		if _, stream := l.streams[sid]; !stream {
			l.byDigest[SessionDigest(sid)] = sid
		}
	}
}

func (l *Local[S]) untrack(sid string) {
	if !l.fleet {
		return
	}
	if _, calls := l.calls[sid]; !calls {
		if _, stream := l.streams[sid]; !stream {
			delete(l.byDigest, SessionDigest(sid))
		}
	}
}

// AddStream registers the GET stream of a session; false if one is open.
func (l *Local[S]) AddStream(sid string, st S) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.streams[sid]; ok {
		return false
	}
	l.track(sid)
	l.streams[sid] = st
	return true
}

// RemoveStream unregisters the GET stream st of a session.
func (l *Local[S]) RemoveStream(sid string, st S) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.streams[sid]; ok && cur == st {
		delete(l.streams, sid)
		l.untrack(sid)
	}
}

// Stream returns the GET stream of a session held here.
func (l *Local[S]) Stream(sid string) (S, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.streams[sid]
	return st, ok
}

// AddCall registers an in-flight call so that notifications/cancelled and
// DELETE can cancel it; the returned function unregisters it.
func (l *Local[S]) AddCall(sid, key string, cancel context.CancelFunc) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.calls[sid]
	if m == nil {
		l.track(sid)
		m = map[string]context.CancelFunc{}
		l.calls[sid] = m
	}
	if _, dup := m[key]; dup {
		return func() {}
	}
	m[key] = cancel
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if m := l.calls[sid]; m != nil {
			delete(m, key)
			if len(m) == 0 {
				delete(l.calls, sid)
				l.untrack(sid)
			}
		}
	}
}

// CancelCall cancels a call running here; it reports whether there was one.
func (l *Local[S]) CancelCall(sid, key string) bool {
	l.mu.Lock()
	cancel := l.calls[sid][key]
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return cancel != nil
}

// CancelByDigest cancels the call named by a fleet cancellation, if it runs
// here.
func (l *Local[S]) CancelByDigest(sessionD, callD string) {
	l.mu.Lock()
	sid, ok := l.byDigest[sessionD]
	var cancel context.CancelFunc
	if ok {
		for key, c := range l.calls[sid] {
			if CallDigest(sid, key) == callD {
				cancel = c
				break
			}
		}
	}
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// EndByDigest ends what this instance holds for a session deleted on
// another instance.
func (l *Local[S]) EndByDigest(sessionD string) {
	l.mu.Lock()
	sid, ok := l.byDigest[sessionD]
	l.mu.Unlock()
	if ok {
		l.End(sid)
	}
}

// End cancels what this instance holds for a deleted session.
func (l *Local[S]) End(sid string) {
	l.mu.Lock()
	st, hasStream := l.streams[sid]
	calls := l.calls[sid]
	delete(l.calls, sid)
	l.untrack(sid)
	l.mu.Unlock()
	for _, c := range calls {
		c()
	}
	if hasStream {
		st.End()
	}
}
