package weft

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// benchServer serves one stateless typed tool; logs are discarded.
func benchServer(b *testing.B) (*Server, []byte, http.Header) {
	b.Helper()
	s := NewServer(Implementation{Name: "bench", Version: "1.0.0"}, &Options{Logger: slog.New(slog.DiscardHandler)})
	type addArgs struct {
		A int64 `json:"a"`
		B int64 `json:"b"`
	}
	type sum struct {
		Sum int64 `json:"sum"`
	}
	must(b, AddTool(s, Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, req *Request, in addArgs) (sum, error) { return sum{Sum: in.A + in.B}, nil }))
	msg := body(b, 1, "tools/call", toolCall(nil, "add", M{"a": 40, "b": 2}))
	return s, msg, stdHeaders(msg)
}

// serveOnce runs one tools/call through ServeHTTP. The header map is shared
// read-only between iterations; http.NewRequest (not httptest.NewRequest,
// which parses a request through a 4 KiB bufio.Reader) keeps the harness's
// share of the allocations small.
func serveOnce(s *Server, msg []byte, h http.Header) error {
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header = h
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"structuredContent":{"sum":42}`)) {
		return fmt.Errorf("HTTP %d %s", rec.Code, rec.Body)
	}
	return nil
}

func BenchmarkToolsCall(b *testing.B) {
	s, msg, h := benchServer(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := serveOnce(s, msg, h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToolsCallParallel(b *testing.B) {
	s, msg, h := benchServer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := serveOnce(s, msg, h); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
