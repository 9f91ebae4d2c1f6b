package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// listenSizes are the stream counts of the listen rows: 10,000 streams with
// both ends in this process need more than the 20,000 descriptors CI
// machines allow, so the large row is 9,000.
var listenSizes = []int{1000, 9000}

// listenRow is one size of the subscriptions/listen scale rows.
type listenRow struct {
	streams       int
	heapPerStream float64       // bytes of live heap per open idle stream, both ends
	fanout        time.Duration // median time until every stream has one list_changed
	rounds        int
}

// listenScale opens n idle subscriptions/listen streams over loopback to an
// in-process Weft server (one TCP connection and one partition each) and
// fans one tools list_changed out to all of them, rounds times.
func listenScale(ctx context.Context, n, rounds int) (listenRow, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(2*n+1024) {
		lim.Cur = min(lim.Max, uint64(2*n+1024))
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < uint64(2*n+256) {
			return listenRow{}, fmt.Errorf("listen: %d streams need %d file descriptors; the limit is %d", n, 2*n+256, lim.Cur)
		}
	}
	s := weft.NewServer(weft.Implementation{Name: "bench-listen", Version: "1"}, &weft.Options{
		Logger: slog.New(slog.DiscardHandler), QuietRequests: true,
		Admission: func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			return weft.Identity{Partition: r.Header.Get("X-Partition")}, nil
		},
	})
	tool := func(name string) error {
		return s.AddTool(weft.Tool{Name: name, Description: "A tool."}, func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("x")}}, nil
		})
	}
	if err := tool("t0"); err != nil {
		return listenRow{}, err
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	addr := strings.TrimPrefix(ts.URL, "http://")
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		weft.ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if !validJSON(body) {
		return listenRow{}, fmt.Errorf("listen: bad request body")
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
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
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return listenRow{}, fmt.Errorf("listen: stream %d: %w", i, err)
		}
		var req bytes.Buffer
		fmt.Fprintf(&req, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"MCP-Protocol-Version: %s\r\nMcp-Method: subscriptions/listen\r\nX-Partition: p%d\r\nContent-Length: %d\r\n\r\n", addr, weft.ProtocolVersion, i, len(body))
		req.Write(body)
		br := bufio.NewReaderSize(c, 512)
		streams = append(streams, stream{c, br})
		if _, err := c.Write(req.Bytes()); err != nil {
			return listenRow{}, err
		}
		if err := readUntil(br, "subscriptions/acknowledged"); err != nil {
			return listenRow{}, fmt.Errorf("listen: stream %d: %w", i, err)
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	row := listenRow{streams: n, rounds: rounds, heapPerStream: float64(after.HeapInuse-before.HeapInuse) / float64(n)}

	var times []time.Duration
	for r := range rounds {
		if ctx.Err() != nil {
			return listenRow{}, ctx.Err()
		}
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
		start := time.Now()
		var err error
		if r%2 == 0 {
			err = tool("t1")
		} else {
			s.RemoveTool("t1")
		}
		wg.Wait()
		times = append(times, time.Since(start))
		close(errs)
		if err == nil {
			err = <-errs
		}
		if err != nil {
			return listenRow{}, fmt.Errorf("listen: fan-out: %w", err)
		}
	}
	slices.Sort(times)
	row.fanout = times[len(times)/2]
	return row, nil
}

// readUntil reads SSE lines until one contains marker.
func readUntil(br *bufio.Reader, marker string) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.Contains(line, marker) {
			return nil
		}
	}
}

func validJSON(b []byte) bool {
	_, err := exactjson.Parse(b, exactjson.Limits{})
	return err == nil
}
