package weft

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
)

// benchServer serves one stateless typed tool; logs are discarded.
func benchServer(b *testing.B) (*Server, []byte, http.Header) {
	b.Helper()
	s, err := NewServer(Implementation{Name: "bench", Version: "1.0.0"}, &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
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

// BenchmarkToolsCall2025 is BenchmarkToolsCall from a stateless 2025-11-25
// client: the same tool through the era adapter.
func BenchmarkToolsCall2025(b *testing.B) {
	s, _, _ := benchServer(b)
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":40,"b":2}}}`)
	h := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2025-11-25"},
	}
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

// stateBench is a server with a sealing protector, the first-call params of
// a framework-state tool and the retry params carrying its sealed state.
func stateBench(b *testing.B) (s *Server, op *operation, first, retry exactjson.Value) {
	b.Helper()
	k, err := seal.NewKey("bench", bytes.Repeat([]byte{1}, 32))
	must(b, err)
	kr, err := seal.NewKeyring(k)
	must(b, err)
	s, err = NewServer(Implementation{Name: "bench"}, &Options{Protector: seal.NewManager(kr, nil), Logger: slog.New(slog.DiscardHandler)})
	must(b, err)
	base := `{"name":"confirm","arguments":{"text":"hello, bench","count":3},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	first, err = exactjson.ParseString(base+"}", exactjson.Limits{})
	must(b, err)
	op = &operation{kind: KindTool, name: "confirm", stateMode: StateFramework}
	emitter := &Request{Method: "tools/call", ID: IntID(1), ProtocolVersion: ProtocolVersion, Name: "confirm", Params: first, Endpoint: "/mcp", srv: s, op: op}
	tok, e := s.sealState(context.Background(), emitter, new(InputRequired).WithFrameworkState(
		exactjson.Object(exactjson.Field("phase", exactjson.String("confirming")))))
	if e != nil {
		b.Fatal(e)
	}
	retry, err = exactjson.ParseString(base+`,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"`+tok+`"}`, exactjson.Limits{})
	must(b, err)
	return s, op, first, retry
}

// BenchmarkParamsDigest measures the canonical params digest of a retry.
func BenchmarkParamsDigest(b *testing.B) {
	_, _, _, retry := stateBench(b)
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if _, buf, err = paramsDigestBuf(buf, retry); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenState measures opening and checking sealed state on a retry
// (binding, AES-GCM open, plaintext decode, checks).
func BenchmarkOpenState(b *testing.B) {
	s, op, _, retry := stateBench(b)
	b.ReportAllocs()
	for b.Loop() {
		req := &Request{Method: "tools/call", ID: IntID(2), ProtocolVersion: ProtocolVersion, Name: "confirm", Params: retry, Endpoint: "/mcp", srv: s}
		if e := s.openState(context.Background(), req, op); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkSealState measures sealing state for an input_required result.
func BenchmarkSealState(b *testing.B) {
	s, op, first, _ := stateBench(b)
	ir := new(InputRequired).WithFrameworkState(exactjson.Object(exactjson.Field("phase", exactjson.String("confirming"))))
	b.ReportAllocs()
	for b.Loop() {
		req := &Request{Method: "tools/call", ID: IntID(1), ProtocolVersion: ProtocolVersion, Name: "confirm", Params: first, Endpoint: "/mcp", srv: s, op: op}
		if _, e := s.sealState(context.Background(), req, ir); e != nil {
			b.Fatal(e)
		}
	}
}
