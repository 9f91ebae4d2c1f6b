package weft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// mk encodes a JSON-RPC message without a testing.T (for tables).
func mk(id any, method string, p M) string {
	msg := M{"jsonrpc": "2.0", "method": method}
	if id != nil {
		msg["id"] = id
	}
	if p != nil {
		msg["params"] = p
	}
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// nested returns n nested JSON arrays.
func nested(n int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", n) + strings.Repeat("]", n))
}

// httpTestServer serves the tools the transport tables use.
func httpTestServer(t testing.TB, opts *Options) (*Server, *logCapture) {
	t.Helper()
	s, lc := newServer(t, opts)
	must(t, s.AddTool(Tool{Name: "echo", Description: "Echoes its arguments.",
		InputSchema: []byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return textResult("echo " + req.Arguments().String()), nil
		}))
	must(t, s.AddTool(Tool{Name: "needs", Description: "Needs every client capability.",
		Inputs: []Input{Form(RequiredCapability), URL(RequiredCapability), Sampling(RequiredCapability), Roots(RequiredCapability)}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("had all"), nil }))
	return s, lc
}

// rawKey sets a header under a non-canonical name: the client sends the name
// exactly as given.
func rawKey(canonical, raw, value string) func(http.Header) {
	return func(h http.Header) { h.Del(canonical); h[raw] = []string{value} }
}

func TestHTTPErrorCodesAndStatuses(t *testing.T) {
	// 2026-07-28 alone: the methods it removed are unknown.
	s, _ := httpTestServer(t, &Options{Legacy: LegacyOptions{Disabled: true}})
	ts := startHTTP(t, s)

	discover := func(id any) string { return mk(id, "server/discover", params(nil)) }
	echo := func(id any, args M) string { return mk(id, "tools/call", toolCall(nil, "echo", args)) }
	noMeta := func(drop string) M {
		m := meta(nil, nil)
		delete(m, drop)
		return M{"_meta": m}
	}
	version := func(v string) M {
		p := params(nil)
		p["_meta"].(M)[metaProtocolVersion] = v
		return p
	}

	type tc struct {
		name   string
		verb   string // HTTP method; default POST
		body   string
		hdr    []func(http.Header) // edits to the conforming headers
		host   string
		status int
		code   Code   // JSON-RPC error code; 0: a result (or no JSON-RPC check)
		id     string // raw JSON of the echoed id; "" skips the check
		check  func(t *testing.T, r resp)
	}
	cases := []tc{
		// Parsing and the envelope.
		{name: "parse error", body: `{"jsonrpc":"2.0","id":1,`, status: 400, code: CodeParseError, id: "null"},
		{name: "not UTF-8", body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", status: 400, code: CodeParseError, id: "null"},
		{name: "depth 129 exceeds the JSON limit", body: mk(1, "tools/call", toolCall(nil, "echo", M{"x": nested(126)})),
			status: 400, code: CodeParseError, id: "null"},
		{name: "depth 128 is within the JSON limit", body: mk(1, "tools/call", toolCall(nil, "echo", M{"x": nested(125)})),
			status: 200, id: "1"},
		{name: "batch array", body: "[" + discover(1) + "]", status: 400, code: CodeInvalidRequest, id: "null"},
		{name: "empty batch", body: "[]", status: 400, code: CodeInvalidRequest, id: "null"},
		{name: "scalar body", body: `42`, status: 400, code: CodeInvalidRequest, id: "null"},
		{name: "missing jsonrpc", body: `{"id":3,"method":"server/discover","params":` + mustJSON(params(nil)) + `}`,
			status: 400, code: CodeInvalidRequest, id: "3"},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":"x","method":"server/discover","params":` + mustJSON(params(nil)) + `}`,
			status: 400, code: CodeInvalidRequest, id: `"x"`},
		{name: "missing method", body: `{"jsonrpc":"2.0","id":4}`, status: 400, code: CodeInvalidRequest, id: "4"},
		{name: "a response is not accepted", body: `{"jsonrpc":"2.0","id":4,"result":{}}`, status: 400, code: CodeInvalidRequest, id: "4"},
		{name: "params not an object", body: `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":[]}`,
			status: 400, code: CodeInvalidParams, id: "5"},
		{name: "fractional id", body: `{"jsonrpc":"2.0","id":1.5,"method":"server/discover"}`, status: 400, code: CodeInvalidRequest, id: "null"},
		{name: "integral id spelled 1.0", body: `{"jsonrpc":"2.0","id":1.0,"method":"server/discover"}`, status: 400, code: CodeInvalidRequest, id: "null"},
		{name: "exponent id", body: `{"jsonrpc":"2.0","id":1e2,"method":"server/discover"}`, status: 400, code: CodeInvalidRequest, id: "null"},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"server/discover"}`, status: 400, code: CodeInvalidRequest, id: "null"},
		{name: "boolean id", body: `{"jsonrpc":"2.0","id":true,"method":"server/discover"}`, status: 400, code: CodeInvalidRequest, id: "null"},

		// Required _meta.
		{name: "missing _meta", body: mk(6, "server/discover", M{}), status: 400, code: CodeInvalidParams, id: "6",
			hdr: []func(http.Header){setHeader("MCP-Protocol-Version", ProtocolVersion)}},
		{name: "missing params", body: mk(6, "server/discover", nil), status: 400, code: CodeInvalidParams, id: "6",
			hdr: []func(http.Header){setHeader("MCP-Protocol-Version", ProtocolVersion)}},
		{name: "missing protocolVersion", body: mk(7, "server/discover", noMeta(metaProtocolVersion)), status: 400, code: CodeInvalidParams, id: "7",
			hdr: []func(http.Header){setHeader("MCP-Protocol-Version", ProtocolVersion)}},
		{name: "missing clientCapabilities", body: mk(8, "server/discover", noMeta(metaClientCapabilities)), status: 400, code: CodeInvalidParams, id: "8"},
		{name: "clientCapabilities not an object", body: mk(8, "server/discover", M{"_meta": meta([]any{}, nil)}), status: 400, code: CodeInvalidParams, id: "8"},
		{name: "missing clientInfo is accepted", body: mk(9, "server/discover", noMeta(metaClientInfo)), status: 200, id: "9"},

		// Metadata headers.
		{name: "MCP-Protocol-Version missing", body: discover(10), hdr: []func(http.Header){delHeader("MCP-Protocol-Version")},
			status: 400, code: CodeHeaderMismatch, id: "10"},
		{name: "MCP-Protocol-Version mismatch", body: discover(11), hdr: []func(http.Header){setHeader("MCP-Protocol-Version", "2025-11-25")},
			status: 400, code: CodeHeaderMismatch, id: "11"},
		{name: "Mcp-Method missing", body: discover(12), hdr: []func(http.Header){delHeader("Mcp-Method")},
			status: 400, code: CodeHeaderMismatch, id: "12"},
		{name: "Mcp-Method different", body: discover(13), hdr: []func(http.Header){setHeader("Mcp-Method", "tools/list")},
			status: 400, code: CodeHeaderMismatch, id: "13"},
		{name: "Mcp-Method different case", body: discover(14), hdr: []func(http.Header){setHeader("Mcp-Method", "Server/Discover")},
			status: 400, code: CodeHeaderMismatch, id: "14"},
		{name: "Mcp-Method twice", body: discover(15), hdr: []func(http.Header){func(h http.Header) { h.Add("Mcp-Method", "server/discover") }},
			status: 400, code: CodeHeaderMismatch, id: "15"},
		{name: "header names are case-insensitive", body: echo(16, nil), hdr: []func(http.Header){
			rawKey("Mcp-Method", "mcp-method", "tools/call"),
			rawKey("Mcp-Name", "MCP-NAME", "echo"),
			rawKey("Mcp-Protocol-Version", "mcp-protocol-version", ProtocolVersion)},
			status: 200, id: "16"},
		{name: "header values are trimmed", body: echo(17, nil), hdr: []func(http.Header){
			setHeader("Mcp-Name", "  echo  "), setHeader("Mcp-Method", "\ttools/call ")},
			status: 200, id: "17"},
		{name: "Base64 sentinel Mcp-Name", body: echo(18, nil), hdr: []func(http.Header){setHeader("Mcp-Name", "=?base64?ZWNobw==?=")},
			status: 200, id: "18"},
		{name: "Base64 sentinel without padding", body: echo(19, nil), hdr: []func(http.Header){setHeader("Mcp-Name", "=?base64?ZWNobw?=")},
			status: 400, code: CodeHeaderMismatch, id: "19"},
		{name: "Base64 sentinel outside the alphabet", body: echo(20, nil), hdr: []func(http.Header){setHeader("Mcp-Name", "=?base64?ZWN*bw==?=")},
			status: 400, code: CodeHeaderMismatch, id: "20"},
		{name: "Base64 sentinel of another name", body: echo(21, nil), hdr: []func(http.Header){setHeader("Mcp-Name", "=?base64?bmVlZHM=?=")},
			status: 400, code: CodeHeaderMismatch, id: "21"},
		{name: "Mcp-Name missing", body: echo(22, nil), hdr: []func(http.Header){delHeader("Mcp-Name")},
			status: 400, code: CodeHeaderMismatch, id: "22"},
		{name: "Mcp-Name wrong", body: echo(23, nil), hdr: []func(http.Header){setHeader("Mcp-Name", "needs")},
			status: 400, code: CodeHeaderMismatch, id: "23"},
		{name: "Mcp-Name differs in case", body: echo(24, nil), hdr: []func(http.Header){setHeader("Mcp-Name", "ECHO")},
			status: 400, code: CodeHeaderMismatch, id: "24"},

		// Versions and methods.
		{name: "unsupported version", body: mk(25, "server/discover", version("2025-11-25")),
			hdr:    []func(http.Header){setHeader("MCP-Protocol-Version", "2025-11-25")},
			status: 400, code: CodeUnsupportedProtocolVersion, id: "25", check: func(t *testing.T, r resp) {
				if want := `{"supported":["` + ProtocolVersion + `"],"requested":"2025-11-25"}`; !jsonEqual(t, r.Msg.Error.Data, []byte(want)) {
					t.Errorf("data = %s, want %s", r.Msg.Error.Data, want)
				}
			}},
		{name: "unknown method", body: mk(26, "foo/bar", params(nil)), status: 404, code: CodeMethodNotFound, id: "26"},
		{name: "missing required client capability", body: echoNeeds(27, M{}), status: 400, code: CodeMissingRequiredCapability, id: "27"},

		// HTTP layer.
		{name: "GET", verb: http.MethodGet, status: 405, check: wantAllowPost},
		{name: "DELETE", verb: http.MethodDelete, body: discover(28), status: 405, check: wantAllowPost},
		{name: "PUT", verb: http.MethodPut, body: discover(28), status: 405, check: wantAllowPost},
		{name: "wrong Content-Type", body: discover(29), hdr: []func(http.Header){setHeader("Content-Type", "text/plain")}, status: 415},
		{name: "missing Content-Type", body: discover(29), hdr: []func(http.Header){delHeader("Content-Type")}, status: 415},
		{name: "Content-Type with charset", body: discover(30), hdr: []func(http.Header){setHeader("Content-Type", "application/json; charset=utf-8")},
			status: 200, id: "30"},
		{name: "foreign Origin", body: discover(31), hdr: []func(http.Header){setHeader("Origin", "https://evil.example")}, status: 403},
		{name: "foreign Host", body: discover(32), host: "evil.example", status: 403},
	}
	for _, m := range []string{"ping", "initialize", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "tasks/result", "tasks/list"} {
		cases = append(cases,
			tc{name: "removed " + m, body: mk(33, m, params(nil)), status: 404, code: CodeMethodNotFound, id: "33"},
			tc{name: "removed " + m + " from a legacy client", body: mk("legacy", m, M{"protocolVersion": "2025-11-25", "capabilities": M{}}),
				hdr: []func(http.Header){delHeader("MCP-Protocol-Version")}, status: 404, code: CodeMethodNotFound, id: `"legacy"`})
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			verb := c.verb
			if verb == "" {
				verb = http.MethodPost
			}
			req, err := http.NewRequest(verb, ts.URL+"/mcp", strings.NewReader(c.body))
			must(t, err)
			req.Header = stdHeaders([]byte(c.body))
			for _, h := range c.hdr {
				h(req.Header)
			}
			if c.host != "" {
				req.Host = c.host
			}
			r := do(t, req)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if got := r.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
			switch {
			case c.code != 0:
				if r.Msg.Error == nil || r.Msg.Error.Code != c.code {
					t.Fatalf("want error %d, got %s", c.code, r.Body)
				}
				if r.Msg.JSONRPC != "2.0" || r.Msg.Result != nil {
					t.Errorf("malformed error response %s", r.Body)
				}
				if ct := r.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
			case c.status == 200:
				res := r.result(t)
				if res["resultType"] != "complete" {
					t.Errorf("resultType = %v", res["resultType"])
				}
			}
			if c.id != "" && string(r.Msg.ID) != c.id {
				t.Errorf("id = %s, want %s", r.Msg.ID, c.id)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

func echoNeeds(id any, caps any) string { return mk(id, "tools/call", toolCall(caps, "needs", nil)) }

func wantAllowPost(t *testing.T, r resp) {
	t.Helper()
	if got := r.Header.Get("Allow"); got != http.MethodPost {
		t.Errorf("Allow = %q, want POST", got)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestHTTPErrorsEchoIDKind checks that every error echoes the request id
// with its JSON kind: the string "7" and the integer 7 are different ids.
func TestHTTPErrorsEchoIDKind(t *testing.T) {
	s, _ := httpTestServer(t, nil)
	ts := startHTTP(t, s)
	ids := []struct {
		id   any
		want string
	}{
		{"7", `"7"`},
		{json.Number("7"), `7`},
		{json.Number("-3"), `-3`},
		{"", `""`},
		{json.Number("9007199254740993"), `9007199254740993`},
		{"é\u2028x", `"é\u2028x"`},
	}
	failures := []struct {
		name   string
		method string
		p      M
		mods   []func(http.Header)
		status int
		code   Code
	}{
		{"success", "server/discover", params(nil), nil, 200, 0},
		{"header mismatch", "server/discover", params(nil), []func(http.Header){setHeader("Mcp-Method", "x")}, 400, CodeHeaderMismatch},
		{"missing meta", "server/discover", M{}, []func(http.Header){setHeader("MCP-Protocol-Version", ProtocolVersion)}, 400, CodeInvalidParams},
		{"unknown method", "nope", params(nil), nil, 404, CodeMethodNotFound},
		{"unknown tool", "tools/call", toolCall(nil, "nope", nil), nil, 400, CodeInvalidParams},
		{"missing capability", "tools/call", toolCall(nil, "needs", nil), nil, 400, CodeMissingRequiredCapability},
		{"unknown log level", "server/discover", withMeta(params(nil), M{metaLogLevel: "loud"}), nil, 400, CodeInvalidParams},
	}
	for _, id := range ids {
		for _, f := range failures {
			t.Run(fmt.Sprintf("%s/%s", f.name, id.want), func(t *testing.T) {
				r := rpc(t, ts.URL, id.id, f.method, f.p, f.mods...)
				if r.Status != f.status {
					t.Fatalf("status %d, want %d: %s", r.Status, f.status, r.Body)
				}
				if f.code != 0 {
					r.wantError(t, f.status, f.code)
				}
				// The JSON encoding of the id may escape differently;
				// compare decoded values and kinds.
				if !jsonEqual(t, r.Msg.ID, []byte(id.want)) || (r.Msg.ID[0] == '"') != (id.want[0] == '"') {
					t.Errorf("id = %s, want %s", r.Msg.ID, id.want)
				}
			})
		}
	}
}

func TestHTTPMissingCapabilitiesMerged(t *testing.T) {
	s, _ := httpTestServer(t, nil)
	ts := startHTTP(t, s)
	cases := []struct {
		caps string
		want string
	}{
		{`{}`, `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`},
		{`{"sampling":{}}`, `{"elicitation":{"form":{},"url":{}},"roots":{}}`},
		{`{"elicitation":{}}`, `{"elicitation":{"url":{}},"sampling":{},"roots":{}}`}, // {} means form only
		{`{"elicitation":{"url":{}},"roots":{}}`, `{"elicitation":{"form":{}},"sampling":{}}`},
		{`{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`, ``},
	}
	for _, c := range cases {
		t.Run(c.caps, func(t *testing.T) {
			r := rpc(t, ts.URL, 1, "tools/call", toolCall(json.RawMessage(c.caps), "needs", nil))
			if c.want == "" {
				if r.Status != 200 || r.text(t) != "had all" {
					t.Fatalf("want success, got %v", r)
				}
				return
			}
			e := r.wantError(t, 400, CodeMissingRequiredCapability)
			if want := `{"requiredCapabilities":` + c.want + `}`; !jsonEqual(t, e.Data, []byte(want)) {
				t.Errorf("data = %s, want %s", e.Data, want)
			}
		})
	}
}

func TestHTTPBodyTooLarge(t *testing.T) {
	s, _ := newServer(t, &Options{Limits: Limits{MaxBodyBytes: 512}})
	addText(t, s, "t", "ok")
	ts := startHTTP(t, s)
	fits := rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "t", M{"pad": strings.Repeat("a", 100)}))
	if fits.Status != 200 {
		t.Fatalf("a small body: %v", fits)
	}
	big := rpc(t, ts.URL, 2, "tools/call", toolCall(nil, "t", M{"pad": strings.Repeat("a", 600)}))
	if big.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("want 413, got %v", big)
	}
	if big.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("413 lacks Cache-Control: no-store")
	}
}

func TestHTTPTooManyHeaders(t *testing.T) {
	s, _ := newServer(t, nil)
	b := body(t, 1, "server/discover", params(nil))
	withFields := func(n int) http.Header {
		h := stdHeaders(b) // 4 fields
		for i := 0; len(h) < n; i++ {
			h.Set("X-Pad-"+strconv.Itoa(i), "x")
		}
		return h
	}
	// The exact boundary, in process: the limit counts header fields.
	if r := serveRec(t, s, "/mcp", b, withFields(defaultMaxHeaderCount)); r.Status != 200 {
		t.Fatalf("%d header fields must be accepted: %v", defaultMaxHeaderCount, r)
	}
	if r := serveRec(t, s, "/mcp", b, withFields(defaultMaxHeaderCount+1)); r.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("%d header fields: want 431, got %v", defaultMaxHeaderCount+1, r)
	}
	// Over real HTTP.
	ts := startHTTP(t, s)
	if r := post(t, ts.URL, b, withFields(150)); r.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("want 431, got %v", r)
	}
	// A configured limit.
	s2, _ := newServer(t, &Options{Limits: Limits{MaxHeaderCount: 10}})
	if r := serveRec(t, s2, "/mcp", b, withFields(11)); r.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("MaxHeaderCount 10: want 431, got %v", r)
	}
}

func TestHTTPOriginAndHost(t *testing.T) {
	s, _ := newServer(t, &Options{AllowedOrigins: []string{"https://app.example/"}, AllowedHosts: []string{"mcp.example.com"}})
	ts := startHTTP(t, s)
	cases := []struct {
		origin, host string
		status       int
	}{
		{"", "", 200},
		{"http://127.0.0.1:5173", "", 200},
		{"http://localhost:3000", "", 200},
		{"https://localhost", "", 200},
		{"http://[::1]:8080", "", 200},
		{"http://127.9.9.9", "", 200},
		{"https://app.example", "", 200},
		{"https://APP.example", "", 200},
		{"https://evil.example", "", 403},
		{"http://localhost.evil.example", "", 403},
		{"http://127.0.0.1.evil.example", "", 403},
		{"file://localhost", "", 403},
		{"null", "", 403},
		{"https://app.example:8443", "", 403},
		{"", "127.0.0.1", 200},
		{"", "127.0.0.1:5555", 200},
		{"", "localhost", 200},
		{"", "LOCALHOST:80", 200},
		{"", "[::1]:8080", 200},
		{"", "[::1]", 200},
		{"", "mcp.example.com", 200},
		{"", "mcp.example.com:443", 200},
		{"", "evil.example", 403},
		{"", "evil.example:80", 403},
		{"", "localhost.evil.example", 403},
		{"", "10.0.0.1", 403},
	}
	for _, c := range cases {
		t.Run(c.origin+"|"+c.host, func(t *testing.T) {
			b := body(t, 1, "server/discover", params(nil))
			req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(string(b)))
			must(t, err)
			req.Header = stdHeaders(b)
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.host != "" {
				req.Host = c.host
			}
			r := do(t, req)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if r.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("missing Cache-Control: no-store")
			}
		})
	}
}

func TestHTTPNotificationAccepted(t *testing.T) {
	s, _ := httpTestServer(t, nil)
	ts := startHTTP(t, s)
	for _, method := range []string{"notifications/cancelled", "notifications/whatever"} {
		r := rpc(t, ts.URL, nil, method, params(M{"requestId": 1}))
		if r.Status != http.StatusAccepted || len(r.Body) != 0 {
			t.Errorf("%s: want 202 with an empty body, got %v", method, r)
		}
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: missing Cache-Control: no-store", method)
		}
	}
	// An invalid notification is an error without an id.
	r := post(t, ts.URL, []byte(`{"jsonrpc":"2.1","method":"notifications/cancelled"}`), stdHeaders(nil))
	r.wantError(t, 400, CodeInvalidRequest)
	if string(r.Msg.ID) != "null" {
		t.Errorf("id = %s, want null", r.Msg.ID)
	}
}

// TestAdmission checks admission rejections: status, challenge, headers, the
// echoed id, and that known and unknown targets are rejected alike.
func TestAdmission(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	s, _ := newServer(t, &Options{Admission: func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
		mu.Lock()
		seen[r.Method] = r.BearerToken
		mu.Unlock()
		switch r.BearerToken {
		case "good":
			return Identity{Principal: "alice", Partition: "tenant-a"}, nil
		case "slow":
			return Identity{}, &AdmissionError{Status: 429, Message: "Slow down", Header: http.Header{"Retry-After": {"7"}}}
		case "plain":
			return Identity{}, errors.New("token store down")
		}
		return Identity{}, &AdmissionError{Status: 401, Message: "Unauthorized", Challenge: `Bearer resource_metadata="https://x/.well-known/oauth-protected-resource"`}
	}})
	got := make(chan Identity, 1)
	must(t, s.AddTool(Tool{Name: "who", Description: "Reports the identity."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		got <- req.Identity
		return textResult(req.Identity.Principal), nil
	}))
	ts := startHTTP(t, s)
	auth := func(tok string) func(http.Header) { return setHeader("Authorization", "Bearer "+tok) }

	if r := rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "who", nil), auth("good")); r.Status != 200 || r.text(t) != "alice" {
		t.Fatalf("admitted call: %v", r)
	}
	if id := <-got; id.Partition != "tenant-a" {
		t.Errorf("handler saw partition %q", id.Partition)
	}
	r := rpc(t, ts.URL, "req-1", "tools/call", toolCall(nil, "who", nil), auth("bad"))
	if r.Status != 401 || r.Msg.Error == nil {
		t.Fatalf("want 401, got %v", r)
	}
	if r.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("401 lacks the challenge")
	}
	if string(r.Msg.ID) != `"req-1"` {
		t.Errorf("admission rejection id = %s, want \"req-1\" (errors must echo the request id)", r.Msg.ID)
	}
	unknown := rpc(t, ts.URL, "req-1", "tools/call", toolCall(nil, "nope", nil), auth("bad"), setHeader("Mcp-Name", "nope"))
	if unknown.Status != r.Status || string(unknown.Body) != string(r.Body) {
		t.Errorf("unknown target rejected differently:\n%s\n%s", unknown.Body, r.Body)
	}
	slow := rpc(t, ts.URL, 2, "tools/call", toolCall(nil, "who", nil), auth("slow"))
	if slow.Status != 429 || slow.Header.Get("Retry-After") != "7" {
		t.Errorf("want 429 with Retry-After, got %v %v", slow, slow.Header)
	}
	plain := rpc(t, ts.URL, 3, "tools/call", toolCall(nil, "who", nil), auth("plain"))
	if plain.Status != 401 || strings.Contains(string(plain.Body), "token store") {
		t.Errorf("a plain admission error must be a bare 401, got %v", plain)
	}
}

// progressServer has a tool that reports progress three times.
func progressServer(t testing.TB) (*Server, chan error) {
	s, _ := newServer(t, nil)
	errs := make(chan error, 8)
	must(t, AddTool(s, Tool{Name: "work", Description: "Reports progress."},
		func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
			can := req.CanReportProgress()
			var first error
			for i, p := range []float64{0.5, 1, 2.25} {
				if err := req.Progress(p, 2.25, "step "+strconv.Itoa(i)); err != nil {
					first = err
					break
				}
			}
			errs <- first
			return textResult("done can=" + strconv.FormatBool(can)), nil
		}))
	return s, errs
}

func TestSSEProgress(t *testing.T) {
	s, errs := progressServer(t)
	ts := startHTTP(t, s)
	for _, tok := range []string{`"tok-1"`, `42`, `9007199254740993`, `""`} {
		t.Run(tok, func(t *testing.T) {
			p := withMeta(toolCall(nil, "work", nil), M{"progressToken": json.RawMessage(tok)})
			r := rpc(t, ts.URL, 1, "tools/call", p)
			if err := <-errs; err != nil {
				t.Fatalf("Progress: %v", err)
			}
			if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type = %q, want text/event-stream", ct)
			}
			if r.Header.Get("X-Accel-Buffering") != "no" || r.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("SSE headers: %v", r.Header)
			}
			if len(r.Frames) != 4 {
				t.Fatalf("want 3 progress frames and the result, got %d: %s", len(r.Frames), r.Body)
			}
			last := -1.0
			for i, f := range r.Frames[:3] {
				var n struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Method  string          `json:"method"`
					Params  struct {
						Token    json.RawMessage `json:"progressToken"`
						Progress float64         `json:"progress"`
						Total    float64         `json:"total"`
						Message  string          `json:"message"`
					} `json:"params"`
				}
				must(t, json.Unmarshal(f, &n))
				if n.JSONRPC != "2.0" || n.ID != nil || n.Method != "notifications/progress" {
					t.Errorf("frame %d is not a progress notification: %s", i, f)
				}
				if string(n.Params.Token) != tok {
					t.Errorf("progressToken = %s, want exactly %s", n.Params.Token, tok)
				}
				if n.Params.Progress <= last {
					t.Errorf("progress does not increase: %v after %v", n.Params.Progress, last)
				}
				last = n.Params.Progress
				if n.Params.Total != 2.25 || n.Params.Message != "step "+strconv.Itoa(i) {
					t.Errorf("frame %d: %s", i, f)
				}
			}
			if string(r.Msg.ID) != "1" || r.text(t) != "done can=true" {
				t.Errorf("final frame: %s", r.Frames[3])
			}
		})
	}
}

func TestProgressNotIncreasing(t *testing.T) {
	s, _ := newServer(t, nil)
	errs := make(chan [3]error, 1)
	must(t, AddTool(s, Tool{Name: "p", Description: "Misreports progress."},
		func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
			var e [3]error
			e[0] = req.Progress(5, 0, "")
			e[1] = req.Progress(5, 0, "")
			e[2] = req.Progress(4, 0, "")
			errs <- e
			return textResult("ok"), nil
		}))
	ts := startHTTP(t, s)
	r := rpc(t, ts.URL, 1, "tools/call", withMeta(toolCall(nil, "p", nil), M{"progressToken": "t"}))
	e := <-errs
	if e[0] != nil || !errors.Is(e[1], ErrProgressNotIncreasing) || !errors.Is(e[2], ErrProgressNotIncreasing) {
		t.Fatalf("errors = %v", e)
	}
	if len(r.Frames) != 2 {
		t.Errorf("want one progress frame and the result, got %q", r.Body)
	}
	if strings.Contains(string(r.Frames[0]), `"total"`) {
		t.Errorf("total 0 must be omitted: %s", r.Frames[0])
	}
}

func TestNoProgressTokenMeansJSON(t *testing.T) {
	s, errs := progressServer(t)
	ts := startHTTP(t, s)
	for name, tok := range map[string]any{"absent": nil, "null": json.RawMessage("null"), "fractional": json.RawMessage("1.5"), "object": M{}} {
		t.Run(name, func(t *testing.T) {
			p := toolCall(nil, "work", nil)
			if tok != nil {
				p = withMeta(p, M{"progressToken": tok})
			}
			r := rpc(t, ts.URL, 1, "tools/call", p)
			if err := <-errs; !errors.Is(err, ErrNoProgress) {
				t.Errorf("Progress error = %v, want ErrNoProgress", err)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" || r.Status != 200 {
				t.Fatalf("want a plain JSON response, got %q %v", ct, r)
			}
			if r.text(t) != "done can=false" {
				t.Errorf("result: %s", r.Body)
			}
		})
	}
}

// TestProgressWithoutEventStreamAccept: a client whose Accept admits only
// application/json cannot receive progress. Progress must then report
// ErrNoProgress (its documented meaning: "progress cannot be delivered for
// this request") and CanReportProgress false, so that handlers written like
// the conformance fixtures (ignore ErrNoProgress) still complete.
func TestProgressWithoutEventStreamAccept(t *testing.T) {
	s, errs := progressServer(t)
	ts := startHTTP(t, s)
	r := rpc(t, ts.URL, 1, "tools/call", withMeta(toolCall(nil, "work", nil), M{"progressToken": "t"}),
		setHeader("Accept", "application/json"))
	err := <-errs
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("want JSON, got %q: %s", ct, r.Body)
	}
	if !errors.Is(err, ErrNoProgress) {
		t.Errorf("Progress error = %v, want one matching ErrNoProgress", err)
	}
	if r.Status != 200 || r.text(t) != "done can=false" {
		t.Errorf("CanReportProgress must be false when the client does not accept an event stream: %s", r.Body)
	}
}

// TestSSECancellationOnDisconnect: closing the response stream cancels the
// handler's context.
func TestSSECancellationOnDisconnect(t *testing.T) {
	s, _ := newServer(t, nil)
	cancelled := make(chan error, 1)
	returned := make(chan struct{})
	must(t, AddTool(s, Tool{Name: "block", Description: "Blocks until cancelled."},
		func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
			defer close(returned)
			if err := req.Progress(1, 0, "started"); err != nil {
				return nil, err
			}
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		}))
	ts := startHTTP(t, s)
	res, st := openStream(t, context.Background(), ts.URL, 1, "tools/call", withMeta(toolCall(nil, "block", nil), M{"progressToken": 7}))
	m, _ := st.nextMsg()
	if m.Method != "notifications/progress" {
		t.Fatalf("first frame: %+v", m)
	}
	res.Body.Close() // the client goes away
	if err := waitFor(t, cancelled, "cancellation of the handler's context"); !errors.Is(err, context.Canceled) {
		t.Errorf("ctx.Err() = %v, want context.Canceled", err)
	}
	waitFor(t, returned, "the handler returning")
	// The server keeps serving.
	if r := rpc(t, ts.URL, 2, "server/discover", params(nil)); r.Status != 200 {
		t.Errorf("after a disconnect: %v", r)
	}
}

// TestSSEKeepAlive runs in a synctest bubble: the fake clock advances 31 s
// while the handler waits, so exactly two keep-alive comments (every 15 s by
// default) precede the result.
func TestSSEKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newServer(t, nil)
		release := make(chan struct{})
		must(t, AddTool(s, Tool{Name: "slow", Description: "Waits."},
			func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
				if err := req.Progress(1, 0, ""); err != nil {
					return nil, err
				}
				<-release
				return textResult("late"), nil
			}))
		b := body(t, 1, "tools/call", withMeta(toolCall(nil, "slow", nil), M{"progressToken": "k"}))
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(string(b)))
		req.Header = stdHeaders(b)
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() { s.ServeHTTP(rec, req); close(done) }()
		time.Sleep(31 * time.Second)
		close(release)
		<-done
		frames, comments := parseSSE(t, rec.Body.Bytes())
		if comments != 2 || len(frames) != 2 {
			t.Fatalf("want 2 keep-alives and 2 frames, got %d and %d: %q", comments, len(frames), rec.Body.String())
		}
		// Nothing is written after the final response.
		time.Sleep(time.Minute)
		if f, c := parseSSE(t, rec.Body.Bytes()); c != 2 || len(f) != 2 {
			t.Errorf("writes after the final response: %q", rec.Body.String())
		}
	})
}

func TestLogging(t *testing.T) {
	s, _ := newServer(t, nil)
	logged := make(chan []bool, 1)
	must(t, AddTool(s, Tool{Name: "chatty", Description: "Logs at every level."},
		func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
			var sent []bool
			for _, l := range logLevels {
				ok, err := req.Log(l, "chatty", exactjson.String("at "+string(l)))
				if err != nil {
					return nil, err
				}
				sent = append(sent, ok)
			}
			if _, err := req.Log("verbose", "", exactjson.Null()); err == nil {
				return nil, errors.New("an unknown level was accepted")
			}
			logged <- sent
			return textResult("ok"), nil
		}))
	ts := startHTTP(t, s)
	for _, c := range []struct {
		level string // "" : no logLevel
		want  []string
	}{
		{"", nil},
		{"debug", []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}},
		{"warning", []string{"warning", "error", "critical", "alert", "emergency"}},
		{"emergency", []string{"emergency"}},
	} {
		t.Run(c.level, func(t *testing.T) {
			p := toolCall(nil, "chatty", nil)
			if c.level != "" {
				p = withMeta(p, M{metaLogLevel: c.level})
			}
			r := rpc(t, ts.URL, 1, "tools/call", p)
			sent := <-logged
			var got []string
			for _, f := range r.Frames {
				var n struct {
					Method string `json:"method"`
					Params struct {
						Level  string `json:"level"`
						Logger string `json:"logger"`
						Data   string `json:"data"`
					} `json:"params"`
				}
				must(t, json.Unmarshal(f, &n))
				if n.Method == "" {
					continue // the response
				}
				if n.Method != "notifications/message" || n.Params.Logger != "chatty" || n.Params.Data != "at "+n.Params.Level {
					t.Errorf("unexpected frame %s", f)
				}
				got = append(got, n.Params.Level)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("levels sent %v, want %v", got, c.want)
			}
			nsent := 0
			for _, ok := range sent {
				if ok {
					nsent++
				}
			}
			if nsent != len(c.want) {
				t.Errorf("Log reported %d sent, want %d", nsent, len(c.want))
			}
			if c.level == "" && r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("without logLevel the response must stay JSON")
			}
		})
	}
	r := rpc(t, ts.URL, 1, "tools/call", withMeta(toolCall(nil, "chatty", nil), M{metaLogLevel: "verbose"}))
	r.wantError(t, 400, CodeInvalidParams)
	r = rpc(t, ts.URL, 1, "tools/call", withMeta(toolCall(nil, "chatty", nil), M{metaLogLevel: 3}))
	r.wantError(t, 400, CodeInvalidParams)
}

// listenServer has tools, prompts and resources so that every filter applies.
func listenServer(t testing.TB, opts *Options) *Server {
	s, _ := newServer(t, opts)
	addText(t, s, "t1", "one")
	must(t, s.AddPrompt(Prompt{Name: "p1", Description: "A prompt."}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent("hi")}}}, nil
	}))
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://a", Name: "a"}}, func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "a")}}, nil
	}))
	return s
}

type notification struct {
	Method string `json:"method"`
	Params struct {
		URI           string          `json:"uri"`
		Notifications json.RawMessage `json:"notifications"`
		Meta          struct {
			SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
		} `json:"_meta"`
	} `json:"params"`
}

func decodeNotification(t testing.TB, f []byte) notification {
	t.Helper()
	var n notification
	if err := json.Unmarshal(f, &n); err != nil {
		t.Fatalf("frame %q: %v", f, err)
	}
	return n
}

func listen(t testing.TB, url string, id any, filter M) (*http.Response, *sseStream, notification) {
	t.Helper()
	res, st := openStream(t, context.Background(), url, id, "subscriptions/listen", params(M{"notifications": filter}))
	t.Cleanup(func() { res.Body.Close() })
	m, f := st.nextMsg()
	if m.ID != nil || m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("the first frame must be the acknowledgement, got %s", f)
	}
	return res, st, decodeNotification(t, f)
}

func TestSubscriptionsListenAck(t *testing.T) {
	s := listenServer(t, nil)
	ts := startHTTP(t, s)
	for _, c := range []struct {
		id      any
		wantID  string
		filter  M
		honored string
	}{
		{"sub-1", `"sub-1"`, M{"toolsListChanged": true}, `{"toolsListChanged":true}`},
		{"7", `"7"`, M{"promptsListChanged": true, "toolsListChanged": false}, `{"promptsListChanged":true}`},
		{json.Number("7"), `7`, M{"resourcesListChanged": true, "resourceSubscriptions": []string{"test://a"}},
			`{"resourcesListChanged":true,"resourceSubscriptions":["test://a"]}`},
		{json.Number("9007199254740993"), `9007199254740993`, M{}, `{}`},
	} {
		t.Run(c.wantID, func(t *testing.T) {
			res, _, ack := listen(t, ts.URL, c.id, c.filter)
			if string(ack.Params.Meta.SubscriptionID) != c.wantID {
				t.Errorf("subscriptionId = %s, want %s", ack.Params.Meta.SubscriptionID, c.wantID)
			}
			if !jsonEqual(t, ack.Params.Notifications, []byte(c.honored)) {
				t.Errorf("acknowledged %s, want %s", ack.Params.Notifications, c.honored)
			}
			if res.Header.Get("X-Accel-Buffering") != "no" || res.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("headers %v", res.Header)
			}
		})
	}
	// A server without prompts does not honour promptsListChanged.
	s2, _ := newServer(t, nil)
	addText(t, s2, "t", "x")
	_, _, ack := listen(t, startHTTP(t, s2).URL, 1, M{"promptsListChanged": true, "toolsListChanged": true, "resourceSubscriptions": []string{"test://a"}})
	if !jsonEqual(t, ack.Params.Notifications, []byte(`{"toolsListChanged":true}`)) {
		t.Errorf("acknowledged %s", ack.Params.Notifications)
	}
	// Malformed filters.
	for _, f := range []any{nil, true, M{"toolsListChanged": "yes"}, M{"resourceSubscriptions": "test://a"}, M{"resourceSubscriptions": []any{1}}, M{"resourceSubscriptions": []string{""}}} {
		p := params(nil)
		if f != nil {
			p["notifications"] = f
		}
		rpc(t, ts.URL, 1, "subscriptions/listen", p).wantError(t, 400, CodeInvalidParams)
	}
}

// TestSubscriptionsListenDelivery: list changes reach only the streams that
// asked for them. Absence is checked without timing: after the tools change a
// prompts change follows, and the prompts-only stream's next frame must be
// the prompts change.
func TestSubscriptionsListenDelivery(t *testing.T) {
	s := listenServer(t, nil)
	ts := startHTTP(t, s)
	_, tools, _ := listen(t, ts.URL, "tools", M{"toolsListChanged": true})
	_, prompts, _ := listen(t, ts.URL, "prompts", M{"promptsListChanged": true})
	_, res, _ := listen(t, ts.URL, json.Number("3"), M{"resourceSubscriptions": []string{"test://a"}})

	addText(t, s, "t2", "two")
	s.NotifyResourceUpdated("test://b")
	s.NotifyResourceUpdated("test://ab")
	s.NotifyResourceUpdated("test://a/sub")
	must(t, s.AddPrompt(Prompt{Name: "p2"}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{}, nil
	}))
	s.NotifyResourceUpdated("test://a")
	s.NotifyResourcesChanged()

	next := func(st *sseStream) notification {
		_, f := st.nextMsg()
		return decodeNotification(t, f)
	}
	n := next(tools)
	if n.Method != "notifications/tools/list_changed" || string(n.Params.Meta.SubscriptionID) != `"tools"` {
		t.Errorf("tools stream: %+v", n)
	}
	n = next(prompts)
	if n.Method != "notifications/prompts/list_changed" || string(n.Params.Meta.SubscriptionID) != `"prompts"` {
		t.Errorf("prompts stream got %+v, want only prompts/list_changed", n)
	}
	var uris []string
	for range 2 {
		n = next(res)
		if n.Method != "notifications/resources/updated" || string(n.Params.Meta.SubscriptionID) != `3` {
			t.Fatalf("resource stream: %+v", n)
		}
		uris = append(uris, n.Params.URI)
	}
	if strings.Join(uris, " ") != "test://a/sub test://a" {
		t.Errorf("resource updates %v, want the subscribed URI and its sub-resources only", uris)
	}
	// A later change is delivered again after the first was read.
	if !s.RemoveTool("t2") {
		t.Fatal("RemoveTool")
	}
	if n = next(tools); n.Method != "notifications/tools/list_changed" {
		t.Errorf("tools stream after RemoveTool: %+v", n)
	}
}

func TestSubscriptionsListenShutdown(t *testing.T) {
	for _, omit := range []bool{false, true} {
		t.Run(fmt.Sprintf("OmitServerInfo=%v", omit), func(t *testing.T) {
			s := listenServer(t, &Options{OmitServerInfo: omit})
			ts := startHTTP(t, s)
			_, st1, _ := listen(t, ts.URL, "sub-a", M{"toolsListChanged": true})
			_, st2, _ := listen(t, ts.URL, json.Number("12"), M{"promptsListChanged": true})
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			must(t, s.Shutdown(ctx))
			for _, c := range []struct {
				st *sseStream
				id string
			}{{st1, `"sub-a"`}, {st2, `12`}} {
				m, f := c.st.nextMsg()
				if string(m.ID) != c.id || m.Error != nil {
					t.Fatalf("closing frame %s", f)
				}
				if omit {
					if want := `{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":` + c.id + `}}`; string(m.Result) != want {
						t.Errorf("closing result %s, want %s", m.Result, want)
					}
				} else {
					res := decodeObj(t, m.Result)
					mt := res["_meta"].(M)
					if res["resultType"] != "complete" || len(res) != 2 || mt[metaServerInfo] == nil ||
						!jsonEqual(t, []byte(mustJSON(mt[metaSubscriptionID])), []byte(c.id)) {
						t.Errorf("closing result %s", m.Result)
					}
				}
				if _, err := c.st.next(); !errors.Is(err, io.EOF) {
					t.Errorf("the stream must end after the closing result, got %v", err)
				}
			}
			// New requests are refused after shutdown.
			if r := rpc(t, ts.URL, 1, "server/discover", params(nil)); r.Status != http.StatusServiceUnavailable {
				t.Errorf("after Shutdown: %v", r)
			}
		})
	}
}

// TestSubscriptionsListenClientClose: a listener that goes away is
// unsubscribed (Shutdown does not wait for it).
func TestSubscriptionsListenClientClose(t *testing.T) {
	s := listenServer(t, nil)
	ts := startHTTP(t, s)
	res, _, _ := listen(t, ts.URL, 1, M{"toolsListChanged": true})
	subs := func() int {
		s.bus.mu.Lock()
		defer s.bus.mu.Unlock()
		return len(s.bus.subs)
	}
	if n := subs(); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}
	res.Body.Close()
	// Poll until the handler has seen the disconnect (the hang guard bounds
	// the wait; no speed is asserted).
	for deadline := time.Now().Add(hangGuard); subs() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("hang guard: the departed listener was never unsubscribed")
		}
	}
	addText(t, s, "t9", "nine") // publishing to nobody must not block
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	must(t, s.Shutdown(ctx))
}

// TestListenWithoutEventStreamAccept: subscriptions/listen from a client
// whose Accept excludes text/event-stream is a request, so it must get a
// JSON-RPC response echoing its id, never a bare 202 (which means "accepted
// notification").
func TestListenWithoutEventStreamAccept(t *testing.T) {
	s := listenServer(t, nil)
	ts := startHTTP(t, s)
	r := rpc(t, ts.URL, "L1", "subscriptions/listen", params(M{"notifications": M{"toolsListChanged": true}}), setHeader("Accept", "application/json"))
	if r.Status == http.StatusAccepted || r.Msg.Error == nil || string(r.Msg.ID) != `"L1"` {
		t.Fatalf("want a JSON-RPC error echoing \"L1\", got %v (headers %v)", r, r.Header)
	}
	if r.Status < 400 || r.Status > 499 {
		t.Errorf("status %d, want a 4xx", r.Status)
	}
}

// TestSSEErrorAfterProgress: once the stream is committed, a failure is the
// final frame (HTTP 200 already sent), still sanitized.
func TestSSEErrorAfterProgress(t *testing.T) {
	s, _ := newServer(t, nil)
	must(t, AddTool(s, Tool{Name: "fail", Description: "Fails after progress."},
		func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
			if err := req.Progress(1, 0, ""); err != nil {
				return nil, err
			}
			return nil, errBoom
		}))
	ts := startHTTP(t, s)
	r := rpc(t, ts.URL, 8, "tools/call", withMeta(toolCall(nil, "fail", nil), M{"progressToken": 1}))
	if r.Status != 200 || len(r.Frames) != 2 {
		t.Fatalf("%v", r)
	}
	if want := `{"jsonrpc":"2.0","id":8,"error":{"code":-32603,"message":"Internal error"}}`; string(r.Frames[1]) != want {
		t.Errorf("final frame %s, want %s", r.Frames[1], want)
	}
}

// TestShutdownWaitsForInflight: Shutdown refuses new requests at once and
// returns when in-flight requests finish (or its context ends first).
func TestShutdownWaitsForInflight(t *testing.T) {
	s, _ := newServer(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	must(t, AddTool(s, Tool{Name: "slow", Description: "Waits for release."},
		func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
			close(started)
			<-release
			return textResult("finished"), nil
		}))
	ts := startHTTP(t, s)
	done := make(chan resp, 1)
	go func() { done <- rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "slow", nil)) }()
	waitFor(t, started, "the handler starting")
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(expired); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with an in-flight request and an ended context = %v", err)
	}
	if r := rpc(t, ts.URL, 2, "server/discover", params(nil)); r.Status != http.StatusServiceUnavailable || string(r.Msg.ID) != "2" {
		t.Errorf("a request during shutdown: %v", r)
	}
	close(release)
	ctx, cancel2 := context.WithTimeout(context.Background(), hangGuard)
	defer cancel2()
	must(t, s.Shutdown(ctx))
	if r := waitFor(t, done, "the in-flight response"); r.Status != 200 || r.text(t) != "finished" {
		t.Errorf("the in-flight request: %v", r)
	}
}

func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		length  int64
		max     int
		want    string
		wantErr bool
	}{
		{"declared length", `{"a":1}`, 7, 100, `{"a":1}`, false},
		{"unknown length", `{"a":1}`, -1, 100, `{"a":1}`, false},
		{"empty", ``, 0, 100, ``, false},
		{"shorter than declared", `{"a"`, 7, 100, ``, true},
		{"longer than declared", `{"a":1}xx`, 7, 100, ``, true},
		{"declared past the limit reads to the end", `{"a":1}`, 1000, 100, `{"a":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readBody(strings.NewReader(tc.body), tc.length, tc.max)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && string(got) != tc.want {
				t.Errorf("body = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDeadlineAnswersEarly: a handler that ignores its context past
// RequestTimeout still has its client answered on time (504), once, and
// what it returns later is dropped; a handler that finishes in time is not
// answered early.
func TestDeadlineAnswersEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newServer(t, &Options{RequestTimeout: time.Second})
		release := make(chan struct{})
		must(t, AddTool(s, Tool{Name: "stuck", Description: "Ignores its context."},
			func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
				<-release
				return textResult("late"), nil
			}))
		must(t, AddTool(s, Tool{Name: "quick", Description: "Answers at once."},
			func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
				return textResult("quick"), nil
			}))
		serve := func(tool string) (*httptest.ResponseRecorder, chan struct{}) {
			b := body(t, 1, "tools/call", toolCall(nil, tool, nil))
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(string(b)))
			req.Header = stdHeaders(b)
			rec := httptest.NewRecorder()
			done := make(chan struct{})
			go func() { s.ServeHTTP(rec, req); close(done) }()
			return rec, done
		}
		rec, done := serve("stuck")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), `"code":-32603`) {
			t.Fatalf("while the handler is stuck: HTTP %d %s", rec.Code, rec.Body)
		}
		answered := rec.Body.String()
		close(release)
		<-done
		if rec.Body.String() != answered {
			t.Errorf("the late result was written too: %q", rec.Body.String())
		}
		rec, done = serve("quick")
		<-done
		time.Sleep(2 * time.Second) // past the deadline: nothing more is written
		synctest.Wait()
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "quick") || strings.Count(rec.Body.String(), `"jsonrpc"`) != 1 {
			t.Errorf("a quick handler: HTTP %d %s", rec.Code, rec.Body)
		}
	})
}

// TestAcceptsSSE: the allocation-free Accept reading agrees with
// mime.ParseMediaType on the media types it looks for.
func TestAcceptsSSE(t *testing.T) {
	for _, tc := range []struct {
		accept []string
		want   bool
	}{
		{nil, false},
		{[]string{"application/json"}, false},
		{[]string{"application/json, text/event-stream"}, true},
		{[]string{"application/json", "text/event-stream;q=0.5"}, true},
		{[]string{" TEXT/Event-Stream "}, true},
		{[]string{"*/*"}, true},
		{[]string{"text/*; charset=utf-8"}, true},
		{[]string{"text/plain, application/*"}, false},
		{[]string{"text/event-streams"}, false},
		{[]string{""}, false},
	} {
		if got := acceptsSSE(tc.accept); got != tc.want {
			t.Errorf("acceptsSSE(%q) = %v, want %v", tc.accept, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { acceptsSSE([]string{"application/json, text/event-stream"}) }); n != 0 {
		t.Errorf("acceptsSSE allocates %v times", n)
	}
}

// TestPooledResponseBuffersNotShared: the response buffers the HTTP
// transport gives back for reuse (putWire) never carry one call's answer
// into another's: many concurrent calls with distinct ids and outputs, over
// real HTTP, each answered with exactly its own (run with -race).
func TestPooledResponseBuffersNotShared(t *testing.T) {
	s, err := NewServer(Implementation{Name: "pool", Version: "1"}, &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	type in struct {
		Text string `json:"text"`
	}
	type out struct {
		Echo string `json:"echo"`
	}
	must(t, AddTool(s, Tool{Name: "echo", Description: "Echoes."}, func(ctx context.Context, req *Request, a in) (out, error) {
		// Outputs of very different lengths, so buffers grow and shrink.
		return out{Echo: strings.Repeat(a.Text, 1+len(a.Text)%7*50)}, nil
	}))
	ts := httptest.NewServer(s)
	defer ts.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 40 {
				text := fmt.Sprintf("g%d-i%d", g, i)
				id := g*1000 + i
				r := rpc(t, ts.URL, id, "tools/call", toolCall(nil, "echo", M{"text": text}))
				want := strings.Repeat(text, 1+len(text)%7*50)
				var got struct {
					ID     int `json:"id"`
					Result struct {
						StructuredContent out `json:"structuredContent"`
					} `json:"result"`
				}
				if err := json.Unmarshal(r.Body, &got); err != nil || got.ID != id || got.Result.StructuredContent.Echo != want {
					t.Errorf("call %d: got id %d, echo %.40q (err %v), want its own answer", id, got.ID, got.Result.StructuredContent.Echo, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestCheckHeadersNoAlloc: checking the metadata headers of a valid request
// allocates nothing (each header is looked up under its canonical name).
func TestCheckHeadersNoAlloc(t *testing.T) {
	h := stdHeaders(body(t, 1, "tools/call", toolCall(nil, "echo", nil)))
	if e := checkHeaders(h, ProtocolVersion, "tools/call"); e != nil {
		t.Fatalf("checkHeaders: %v", e)
	}
	if n := testing.AllocsPerRun(100, func() {
		_ = checkHeaders(h, ProtocolVersion, "tools/call")
		_ = checkNameHeader(h, "echo")
	}); n != 0 {
		t.Errorf("checking the headers allocates %v times", n)
	}
}
