package sqlitestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/sqlitestore"
	"github.com/weftmcp/weft/task/storetest"
)

func open(t testing.TB, path string, opts sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path, &opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) task.Store {
		return open(t, filepath.Join(t.TempDir(), "tasks.db"), sqlitestore.Options{Now: now})
	})
}

// TestTwoHandlesOneFile acts as two processes sharing one database file:
// claims stay exclusive across them and each sees the other's writes.
func TestTwoHandlesOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := open(t, path, sqlitestore.Options{Table: "shared"})
	b := open(t, path, sqlitestore.Options{Table: "shared"})
	ctx := t.Context()
	const n = 60
	for range n {
		if _, err := a.Create(ctx, task.NewTask{Operation: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for i, s := range []task.Store{a, b, a, b} {
		wg.Go(func() {
			for {
				rs, err := s.Claim(ctx, "w", time.Minute, 1+i)
				if err != nil {
					t.Errorf("claimer %d: %v", i, err)
					return
				}
				if len(rs) == 0 {
					return
				}
				for _, r := range rs {
					mu.Lock()
					seen[r.ID]++
					mu.Unlock()
					if _, err := s.Finish(ctx, r.ID, r.Fence, task.Complete(json.RawMessage(`{}`))); err != nil {
						t.Errorf("finish: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d tasks, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("task %s claimed %d times", id, c)
		}
		if r, err := b.Get(ctx, id); err != nil || r.Status != task.Completed {
			t.Fatalf("Get via the other handle = %v, %v", r, err)
		}
	}
}

func TestReopenKeepsTasks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "persist.db")
	s, err := sqlitestore.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Create(t.Context(), task.NewTask{Operation: "x", Params: json.RawMessage(`{"a":1}`), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), r.ID); !errors.Is(err, task.ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	s2 := open(t, path, sqlitestore.Options{})
	got, err := s2.Get(t.Context(), r.ID)
	if err != nil || string(got.Params) != `{"a":1}` || !got.ExpiresAt.Equal(r.ExpiresAt) || !got.CreatedAt.Equal(r.CreatedAt) {
		t.Fatalf("after reopen: %+v, %v; want %+v", got, err, r)
	}
}

func TestOpenInvalid(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		path    string
		opts    sqlitestore.Options
		invalid bool // the error is task.ErrInvalid
	}{
		{"empty path", "", sqlitestore.Options{}, true},
		{"memory", ":memory:", sqlitestore.Options{}, true},
		{"uri", "file:x.db", sqlitestore.Options{}, true},
		{"query", filepath.Join(dir, "x.db?mode=ro"), sqlitestore.Options{}, true},
		{"bad table", filepath.Join(dir, "x.db"), sqlitestore.Options{Table: "drop table;"}, true},
		{"bad synchronous", filepath.Join(dir, "x.db"), sqlitestore.Options{Synchronous: "OFF"}, true},
		{"missing dir", filepath.Join(dir, "no", "such", "dir", "x.db"), sqlitestore.Options{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlitestore.Open(t.Context(), tc.path, &tc.opts)
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open succeeded, want error")
			}
			if errors.Is(err, task.ErrInvalid) != tc.invalid {
				t.Errorf("Open = %v; want ErrInvalid %v", err, tc.invalid)
			}
		})
	}
}

// TestLoad: 1,000 tasks from 50 client goroutines, one input round each,
// 4 runners spread over two handles on the same file.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped in -short mode")
	}
	// synchronous=NORMAL: this test is about concurrency, not about fsync
	// latency (see the benchmark for FULL).
	path := filepath.Join(t.TempDir(), "load.db")
	a := open(t, path, sqlitestore.Options{Synchronous: "NORMAL"})
	b := open(t, path, sqlitestore.Options{Synchronous: "NORMAL"})
	storetest.RunLoad(t, []task.Store{a, b}, loadConfig())
}

func BenchmarkCreateToComplete(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run("synchronous="+sync, func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{Synchronous: sync})
			storetest.Bench(b, s, 4)
		})
	}
}

// loadConfig is the full 1,000-task load, shrunk under the race detector
// (whose instrumentation slows the drivers down many times over).
func loadConfig() storetest.LoadConfig {
	if storetest.RaceEnabled {
		return storetest.LoadConfig{Tasks: 250, Creators: 25}
	}
	return storetest.LoadConfig{Tasks: 1000, Creators: 50, Runners: 4}
}
