package sessionstore

import (
	"context"
	"errors"
	"sync"
	"time"
)

// MemoryOptions configure a [Memory] store.
type MemoryOptions struct {
	Limits Limits
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Memory is an in-process [Store]: sessions live as long as the process and
// are visible only to it. It is the default store.
type Memory struct {
	now    func() time.Time
	limits Limits

	mu        sync.Mutex
	sessions  map[string]*Session
	slots     map[slotKey]*slot
	perSess   map[string]int // session id -> open slots
	lastSweep time.Time
}

type slotKey struct{ session, request string }

type slot struct {
	expires time.Time
	msg     []byte
	filled  bool
	gone    bool          // removed (session deleted or slot expired)
	wake    chan struct{} // closed when filled or gone
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory(o *MemoryOptions) *Memory {
	var opts MemoryOptions
	if o != nil {
		opts = *o
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Memory{now: opts.Now, limits: opts.Limits.WithDefaults(),
		sessions: map[string]*Session{}, slots: map[slotKey]*slot{}, perSess: map[string]int{}}
}

// Len returns the number of stored sessions, expired ones not yet purged
// included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// Sweep purges expired sessions and answer slots now. The store also sweeps
// on its own while sessions are created; a server calls Sweep periodically
// so that abandoned sessions do not hold memory while nothing is created.
func (m *Memory) Sweep() {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
}

// sweep purges expired sessions and slots. Caller holds m.mu.
func (m *Memory) sweep(now time.Time) {
	m.lastSweep = now
	for id, s := range m.sessions {
		if !s.Live(now) {
			m.removeLocked(id)
		}
	}
	for k, sl := range m.slots {
		if !now.Before(sl.expires) {
			m.dropSlotLocked(k, sl)
		}
	}
}

func (m *Memory) removeLocked(id string) {
	delete(m.sessions, id)
	if m.perSess[id] == 0 {
		return
	}
	for k, sl := range m.slots {
		if k.session == id {
			m.dropSlotLocked(k, sl)
		}
	}
}

func (m *Memory) dropSlotLocked(k slotKey, sl *slot) {
	if m.slots[k] != sl {
		return
	}
	delete(m.slots, k)
	if m.perSess[k.session]--; m.perSess[k.session] <= 0 {
		delete(m.perSess, k.session)
	}
	if !sl.filled && !sl.gone {
		sl.gone = true
		close(sl.wake)
	}
}

// live returns the live session or nil, purging it when expired. Caller holds m.mu.
func (m *Memory) live(id string, now time.Time) *Session {
	s, ok := m.sessions[id]
	if !ok {
		return nil
	}
	if !s.Live(now) {
		m.removeLocked(id)
		return nil
	}
	return s
}

// Create implements Store.
func (m *Memory) Create(ctx context.Context, s *Session) error {
	now := m.now()
	c, err := s.ForCreate(now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live(c.ID, now) != nil {
		return ErrExists
	}
	if len(m.sessions) >= m.limits.MaxSessions || now.Sub(m.lastSweep) > time.Minute {
		m.sweep(now)
	}
	full := len(m.sessions) >= m.limits.MaxSessions
	var perOwner map[string]int // only a full store ranks the owners
	if full && m.limits.EvictWhenFull {
		perOwner = map[string]int{}
	}
	mine, partition := 0, 0
	for _, o := range m.sessions {
		if !o.Live(now) {
			continue
		}
		if o.Owner == c.Owner {
			mine++
		}
		if c.Partition != "" && o.Partition == c.Partition {
			partition++
		}
		if perOwner != nil {
			perOwner[o.Owner]++
		}
	}
	if mine >= m.limits.MaxPerIdentity || (c.Partition != "" && partition >= m.limits.MaxPerPartition) {
		return ErrLimit
	}
	if full {
		if !m.limits.EvictWhenFull {
			return ErrLimit
		}
		top, most := "", 0
		for owner, n := range perOwner {
			if n > most || (n == most && owner < top) {
				top, most = owner, n
			}
		}
		if mine >= most {
			return ErrLimit
		}
		var victim *Session
		for _, o := range m.sessions {
			if o.Owner == top && o.Live(now) && (victim == nil || o.LastSeen.Before(victim.LastSeen)) {
				victim = o
			}
		}
		m.removeLocked(victim.ID)
	}
	m.sessions[c.ID] = c
	return nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, id string) (*Session, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, now)
	if s == nil {
		return nil, ErrNotFound
	}
	if now.After(s.LastSeen) {
		s.LastSeen = now
	}
	return s.Clone(), nil
}

// Update implements Store.
func (m *Memory) Update(ctx context.Context, id string, fn func(*Session) error) (*Session, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, now)
	if s == nil {
		return nil, ErrNotFound
	}
	c := s.Clone()
	if err := fn(c); err != nil {
		return nil, err
	}
	s.LogLevel = c.LogLevel
	s.Subscriptions = append([]string(nil), c.Subscriptions...)
	s.Initialized = c.Initialized
	if now.After(s.LastSeen) {
		s.LastSeen = now
	}
	return s.Clone(), nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, id string) (bool, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	live := m.live(id, now) != nil
	m.removeLocked(id)
	return live, nil
}

// Expect implements Store.
func (m *Memory) Expect(ctx context.Context, sessionID, requestID string, expires time.Time) error {
	if !ValidID(requestID) {
		return errors.Join(ErrInvalid, errors.New("request id must be 1..128 visible ASCII characters"))
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live(sessionID, now) == nil {
		return ErrNotFound
	}
	k := slotKey{sessionID, requestID}
	if _, ok := m.slots[k]; ok {
		return ErrExists
	}
	if m.perSess[sessionID] >= m.limits.MaxPendingAnswers {
		return ErrLimit
	}
	m.slots[k] = &slot{expires: expires, wake: make(chan struct{})}
	m.perSess[sessionID]++
	return nil
}

// Deliver implements Store.
func (m *Memory) Deliver(ctx context.Context, sessionID, requestID string, msg []byte) (bool, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := slotKey{sessionID, requestID}
	sl, ok := m.slots[k]
	if !ok || sl.filled || sl.gone {
		return false, nil
	}
	if !now.Before(sl.expires) || m.live(sessionID, now) == nil {
		m.dropSlotLocked(k, sl)
		return false, nil
	}
	sl.msg = append([]byte(nil), msg...)
	sl.filled = true
	close(sl.wake)
	return true, nil
}

// Await implements Store.
func (m *Memory) Await(ctx context.Context, sessionID, requestID string) ([]byte, error) {
	k := slotKey{sessionID, requestID}
	m.mu.Lock()
	sl, ok := m.slots[k]
	m.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	defer func() {
		m.mu.Lock()
		m.dropSlotLocked(k, sl)
		m.mu.Unlock()
	}()
	// Wait until the slot is filled or removed, rechecking at its expiry,
	// at the session's idle or absolute expiry (which moves when the
	// session is used) and at least every memoryRecheck (the clock may not
	// be the wall clock).
	for {
		m.mu.Lock()
		now := m.now()
		switch {
		case sl.filled:
			msg := sl.msg
			m.mu.Unlock()
			return msg, nil
		case sl.gone || !now.Before(sl.expires):
			m.mu.Unlock()
			return nil, ErrNotFound
		}
		s := m.live(sessionID, now) // purges an expired session, which removes the slot
		if s == nil {
			m.mu.Unlock()
			return nil, ErrNotFound
		}
		d := min(sl.expires.Sub(now), s.LastSeen.Add(s.IdleTimeout).Sub(now), s.ExpiresAt.Sub(now), memoryRecheck)
		m.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-sl.wake:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		t.Stop()
	}
}

// memoryRecheck bounds how long a [Memory.Await] waits before it checks
// again whether its session expired.
const memoryRecheck = time.Second
