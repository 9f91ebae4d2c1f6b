package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// taskRow is the create-to-complete measurement of one task system at one
// load.
type taskRow struct {
	system   string // "Weft" or "River"
	store    string // what the tasks live in, and the configuration
	load     string // "light" or "heavy"
	clients  int
	workers  int
	n        int
	wall     time.Duration
	rate     float64 // tasks per second
	p50, p99 time.Duration
	runs     int // the runs this row is the median of (heavy loads on PostgreSQL)
	note     string
}

func (t taskRow) pg() bool { return t.note == "" && (t.system == "River" || t.store == pgStoreName) }

// taskLoad is one measured run: how many tasks, from how many clients, and
// whether each client waits for its task to complete before creating the
// next (light load) or creates as fast as it can (heavy load).
type taskLoad struct {
	name    string
	n       int
	clients int
	workers int
	closed  bool
}

// tracker records when each task was created and when its completion was
// observed, in whatever order the two are learnt: a completion may be heard
// before the create call that made the task has returned.
type tracker struct {
	n int

	mu      sync.Mutex
	created map[string]time.Time // create call started
	early   map[string]time.Time // completion observed before the create returned
	done    map[string]time.Duration
	waiters map[string]chan struct{}
	allDone chan struct{}
	err     error
}

func newTracker(n int) *tracker {
	return &tracker{n: n, created: map[string]time.Time{}, early: map[string]time.Time{}, done: map[string]time.Duration{},
		waiters: map[string]chan struct{}{}, allDone: make(chan struct{})}
}

// add records that the task id was created by a call started at t0 and
// returns a channel closed once its completion has been observed.
func (t *tracker) add(id string, t0 time.Time) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := make(chan struct{})
	t.created[id] = t0
	if at, ok := t.early[id]; ok {
		delete(t.early, id)
		t.finishLocked(id, at.Sub(t0))
		close(ch)
		return ch
	}
	t.waiters[id] = ch
	return ch
}

// complete records that the task id was observed completed at at.
func (t *tracker) complete(id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.done[id]; ok {
		return
	}
	t0, ok := t.created[id]
	if !ok {
		if _, seen := t.early[id]; !seen {
			t.early[id] = at
		}
		return
	}
	t.finishLocked(id, at.Sub(t0))
	if ch := t.waiters[id]; ch != nil {
		delete(t.waiters, id)
		close(ch)
	}
}

func (t *tracker) finishLocked(id string, d time.Duration) {
	t.done[id] = d
	if len(t.done) == t.n {
		close(t.allDone)
	}
}

// isDone reports whether the completion of id was observed.
func (t *tracker) isDone(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.done[id]
	return ok
}

// fail records the first error of the observers.
func (t *tracker) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = err
	}
}

func (t *tracker) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// stragglers returns up to max of the tasks created before cutoff whose
// completion has not been observed, oldest first: what the polling fallback
// re-reads.
func (t *tracker) stragglers(cutoff time.Time, max int) []string {
	t.mu.Lock()
	type pending struct {
		id string
		t0 time.Time
	}
	var ps []pending
	for id, t0 := range t.created {
		if _, ok := t.done[id]; !ok && t0.Before(cutoff) {
			ps = append(ps, pending{id, t0})
		}
	}
	t.mu.Unlock()
	slices.SortFunc(ps, func(a, b pending) int { return a.t0.Compare(b.t0) })
	ids := make([]string, 0, min(len(ps), max))
	for _, p := range ps[:min(len(ps), max)] {
		ids = append(ids, p.id)
	}
	return ids
}

func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.done)
}

// latencies returns the sorted create-to-complete latencies.
func (t *tracker) latencies() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	lat := make([]time.Duration, 0, len(t.done))
	for _, d := range t.done {
		lat = append(lat, d)
	}
	slices.Sort(lat)
	return lat
}

// Events are hints: one that was dropped must not hang the run. Once per
// stragglerAge, the polling fallback re-reads the stragglerMax oldest tasks
// created more than stragglerAge ago whose completion was not observed (a
// few, so that under a backlog the fallback does not load the database the
// run measures).
const (
	stragglerAge = 2 * time.Second
	stragglerMax = 20
)

// pollStragglers calls check for the oldest stragglers once per
// stragglerAge until ctx is done.
func pollStragglers(ctx context.Context, tr *tracker, check func(id string)) {
	tick := time.NewTicker(stragglerAge)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, id := range tr.stragglers(time.Now().Add(-stragglerAge), stragglerMax) {
				if ctx.Err() != nil {
					return
				}
				check(id)
			}
		}
	}
}

// drive runs load: each client creates tasks with create (which returns the
// new task's id) until n were created, waiting for each to complete first
// when load.closed; then it waits until every completion was observed.
// Throughput is n over the time from the first create to the last observed
// completion.
func drive(ctx context.Context, load taskLoad, tr *tracker, create func(ctx context.Context) (string, error)) (wall time.Duration, err error) {
	var next atomic.Int64
	var createErr atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range load.clients {
		wg.Go(func() {
			for next.Add(1) <= int64(load.n) && createErr.Load() == nil {
				t0 := time.Now()
				id, err := create(ctx)
				if err != nil {
					createErr.CompareAndSwap(nil, &err)
					return
				}
				ch := tr.add(id, t0)
				if !load.closed {
					continue
				}
				if err := waitFor(ctx, ch, tr, id); err != nil {
					createErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := createErr.Load(); p != nil {
		return 0, *p
	}
	timeout := time.NewTimer(5 * time.Minute)
	defer timeout.Stop()
	check := time.NewTicker(100 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-tr.allDone:
			return time.Since(start), nil
		case <-check.C:
			if err := tr.failed(); err != nil {
				return 0, err
			}
		case <-timeout.C:
			return 0, fmt.Errorf("only %d of %d tasks completed within 5 minutes", tr.count(), load.n)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// fill sets the measured figures of row from a finished run.
func (row *taskRow) fill(load taskLoad, wall time.Duration, tr *tracker) {
	row.load, row.clients, row.workers, row.n, row.wall = load.name, load.clients, load.workers, load.n, wall
	row.rate = float64(load.n) / wall.Seconds()
	lat := tr.latencies()
	row.p50, row.p99 = percentile(lat, 0.5), percentile(lat, 0.99)
}

// waitFor waits until ch is closed (the completion of task id was
// observed), an observer failed, or a minute passed.
func waitFor(ctx context.Context, ch <-chan struct{}, tr *tracker, id string) error {
	limit := time.NewTimer(time.Minute)
	defer limit.Stop()
	check := time.NewTicker(100 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-ch:
			return nil
		case <-check.C:
			if err := tr.failed(); err != nil {
				return err
			}
		case <-limit.C:
			return fmt.Errorf("task %s did not complete within a minute", id)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
