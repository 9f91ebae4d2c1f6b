package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/sqlitestore"
)

// The fair-share task rows (issue 25, D4): tenant B's task start latency
// alone, and while tenant A's backlog of fairFlood slow tasks waits.
const (
	fairFlood    = 2000                  // tenant A's tasks, created before B's
	fairVictims  = 50                    // tenant B's tasks, one at a time
	fairWorkers  = 16                    // TaskOptions.Workers
	fairStep     = 50 * time.Millisecond // one step of tenant A's tasks
	fairCreators = 16                    // tenant A's concurrent creators
)

// taskFairRow is tenant B's task start latency on one store, alone or
// behind tenant A's flood.
type taskFairRow struct {
	store    string
	flood    int // tenant A's tasks created before B's (0: B alone)
	n        int // tenant B's tasks
	p50, p99 time.Duration
	aLeft    int // tenant A's tasks not yet started when B's last one started
	note     string
}

// taskFairness measures the fair-share rows on SQLite and, when built with
// pgstore and PostgreSQL is reachable, on PostgreSQL: each store alone and
// with the flood, each run on a fresh store.
func taskFairness(ctx context.Context, cfg config) ([]taskFairRow, error) {
	dir, err := os.MkdirTemp("", "weft-bench-fair-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var rows []taskFairRow
	for i, flood := range []int{0, fairFlood} {
		sq, err := sqlitestore.Open(ctx, filepath.Join(dir, fmt.Sprintf("fair-%d.db", i)), &sqlitestore.Options{Synchronous: "NORMAL"})
		if err != nil {
			return nil, err
		}
		row, err := fairRun(ctx, "SQLite (task/sqlitestore, synchronous=NORMAL)", sq, flood)
		_ = sq.Close()
		if err != nil {
			return nil, fmt.Errorf("fair tasks, sqlite: %w", err)
		}
		logf("  %s, tenant A's backlog %d: tenant B's task start p50 %s, p99 %s (A's tasks left %d)", row.store, flood, us(row.p50), us(row.p99), row.aLeft)
		rows = append(rows, row)
	}
	for _, flood := range []int{0, fairFlood} {
		if openPG == nil {
			rows = append(rows, taskFairRow{store: pgStoreName, flood: flood, note: "skipped: benchload was built without -tags pgstore"})
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		pg, closePG, err := openPG(pctx, cfg.dsn)
		cancel()
		if err != nil {
			rows = append(rows, taskFairRow{store: pgStoreName, flood: flood, note: "skipped: PostgreSQL unreachable at " + redactDSN(cfg.dsn) + " (" + firstLine(err) + ")"})
			continue
		}
		row, err := fairRun(ctx, pgStoreName, pg, flood)
		closePG()
		if err != nil {
			return nil, fmt.Errorf("fair tasks, postgres: %w", err)
		}
		logf("  %s, tenant A's backlog %d: tenant B's task start p50 %s, p99 %s (A's tasks left %d)", row.store, flood, us(row.p50), us(row.p99), row.aLeft)
		rows = append(rows, row)
	}
	return rows, nil
}

// fairRun runs one row on st: a Weft server whose admission makes bearer
// token "alice" tenant A and "bob" tenant B; A creates flood tasks whose
// steps take fairStep each, then B creates fairVictims tasks one after the
// other, each once the previous one's step started. B's latency is from
// the start of its tools/call to the start of its step.
func fairRun(ctx context.Context, name string, st task.Store, flood int) (taskFairRow, error) {
	row := taskFairRow{store: name, flood: flood, n: fairVictims}
	tenants := map[string]weft.Identity{
		"alice": {Principal: "alice", Partition: "tenant-a"},
		"bob":   {Principal: "bob", Partition: "tenant-b"},
	}
	s, err := servers.NewWeftWith(weft.Options{Admission: func(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		id, ok := tenants[r.BearerToken]
		if !ok {
			return weft.Identity{}, &weft.AdmissionError{Status: 401, Message: "unknown token"}
		}
		return id, nil
	}, Tasks: &weft.TaskOptions{Store: st, Workers: fairWorkers, PollInterval: 50 * time.Millisecond,
		MaxTasksPerIdentity: max(flood, task.DefaultMaxTasksPerIdentity)}})
	if err != nil {
		return row, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = s.Shutdown(sctx)
	}()
	var (
		mu      sync.Mutex
		started = map[string]time.Time{} // tenant B's tasks by id
		signal  = make(chan struct{}, 1)
		aRan    atomic.Int64
	)
	err = weft.AddTool(s, weft.Tool{Name: "job", Description: "Runs as a task.", Task: weft.TaskRequired},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			if req.Identity.Partition == "tenant-a" {
				aRan.Add(1)
				select {
				case <-time.After(fairStep):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			} else {
				mu.Lock()
				started[req.Task().ID] = time.Now()
				mu.Unlock()
				select {
				case signal <- struct{}{}:
				default:
				}
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("done")}}, nil
		})
	if err != nil {
		return row, err
	}
	mux := http.NewServeMux()
	mux.Handle(servers.Path, s)
	params := `{"name":"job","arguments":{},"_meta":` + tasksMeta + `}`
	create := func(token string, id int64) (string, error) {
		c := servers.NewCall("tools/call", "job", params)
		c.Header.Set("Authorization", "Bearer "+token)
		w := servers.NewInProc(mux, c).Do(id)
		var resp servers.Response
		if err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil {
			return "", err
		}
		if resp.Result == nil || resp.Result.ResultType != "task" || resp.Result.TaskID == "" {
			return "", fmt.Errorf("tools/call did not create a task: HTTP %d %.300s", w.Code, w.Body.Bytes())
		}
		return resp.Result.TaskID, nil
	}

	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, fairCreators)
	for range fairCreators {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(flood) {
					return
				}
				if _, err := create("alice", i); err != nil {
					errs <- fmt.Errorf("tenant A: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return row, err
	default:
	}

	lat := make([]time.Duration, 0, fairVictims)
	for i := range fairVictims {
		t0 := time.Now()
		id, err := create("bob", int64(flood+1+i))
		if err != nil {
			return row, fmt.Errorf("tenant B: %w", err)
		}
		deadline := time.NewTimer(time.Minute)
		for {
			mu.Lock()
			at, ok := started[id]
			mu.Unlock()
			if ok {
				lat = append(lat, at.Sub(t0))
				break
			}
			select {
			case <-signal:
			case <-time.After(10 * time.Millisecond):
			case <-deadline.C:
				return row, fmt.Errorf("tenant B's task %s did not start within a minute (tenant A's backlog %d)", id, flood)
			case <-ctx.Done():
				return row, ctx.Err()
			}
		}
		deadline.Stop()
	}
	row.aLeft = max(0, flood-int(aRan.Load()))
	slices.Sort(lat)
	row.p50, row.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	return row, nil
}

// taskFairSection writes the "Tasks: a fair share per tenant" section.
func (r *report) taskFairSection(p func(format string, args ...any)) {
	p("## Tasks: a fair share per tenant\n\n")
	p("Tenant B's task start latency (from the start of its `tools/call` to the start of its task's step) on a Weft server with "+
		"tasks on (`Options.Tasks`; %d workers; a tenant's steps may take %d of them), alone and while tenant A's backlog waits: tenant A "+
		"(bearer token → partition `tenant-a`) first creates %d tasks from %d concurrent clients, each step taking %s; then "+
		"tenant B (partition `tenant-b`) creates %d tasks one after the other, each once the previous one's step started. Requests "+
		"are served in memory (`Server.ServeHTTP`). The last column shows that A's backlog was still waiting when B's last task "+
		"started: the store's claims serve the partitions round-robin, so B's task does not queue behind A's.\n\n",
		fairWorkers, task.DefaultPartitionWorkers(fairWorkers), fairFlood, fairCreators, fairStep, fairVictims)
	p("| store | tenant A's backlog | tenant B's tasks | B's task start p50 | p99 | A's tasks not yet started at the end |\n|---|---:|---:|---:|---:|---:|\n")
	for _, t := range r.taskFair {
		if t.note != "" {
			p("| %s | %d | – | – | – | %s |\n", t.store, t.flood, t.note)
			continue
		}
		p("| %s | %d | %d | %s | %s | %d |\n", t.store, t.flood, t.n, us(t.p50), us(t.p99), t.aLeft)
	}
	p("\n")
}

// taskFairFindings compare tenant B's latency with and without the flood.
func (r *report) taskFairFindings() []string {
	var fs []string
	for _, alone := range r.taskFair {
		if alone.note != "" || alone.flood != 0 {
			continue
		}
		if f, ok := find(r.taskFair, func(t taskFairRow) bool { return t.store == alone.store && t.flood > 0 && t.note == "" }); ok {
			fs = append(fs, fmt.Sprintf("%s: tenant B's task starts in %s (p50; p99 %s) behind tenant A's backlog of %d slow tasks, against %s (p99 %s) alone.",
				alone.store, us(f.p50), us(f.p99), f.flood, us(alone.p50), us(alone.p99)))
		}
	}
	return fs
}
