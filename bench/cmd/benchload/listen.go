package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
	"github.com/weftmcp/weft/exactjson"
)

// listenSizes are the stream counts of the listen rows. The server is its
// own process and this one holds the client ends, so each side needs one
// descriptor per stream.
var listenSizes = []int{1000, 10000}

// roundPause separates the fan-out rounds, outside the clock: what the
// previous round left to the kernel (delayed acknowledgements, timers) is
// done before the next one starts.
const roundPause = 200 * time.Millisecond

// listenMarker is what every stream reads in a fan-out round.
var listenMarker = []byte("notifications/tools/list_changed")

// listenRow is one size of the subscriptions/listen scale rows.
type listenRow struct {
	streams int
	// Per open idle stream, in the server process alone: live heap,
	// goroutine stacks, goroutines and resident set.
	heapPerStream, stackPerStream, rssPerStream, goroutinesPerStream float64
	fanout                                                           time.Duration // median time until every stream has one list_changed
	fanoutCPU                                                        time.Duration // median server CPU (user + system) of one fan-out
	fanoutClientCPU                                                  time.Duration // median CPU of this process (the readers) over the same rounds
	rounds                                                           int
}

// memPerStream is what the target is judged on: heap plus stacks.
func (l listenRow) memPerStream() float64 { return l.heapPerStream + l.stackPerStream }

// listenScale starts the weft-listen server process, opens n idle
// subscriptions/listen streams to it over loopback from this process (one
// TCP connection and one partition each), reads the server's memory before
// and after, and fans one tools list_changed out to all of them, rounds
// times.
func listenScale(ctx context.Context, bin string, n, rounds int) (listenRow, error) {
	var lim syscall.Rlimit
	need := uint64(n + 1024)
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < need {
		lim.Cur = min(lim.Max, need)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < need {
			return listenRow{}, fmt.Errorf("listen: %d streams need %d file descriptors per process; the limit is %d", n, need, lim.Cur)
		}
	}
	srv, err := startServer(bin, "weft-listen")
	if err != nil {
		return listenRow{}, err
	}
	defer srv.stop()
	addr := srv.addr
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		weft.ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if !validJSON(body) {
		return listenRow{}, fmt.Errorf("listen: bad request body")
	}
	before, err := serverMem(ctx, addr)
	if err != nil {
		return listenRow{}, err
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
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return listenRow{}, fmt.Errorf("listen: stream %d: %w", i, err)
		}
		var req bytes.Buffer
		fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"MCP-Protocol-Version: %s\r\nMcp-Method: subscriptions/listen\r\n%s: p%d\r\nContent-Length: %d\r\n\r\n",
			servers.Path, addr, weft.ProtocolVersion, servers.PartitionHeader, i, len(body))
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
	after, err := serverMem(ctx, addr)
	if err != nil {
		return listenRow{}, err
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	row := listenRow{streams: n, rounds: rounds,
		heapPerStream: per(after.HeapInuse, before.HeapInuse), stackPerStream: per(after.StackInuse, before.StackInuse),
		rssPerStream: per(after.RSS, before.RSS), goroutinesPerStream: float64(after.Goroutines-before.Goroutines) / float64(n)}

	// The streams' client ends go to one epoll reader (fanread.go); what a
	// stream's buffered reader holds past the acknowledgement is checked
	// and dropped.
	conns := make([]net.Conn, len(streams))
	for i, st := range streams {
		rest, _ := st.br.Peek(st.br.Buffered())
		if bytes.Contains(rest, listenMarker) {
			return listenRow{}, fmt.Errorf("listen: stream %d: a list_changed before any change: %q", i, rest)
		}
		conns[i] = st.c
	}
	fr, err := newFanReader(conns) // closes conns (closing them again is harmless)
	if err != nil {
		return listenRow{}, fmt.Errorf("listen: %w", err)
	}
	defer fr.close()

	hc := &http.Client{Timeout: time.Minute}
	var times, cpus, clientCPUs []time.Duration
	for range rounds {
		if ctx.Err() != nil {
			return listenRow{}, ctx.Err()
		}
		time.Sleep(roundPause)
		cpu0, err := srv.cpu()
		if err != nil {
			return listenRow{}, err
		}
		own0 := selfCPU()
		start := time.Now()
		err = toggle(hc, addr)
		if err == nil {
			err = fr.await(listenMarker, start.Add(time.Minute))
		}
		times = append(times, time.Since(start))
		clientCPUs = append(clientCPUs, selfCPU()-own0)
		cpu1, cerr := srv.cpu()
		if cerr != nil {
			return listenRow{}, cerr
		}
		cpus = append(cpus, cpu1-cpu0)
		if err != nil {
			return listenRow{}, fmt.Errorf("listen: fan-out: %w", err)
		}
	}
	slices.Sort(times)
	row.fanout = times[len(times)/2]
	slices.Sort(cpus)
	row.fanoutCPU = cpus[len(cpus)/2]
	slices.Sort(clientCPUs)
	row.fanoutClientCPU = clientCPUs[len(clientCPUs)/2]
	return row, nil
}

// selfCPU is this process's user + system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverMem reads a scale server's memory (servers.MemPath).
func serverMem(ctx context.Context, addr string) (servers.Mem, error) {
	var m servers.Mem
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+servers.MemPath, nil)
	if err != nil {
		return m, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return m, fmt.Errorf("reading the server's memory: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("reading the server's memory: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return m, fmt.Errorf("reading the server's memory: %w", err)
	}
	return m, nil
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
