package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/sqlitestore"
)

// openPG opens the PostgreSQL task store in a fresh schema of the database
// at dsn and returns it with a function that closes it and drops the schema;
// nil unless built with -tags pgstore (tasks_pg.go).
var openPG func(ctx context.Context, dsn string) (task.Store, func(), error)

const pgStoreName = "PostgreSQL (task/pgstore)"

var tasksMeta = servers.Meta(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)

// taskCheckers is how many goroutines turn change events into tasks/get
// reads.
const taskCheckers = 4

// weftTasks measures load on a Weft server with tasks on st: clients
// create tasks through tools/call (the tool answers RunAsTask; the runner,
// workers wide, runs the step, which completes) and a task counts as done
// when tasks/get reads it as completed. Completion is noticed through the
// store's change events (as Weft's own notifications/tasks are), each read
// by one of taskCheckers goroutines; a task not seen completed for
// stragglerAge is re-read once per stragglerAge.
func weftTasks(ctx context.Context, name string, st task.Store, load taskLoad) (taskRow, error) {
	row := taskRow{system: "Weft", store: name}
	s, err := servers.NewWeftWith(weft.Options{Tasks: &weft.TaskOptions{Store: st, Workers: load.workers,
		MaxTasksPerIdentity: max(load.n, task.DefaultMaxTasksPerIdentity), MaxTasksPerPartition: max(load.n, task.DefaultMaxTasksPerPartition)}})
	if err != nil {
		return row, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(sctx)
	}()
	err = weft.AddTool(s, weft.Tool{Name: "job", Description: "Completes as a task.", Task: weft.TaskRequired},
		func(ctx context.Context, req *weft.Request, in servers.EchoArgs) (servers.EchoOut, error) {
			if req.Task() == nil {
				return servers.EchoOut{}, weft.RunAsTask(nil)
			}
			return servers.EchoOut(in), nil
		})
	if err != nil {
		return row, err
	}
	mux := http.NewServeMux()
	mux.Handle(servers.Path, s)

	wctx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	events, err := st.Subscribe(wctx, task.ChannelChanged)
	if err != nil {
		return row, err
	}
	tr := newTracker(load.n)
	get := func(id string) {
		if tr.isDone(id) {
			return
		}
		c := servers.NewCall("tasks/get", id, `{"taskId":"`+id+`","_meta":`+tasksMeta+`}`)
		w := servers.NewInProc(mux, c).Do(1)
		var resp servers.Response
		if err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil {
			tr.fail(err)
			return
		}
		if resp.Result == nil {
			tr.fail(fmt.Errorf("tasks/get: HTTP %d %s", w.Code, w.Body.Bytes()))
			return
		}
		switch resp.Result.Status {
		case "completed":
			tr.complete(id, time.Now())
		case "working":
		default:
			tr.fail(fmt.Errorf("task %s is %s", id, resp.Result.Status))
		}
	}
	queue := make(chan string, 4*load.n+1024)
	go func() {
		for id := range events {
			select {
			case queue <- id:
			default: // the straggler poll reads it
			}
		}
	}()
	for range taskCheckers {
		go func() {
			for {
				select {
				case <-wctx.Done():
					return
				case id := <-queue:
					get(id)
				}
			}
		}()
	}
	go pollStragglers(wctx, tr, get)

	call := servers.NewCall("tools/call", "job", `{"name":"job","arguments":{"text":"hello, bench","count":3},"_meta":`+tasksMeta+`}`)
	wall, err := drive(ctx, load, tr, func(ctx context.Context) (string, error) {
		w := servers.NewInProc(mux, call).Do(1)
		var resp servers.Response
		if err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil {
			return "", err
		}
		if resp.Result == nil || resp.Result.ResultType != "task" || resp.Result.TaskID == "" {
			return "", fmt.Errorf("tools/call did not create a task: HTTP %d %s", w.Code, w.Body.Bytes())
		}
		return resp.Result.TaskID, nil
	})
	if err != nil {
		return row, err
	}
	row.fill(load, wall, tr)
	return row, nil
}

// taskRates runs the SQLite rows, and, when PostgreSQL is reachable, the
// pgstore rows and River's on the same database, each at light and heavy
// load.
func taskRates(ctx context.Context, cfg config) ([]taskRow, error) {
	loads := []taskLoad{{name: "light", n: cfg.taskLight, clients: 1, workers: cfg.taskWorkers[0], closed: true}}
	for _, w := range cfg.taskWorkers {
		loads = append(loads, taskLoad{name: "heavy", n: cfg.tasks, clients: cfg.taskClients, workers: w})
	}
	var rows []taskRow
	dir, err := os.MkdirTemp("", "weft-bench-tasks-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, sync := range []string{"FULL", "NORMAL"} {
		for i, load := range loads {
			if !cfg.taskSystems["sqlite"] {
				break
			}
			sq, err := sqlitestore.Open(ctx, filepath.Join(dir, fmt.Sprintf("tasks-%s-%d.db", sync, i)), &sqlitestore.Options{Synchronous: sync})
			if err != nil {
				return nil, err
			}
			row, err := weftTasks(ctx, "SQLite (task/sqlitestore, temp file, synchronous="+sync+")", sq, load)
			_ = sq.Close()
			if err != nil {
				return nil, fmt.Errorf("sqlite %s: %w", load.name, err)
			}
			logf("  %s, %s, %d workers: %.0f tasks/s, p50 %s", row.store, row.load, row.workers, row.rate, us(row.p50))
			rows = append(rows, row)
		}
	}

	// Weft on PostgreSQL and River alternate, run by run, so that both see
	// the same machine conditions. A heavy load is run pgRuns times and
	// each system's row is its run of median throughput: at heavy load the
	// rate moves with the shared disk from one run to the next.
	for _, load := range loads {
		runs := 1
		if load.name == "heavy" {
			runs = pgRuns(cfg)
		}
		var weftRuns []taskRow
		riverRuns := make([][]taskRow, len(riverConfigs))
		for range runs {
			if cfg.taskSystems["pg"] {
				row, err := weftPG(ctx, cfg, load)
				if err != nil {
					return nil, err
				}
				if row.note == "" {
					logf("  %s, %s, %d workers: %.0f tasks/s, p50 %s", row.store, row.load, row.workers, row.rate, us(row.p50))
				}
				weftRuns = append(weftRuns, row)
			}
			for i, rc := range riverConfigs {
				if !cfg.taskSystems["river"] && !(cfg.taskSystems["river-fast"] && rc.fetchCooldown > 0) {
					continue
				}
				row, err := riverTasks(ctx, cfg.dsn, rc, load)
				if err != nil {
					return nil, fmt.Errorf("river %s: %w", load.name, err)
				}
				logf("  %s, %s, %d workers: %.0f tasks/s, p50 %s", row.store, row.load, row.workers, row.rate, us(row.p50))
				riverRuns[i] = append(riverRuns[i], row)
			}
		}
		if len(weftRuns) > 0 {
			rows = append(rows, medianRun(weftRuns))
		}
		for _, rs := range riverRuns {
			if len(rs) > 0 {
				rows = append(rows, medianRun(rs))
			}
		}
	}
	return rows, nil
}

// pgRuns is how many times a heavy load runs on PostgreSQL.
func pgRuns(cfg config) int { return max(1, cfg.rounds) }

// medianRun is the run of median throughput (the lower middle of an even
// count), with how many runs it was chosen from; a skipped system's row
// as it is.
func medianRun(rs []taskRow) taskRow {
	if rs[0].note != "" {
		return rs[0]
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b taskRow) int { return cmp.Compare(a.rate, b.rate) })
	r := rs[(len(rs)-1)/2]
	r.runs = len(rs)
	return r
}

// weftPG measures load on task/pgstore in a fresh schema; a row with a note
// when the store is not built in or PostgreSQL is unreachable.
func weftPG(ctx context.Context, cfg config, load taskLoad) (taskRow, error) {
	if openPG == nil {
		return taskRow{system: "Weft", store: pgStoreName, load: load.name, note: "skipped: benchload was built without -tags pgstore"}, nil
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	pg, closePG, err := openPG(pctx, cfg.dsn)
	cancel()
	if err != nil {
		return taskRow{system: "Weft", store: pgStoreName, load: load.name,
			note: "skipped: PostgreSQL unreachable at " + redactDSN(cfg.dsn) + " (" + firstLine(err) + ")"}, nil
	}
	defer closePG()
	row, err := weftTasks(ctx, pgStoreName, pg, load)
	if err != nil {
		return row, fmt.Errorf("postgres %s: %w", load.name, err)
	}
	return row, nil
}

func firstLine(err error) string {
	s := err.Error()
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// redactDSN drops a password from a postgres:// DSN.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	return u.String()
}
