package weft

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/weftmcp/weft/task"
)

// Bounds of the task gauge.
const (
	maxTrackedTasks   = 100_000         // non-terminal tasks tracked at once
	taskResyncEvery   = time.Minute     // how often expired entries are re-read
	taskResyncBatch   = 1000            // entries re-read per resync
	taskReadTimeout   = 5 * time.Second // one store read
	taskResyncGrace   = 2 * time.Minute // past ExpiresAt before an entry is re-read
	taskWatchChannels = task.ChannelChanged
)

// taskGauge tracks non-terminal tasks and their status from the store's
// change bus (task.ChannelChanged), for the weft.tasks gauge. On a shared bus
// (pgstore) every instance hears every task, so the gauge is fleet-wide.
// Delivery is best effort: an entry whose terminal event was lost is dropped
// when it is re-read after its expiry.
type taskGauge struct {
	mu   sync.Mutex
	on   bool
	live map[string]liveTask
}

type liveTask struct {
	status  task.Status
	expires time.Time
}

// counts returns the tracked tasks by status; ok is false when tasks are not
// watched.
func (g *taskGauge) counts() (working, input int64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on {
		return 0, 0, false
	}
	for _, lt := range g.live {
		switch lt.status {
		case task.Working:
			working++
		case task.InputRequired:
			input++
		}
	}
	return working, input, true
}

// watchTasks starts following the task store for the weft.tasks gauge (only
// when metrics are configured). It stops at Shutdown or when the store
// closes its subscription.
func (t *telemetry) watchTasks(store task.Store) {
	if t == nil || t.m == nil || store == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := store.Subscribe(ctx, taskWatchChannels)
	if err != nil {
		cancel()
		t.s.log.Warn("weft: subscribing to task changes for metrics failed; weft.tasks is not reported", "err", err)
		return
	}
	t.tasks.mu.Lock()
	t.tasks.on, t.tasks.live = true, map[string]liveTask{}
	t.tasks.mu.Unlock()
	go t.taskLoop(ctx, cancel, store, ch)
}

func (t *telemetry) taskLoop(ctx context.Context, cancel context.CancelFunc, store task.Store, ch <-chan string) {
	defer func() {
		cancel()
		t.tasks.mu.Lock()
		t.tasks.on, t.tasks.live = false, nil
		t.tasks.mu.Unlock()
	}()
	tick := time.NewTicker(taskResyncEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.s.done:
			return
		case id, ok := <-ch:
			if !ok {
				return
			}
			t.refreshTask(ctx, store, id)
		case <-tick.C:
			t.resyncTasks(ctx, store)
		}
	}
}

// refreshTask re-reads one task and updates its entry.
func (t *telemetry) refreshTask(ctx context.Context, store task.Store, id string) {
	rctx, cancel := context.WithTimeout(ctx, taskReadTimeout)
	rec, err := store.Get(rctx, id)
	cancel()
	g := &t.tasks
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == nil {
		return
	}
	switch {
	case errors.Is(err, task.ErrNotFound):
		delete(g.live, id)
	case err != nil:
		// Keep the entry; a later event or the resync corrects it.
	case rec.Status.IsTerminal():
		delete(g.live, id)
	default:
		if _, tracked := g.live[id]; tracked || len(g.live) < maxTrackedTasks {
			g.live[id] = liveTask{status: rec.Status, expires: rec.ExpiresAt}
		}
	}
}

// resyncTasks re-reads entries well past their expiry, whose terminal event
// may have been lost.
func (t *telemetry) resyncTasks(ctx context.Context, store task.Store) {
	cutoff := time.Now().Add(-taskResyncGrace)
	var stale []string
	t.tasks.mu.Lock()
	for id, lt := range t.tasks.live {
		if !lt.expires.IsZero() && lt.expires.Before(cutoff) {
			stale = append(stale, id)
			if len(stale) == taskResyncBatch {
				break
			}
		}
	}
	t.tasks.mu.Unlock()
	for _, id := range stale {
		if ctx.Err() != nil {
			return
		}
		t.refreshTask(ctx, store, id)
	}
}
