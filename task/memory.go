package task

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
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
	ready  map[string]*readyQueue // by partition: Working and unleased, oldest first
	leased map[string]*Record     // Working and leased (live or lapsed)
	live   map[Owner]int          // non-terminal tasks by owner
	parts  map[string]int         // non-terminal tasks by partition
	closed bool
}

// MemoryOptions configure [NewMemoryStore]. The zero value (or nil) is
// usable.
type MemoryOptions struct {
	// Now is the store's clock (nil: time.Now); tests inject a fake one.
	Now func() time.Time
}

// NewMemoryStore returns an empty in-memory store; opts may be nil.
func NewMemoryStore(opts *MemoryOptions) *MemoryStore {
	s := &MemoryStore{
		now:    time.Now,
		hub:    NewHub(0),
		tasks:  make(map[string]*Record),
		ready:  make(map[string]*readyQueue),
		leased: make(map[string]*Record),
		live:   make(map[Owner]int),
		parts:  make(map[string]int),
	}
	s.RecordMethods = NewRecordMethods(s.update)
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
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
	s.unready(r)
	delete(s.leased, r.ID)
	switch {
	case r.Status != Working:
	case r.LeaseOwner == "":
		q := s.ready[r.Owner.Partition]
		if q == nil {
			q = &readyQueue{pos: make(map[string]int)}
			s.ready[r.Owner.Partition] = q
		}
		heap.Push(q, r)
	default:
		s.leased[r.ID] = r
	}
}

// unready removes r from its partition's ready queue, and the queue once
// empty.
func (s *MemoryStore) unready(r *Record) {
	q := s.ready[r.Owner.Partition]
	if q == nil {
		return
	}
	q.remove(r.ID)
	if q.Len() == 0 {
		delete(s.ready, r.Owner.Partition)
	}
}

// count moves the live-task counters by d for r's owner and partition.
func (s *MemoryStore) count(r *Record, d int) {
	if s.live[r.Owner] += d; s.live[r.Owner] <= 0 {
		delete(s.live, r.Owner)
	}
	if s.parts[r.Owner.Partition] += d; s.parts[r.Owner.Partition] <= 0 {
		delete(s.parts, r.Owner.Partition)
	}
}

// account updates the live-task counters for a change before→after.
func (s *MemoryStore) account(before, after *Record) {
	if !before.Status.IsTerminal() && after.Status.IsTerminal() {
		s.count(after, -1)
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
	if err := spec.Quota.Admit(s.live[r.Owner], s.parts[r.Owner.Partition]); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("task: memory store create %s: %w", r.ID, err)
	}
	s.tasks[r.ID] = r
	s.count(r, 1)
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
	s.account(before, r)
	after := r.Clone()
	s.mu.Unlock()
	if changed {
		s.publish(ctx, before, after)
	}
	return after, changed, nil
}

// Claim implements Store. Candidates are the unleased Working tasks (a heap
// per partition ordered by creation time) and the leased ones whose lease
// lapsed (a set as small as the number of running steps), which are moved
// back to their partition's heap first. Partitions are served round-robin
// in key order from after opts.After: one task of each per round.
func (s *MemoryStore) Claim(ctx context.Context, worker string, lease time.Duration, max int, opts ...ClaimOptions) ([]*Record, error) {
	if worker == "" || lease <= 0 || max < 1 {
		return nil, fmt.Errorf("task: memory store claim: empty worker, non-positive lease or max: %w", ErrInvalid)
	}
	var o ClaimOptions
	if len(opts) > 0 {
		o = opts[0]
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
	for id, r := range s.leased {
		if r.Claimable(now) {
			delete(s.leased, id)
			q := s.ready[r.Owner.Partition]
			if q == nil {
				q = &readyQueue{pos: make(map[string]int)}
				s.ready[r.Owner.Partition] = q
			}
			heap.Push(q, r)
		}
	}
	order := make([]string, 0, len(s.ready))
	for p := range s.ready {
		if !slices.Contains(o.Exclude, p) {
			order = append(order, p)
		}
	}
	order = RoundRobin(order, o.After)
	for len(claimed) < max && len(order) > 0 {
		next := order[:0]
		for _, p := range order {
			if len(claimed) >= max {
				break
			}
			q := s.ready[p]
			var best *Record
			for q != nil && q.Len() > 0 {
				r := q.items[0]
				if r.Claimable(now) {
					best = r
					break
				}
				// Expired: never claimable again; the sweep will fail it.
				s.unready(r)
			}
			if best == nil {
				continue
			}
			before := best.Clone()
			ok, _ := best.ApplyClaim(worker, now, lease)
			s.index(best)
			s.account(before, best)
			if ok {
				claimed = append(claimed, best.Clone())
			} else {
				changes = append(changes, change{before, best.Clone()})
			}
			if s.ready[p] != nil {
				next = append(next, p)
			}
		}
		order = next
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
			s.account(before, r)
			changed = append(changed, [2]*Record{before, r.Clone()})
			res.Expired++
			continue
		}
		if res.Purged < opts.Limit && r.Purgeable(now, opts.Retention) {
			delete(s.tasks, id)
			s.unready(r)
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
	s.tasks, s.leased, s.live, s.parts = nil, nil, nil, nil
	s.ready = make(map[string]*readyQueue)
	s.mu.Unlock()
	return s.hub.Close()
}
