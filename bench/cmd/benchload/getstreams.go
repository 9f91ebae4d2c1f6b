package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
)

// getStreamCount is the size of the 2025-11-25 GET stream rows.
const getStreamCount = 10000

// getStreamRow is one server of the 2025-11-25 GET stream rows: sessions
// each holding its standalone SSE stream (GET), the 2025-era way to hear
// list_changed, which every implementation has.
type getStreamRow struct {
	impl    string
	streams int
	// Per open idle GET stream (the session itself excluded), in the server
	// process alone.
	heapPerStream, stackPerStream, goroutinesPerStream float64
	fanout, fanoutCPU                                  time.Duration
	rounds                                             int
}

func (r getStreamRow) memPerStream() float64 { return r.heapPerStream + r.stackPerStream }

// getStreamScale opens n 2025-11-25 sessions on the server process impl,
// then a GET stream for each (one TCP connection each), reads the server's
// memory between the two, and fans one tools list_changed out to every
// stream, rounds times after a warm-up round that also proves every stream
// is registered.
func getStreamScale(ctx context.Context, bin, impl string, n, rounds int) (getStreamRow, error) {
	var lim syscall.Rlimit
	need := uint64(n + 1024)
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < need {
		lim.Cur = min(lim.Max, need)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < need {
			return getStreamRow{}, fmt.Errorf("GET streams: %d streams need %d file descriptors per process; the limit is %d", n, need, lim.Cur)
		}
	}
	srv, err := startServer(bin, impl)
	if err != nil {
		return getStreamRow{}, err
	}
	defer srv.stop()
	addr := srv.addr
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	url := "http://" + addr + servers.Path
	post := func(body, sid string) (string, error) { return legacyPost(ctx, hc, url, []byte(body), sid) }
	sids := make([]string, 0, n)
	for i := range n {
		sid, err := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`, "")
		if err == nil && sid == "" {
			err = fmt.Errorf("no Mcp-Session-Id")
		}
		if err == nil {
			_, err = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
		}
		if err != nil {
			return getStreamRow{}, fmt.Errorf("GET streams (%s): session %d: %w", impl, i, err)
		}
		sids = append(sids, sid)
	}
	before, err := serverMem(ctx, addr)
	if err != nil {
		return getStreamRow{}, err
	}
	type stream struct {
		c  net.Conn
		br *bufio.Reader
	}
	streams := make([]stream, 0, n)
	defer func() {
		for _, st := range streams {
			st.c.Close()
		}
	}()
	for i, sid := range sids {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return getStreamRow{}, fmt.Errorf("GET streams: stream %d: %w", i, err)
		}
		br := bufio.NewReaderSize(c, 512)
		streams = append(streams, stream{c, br})
		var req bytes.Buffer
		fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n",
			servers.Path, addr, sid, weft.LegacyVersion20251125)
		if _, err := c.Write(req.Bytes()); err != nil {
			return getStreamRow{}, err
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		status, err := br.ReadString('\n')
		if err == nil && !strings.HasPrefix(status, "HTTP/1.1 200") {
			err = fmt.Errorf("status %q", strings.TrimSpace(status))
		}
		for err == nil {
			var line string
			if line, err = br.ReadString('\n'); line == "\r\n" {
				break
			}
		}
		if err != nil {
			return getStreamRow{}, fmt.Errorf("GET streams (%s): stream %d: %w", impl, i, err)
		}
	}
	// Every stream registered: a first change reaches all of them (not
	// measured).
	fan := func() (time.Duration, time.Duration, error) {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, st := range streams {
			wg.Go(func() {
				_ = st.c.SetReadDeadline(time.Now().Add(time.Minute))
				if err := readUntil(st.br, "notifications/tools/list_changed"); err != nil {
					errs <- err
				}
			})
		}
		cpu0, err := srv.cpu()
		if err != nil {
			return 0, 0, err
		}
		start := time.Now()
		err = toggle(hc, addr)
		wg.Wait()
		wall := time.Since(start)
		cpu1, cerr := srv.cpu()
		close(errs)
		if err == nil {
			err = cerr
		}
		if err == nil {
			err = <-errs
		}
		return wall, cpu1 - cpu0, err
	}
	if _, _, err := fan(); err != nil {
		return getStreamRow{}, fmt.Errorf("GET streams (%s): warm-up fan-out: %w", impl, err)
	}
	after, err := serverMem(ctx, addr)
	if err != nil {
		return getStreamRow{}, err
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	name, _, _ := strings.Cut(impl, "-")
	row := getStreamRow{impl: name, streams: n, rounds: rounds,
		heapPerStream: per(after.HeapInuse, before.HeapInuse), stackPerStream: per(after.StackInuse, before.StackInuse),
		goroutinesPerStream: float64(after.Goroutines-before.Goroutines) / float64(n)}
	var times, cpus []time.Duration
	for range rounds {
		if ctx.Err() != nil {
			return getStreamRow{}, ctx.Err()
		}
		wall, cpu, err := fan()
		if err != nil {
			return getStreamRow{}, fmt.Errorf("GET streams (%s): fan-out: %w", impl, err)
		}
		times, cpus = append(times, wall), append(cpus, cpu)
	}
	slices.Sort(times)
	slices.Sort(cpus)
	row.fanout, row.fanoutCPU = times[len(times)/2], cpus[len(cpus)/2]
	return row, nil
}

// toggle asks a scale server for one catalog change (servers.TogglePath).
func toggle(hc *http.Client, addr string) error {
	resp, err := hc.Post("http://"+addr+servers.TogglePath, "text/plain", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("toggle: HTTP %d", resp.StatusCode)
	}
	return nil
}

// getStreamRows measures Weft and the peers.
func getStreamRows(ctx context.Context, bin string, rounds int) ([]getStreamRow, error) {
	var rows []getStreamRow
	for _, impl := range []string{"weft-sessions", "gosdk-sessions", "mcpgo-sessions"} {
		row, err := getStreamScale(ctx, bin, impl, getStreamCount, rounds)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}
