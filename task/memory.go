package task

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"
)

// MemoryStore is a Store that keeps tasks in process memory. It is meant for
// tests, development and single-instance servers that accept losing tasks on
// restart. It is safe for concurrent use; every method runs under one mutex.
type MemoryStore struct {
	RecordMethods // Renew, Finish, SetStatusMessage, SubmitInput, RequestCancel

	now func() time.Time
	hub *Hub

	mu     sync.Mutex
	tasks  map[string]*Record
	ready  readyQueue         // Working and unleased, oldest first
	leased map[string]*Record // Working and leased (live or lapsed)
	closed bool
}

// MemoryOption configures NewMemoryStore.
type MemoryOption func(*MemoryStore)

// WithClock makes the memory store read the time from now instead of
// time.Now (tests inject a fake clock).
func WithClock(now func() time.Time) MemoryOption {
	return func(s *MemoryStore) {
		if now != nil {
			s.now = now
		}
	}
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	s := &MemoryStore{
		now:    time.Now,
		hub:    NewHub(0),
		tasks:  make(map[string]*Record),
		ready:  readyQueue{pos: make(map[string]int)},
		leased: make(map[string]*Record),
	}
	s.RecordMethods = NewRecordMethods(s.update)
	for _, o := range opts {
		o(s)
	}
	return s
}

var _ Store = (*MemoryStore)(nil)

// timestamp returns the current time as stored: UTC, microsecond precision
// (the precision of the PostgreSQL store, so all stores behave alike).
func (s *MemoryStore) timestamp() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

// Publish implements Bus (in-process fan-out).
func (s *MemoryStore) Publish(ctx context.Context, channel, payload string) error {
	return s.hub.Publish(ctx, channel, payload)
}

// Subscribe implements Bus (in-process fan-out).
func (s *MemoryStore) Subscribe(ctx context.Context, channel string) (<-chan string, error) {
	return s.hub.Subscribe(ctx, channel)
}

// publish sends the notifications for a change; errors (a closed hub) are
// irrelevant to the caller, whose change is already applied.
func (s *MemoryStore) publish(ctx context.Context, before, after *Record) {
	for _, ch := range NotifyChannels(before, after) {
		_ = s.hub.Publish(context.WithoutCancel(ctx), ch, after.ID)
	}
}

// index keeps the claim-candidate sets in step with r.
func (s *MemoryStore) index(r *Record) {
	s.ready.remove(r.ID)
	delete(s.leased, r.ID)
	switch {
	case r.Status != Working:
	case r.LeaseOwner == "":
		heap.Push(&s.ready, r)
	default:
		s.leased[r.ID] = r
	}
}

func (s *MemoryStore) check(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("task: memory store %s: %w", op, err)
	}
	if s.closed {
		return fmt.Errorf("task: memory store %s: %w", op, ErrClosed)
	}
	return nil
}

// Create implements Store.
func (s *MemoryStore) Create(ctx context.Context, spec NewTask) (*Record, error) {
	r, err := NewRecord(spec, s.timestamp())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if err := s.check(ctx, "create"); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if _, ok := s.tasks[r.ID]; ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("task: memory store create %s: %w", r.ID, ErrExists)
	}
	s.tasks[r.ID] = r
	s.index(r)
	out := r.Clone()
	s.mu.Unlock()
	s.publish(ctx, nil, out)
	return out, nil
}

// Get implements Store.
func (s *MemoryStore) Get(ctx context.Context, id string) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "get"); err != nil {
		return nil, err
	}
	r, ok := s.tasks[id]
	if !ok {
		return nil, fmt.Errorf("task: memory store get %s: %w", id, ErrNotFound)
	}
	return r.Clone(), nil
}

// update runs apply on the task under the store mutex, publishing the
// resulting notifications if it reports a change.
func (s *MemoryStore) update(ctx context.Context, op, id string, apply func(r *Record, now time.Time) (bool, error)) (*Record, bool, error) {
	now := s.timestamp()
	s.mu.Lock()
	if err := s.check(ctx, op); err != nil {
		s.mu.Unlock()
		return nil, false, err
	}
	r, ok := s.tasks[id]
	if !ok {
		s.mu.Unlock()
		return nil, false, fmt.Errorf("task: memory store %s %s: %w", op, id, ErrNotFound)
	}
	before := r.Clone()
	changed, err := apply(r, now)
	if err != nil {
		*r = *before // Apply methods leave r unchanged on error; be defensive
		s.mu.Unlock()
		return nil, false, err
	}
	s.index(r)
	after := r.Clone()
	s.mu.Unlock()
	if changed {
		s.publish(ctx, before, after)
	}
	return after, changed, nil
}

// Claim implements Store. Candidates are the unleased Working tasks (a heap
// ordered by creation time) and the leased ones whose lease lapsed (a set as
// small as the number of running steps).
func (s *MemoryStore) Claim(ctx context.Context, worker string, lease time.Duration, max int) ([]*Record, error) {
	if worker == "" || lease <= 0 || max < 1 {
		return nil, fmt.Errorf("task: memory store claim: empty worker, non-positive lease or max: %w", ErrInvalid)
	}
	now := s.timestamp()
	type change struct{ before, after *Record }
	var changes []change
	var claimed []*Record
	s.mu.Lock()
	if err := s.check(ctx, "claim"); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	for len(claimed) < max {
		var best *Record
		for _, r := range s.leased {
			if r.Claimable(now) && (best == nil || older(r, best)) {
				best = r
			}
		}
		for len(s.ready.items) > 0 {
			r := s.ready.items[0]
			if r.Claimable(now) {
				if best == nil || older(r, best) {
					best = r
				}
				break
			}
			// Expired: never claimable again; the sweep will fail it.
			heap.Pop(&s.ready)
		}
		if best == nil {
			break
		}
		before := best.Clone()
		ok, _ := best.ApplyClaim(worker, now, lease)
		s.index(best)
		if ok {
			claimed = append(claimed, best.Clone())
		} else {
			changes = append(changes, change{before, best.Clone()})
		}
	}
	s.mu.Unlock()
	for _, c := range changes {
		s.publish(ctx, c.before, c.after)
	}
	return claimed, nil
}

func older(a, b *Record) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// readyQueue is a min-heap of records by creation time with removal by ID.
type readyQueue struct {
	items []*Record
	pos   map[string]int
}

// Len implements heap.Interface.
func (q *readyQueue) Len() int { return len(q.items) }

// Less implements heap.Interface.
func (q *readyQueue) Less(i, j int) bool { return older(q.items[i], q.items[j]) }

// Swap implements heap.Interface.
func (q *readyQueue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.pos[q.items[i].ID] = i
	q.pos[q.items[j].ID] = j
}

// Push implements heap.Interface.
func (q *readyQueue) Push(x any) {
	r := x.(*Record)
	q.pos[r.ID] = len(q.items)
	q.items = append(q.items, r)
}

// Pop implements heap.Interface.
func (q *readyQueue) Pop() any {
	n := len(q.items) - 1
	r := q.items[n]
	q.items[n] = nil
	q.items = q.items[:n]
	delete(q.pos, r.ID)
	return r
}

func (q *readyQueue) remove(id string) {
	if i, ok := q.pos[id]; ok {
		heap.Remove(q, i)
	}
}

// ExpireAndPurge implements Store.
func (s *MemoryStore) ExpireAndPurge(ctx context.Context, now time.Time, opts SweepOptions) (SweepResult, error) {
	opts, err := opts.Normalize()
	if err != nil {
		return SweepResult{}, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	var res SweepResult
	var changed [][2]*Record
	s.mu.Lock()
	if err := s.check(ctx, "expire and purge"); err != nil {
		s.mu.Unlock()
		return res, err
	}
	for id, r := range s.tasks {
		if res.Expired < opts.Limit && !r.Status.IsTerminal() && r.Expired(now) {
			before := r.Clone()
			r.ApplyExpiry(now, opts.ExpiredError, opts.ExpiredMessage)
			s.index(r)
			changed = append(changed, [2]*Record{before, r.Clone()})
			res.Expired++
			continue
		}
		if res.Purged < opts.Limit && r.Purgeable(now, opts.Retention) {
			delete(s.tasks, id)
			s.ready.remove(id)
			delete(s.leased, id)
			res.Purged++
		}
	}
	s.mu.Unlock()
	for _, c := range changed {
		s.publish(ctx, c[0], c[1])
	}
	return res, nil
}

// Close implements Store. It drops all tasks.
func (s *MemoryStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.tasks, s.leased = nil, nil
	s.ready = readyQueue{pos: make(map[string]int)}
	s.mu.Unlock()
	return s.hub.Close()
}
