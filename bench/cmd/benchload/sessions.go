package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/sessionstore"
	sessionpg "github.com/weftmcp/weft/sessionstore/pgstore"
)

// sessionCount is the size of the 2025-11-25 session rows.
const sessionCount = 10000

// sessionRow is one store of the 2025-11-25 session rows.
type sessionRow struct {
	store         string
	sessions      int
	heapPerSess   float64       // live heap of the process per open session
	initialize    time.Duration // median initialize (+ notifications/initialized) over loopback
	initializeP99 time.Duration
}

// sessionScale opens n 2025-11-25 sessions (initialize, then
// notifications/initialized) over loopback against an in-process Weft server
// whose sessions live in store, one client connection reused, and measures
// the live heap per open session and the cost of opening one.
func sessionScale(ctx context.Context, name string, store sessionstore.Store, n int) (sessionRow, error) {
	s := weft.NewServer(weft.Implementation{Name: "bench-sessions", Version: "1"}, &weft.Options{
		Logger: slog.New(slog.DiscardHandler), QuietRequests: true,
		Legacy: &weft.LegacyOptions{Store: store, Limits: sessionstore.Limits{MaxSessions: n + 16}},
	})
	if err := s.AddTool(weft.Tool{Name: "t", Description: "A tool."}, func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("x")}}, nil
	}); err != nil {
		return sessionRow{}, err
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	post := func(body []byte, sid string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", weft.LegacyVersion20251125)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
			return "", fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return resp.Header.Get("Mcp-Session-Id"), nil
	}
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}`)
	initialized := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	times := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		sid, err := post(initialize, "")
		if err == nil {
			_, err = post(initialized, sid)
		}
		if err != nil {
			return sessionRow{}, fmt.Errorf("sessions (%s): session %d: %w", name, i, err)
		}
		times = append(times, time.Since(start))
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	slices.Sort(times)
	return sessionRow{store: name, sessions: n, heapPerSess: float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(n),
		initialize: times[len(times)/2], initializeP99: times[len(times)*99/100]}, nil
}

// sessionRows measures the in-memory store and, with a DSN, PostgreSQL.
func sessionRows(ctx context.Context, dsn string) ([]sessionRow, error) {
	mem, err := sessionScale(ctx, "in memory", sessionstore.NewMemory(sessionstore.MemoryOptions{Limits: sessionstore.Limits{MaxSessions: sessionCount + 16}}), sessionCount)
	if err != nil {
		return nil, err
	}
	rows := []sessionRow{mem}
	if dsn == "" {
		return rows, nil
	}
	// A schema of its own, dropped afterwards: the sessions of one run do
	// not count against the next one's limit.
	schema := fmt.Sprintf("weft_bench_sessions_%d", time.Now().UnixNano())
	pg, err := sessionpg.Open(ctx, dsn, sessionpg.Options{Schema: schema, Limits: sessionstore.Limits{MaxSessions: sessionCount + 16},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("sessions: PostgreSQL: %w", err)
	}
	defer func() {
		pg.Close()
		if c, err := pgx.Connect(context.Background(), dsn); err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			_ = c.Close(context.Background())
		}
	}()
	row, err := sessionScale(ctx, "PostgreSQL (sessionstore/pgstore)", pg, sessionCount)
	if err != nil {
		return nil, err
	}
	return append(rows, row), nil
}
