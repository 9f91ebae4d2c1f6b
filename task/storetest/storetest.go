// Package storetest is the conformance suite for task.Store implementations.
//
// A store's test calls Run with a Factory that opens a fresh, empty store on
// the given clock and registers its cleanup:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, now func() time.Time) task.Store {
//			s := task.NewMemoryStore(&task.MemoryOptions{Now: now})
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run checks the store contract (create/get, claims and leases, fencing, the
// input flow, cancellation in every state, TTL expiry and purge, status
// messages, notifications) and drives Runners over the store. RunLoad and
// Bench are a bounded load test and a create-to-complete benchmark.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
)

// Factory opens a fresh, empty store whose clock is now, and registers its
// Close (and any other cleanup) with t.Cleanup.
type Factory func(t *testing.T, now func() time.Time) task.Store

// Clock is a controllable clock: real time plus an offset that tests advance
// to make leases and TTLs lapse without sleeping. It is safe for concurrent
// use.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns time.Now() plus the accumulated offset.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// env is one subtest's store and clock.
type env struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	s     task.Store
}

func newEnv(t *testing.T, f Factory) *env {
	t.Helper()
	c := &Clock{}
	return &env{t: t, ctx: t.Context(), clock: c, s: f(t, c.Now)}
}

// with returns a copy of e reporting to t (for subtests).
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t, c.ctx = t, t.Context()
	return &c
}

// Run runs the conformance suite against stores made by newStore; every
// subtest gets its own store.
func Run(t *testing.T, newStore Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"CreateGet", testCreateGet},
		{"CreateInvalid", testCreateInvalid},
		{"NotFound", testNotFound},
		{"ClaimSkipsUnrunnable", testClaimSkipsUnrunnable},
		{"ClaimBatch", testClaimBatch},
		{"ClaimExclusive", testClaimExclusive},
		{"ClaimManyExclusive", testClaimManyExclusive},
		{"LeaseExpiryReclaim", testLeaseExpiryReclaim},
		{"RenewExtendsLease", testRenewExtendsLease},
		{"Release", testRelease},
		{"Unclaim", testUnclaim},
		{"FinishOutcomes", testFinishOutcomes},
		{"FinishInvalid", testFinishInvalid},
		{"InputFlow", testInputFlow},
		{"InputInvalid", testInputInvalid},
		{"Cancel", testCancel},
		{"ExpireAndPurge", testExpireAndPurge},
		{"StatusMessage", testStatusMessage},
		{"Notifications", testNotifications},
		{"Bus", testBus},
		{"RunnerInputRounds", testRunnerInputRounds},
		{"RunnerTakeover", testRunnerTakeover},
		{"RunnerCancel", testRunnerCancel},
		{"RunnerReleasesAhead", testRunnerReleasesAhead},
		{"ClaimFairAcrossPartitions", testClaimFairAcrossPartitions},
		{"LiveQuota", testLiveQuota},
		{"RunnerNoisyNeighbour", testRunnerNoisyNeighbour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newEnv(t, newStore))
		})
	}
}

// --- helpers ---

func (e *env) create(spec task.NewTask) *task.Record {
	e.t.Helper()
	if spec.Operation == "" {
		spec.Operation = "op"
	}
	r, err := e.s.Create(e.ctx, spec)
	if err != nil {
		e.t.Fatalf("Create: %v", err)
	}
	return r
}

func (e *env) get(id string) *task.Record {
	e.t.Helper()
	r, err := e.s.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

func (e *env) claim(worker string, lease time.Duration) *task.Record {
	e.t.Helper()
	rs, err := e.s.Claim(e.ctx, worker, lease, 1)
	if err != nil {
		e.t.Fatalf("Claim: %v", err)
	}
	switch len(rs) {
	case 0:
		return nil
	case 1:
		return rs[0]
	}
	e.t.Fatalf("Claim with max 1 returned %d tasks", len(rs))
	return nil
}

// claimID claims and requires that the claimed task is id.
func (e *env) claimID(id, worker string, lease time.Duration) *task.Record {
	e.t.Helper()
	r := e.claim(worker, lease)
	if r == nil || r.ID != id {
		e.t.Fatalf("Claim = %v, want task %s", summary(r), id)
	}
	return r
}

func (e *env) noClaim() {
	e.t.Helper()
	if r := e.claim("nobody", time.Minute); r != nil {
		e.t.Fatalf("Claim = %s, want nothing claimable", summary(r))
	}
}

func (e *env) finish(r *task.Record, out task.Outcome) *task.Record {
	e.t.Helper()
	got, err := e.s.Finish(e.ctx, r.ID, r.Fence, out)
	if err != nil {
		e.t.Fatalf("Finish(%s, %s): %v", r.ID, out.Status, err)
	}
	return got
}

func (e *env) submit(id, responses string) bool {
	e.t.Helper()
	changed, err := e.s.SubmitInput(e.ctx, id, json.RawMessage(responses))
	if err != nil {
		e.t.Fatalf("SubmitInput(%s, %s): %v", id, responses, err)
	}
	return changed
}

func (e *env) wantStatus(id string, want task.Status) *task.Record {
	e.t.Helper()
	r := e.get(id)
	if r.Status != want {
		e.t.Fatalf("task %s status = %s, want %s", id, r.Status, want)
	}
	return r
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error = %v, want %v", what, err, want)
	}
}

func summary(r *task.Record) string {
	if r == nil {
		return "<nil>"
	}
	return r.ID + " (" + string(r.Status) + ")"
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func wantJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Fatalf("%s = %s, want none", what, got)
		}
		return
	}
	if !jsonEqual(got, []byte(want)) {
		t.Fatalf("%s = %s, want %s", what, got, want)
	}
}

// runner returns a Runner over the env's store with test-friendly timing.
func (e *env) runner(h task.Handler, lease time.Duration) *task.Runner {
	return &task.Runner{
		Store:           e.s,
		Handler:         h,
		Workers:         2,
		Lease:           lease,
		PollInterval:    20 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second,
		SweepInterval:   -1,
		Now:             e.clock.Now,
		Logger:          testLogger(e.t),
	}
}

// testLogger returns a logger writing to t's output (shown on failure or
// with -v).
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// startRunner runs r until the returned stop function is called; stop waits
// for Run to return and reports its error.
func startRunner(t *testing.T, r *task.Runner) (stop func() error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// waitFor polls cond every few milliseconds until it holds or timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
