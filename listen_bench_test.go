package weft

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkListenFanout opens idle subscriptions/listen streams over
// loopback (one TCP connection each, in the benchmark's own process) and
// measures one tools list_changed fanned out to all of them (9,000 rather
// than 10,000: both ends in one process need two descriptors a stream, and
// CI machines allow 20,000): each iteration
// adds or removes a tool and waits until every stream has the notification.
// It reports the time of one fan-out (ns/op) and the heap the open streams
// hold, client and server side together, per stream (heap-B/stream).
// go test -run '^$' -bench ListenFanout -benchtime 20x
func BenchmarkListenFanout(b *testing.B) {
	for _, n := range []int{1000, 9000} { // 10,000 needs more descriptors than the 20,000 a CI machine allows
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchListenFanout(b, n) })
	}
}

func benchListenFanout(b *testing.B, n int) {
	// Both ends of every stream are in this process: two descriptors each.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(2*n+1024) {
		lim.Cur = min(lim.Max, uint64(2*n+1024))
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < uint64(2*n+256) {
			b.Skipf("needs %d file descriptors; the limit is %d", 2*n+256, lim.Cur)
		}
	}
	s := NewServer(Implementation{Name: "bench", Version: "1.0.0"}, &Options{
		Logger: slog.New(slog.DiscardHandler), QuietRequests: true,
		// One partition per stream: the per-partition bound stays as it is.
		Admission: func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
			return Identity{Partition: r.Header.Get("X-Partition")}, nil
		},
	})
	addText(b, s, "t0", "x")
	ts := startHTTP(b, s)
	addr := strings.TrimPrefix(ts.URL, "http://")
	msg := body(b, 1, "subscriptions/listen", params(M{"notifications": M{"toolsListChanged": true}}))
	h := stdHeaders(msg)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	type conn struct {
		c  net.Conn
		br *bufio.Reader
	}
	conns := make([]conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.c.Close()
		}
	}()
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatalf("stream %d: %v", i, err)
		}
		var req bytes.Buffer
		fmt.Fprintf(&req, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nX-Partition: p%d\r\n", addr, len(msg), i)
		for k, vs := range h {
			for _, v := range vs {
				fmt.Fprintf(&req, "%s: %s\r\n", k, v)
			}
		}
		req.WriteString("\r\n")
		req.Write(msg)
		if _, err := c.Write(req.Bytes()); err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReaderSize(c, 512)
		if err := readUntil(br, "subscriptions/acknowledged"); err != nil {
			b.Fatalf("stream %d: %v", i, err)
		}
		conns = append(conns, conn{c, br})
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perStream := float64(after.HeapInuse-before.HeapInuse) / float64(n)

	b.ResetTimer()
	for i := range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, c := range conns {
			wg.Go(func() {
				_ = c.c.SetReadDeadline(time.Now().Add(time.Minute))
				if err := readUntil(c.br, "notifications/tools/list_changed"); err != nil {
					errs <- err
				}
			})
		}
		if i%2 == 0 {
			addText(b, s, "t1", "y")
		} else {
			s.RemoveTool("t1")
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(perStream, "heap-B/stream")
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
