// Package quota counts calls against rate quotas ("at most N calls per
// period, in bursts of up to B"), in memory for one process or in
// PostgreSQL for a fleet whose instances share each quota.
//
// A quota is kept per key (for example a rule name and a caller) with the
// generic cell rate algorithm: one timestamp per key, the theoretical
// arrival time of the next call, so that a key costs one row whatever its
// rate, and a refusal says exactly when the next call fits.
//
//	q := quota.NewMemory(nil)
//	d, err := q.Take(ctx, "search|alice", quota.Limit{Calls: 100, Per: time.Minute})
//	if err == nil && !d.Allowed {
//		return weft.RateLimited(d.RetryAfter)
//	}
package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Limit is a quota: Calls calls per Per, of which up to Burst may come at
// once (default Calls).
type Limit struct {
	Calls int
	Per   time.Duration
	Burst int
}

// Check reports what is wrong with l.
func (l Limit) Check() error {
	switch {
	case l.Calls <= 0:
		return fmt.Errorf("quota: Calls = %d, at least 1", l.Calls)
	case l.Per <= 0:
		return fmt.Errorf("quota: Per = %s, must be positive", l.Per)
	case l.Burst < 0:
		return fmt.Errorf("quota: Burst = %d is negative", l.Burst)
	}
	return nil
}

// interval is the time one call costs; tolerance how far ahead of now the
// theoretical arrival time may run (the burst less one call).
func (l Limit) interval() time.Duration { return max(l.Per/time.Duration(l.Calls), time.Microsecond) }
func (l Limit) tolerance() time.Duration {
	b := l.Burst
	if b == 0 {
		b = l.Calls
	}
	return l.interval() * time.Duration(b-1)
}

// Decision is the answer of Take.
type Decision struct {
	// Allowed is true when the call fits the quota (and was counted).
	Allowed bool
	// RetryAfter is, when refused, how long until a call fits.
	RetryAfter time.Duration
}

// Store counts calls. Take counts one call of key against l when it
// fits; a refused call is not counted. Implementations are safe for
// concurrent use.
type Store interface {
	Take(ctx context.Context, key string, l Limit) (Decision, error)
}

// ErrKeyTooLong is returned for a key longer than MaxKeyBytes.
var ErrKeyTooLong = errors.New("quota: key too long")

// MaxKeyBytes bounds a key.
const MaxKeyBytes = 1024

// MemoryOptions configure NewMemory. The zero value is usable.
type MemoryOptions struct {
	// MaxKeys bounds the keys kept (default 100,000). When full, keys
	// whose quota has fully refilled are dropped; if none has, a new key
	// is refused (fail closed: a caller cannot reset its quota by flooding
	// the store with keys).
	MaxKeys int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DefaultMaxMemoryKeys is MemoryOptions.MaxKeys by default.
const DefaultMaxMemoryKeys = 100_000

// Memory is a Store of one process.
type Memory struct {
	max int
	now func() time.Time

	mu  sync.Mutex
	tat map[string]time.Time
}

// NewMemory returns an in-memory Store.
func NewMemory(o *MemoryOptions) *Memory {
	var opts MemoryOptions
	if o != nil {
		opts = *o
	}
	m := &Memory{max: opts.MaxKeys, now: opts.Now, tat: map[string]time.Time{}}
	if m.max <= 0 {
		m.max = DefaultMaxMemoryKeys
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Take implements Store.
func (m *Memory) Take(ctx context.Context, key string, l Limit) (Decision, error) {
	if err := l.Check(); err != nil {
		return Decision{}, err
	}
	if len(key) > MaxKeyBytes {
		return Decision{}, ErrKeyTooLong
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	tat, ok := m.tat[key]
	if !ok && len(m.tat) >= m.max {
		for k, t := range m.tat {
			if !t.After(now) {
				delete(m.tat, k)
			}
		}
		if len(m.tat) >= m.max {
			return Decision{RetryAfter: time.Second}, nil
		}
	}
	if tat.Before(now) {
		tat = now
	}
	if ahead := tat.Sub(now); ahead > l.tolerance() {
		return Decision{RetryAfter: ahead - l.tolerance()}, nil
	}
	m.tat[key] = tat.Add(l.interval())
	return Decision{Allowed: true}, nil
}

// Len returns the number of keys kept.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tat)
}
