package weft

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/weftmcp/weft/internal/syncbuf"
)

// jsonLogs returns the JSON log lines and the "mcp request" lines.
func jsonLogs(t *testing.T, buf *syncbuf.Buffer) (all []string, requests []M) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		all = append(all, line)
		var m M
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "mcp request" {
			requests = append(requests, m)
		}
	}
	return all, requests
}

// TestRequestLogRedaction: one structured line per finished request, with
// its method, registered name, id, outcome, code and duration, and nothing
// of the arguments, bearer token, baggage, request state, unregistered
// names or resource URIs, at any level.
func TestRequestLogRedaction(t *testing.T) {
	buf := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tp, _ := newTracer(t)
	f := newStateFixture(t, &Options{Logger: logger, TracerProvider: tp, Admission: bearerAdmission})
	must(t, f.s.AddResourceTemplate(ResourceTemplate{URITemplate: "docs://{id}", Name: "doc"},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "doc")}}, nil
		}))
	f.serveHTTP(t)
	auth := setHeader("Authorization", "Bearer "+secretToken)
	const secretTool = "SECRET-TOOL-NAME-93ab"
	const secretURI = "docs://RESOURCE-SECRET-x1"

	first := withMeta(toolCall(elicitCaps, "flow", M{"note": secretArg}), M{"traceparent": clientParent, "baggage": "user=" + secretBaggage})
	token := tokenOf(t, f.send(t, "/mcp", "req-1", "tools/call", first, auth))
	retry := func(tok string) M {
		p := toolCall(elicitCaps, "flow", M{"note": secretArg})
		p["requestState"] = tok
		p["inputResponses"] = M{"approve": M{"action": "accept", "content": M{"ok": true, "pin": secretArg}}}
		return p
	}
	if r := f.send(t, "/mcp", "req-2", "tools/call", retry(token), auth); r.result(t)["resultType"] != "complete" {
		t.Fatalf("retry: %v", r)
	}
	tampered := token[:len(token)-6] + "AAAAAA"
	f.send(t, "/mcp", "req-3", "tools/call", retry(tampered), auth).wantError(t, 400, CodeInvalidParams)
	f.send(t, "/mcp", "req-4", "tools/call", toolCall(nil, secretTool, M{"note": secretArg}), auth).wantError(t, 400, CodeInvalidParams)
	if r := f.send(t, "/mcp", "req-5", "resources/read", params(M{"uri": secretURI}), auth); r.Status != 200 {
		t.Fatalf("read: %v", r)
	}
	if r := f.send(t, "/mcp", "req-6", "tools/call", toolCall(nil, "flow", M{"note": secretArg})); r.Status != 401 {
		t.Fatalf("unauthenticated: %v", r)
	}

	all, reqs := jsonLogs(t, buf)
	if testing.Verbose() {
		t.Log(strings.Join(all, "\n"))
	}
	want := []struct{ id, name, outcome string }{
		{"req-1", "flow", "input_required"},
		{"req-2", "flow", "complete"},
		{"req-3", "flow", "protocol_error"},
		{"req-4", "", "protocol_error"},
		{"req-5", "docs://{id}", "complete"},
		{"req-6", "", "rejected"}, // not admitted: no target is named
	}
	if len(reqs) != len(want) {
		t.Fatalf("want %d request lines, got %d:\n%s", len(want), len(reqs), strings.Join(all, "\n"))
	}
	for i, w := range want {
		r := reqs[i]
		if r["level"] != "DEBUG" || r["id"] != w.id || r["outcome"] != w.outcome || r["transport"] != "http" {
			t.Errorf("line %d: %v, want id %s outcome %s at DEBUG", i, r, w.id, w.outcome)
		}
		if name, _ := r["name"].(string); name != w.name {
			t.Errorf("line %d: name %q, want %q", i, name, w.name)
		}
		wantMethod := "tools/call"
		if w.id == "req-5" {
			wantMethod = "resources/read"
		}
		if r["method"] != wantMethod {
			t.Errorf("line %d: method %v", i, r["method"])
		}
		if d, ok := r["duration"].(float64); !ok || d <= 0 {
			t.Errorf("line %d: duration %v", i, r["duration"])
		}
		if _, hasCode := r["code"]; hasCode != (w.outcome == "protocol_error" || w.outcome == "rejected") {
			t.Errorf("line %d: code %v", i, r["code"])
		}
	}
	if reqs[0]["trace_id"] != clientTraceID {
		t.Errorf("trace_id %v, want the client's %s", reqs[0]["trace_id"], clientTraceID)
	}
	if reqs[2]["code"] != float64(CodeInvalidParams) {
		t.Errorf("tampered retry code %v", reqs[2]["code"])
	}
	for _, line := range all {
		for _, sec := range []string{secretArg, secretToken, secretBaggage, secretTool, "RESOURCE-SECRET", token, token[8:32], token[len(token)-24:]} {
			if strings.Contains(line, sec) {
				t.Errorf("log line carries %q: %s", sec, line)
			}
		}
	}
}

// TestRequestLogQuietByDefault: like net/http, a server whose logger is at
// the default level (Info) logs nothing per request; the line is at Debug.
func TestRequestLogQuietByDefault(t *testing.T) {
	buf := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(buf, nil))
	s, _ := httpTestServer(t, &Options{Logger: logger})
	ts := startHTTP(t, s)
	if r := rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "echo", nil)); r.Status != 200 {
		t.Fatalf("%v", r)
	}
	if _, reqs := jsonLogs(t, buf); len(reqs) != 0 {
		t.Errorf("an Info logger got request lines %v", reqs)
	}
}
