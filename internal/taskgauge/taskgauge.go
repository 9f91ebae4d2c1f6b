// Package taskgauge counts a task store's non-terminal tasks by status, from
// the store's change bus, for the weft.tasks metric.
package taskgauge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/weftmcp/weft/task"
)

// Bounds of the task gauge.
const (
	maxTrackedTasks = 100_000         // non-terminal tasks tracked at once
	taskResyncEvery = time.Minute     // how often expired entries are re-read
	taskResyncBatch = 1000            // entries re-read per resync
	taskReadTimeout = 5 * time.Second // one store read
	taskResyncGrace = 2 * time.Minute // past ExpiresAt before an entry is re-read
	watchChannel    = task.ChannelChanged
)

// Gauge tracks non-terminal tasks and their status from the store's
// change bus (task.ChannelChanged), for the weft.tasks gauge. On a shared bus
// (pgstore) every instance hears every task, so the gauge is fleet-wide.
// Delivery is best effort: an entry whose terminal event was lost is dropped
// when it is re-read after its expiry.
type Gauge struct {
	mu   sync.Mutex
	on   bool
	live map[string]liveTask
}

type liveTask struct {
	status  task.Status
	expires time.Time
}

// Counts returns the tracked tasks by status; ok is false when tasks are not
// watched.
func (g *Gauge) Counts() (working, input int64, ok bool) {
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

// Watch starts following store's change bus until done is closed or the
// store closes its subscription; log gets a warning when it cannot
// subscribe (Counts then reports false).
func (g *Gauge) Watch(store task.Store, done <-chan struct{}, log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := store.Subscribe(ctx, watchChannel)
	if err != nil {
		cancel()
		log.Warn("weft: subscribing to task changes for metrics failed; weft.tasks is not reported", "err", err)
		return
	}
	g.mu.Lock()
	g.on, g.live = true, map[string]liveTask{}
	g.mu.Unlock()
	go g.loop(ctx, cancel, store, ch, done)
}

func (g *Gauge) loop(ctx context.Context, cancel context.CancelFunc, store task.Store, ch <-chan string, done <-chan struct{}) {
	defer func() {
		cancel()
		g.mu.Lock()
		g.on, g.live = false, nil
		g.mu.Unlock()
	}()
	tick := time.NewTicker(taskResyncEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case id, ok := <-ch:
			if !ok {
				return
			}
			g.refresh(ctx, store, id)
		case <-tick.C:
			g.resync(ctx, store)
		}
	}
}

// refresh re-reads one task and updates its entry.
func (g *Gauge) refresh(ctx context.Context, store task.Store, id string) {
	rctx, cancel := context.WithTimeout(ctx, taskReadTimeout)
	rec, err := store.Get(rctx, id)
	cancel()
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

// resync re-reads entries well past their expiry, whose terminal event
// may have been lost.
func (g *Gauge) resync(ctx context.Context, store task.Store) {
	cutoff := time.Now().Add(-taskResyncGrace)
	var stale []string
	g.mu.Lock()
	for id, lt := range g.live {
		if !lt.expires.IsZero() && lt.expires.Before(cutoff) {
			stale = append(stale, id)
			if len(stale) == taskResyncBatch {
				break
			}
		}
	}
	g.mu.Unlock()
	for _, id := range stale {
		if ctx.Err() != nil {
			return
		}
		g.refresh(ctx, store, id)
	}
}
