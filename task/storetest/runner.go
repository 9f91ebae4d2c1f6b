package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
)

// rounds is a handler doing two input rounds: step 1 asks "a-<n>", step 2
// asks "b-<n>", step 3 completes with {"sum": n + a + b}. It counts the
// executions of every (task, step).
type rounds struct {
	mu   sync.Mutex
	runs map[string]int // "<id>/<step>" -> executions
}

type roundsParams struct {
	N int `json:"n"`
}

type roundsState struct {
	A int `json:"a"`
}

func newRounds() *rounds { return &rounds{runs: map[string]int{}} }

func (h *rounds) handle(ctx context.Context, job *task.Job) (task.Outcome, error) {
	h.mu.Lock()
	h.runs[job.IdempotencyKey()]++
	h.mu.Unlock()
	var p roundsParams
	if err := json.Unmarshal(job.Params(), &p); err != nil {
		return task.Outcome{}, fmt.Errorf("decode params: %w", err)
	}
	resp := map[string]int{}
	if in := job.InputResponses(); in != nil {
		if err := json.Unmarshal(in, &resp); err != nil {
			return task.Outcome{}, fmt.Errorf("decode responses: %w", err)
		}
	}
	switch job.Step() {
	case 1:
		return task.NeedInput(json.RawMessage(fmt.Sprintf(`{"a-%d":{"ask":"a"}}`, p.N)), nil), nil
	case 2:
		st, _ := json.Marshal(roundsState{A: resp[fmt.Sprintf("a-%d", p.N)]})
		if err := job.Progress(ctx, "got a"); err != nil {
			return task.Outcome{}, err
		}
		return task.NeedInput(json.RawMessage(fmt.Sprintf(`{"b-%d":{"ask":"b"}}`, p.N)), st), nil
	default:
		var st roundsState
		if err := json.Unmarshal(job.State(), &st); err != nil {
			return task.Outcome{}, fmt.Errorf("decode state: %w", err)
		}
		sum := p.N + st.A + resp[fmt.Sprintf("b-%d", p.N)]
		return task.Complete(json.RawMessage(fmt.Sprintf(`{"sum":%d}`, sum))), nil
	}
}

// answer answers every outstanding request of r: key "a-<n>" with 10*n and
// "b-<n>" with 100*n, so the expected sum is 111*n.
func answer(ctx context.Context, s task.Store, r *task.Record) error {
	var reqs map[string]json.RawMessage
	if err := json.Unmarshal(r.InputRequests, &reqs); err != nil {
		return fmt.Errorf("decode input requests of %s: %w", r.ID, err)
	}
	resp := map[string]int{}
	for k := range reqs {
		var n int
		switch {
		case strings.HasPrefix(k, "a-"):
			fmt.Sscanf(k, "a-%d", &n)
			resp[k] = 10 * n
		case strings.HasPrefix(k, "b-"):
			fmt.Sscanf(k, "b-%d", &n)
			resp[k] = 100 * n
		}
	}
	b, _ := json.Marshal(resp)
	_, err := s.SubmitInput(ctx, r.ID, b)
	return err
}

// drive plays the client for ids until every task is terminal: it polls,
// answers input (twice, to exercise idempotency) and returns the final
// records.
func drive(ctx context.Context, s task.Store, ids []string, timeout time.Duration) (map[string]*task.Record, error) {
	done := make(map[string]*task.Record, len(ids))
	deadline := time.Now().Add(timeout)
	for len(done) < len(ids) {
		if time.Now().After(deadline) {
			return done, fmt.Errorf("%d of %d tasks not terminal after %v", len(ids)-len(done), len(ids), timeout)
		}
		for _, id := range ids {
			if done[id] != nil {
				continue
			}
			r, err := s.Get(ctx, id)
			if err != nil {
				return done, err
			}
			switch {
			case r.Status.IsTerminal():
				done[id] = r
			case r.Status == task.InputRequired:
				for range 2 {
					if err := answer(ctx, s, r); err != nil {
						return done, err
					}
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return done, nil
}

// check verifies that every task completed with sum 111*n and every step ran
// exactly once.
func (h *rounds) check(t *testing.T, want map[string]int, got map[string]*task.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d tasks finished, want %d", len(got), len(want))
	}
	for id, n := range want {
		r := got[id]
		if r == nil || r.Status != task.Completed {
			t.Fatalf("task %s (n=%d) = %s %s, want completed", id, n, summary(r), r.Error)
		}
		wantJSON(t, "result of "+id, r.Result, fmt.Sprintf(`{"sum":%d}`, 111*n))
		if len(r.IssuedKeys) != 2 || r.Step != 3 {
			t.Fatalf("task %s: keys %v step %d, want 2 keys, step 3", id, r.IssuedKeys, r.Step)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.runs) != 3*len(want) {
		t.Fatalf("%d distinct steps ran, want %d", len(h.runs), 3*len(want))
	}
	for key, n := range h.runs {
		if n != 1 {
			t.Fatalf("step %s ran %d times, want once", key, n)
		}
	}
}

func testRunnerInputRounds(t *testing.T, e *env) {
	h := newRounds()
	stop1 := startRunner(t, e.runner(h.handle, 10*time.Second))
	stop2 := startRunner(t, e.runner(h.handle, 10*time.Second))
	const n = 30
	want := map[string]int{}
	var ids []string
	for i := 1; i <= n; i++ {
		r := e.create(task.NewTask{Params: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		want[r.ID] = i
		ids = append(ids, r.ID)
	}
	got, err := drive(e.ctx, e.s, ids, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h.check(t, want, got)
	for _, stop := range []func() error{stop1, stop2} {
		if err := stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// testRunnerTakeover: a runner that stops while a step runs (and the
// handler honours the cancellation) releases the step's lease, so another
// runner takes it over at once; a runner whose handler ignores the
// cancellation (as good as killed) leaves it leased, and the step is taken
// over when the lease lapses.
func testRunnerTakeover(t *testing.T, e *env) {
	const lease = 20 * time.Second
	for _, tc := range []struct {
		name   string
		honour bool
	}{{"graceful stop releases the lease", true}, {"killed runner leaves it leased", false}} {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			unblock := make(chan struct{})
			defer close(unblock)
			stopping := e.runner(func(ctx context.Context, job *task.Job) (task.Outcome, error) {
				started <- struct{}{}
				if tc.honour {
					<-ctx.Done()
				} else {
					<-unblock // never returns while the runner stops
				}
				return task.Outcome{}, context.Cause(ctx)
			}, lease)
			// A handler that honours the cancellation returns at once
			// (a long timeout for a loaded machine); one that ignores it is cut short.
			stopping.ShutdownTimeout = 10 * time.Second
			if !tc.honour {
				stopping.ShutdownTimeout = 50 * time.Millisecond
				// Its handler returns when the subtest ends (unblock) and the
				// abandoned runner then logs that it discards the outcome: after
				// the test, so not into the test's output.
				stopping.Logger = slog.New(slog.DiscardHandler)
			}
			stopping.WorkerID = "stopping"
			stopA := startRunner(t, stopping)

			r := e.create(task.NewTask{})
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("first runner did not start the step")
			}
			err := stopA()
			left := e.wantStatus(r.ID, task.Working)
			if tc.honour {
				if err != nil || left.LeaseOwner != "" || left.Attempts != 1 {
					t.Fatalf("after a graceful stop: Run %v, lease %q, attempts %d; want nil, released, 1", err, left.LeaseOwner, left.Attempts)
				}
			} else if err == nil || !strings.HasPrefix(left.LeaseOwner, "stopping") || left.Attempts != 1 {
				t.Fatalf("after a kill: Run %v, lease %q, attempts %d; want an error, left leased, 1", err, left.LeaseOwner, left.Attempts)
			}

			var mu sync.Mutex
			var keys []string
			rescuer := e.runner(func(ctx context.Context, job *task.Job) (task.Outcome, error) {
				mu.Lock()
				keys = append(keys, job.IdempotencyKey())
				mu.Unlock()
				return task.Complete(json.RawMessage(fmt.Sprintf(`{"attempt":%d}`, job.Attempt()))), nil
			}, lease)
			startRunner(t, rescuer)
			if !tc.honour {
				time.Sleep(100 * time.Millisecond)
				if got := e.get(r.ID); got.Status != task.Working || got.Attempts != 1 {
					t.Fatalf("task taken over before its lease expired: %+v", got)
				}
				e.clock.Advance(lease + time.Second)
			}
			waitFor(t, 10*time.Second, "takeover", func() bool { return e.get(r.ID).Status.IsTerminal() })
			done := e.wantStatus(r.ID, task.Completed)
			wantJSON(t, "Result", done.Result, `{"attempt":2}`)
			mu.Lock()
			defer mu.Unlock()
			if len(keys) != 1 || keys[0] != r.ID+"/1" {
				t.Fatalf("rescuer ran %v, want one run of %s/1", keys, r.ID)
			}
		})
	}
}

func testRunnerCancel(t *testing.T, e *env) {
	var mu sync.Mutex
	causes := map[string]error{}
	started := make(chan string, 8)
	handler := func(ctx context.Context, job *task.Job) (task.Outcome, error) {
		switch job.Operation() {
		case "block":
			started <- job.ID()
			<-ctx.Done()
			mu.Lock()
			causes[job.ID()] = context.Cause(ctx)
			mu.Unlock()
			return task.Outcome{}, ctx.Err()
		case "error":
			return task.Outcome{}, errors.New("secret database password in error text")
		case "panic":
			panic("handler bug")
		case "reuse":
			if job.Step() == 1 {
				return task.NeedInput(json.RawMessage(`{"k":{}}`), nil), nil
			}
			return task.NeedInput(json.RawMessage(`{"k":{}}`), nil), nil
		case "fail":
			return task.Fail(json.RawMessage(`{"code":-32602,"message":"bad arguments"}`)), nil
		}
		return task.Outcome{}, nil // invalid outcome
	}
	// The heartbeat is 1s; the cancel event must make cancellation faster.
	stop := startRunner(t, e.runner(handler, 3*time.Second))

	blocked := e.create(task.NewTask{Operation: "block"})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("step did not start")
	}
	if _, err := e.s.RequestCancel(e.ctx, blocked.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "cancellation", func() bool { return e.get(blocked.ID).Status.IsTerminal() })
	e.wantStatus(blocked.ID, task.Cancelled)
	mu.Lock()
	if !errors.Is(causes[blocked.ID], task.ErrCancelRequested) {
		t.Fatalf("handler context cause = %v, want ErrCancelRequested", causes[blocked.ID])
	}
	mu.Unlock()

	tests := []struct {
		op     string
		status task.Status
		rpcErr string
	}{
		{"error", task.Failed, task.InternalErrorJSON},
		{"panic", task.Failed, task.InternalErrorJSON},
		{"invalid", task.Failed, task.InternalErrorJSON},
		{"reuse", task.Failed, task.InternalErrorJSON},
		{"fail", task.Failed, `{"code":-32602,"message":"bad arguments"}`},
	}
	ids := map[string]string{}
	for _, tc := range tests {
		ids[tc.op] = e.create(task.NewTask{Operation: tc.op}).ID
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			e := e.with(t)
			id := ids[tc.op]
			waitFor(t, 10*time.Second, tc.op+" task", func() bool {
				r := e.get(id)
				if r.Status == task.InputRequired {
					_ = answer(e.ctx, e.s, r)
					_, _ = e.s.SubmitInput(e.ctx, id, json.RawMessage(`{"k":1}`))
				}
				return r.Status.IsTerminal()
			})
			r := e.wantStatus(id, tc.status)
			wantJSON(t, "Error", r.Error, tc.rpcErr)
		})
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// gatedClaims holds the second Claim call until its gate is closed, and
// records the max of every call.
type gatedClaims struct {
	task.Store
	mu      sync.Mutex
	asked   []int
	entered chan struct{} // closed when the second call is held
	gate    chan struct{}
}

func (g *gatedClaims) Claim(ctx context.Context, worker string, lease time.Duration, max int, opts ...task.ClaimOptions) ([]*task.Record, error) {
	g.mu.Lock()
	g.asked = append(g.asked, max)
	n := len(g.asked)
	g.mu.Unlock()
	if n == 2 {
		close(g.entered)
		<-g.gate
	}
	return g.Store.Claim(ctx, worker, lease, max, opts...)
}

// testRunnerReleasesAhead: a runner of two workers frees a worker while its
// claim is in flight, so its next claim takes a step ahead of its free
// workers; when the runner stops, that step is released at once (not when
// its lease lapses, nor when the running steps have drained) and another
// runner runs it, while the running steps drain.
func testRunnerReleasesAhead(t *testing.T, e *env) {
	const lease = 20 * time.Second
	var ids []string
	gates := map[string]chan struct{}{}
	for range 5 {
		r := e.create(task.NewTask{})
		ids = append(ids, r.ID)
		gates[r.ID] = make(chan struct{})
		e.clock.Advance(time.Millisecond) // claimed in creation order
	}
	close(gates[ids[0]])
	started := make(chan string, 8)
	g := &gatedClaims{Store: e.s, entered: make(chan struct{}), gate: make(chan struct{})}
	a := e.runner(func(ctx context.Context, job *task.Job) (task.Outcome, error) {
		started <- job.ID()
		select {
		case <-gates[job.ID()]:
			return task.Complete(json.RawMessage(fmt.Sprintf(`{"attempt":%d}`, job.Attempt()))), nil
		case <-ctx.Done():
			return task.Outcome{}, context.Cause(ctx)
		}
	}, lease)
	a.Store, a.WorkerID = g, "a"
	a.MaxPartitionWorkers = 2         // all its tasks are in one partition
	a.PollInterval = 10 * time.Second // a step claimed ahead may wait (Lease/3 bounds it)
	a.ShutdownTimeout = 10 * time.Second
	stopA := startRunner(t, a)
	wantStarted := func(want ...string) {
		t.Helper()
		left := map[string]bool{}
		for _, id := range want {
			left[id] = true
		}
		for range want {
			select {
			case id := <-started:
				if !left[id] {
					t.Fatalf("step of %s started, want one of %v", id, want)
				}
				delete(left, id)
			case <-time.After(10 * time.Second):
				t.Fatalf("steps of %v did not start", want)
			}
		}
	}
	wantStarted(ids[0], ids[1])
	select {
	case <-g.entered: // the claim for the worker ids[0] freed is in flight
	case <-time.After(10 * time.Second):
		t.Fatal("no second claim")
	}
	close(gates[ids[1]])
	waitFor(t, 10*time.Second, "the second step's outcome", func() bool { return e.get(ids[1]).Status == task.Completed })
	// Its worker was freed before its outcome was stored, so the runner
	// counts it among the workers freed during the claim held at the gate
	// however the claim's return and the worker's release are scheduled.
	close(g.gate)
	wantStarted(ids[2], ids[3])
	last := ids[4]
	waitFor(t, 10*time.Second, "the last task claimed ahead", func() bool { return e.get(last).LeaseOwner == "a" })
	g.mu.Lock()
	asked := slices.Clone(g.asked)
	g.mu.Unlock()
	if len(asked) < 3 || asked[2] < 2 {
		t.Fatalf("claims asked for %v: want the third to ask beyond its one free worker", asked)
	}

	stopped := time.Now()
	stopErr := make(chan error, 1)
	go func() { stopErr <- stopA() }()
	waitFor(t, 10*time.Second, "the step claimed ahead released", func() bool { return e.get(last).LeaseOwner == "" })
	for _, id := range ids[2:4] {
		if r := e.get(id); r.LeaseOwner != "a" || r.Status != task.Working {
			t.Fatalf("running step %s while the runner stops: %s lease %q; want still running", id, r.Status, r.LeaseOwner)
		}
	}
	b := e.runner(func(ctx context.Context, job *task.Job) (task.Outcome, error) {
		return task.Complete(json.RawMessage(fmt.Sprintf(`{"attempt":%d}`, job.Attempt()))), nil
	}, lease)
	b.WorkerID = "b"
	startRunner(t, b)
	waitFor(t, 10*time.Second, "takeover of the step claimed ahead", func() bool { return e.get(last).Status.IsTerminal() })
	if d := time.Since(stopped); d >= lease {
		t.Fatalf("taken over %v after the stop, not before its lease (%v) lapsed", d, lease)
	}
	// Its first run: the claim handed back unrun is not an attempt.
	wantJSON(t, "Result of the step claimed ahead", e.wantStatus(last, task.Completed).Result, `{"attempt":1}`)
	select {
	case id := <-started:
		t.Fatalf("the stopping runner started %s", id)
	default:
	}
	close(gates[ids[2]])
	close(gates[ids[3]])
	if err := <-stopErr; err != nil {
		t.Fatalf("Run of the stopping runner: %v", err)
	}
	for _, id := range ids[2:4] {
		wantJSON(t, "Result of a drained step", e.wantStatus(id, task.Completed).Result, `{"attempt":1}`)
	}
}
