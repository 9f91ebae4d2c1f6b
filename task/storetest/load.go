package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
)

// LoadConfig sizes RunLoad.
type LoadConfig struct {
	// Tasks is the number of tasks created (default 1000).
	Tasks int
	// Creators is the number of client goroutines creating and answering
	// tasks (default 50).
	Creators int
	// Runners is the number of Runners (default 4).
	Runners int
	// Workers is the number of workers per Runner (default 2).
	Workers int
	// Timeout bounds the whole run (default 60s).
	Timeout time.Duration
}

// RunLoad is a bounded load test: Creators goroutines create Tasks tasks and
// play their clients, answering one input round each, while Runners runners
// run them. Stores may hold several handles on the same database (to act as
// several processes): runner i uses stores[i%len(stores)], creator j uses
// stores[j%len(stores)]. Every task must complete exactly once with the right
// result.
func RunLoad(t *testing.T, stores []task.Store, cfg LoadConfig) {
	if cfg.Tasks <= 0 {
		cfg.Tasks = 1000
	}
	if cfg.Creators <= 0 {
		cfg.Creators = 50
	}
	if cfg.Runners <= 0 {
		cfg.Runners = 4
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	ctx := t.Context()
	start := time.Now()

	var mu sync.Mutex
	runs := map[string]int{}
	handler := func(ctx context.Context, job *task.Job) (task.Outcome, error) {
		mu.Lock()
		runs[job.IdempotencyKey()]++
		mu.Unlock()
		if job.Step() == 1 {
			return task.NeedInput(json.RawMessage(`{"x":{"ask":"x"}}`), job.Params()), nil
		}
		var p struct{ N int }
		var in struct{ X int }
		if err := json.Unmarshal(job.State(), &p); err != nil {
			return task.Outcome{}, err
		}
		if err := json.Unmarshal(job.InputResponses(), &in); err != nil {
			return task.Outcome{}, err
		}
		return task.Complete(json.RawMessage(fmt.Sprintf(`{"v":%d}`, p.N*1000+in.X))), nil
	}
	for i := range cfg.Runners {
		startRunner(t, &task.Runner{
			Store:         stores[i%len(stores)],
			Handler:       handler,
			Workers:       cfg.Workers,
			Lease:         30 * time.Second,
			PollInterval:  20 * time.Millisecond,
			SweepInterval: -1,
			WorkerID:      fmt.Sprintf("load-%d", i),
			Logger:        testLogger(t),
		})
	}

	// Clients learn about changes from ChannelChanged events, routed to the
	// creator owning the task, with a slow fallback poll (events are hints;
	// a handle does not hear changes made through another handle).
	var routeMu sync.Mutex
	route := map[string]chan string{}
	for _, s := range stores {
		ch, err := s.Subscribe(ctx, task.ChannelChanged)
		if err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		go func() {
			for id := range ch {
				routeMu.Lock()
				inbox := route[id]
				routeMu.Unlock()
				if inbox != nil {
					select {
					case inbox <- id:
					default:
					}
				}
			}
		}()
	}

	var created, completed atomic.Int64
	errs := make(chan error, cfg.Creators)
	var wg sync.WaitGroup
	per := (cfg.Tasks + cfg.Creators - 1) / cfg.Creators
	for c := range cfg.Creators {
		wg.Go(func() {
			s := stores[c%len(stores)]
			inbox := make(chan string, 4*per)
			want := map[string]int{}
			for i := range per {
				n := c*per + i
				if n >= cfg.Tasks {
					break
				}
				id, err := task.NewID()
				if err != nil {
					errs <- err
					return
				}
				routeMu.Lock()
				route[id] = inbox
				routeMu.Unlock()
				if _, err := s.Create(ctx, task.NewTask{ID: id, Operation: "load", Params: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}); err != nil {
					errs <- err
					return
				}
				created.Add(1)
				want[id] = n
			}
			visit := func(id string) error {
				n, ok := want[id]
				if !ok {
					return nil
				}
				r, err := s.Get(ctx, id)
				if err != nil {
					return err
				}
				switch r.Status {
				case task.InputRequired:
					if _, err := s.SubmitInput(ctx, id, json.RawMessage(fmt.Sprintf(`{"x":%d}`, n%1000))); err != nil {
						return err
					}
				case task.Completed:
					if !jsonEqual(r.Result, fmt.Appendf(nil, `{"v":%d}`, n*1000+n%1000)) {
						return fmt.Errorf("task %s (n=%d): result %s", id, n, r.Result)
					}
					completed.Add(1)
					delete(want, id)
				case task.Failed, task.Cancelled:
					return fmt.Errorf("task %s (n=%d) ended %s: %s", id, n, r.Status, r.Error)
				}
				return nil
			}
			poll := time.NewTicker(time.Second)
			defer poll.Stop()
			deadline := time.After(cfg.Timeout)
			for len(want) > 0 {
				var err error
				select {
				case id := <-inbox:
					err = visit(id)
				case <-poll.C:
					for id := range want {
						if err = visit(id); err != nil {
							break
						}
					}
				case <-deadline:
					err = fmt.Errorf("creator %d: %d tasks unfinished after %v", c, len(want), cfg.Timeout)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	elapsed := time.Since(start)
	if got := completed.Load(); got != int64(cfg.Tasks) || created.Load() != int64(cfg.Tasks) {
		t.Fatalf("created %d, completed %d, want %d", created.Load(), got, cfg.Tasks)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 2*cfg.Tasks {
		t.Fatalf("%d distinct steps ran, want %d", len(runs), 2*cfg.Tasks)
	}
	for k, n := range runs {
		if n != 1 {
			t.Fatalf("step %s ran %d times, want once", k, n)
		}
	}
	t.Logf("%d tasks with one input round each completed in %v (%.0f tasks/s)",
		cfg.Tasks, elapsed.Round(time.Millisecond), float64(cfg.Tasks)/elapsed.Seconds())
}

// countingStore counts successful Finish calls that completed a task.
type countingStore struct {
	task.Store
	target int64
	done   atomic.Int64
	all    chan struct{}
}

// Finish implements task.Store, counting completions.
func (c *countingStore) Finish(ctx context.Context, id string, fence int64, out task.Outcome) (*task.Record, error) {
	r, err := c.Store.Finish(ctx, id, fence, out)
	if err == nil && r.Status == task.Completed && c.done.Add(1) == c.target {
		close(c.all)
	}
	return r, err
}

// Bench measures the create-to-complete rate of s: b.N single-step tasks are
// created from one goroutine while one Runner with the given number of
// workers completes them; the clock stops when the last one is stored as
// completed. It reports tasks/s.
func Bench(b *testing.B, s task.Store, workers int) {
	ctx := b.Context()
	cs := &countingStore{Store: s, target: int64(b.N), all: make(chan struct{})}
	r := &task.Runner{
		Store:   cs,
		Workers: workers,
		Handler: func(ctx context.Context, job *task.Job) (task.Outcome, error) {
			return task.Complete(json.RawMessage(`{"ok":true}`)), nil
		},
		Lease:         30 * time.Second,
		PollInterval:  5 * time.Millisecond,
		SweepInterval: -1,
		Logger:        testLogger(b),
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- r.Run(runCtx) }()

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := s.Create(ctx, task.NewTask{Operation: "bench", Params: json.RawMessage(`{}`)}); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-cs.all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d tasks completed", cs.done.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	stop()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
}
