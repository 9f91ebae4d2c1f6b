package weft

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// spyAdapter counts the messages the core offers an era adapter.
type spyAdapter struct {
	eraAdapter
	offered int
}

func (a *spyAdapter) serveMessage(ctx context.Context, in *inbound, v exactjson.Value, rt *requestTelemetry) (reply, bool) {
	a.offered++
	return a.eraAdapter.serveMessage(ctx, in, v, rt)
}

// TestEraPickedOnce checks the seam: a 2026-07-28 message is served without
// reaching the 2025 adapter, a 2025-era one is offered to it, and a server
// serving the 2025 era alone offers it everything (to refuse 2026-07-28).
func TestEraPickedOnce(t *testing.T) {
	type addArgs struct {
		A int64 `json:"a"`
		B int64 `json:"b"`
	}
	modern := body(t, 1, "tools/call", toolCall(nil, "add", M{"a": 40, "b": 2}))
	old := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":40,"b":2}}}`)
	oldHeader := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2025-11-25"}}
	for _, tc := range []struct {
		name        string
		legacy      LegacyOptions
		msg         []byte
		header      http.Header
		wantOffered int
		wantStatus  int
		wantBody    string
	}{
		{"2026-07-28 call", LegacyOptions{}, modern, stdHeaders(modern), 0, http.StatusOK, `"sum":42`},
		{"2025-11-25 stateless call", LegacyOptions{}, old, oldHeader, 1, http.StatusOK, `"sum":42`},
		{"2026-07-28 call to a 2025-only server", LegacyOptions{Only: true}, modern, stdHeaders(modern), 1, http.StatusBadRequest, `"code":-32022`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewServer(Implementation{Name: "era", Version: "1"}, &Options{Legacy: tc.legacy, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			must(t, AddTool(s, Tool{Name: "add"}, func(ctx context.Context, req *Request, in addArgs) (M, error) {
				return M{"sum": in.A + in.B}, nil
			}))
			if len(s.adapters) != 1 {
				t.Fatalf("%d adapters, want the 2025 one", len(s.adapters))
			}
			spy := &spyAdapter{eraAdapter: s.adapters[0]}
			s.adapters[0] = spy
			req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(tc.msg))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tc.header
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if spy.offered != tc.wantOffered {
				t.Errorf("offered to the 2025 adapter %d times, want %d", spy.offered, tc.wantOffered)
			}
			if rec.Code != tc.wantStatus || !bytes.Contains(rec.Body.Bytes(), []byte(tc.wantBody)) {
				t.Errorf("HTTP %d %s, want %d with %s", rec.Code, rec.Body, tc.wantStatus, tc.wantBody)
			}
		})
	}
}
