package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/sqlitestore"
)

// openPG opens the PostgreSQL task store; nil unless built with -tags
// pgstore (tasks_pg.go).
var openPG func(ctx context.Context, dsn string) (task.Store, error)

// taskRow is the create-to-complete measurement of one store.
type taskRow struct {
	store    string
	n        int
	wall     time.Duration
	rate     float64 // tasks per second
	p50, p99 time.Duration
	note     string
}

var tasksMeta = servers.Meta(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)

// taskRate creates n tasks through tools/call (the tool answers RunAsTask,
// the runner completes it on its next step) from conc clients, and waits
// for every one to read as completed through tasks/get. Completion is
// noticed through the store's change events (a subscription, as Weft's own
// notifications/tasks are), with a 50 ms polling fallback.
func taskRate(ctx context.Context, name string, st task.Store, n, conc int) (taskRow, error) {
	row := taskRow{store: name, n: n}
	s, err := servers.NewWeft()
	if err != nil {
		return row, err
	}
	if err := s.EnableTasks(weft.TaskOptions{Store: st, PollInterval: 50 * time.Millisecond}); err != nil {
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
				return servers.EchoOut{}, weft.RunAsTask(exactjson.Value{})
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
	var (
		mu      sync.Mutex
		created = map[string]time.Time{}
		done    = map[string]time.Duration{}
		allDone = make(chan struct{})
	)
	get := func(id string) (string, error) {
		c := servers.NewCall("tasks/get", id, `{"taskId":"`+id+`","_meta":`+tasksMeta+`}`)
		w := servers.NewInProc(mux, c).Do(1)
		var resp servers.Response
		if err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil {
			return "", err
		}
		if resp.Result == nil {
			return "", fmt.Errorf("tasks/get: HTTP %d %s", w.Code, w.Body.Bytes())
		}
		return resp.Result.Status, nil
	}
	var waitErr atomic.Pointer[error]
	check := func(id string) {
		mu.Lock()
		t0, ok := created[id]
		_, finished := done[id]
		mu.Unlock()
		if !ok || finished {
			return
		}
		status, err := get(id)
		if err != nil {
			waitErr.CompareAndSwap(nil, &err)
			return
		}
		switch status {
		case "completed":
			mu.Lock()
			if _, dup := done[id]; !dup {
				done[id] = time.Since(t0)
				if len(done) == n {
					close(allDone)
				}
			}
			mu.Unlock()
		case "working":
		default:
			err := fmt.Errorf("task %s is %s", id, status)
			waitErr.CompareAndSwap(nil, &err)
		}
	}
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case id := <-events:
				check(id)
			case <-tick.C:
				mu.Lock()
				var pending []string
				for id := range created {
					if _, ok := done[id]; !ok {
						pending = append(pending, id)
					}
				}
				mu.Unlock()
				for _, id := range pending {
					check(id)
				}
			}
		}
	}()

	call := servers.NewCall("tools/call", "job", `{"name":"job","arguments":{"text":"hello, bench","count":3},"_meta":`+tasksMeta+`}`)
	var next atomic.Int64
	var createErr atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			p := servers.NewInProc(mux, call)
			for {
				i := next.Add(1)
				if i > int64(n) || createErr.Load() != nil {
					return
				}
				t0 := time.Now()
				w := p.Do(i)
				var resp servers.Response
				err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp)
				if err == nil && (resp.Result == nil || resp.Result.ResultType != "task" || resp.Result.TaskID == "") {
					err = fmt.Errorf("tools/call did not create a task: HTTP %d %s", w.Code, w.Body.Bytes())
				}
				if err != nil {
					createErr.CompareAndSwap(nil, &err)
					return
				}
				mu.Lock()
				created[resp.Result.TaskID] = t0
				mu.Unlock()
				// The completion event may have come before the id was known.
				go check(resp.Result.TaskID)
			}
		})
	}
	wg.Wait()
	if p := createErr.Load(); p != nil {
		return row, *p
	}
	timeout := time.NewTimer(5 * time.Minute)
	defer timeout.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for waiting := true; waiting; {
		select {
		case <-allDone:
			waiting = false
		case <-poll.C:
			if p := waitErr.Load(); p != nil {
				return row, *p
			}
		case <-timeout.C:
			mu.Lock()
			k := len(done)
			mu.Unlock()
			return row, fmt.Errorf("only %d of %d tasks completed within 5 minutes", k, n)
		case <-ctx.Done():
			return row, ctx.Err()
		}
	}
	row.wall = time.Since(start)
	row.rate = float64(n) / row.wall.Seconds()
	lat := make([]time.Duration, 0, n)
	mu.Lock()
	for _, d := range done {
		lat = append(lat, d)
	}
	mu.Unlock()
	slices.Sort(lat)
	row.p50, row.p99 = percentile(lat, 0.5), percentile(lat, 0.99)
	return row, nil
}

// taskRates runs the SQLite row and, when reachable, the PostgreSQL row.
func taskRates(ctx context.Context, n, conc int, dsn string) ([]taskRow, error) {
	var rows []taskRow
	dir, err := os.MkdirTemp("", "weft-bench-tasks-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, sync := range []string{"FULL", "NORMAL"} {
		sq, err := sqlitestore.Open(ctx, filepath.Join(dir, "tasks-"+sync+".db"), sqlitestore.Options{Synchronous: sync})
		if err != nil {
			return nil, err
		}
		row, err := taskRate(ctx, "SQLite (task/sqlitestore, temp file, synchronous="+sync+")", sq, n, conc)
		_ = sq.Close()
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		rows = append(rows, row)
	}

	pgName := "PostgreSQL (task/pgstore)"
	if openPG == nil {
		return append(rows, taskRow{store: pgName, note: "skipped: benchload was built without -tags pgstore"}), nil
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	pg, err := openPG(pctx, dsn)
	cancel()
	if err != nil {
		return append(rows, taskRow{store: pgName, note: "skipped: PostgreSQL unreachable at " + redactDSN(dsn) + " (" + firstLine(err) + ")"}), nil
	}
	row, err := taskRate(ctx, pgName, pg, n, conc)
	_ = pg.Close()
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return append(rows, row), nil
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
