package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/pgstore"
	"github.com/weftmcp/weft/task/storetest"
)

func open(t testing.TB, dsn string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), dsn, &opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	dsn := testpg.Reachable(t)
	storetest.Run(t, func(t *testing.T, now func() time.Time) task.Store {
		return open(t, dsn, pgstore.Options{Schema: testpg.FreshSchema(t, dsn, "weft_test"), Now: now})
	})
}

// TestTwoInstances runs the suite's runner scenarios with clients on one
// instance and events crossing to another through LISTEN/NOTIFY.
func TestTwoInstancesNotify(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "weft_test")
	a := open(t, dsn, pgstore.Options{Schema: schema})
	b := open(t, dsn, pgstore.Options{Schema: schema})
	other := open(t, dsn, pgstore.Options{Schema: schema, Prefix: "other_"})
	ctx := t.Context()
	onB, err := b.Subscribe(ctx, task.ChannelRunnable)
	if err != nil {
		t.Fatal(err)
	}
	onOther, err := other.Subscribe(ctx, task.ChannelRunnable)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Create(ctx, task.NewTask{Operation: "x"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-onB:
		if id != r.ID {
			t.Fatalf("instance b heard %q, want %q", id, r.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("instance b did not hear the creation on instance a")
	}
	if got, err := b.Claim(ctx, "w", time.Minute, 2); err != nil || len(got) != 1 || got[0].ID != r.ID {
		t.Fatalf("claim on b = %d tasks, %v; want %s", len(got), err, r.ID)
	}
	select {
	case id := <-onOther:
		t.Fatalf("a store with another prefix heard %q", id)
	case <-time.After(200 * time.Millisecond):
	}
	if err := a.Publish(ctx, "x", strings.Repeat("p", pgstore.MaxPayload)); err == nil {
		t.Fatal("Publish of an oversized payload succeeded")
	}
}

func TestOpenInvalid(t *testing.T) {
	tests := []struct {
		name string
		dsn  string
		opts pgstore.Options
	}{
		{"bad prefix", testpg.DefaultDSN, pgstore.Options{Prefix: "Robert'); DROP"}},
		{"bad schema", testpg.DefaultDSN, pgstore.Options{Schema: "a.b"}},
		{"bad dsn", "postgres://%zz", pgstore.Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := pgstore.Open(t.Context(), tc.dsn, &tc.opts); err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded, want error")
			}
		})
	}
}

func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped in -short mode")
	}
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "weft_test")
	a := open(t, dsn, pgstore.Options{Schema: schema})
	b := open(t, dsn, pgstore.Options{Schema: schema})
	storetest.RunLoad(t, []task.Store{a, b}, loadConfig())
}

func BenchmarkCreateToComplete(b *testing.B) {
	dsn := testpg.Reachable(b)
	s := open(b, dsn, pgstore.Options{Schema: testpg.FreshSchema(b, dsn, "weft_test")})
	storetest.Bench(b, s, 4)
}

// loadConfig is the full 1,000-task load, shrunk under the race detector
// (whose instrumentation slows the drivers down many times over).
func loadConfig() storetest.LoadConfig {
	if storetest.RaceEnabled {
		return storetest.LoadConfig{Tasks: 250, Creators: 25}
	}
	return storetest.LoadConfig{Tasks: 1000, Creators: 50, Runners: 4}
}

func TestClosed(t *testing.T) {
	dsn := testpg.Reachable(t)
	s := open(t, dsn, pgstore.Options{Schema: testpg.FreshSchema(t, dsn, "weft_test")})
	sub, err := s.Subscribe(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-sub; ok {
		t.Fatal("subscription still open after Close")
	}
	calls := map[string]error{}
	_, calls["Get"] = s.Get(t.Context(), "x")
	_, calls["Create"] = s.Create(t.Context(), task.NewTask{Operation: "x"})
	_, calls["Claim"] = s.Claim(t.Context(), "w", time.Minute, 1)
	calls["Publish"] = s.Publish(t.Context(), "x", "y")
	_, calls["Subscribe"] = s.Subscribe(t.Context(), "x")
	for name, err := range calls {
		if !errors.Is(err, task.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestListenerReconnects kills the listening backend; the store reconnects
// and events flow again.
func TestListenerReconnects(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "weft_test")
	s := open(t, dsn, pgstore.Options{Schema: schema, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	ctx := t.Context()
	sub, err := s.Subscribe(ctx, "ping")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	tag, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query = $1`, "LISTEN "+pgx.Identifier{s.NotifyChannel()}.Sanitize())
	if err != nil || tag.RowsAffected() == 0 {
		t.Fatalf("terminate listener: %v (%d rows)", err, tag.RowsAffected())
	}
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		// As another instance would: s delivers its own events in process,
		// so only a foreign one shows that its listener hears again.
		want := "p" + strconv.Itoa(i)
		if _, err := admin.Exec(ctx, `SELECT pg_notify($1, $2)`, s.NotifyChannel(), "0123456789abcdef\nping\n"+want); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-sub:
			if strings.HasPrefix(got, "p") {
				return // events flow again
			}
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no events after the listener was killed")
		}
	}
}

// TestOwnEventsOnce: a Store delivers its own changes to its subscribers in
// process, and its listener does not deliver them a second time when they
// come back from PostgreSQL; another instance hears each once.
func TestOwnEventsOnce(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "weft_test")
	a := open(t, dsn, pgstore.Options{Schema: schema})
	b := open(t, dsn, pgstore.Options{Schema: schema})
	ctx := t.Context()
	onA, err := a.Subscribe(ctx, task.ChannelChanged)
	if err != nil {
		t.Fatal(err)
	}
	onB, err := b.Subscribe(ctx, task.ChannelChanged)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	var ids []string
	for range n {
		r, err := a.Create(ctx, task.NewTask{Operation: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	for name, ch := range map[string]<-chan string{"a": onA, "b": onB} {
		seen := map[string]int{}
		for range n {
			select {
			case id := <-ch:
				seen[id]++
			case <-time.After(10 * time.Second):
				t.Fatalf("instance %s heard %d of %d creations", name, len(seen), n)
			}
		}
		// b heard them from PostgreSQL: a's own copies, had its listener
		// delivered them, would have come by now too.
		select {
		case id := <-ch:
			t.Fatalf("instance %s heard %s again (after %v)", name, id, seen)
		case <-time.After(300 * time.Millisecond):
		}
		for _, id := range ids {
			if seen[id] != 1 {
				t.Fatalf("instance %s heard %v, want each of %v once", name, seen, ids)
			}
		}
	}
}

// TestGroupedUpdatesOfOneTask: concurrent read-modify-writes of the same
// task, which a committer may put in one transaction, apply one after the
// other: every SubmitInput counts once and the last status message wins
// only over the earlier ones.
func TestGroupedUpdatesOfOneTask(t *testing.T) {
	dsn := testpg.Reachable(t)
	s := open(t, dsn, pgstore.Options{Schema: testpg.FreshSchema(t, dsn, "weft_test")})
	ctx := t.Context()
	r, err := s.Create(ctx, task.NewTask{Operation: "x"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := s.Claim(ctx, "w", time.Minute, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("Claim = %d, %v", len(claimed), err)
	}
	const keys = 16
	reqs := map[string]any{}
	for i := range keys {
		reqs["k"+strconv.Itoa(i)] = map[string]any{"method": "elicitation/create"}
	}
	rb, _ := json.Marshal(reqs)
	if _, err := s.Finish(ctx, r.ID, claimed[0].Fence, task.NeedInput(rb, nil)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var changed atomic.Int32
	for i := range keys {
		wg.Go(func() {
			ok, err := s.SubmitInput(ctx, r.ID, json.RawMessage(`{"k`+strconv.Itoa(i)+`":{"action":"accept"}}`))
			if err != nil {
				t.Errorf("SubmitInput: %v", err)
			}
			if ok {
				changed.Add(1)
			}
		})
	}
	wg.Wait()
	got, err := s.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var resps map[string]json.RawMessage
	if err := json.Unmarshal(got.InputResponses, &resps); err != nil {
		t.Fatalf("input responses %s: %v", got.InputResponses, err)
	}
	if changed.Load() != keys || len(resps) != keys || got.Status != task.Working || len(got.InputRequests) != 0 {
		t.Fatalf("%d changed, %d responses, status %s, outstanding %s; want %d, %d, working, none",
			changed.Load(), len(resps), got.Status, got.InputRequests, keys, keys)
	}
}

// TestFleetNoisyNeighbour: two instances share the table, each with its
// own runner. Tenant A's backlog of steps that do not end (until the test
// ends) is queued before tenant B's task, created on one instance; B's
// task completes (on either instance): each runner keeps workers free of
// A's steps and claims round-robin across partitions, and the runners'
// claims never wait on one another's locks (issue 25, D4).
func TestFleetNoisyNeighbour(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "weft_test")
	ctx := t.Context()
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	var aRunning, aPeak atomic.Int64
	h := func(ctx context.Context, job *task.Job) (task.Outcome, error) {
		if job.Owner().Partition == "tenant-a" {
			n := aRunning.Add(1)
			defer aRunning.Add(-1)
			for p := aPeak.Load(); n > p && !aPeak.CompareAndSwap(p, n); p = aPeak.Load() {
			}
			select {
			case <-release:
			case <-ctx.Done():
				return task.Outcome{}, context.Cause(ctx)
			}
		}
		return task.Complete(json.RawMessage(`{}`)), nil
	}
	stores := []*pgstore.Store{open(t, dsn, pgstore.Options{Schema: schema}), open(t, dsn, pgstore.Options{Schema: schema})}
	for range 200 {
		if _, err := stores[0].Create(ctx, task.NewTask{Owner: task.Owner{Principal: "alice", Partition: "tenant-a"}, Operation: "flood"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { unblock(); stop(); wg.Wait() }()
	for i, st := range stores {
		r := &task.Runner{Store: st, Handler: h, Workers: 4, Lease: 30 * time.Second, PollInterval: 50 * time.Millisecond,
			ShutdownTimeout: 5 * time.Second, SweepInterval: -1, WorkerID: "instance-" + strconv.Itoa(i),
			Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
		wg.Go(func() {
			if err := r.Run(rctx); err != nil {
				t.Errorf("runner %d: %v", i, err)
			}
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for aRunning.Load() < 2*int64(task.DefaultPartitionWorkers(4)) {
		if time.Now().After(deadline) {
			t.Fatalf("tenant A runs %d steps, want %d (its bound on each instance)", aRunning.Load(), 2*task.DefaultPartitionWorkers(4))
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, err := stores[1].Create(ctx, task.NewTask{Owner: task.Owner{Principal: "bob", Partition: "tenant-b"}, Operation: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		got, err := stores[0].Get(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == task.Completed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant B's task is %s (lease %q) while tenant A's backlog waits; want completed", got.Status, got.LeaseOwner)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p, want := aPeak.Load(), int64(2*task.DefaultPartitionWorkers(4)); p > want {
		t.Fatalf("tenant A ran %d steps at once across the fleet, want at most %d", p, want)
	}
}
