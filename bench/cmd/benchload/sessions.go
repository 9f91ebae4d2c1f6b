package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
)

// sessionCount is the size of the 2025-11-25 session rows.
const sessionCount = 10000

// sessionRow is one server of the 2025-11-25 session rows.
type sessionRow struct {
	impl     string // weft, gosdk or mcpgo
	store    string
	sessions int
	// Per open session, in the server process alone: live heap, goroutine
	// stacks, goroutines and resident set.
	heapPerSess, stackPerSess, rssPerSess, goroutinesPerSess float64
	initialize                                               time.Duration // median initialize (+ notifications/initialized) over loopback
	initializeP99                                            time.Duration
	cpuPerSess                                               time.Duration // server CPU (user + system) per initialize + initialized
}

func (r sessionRow) name() string {
	if r.impl == "weft" {
		return "Weft, " + r.store
	}
	return servers.Names[r.impl] + ", " + r.store
}

// sessionScale starts the server process impl (extra flags args), opens n
// 2025-11-25 sessions one after the other (initialize, then
// notifications/initialized, over one keep-alive loopback connection), keeps
// them open, and reads the server's memory before and after.
func sessionScale(ctx context.Context, bin, impl, store string, n int, args ...string) (sessionRow, error) {
	srv, err := startServer(bin, impl, args...)
	if err != nil {
		return sessionRow{}, err
	}
	defer srv.stop()
	url := "http://" + srv.addr + servers.Path
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	post := func(body []byte, sid string) (string, error) { return legacyPost(ctx, hc, url, body, sid) }
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}`)
	initialized := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// One session first, outside the measurement: the connection is open
	// and every lazily built structure exists in both snapshots.
	if sid, err := post(initialize, ""); err != nil || sid == "" {
		return sessionRow{}, fmt.Errorf("sessions (%s): first initialize: session id %q, %v", impl, sid, err)
	}
	before, err := serverMem(ctx, srv.addr)
	if err != nil {
		return sessionRow{}, err
	}
	cpu0, err := srv.cpu()
	if err != nil {
		return sessionRow{}, err
	}
	times := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		sid, err := post(initialize, "")
		if err == nil && sid == "" {
			err = fmt.Errorf("no Mcp-Session-Id")
		}
		if err == nil {
			_, err = post(initialized, sid)
		}
		if err != nil {
			return sessionRow{}, fmt.Errorf("sessions (%s): session %d: %w", impl, i, err)
		}
		times = append(times, time.Since(start))
	}
	cpu1, err := srv.cpu()
	if err != nil {
		return sessionRow{}, err
	}
	after, err := serverMem(ctx, srv.addr)
	if err != nil {
		return sessionRow{}, err
	}
	slices.Sort(times)
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	name, _, _ := strings.Cut(impl, "-")
	return sessionRow{impl: name, store: store, sessions: n,
		heapPerSess: per(after.HeapInuse, before.HeapInuse), stackPerSess: per(after.StackInuse, before.StackInuse),
		rssPerSess: per(after.RSS, before.RSS), goroutinesPerSess: float64(after.Goroutines-before.Goroutines) / float64(n),
		initialize: times[len(times)/2], initializeP99: times[len(times)*99/100], cpuPerSess: (cpu1 - cpu0) / time.Duration(n)}, nil
}

// sessionRows measures Weft's in-memory store, the peers' in-memory
// sessions and, with a DSN, Weft on PostgreSQL.
func sessionRows(ctx context.Context, bin, dsn string) ([]sessionRow, error) {
	var rows []sessionRow
	for _, impl := range []string{"weft-sessions", "gosdk-sessions", "mcpgo-sessions"} {
		row, err := sessionScale(ctx, bin, impl, "in memory", sessionCount)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if dsn == "" {
		return rows, nil
	}
	// A schema of its own, dropped afterwards: the sessions of one run do
	// not count against the next one's limit.
	schema := fmt.Sprintf("weft_bench_sessions_%d", time.Now().UnixNano())
	defer func() {
		if c, err := pgx.Connect(context.Background(), dsn); err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			_ = c.Close(context.Background())
		}
	}()
	row, err := sessionScale(ctx, bin, "weft-sessions-pg", "PostgreSQL (sessionstore/pgstore)", sessionCount, "-pg-dsn", dsn, "-pg-schema", schema)
	if err != nil {
		return nil, err
	}
	return append(rows, row), nil
}

// legacyPost sends one 2025-11-25 message (with the session's headers when
// sid is set) and returns the Mcp-Session-Id of the answer; an initialize
// must agree on 2025-11-25.
func legacyPost(ctx context.Context, hc *http.Client, url string, body []byte, sid string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
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
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	if sid == "" && !bytes.Contains(b, []byte(`"protocolVersion":"2025-11-25"`)) {
		return "", fmt.Errorf("initialize did not agree on 2025-11-25: %.300s", b)
	}
	return resp.Header.Get("Mcp-Session-Id"), nil
}
