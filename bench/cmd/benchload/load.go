package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/bench/servers"
)

// cell is one measurement: n requests at concurrency c against one server.
type cell struct {
	impl      string
	conc      int
	round     int
	n         int
	wall      time.Duration
	p50, p99  time.Duration
	cpuPerReq time.Duration // server CPU (user+system) per request
	ownPerReq time.Duration // of that, the measured process's own (a gateway's, without its upstream's)
	// Server-side counters per request: heap bytes and objects allocated,
	// GC cycles (per 1,000 requests), read and write system calls.
	bytesReq, objsReq, gcPerK, sysReq float64
	gcCPUReq                          time.Duration // GC and scavenger CPU per request (runtime estimate)
	throughput                        float64       // requests per second
}

// client is a keep-alive HTTP client for one server at one concurrency.
type client struct {
	hc  *http.Client
	url string
}

func newClient(addr string, conc int) *client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conc,
		MaxIdleConnsPerHost: conc,
		MaxConnsPerHost:     conc,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &client{hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}, url: "http://" + addr + servers.Path}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// do sends one call with id and returns the response status, content type
// and body (read completely, so the connection is reused).
func (c *client) do(ctx context.Context, header http.Header, body []byte, buf *bytes.Buffer) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header = header
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	buf.Reset()
	_, err = io.Copy(buf, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Content-Type"), err
}

// verify sends a few calls and checks every answer completely.
func verify(ctx context.Context, addr string) error { return verifyCall(ctx, addr, servers.EchoCall()) }

// verifyCall is verify with the echo call call (its headers).
func verifyCall(ctx context.Context, addr string, call *servers.Call) error {
	c := newClient(addr, 1)
	defer c.close()
	var buf bytes.Buffer
	for id := int64(1); id <= 5; id++ {
		status, ct, err := c.do(ctx, call.Header, call.Body(id), &buf)
		if err != nil {
			return err
		}
		if err := servers.CheckEcho(status, ct, buf.Bytes(), id); err != nil {
			return err
		}
	}
	return nil
}

var structured = []byte(`"structuredContent"`)

// load sends n requests from conc goroutines over conc keep-alive
// connections. Every answer must be HTTP 200 carrying structuredContent.
// It returns the wall time and each request's latency.
func load(ctx context.Context, c *client, call *servers.Call, conc, n int, firstID int64) (time.Duration, []time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			var body []byte
			var buf bytes.Buffer
			header := call.Header.Clone()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || failed.Load() != nil {
					return
				}
				body = call.AppendBody(body[:0], firstID+i)
				t0 := time.Now()
				status, _, err := c.do(ctx, header, body, &buf)
				lat[i] = time.Since(t0)
				if err == nil && (status != http.StatusOK || !bytes.Contains(buf.Bytes(), structured)) {
					err = fmt.Errorf("HTTP %d: %.200s", status, buf.Bytes())
				}
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if p := failed.Load(); p != nil {
		return 0, nil, *p
	}
	if ctx.Err() != nil {
		return 0, nil, ctx.Err()
	}
	return wall, lat, nil
}

// measure runs warm-up calls, then n measured calls, and reads the
// server's CPU time around the measured part.
func measure(ctx context.Context, s *server, call *servers.Call, conc, n, warm, round int, ids *int64) (cell, error) {
	c := newClient(s.addr, conc)
	defer c.close()
	if _, _, err := load(ctx, c, call, conc, warm, *ids); err != nil {
		return cell{}, fmt.Errorf("%s warm-up: %w", s.impl, err)
	}
	*ids += int64(warm)
	st0, err := s.stats()
	if err != nil {
		return cell{}, err
	}
	cpu0, err := s.cpu()
	if err != nil {
		return cell{}, err
	}
	own0, err := procCPU(s.cmd.Process.Pid)
	if err != nil {
		return cell{}, err
	}
	wall, lat, err := load(ctx, c, call, conc, n, *ids)
	if err != nil {
		return cell{}, fmt.Errorf("%s c=%d: %w", s.impl, conc, err)
	}
	*ids += int64(n)
	cpu1, err := s.cpu()
	if err != nil {
		return cell{}, err
	}
	st1, err := s.stats()
	if err != nil {
		return cell{}, err
	}
	fn := float64(n)
	own1, err := procCPU(s.cmd.Process.Pid)
	if err != nil {
		return cell{}, err
	}
	slices.Sort(lat)
	return cell{
		impl: s.impl, conc: conc, round: round, n: n, wall: wall,
		p50:        percentile(lat, 0.50),
		p99:        percentile(lat, 0.99),
		cpuPerReq:  (cpu1 - cpu0) / time.Duration(n),
		bytesReq:   float64(st1.bytes-st0.bytes) / fn,
		objsReq:    float64(st1.objects-st0.objects) / fn,
		gcPerK:     1000 * float64(st1.gcs-st0.gcs) / fn,
		sysReq:     float64(st1.syscr+st1.syscw-st0.syscr-st0.syscw) / fn,
		gcCPUReq:   time.Duration((st1.gcCPU + st1.scavCPU - st0.gcCPU - st0.scavCPU) * 1e9 / fn),
		ownPerReq:  (own1 - own0) / time.Duration(n),
		throughput: float64(n) / wall.Seconds(),
	}, nil
}

// percentile returns the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
