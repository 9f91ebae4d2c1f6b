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

	var created, completed atomic.Int64
	errs := make(chan error, cfg.Creators)
	var wg sync.WaitGroup
	per := (cfg.Tasks + cfg.Creators - 1) / cfg.Creators
	for c := range cfg.Creators {
		wg.Go(func() {
			s := stores[c%len(stores)]
			want := map[string]int{}
			for i := range per {
				n := c*per + i
				if n >= cfg.Tasks {
					break
				}
				r, err := s.Create(ctx, task.NewTask{Operation: "load", Params: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))})
				if err != nil {
					errs <- err
					return
				}
				created.Add(1)
				want[r.ID] = n
			}
			deadline := time.Now().Add(cfg.Timeout)
			for len(want) > 0 {
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("creator %d: %d tasks unfinished after %v", c, len(want), cfg.Timeout)
					return
				}
				for id, n := range want {
					r, err := s.Get(ctx, id)
					if err != nil {
						errs <- err
						return
					}
					switch r.Status {
					case task.InputRequired:
						if _, err := s.SubmitInput(ctx, id, json.RawMessage(fmt.Sprintf(`{"x":%d}`, n%1000))); err != nil {
							errs <- err
							return
						}
					case task.Completed:
						if !jsonEqual(r.Result, fmt.Appendf(nil, `{"v":%d}`, n*1000+n%1000)) {
							errs <- fmt.Errorf("task %s (n=%d): result %s", id, n, r.Result)
							return
						}
						completed.Add(1)
						delete(want, id)
					case task.Failed, task.Cancelled:
						errs <- fmt.Errorf("task %s (n=%d) ended %s: %s", id, n, r.Status, r.Error)
						return
					}
				}
				time.Sleep(20 * time.Millisecond)
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
