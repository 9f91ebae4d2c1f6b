package weft

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// Shared helpers of the root package's tests. Requests are built as Go maps
// and encoded with encoding/json (json.Number keeps numbers exact); responses
// are decoded with json.RawMessage so that ids, tokens and schemas can be
// compared byte for byte.

// M is a JSON object literal.
type M = map[string]any

// hangGuard bounds waits for events that must happen. It is a guard against
// a hanging test, never an assertion about speed.
const hangGuard = 30 * time.Second

// meta returns a complete request _meta with the given client capabilities
// (nil means {}) and extra members.
func meta(caps any, extra M) M {
	if caps == nil {
		caps = M{}
	}
	m := M{
		metaProtocolVersion:    ProtocolVersion,
		metaClientCapabilities: caps,
		metaClientInfo:         M{"name": "weft-test", "version": "1.0.0"},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// params returns params with a complete _meta (empty capabilities) plus fields.
func params(fields M) M { return paramsCaps(nil, fields) }

// paramsCaps returns params with a _meta declaring caps, plus fields.
func paramsCaps(caps any, fields M) M {
	p := M{"_meta": meta(caps, nil)}
	for k, v := range fields {
		p[k] = v
	}
	return p
}

// withMeta returns a copy of p whose _meta has extra members.
func withMeta(p M, extra M) M {
	out := M{}
	for k, v := range p {
		out[k] = v
	}
	m := M{}
	for k, v := range p["_meta"].(M) {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	out["_meta"] = m
	return out
}

// toolCall returns tools/call params for name with arguments (nil: none).
func toolCall(caps any, name string, args M) M {
	f := M{"name": name}
	if args != nil {
		f["arguments"] = args
	}
	return paramsCaps(caps, f)
}

// body encodes one JSON-RPC message. A nil id makes a notification.
func body(t testing.TB, id any, method string, p M) []byte {
	t.Helper()
	msg := M{"jsonrpc": "2.0", "method": method}
	if id != nil {
		msg["id"] = id
	}
	if p != nil {
		msg["params"] = p
	}
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatalf("encode request: %v", err)
	}
	return b
}

// stdHeaders derives the headers a conforming client sends for body.
func stdHeaders(body []byte) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	var msg map[string]any
	if json.Unmarshal(body, &msg) != nil {
		return h
	}
	method, _ := msg["method"].(string)
	p, _ := msg["params"].(map[string]any)
	m, _ := p["_meta"].(map[string]any)
	if pv, ok := m[metaProtocolVersion].(string); ok {
		h.Set("MCP-Protocol-Version", pv)
	}
	if method != "" {
		h.Set("Mcp-Method", method)
	}
	member := ""
	switch method {
	case "tools/call", "prompts/get":
		member = "name"
	case "resources/read":
		member = "uri"
	}
	if v, ok := p[member].(string); ok && member != "" {
		h.Set("Mcp-Name", v)
	}
	return h
}

type rpcError struct {
	Code    Code            `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rpcMsg is one server-to-client JSON-RPC message.
type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// resp is one HTTP exchange.
type resp struct {
	Status int
	Header http.Header
	Body   []byte   // the whole body
	Frames [][]byte // SSE data payloads, in order (nil for JSON)
	Msg    rpcMsg   // the JSON-RPC response (for SSE, the frame with an id)
}

func (r resp) String() string { return fmt.Sprintf("HTTP %d %s", r.Status, r.Body) }

// result decodes the result object (numbers as json.Number).
func (r resp) result(t testing.TB) M {
	t.Helper()
	if r.Msg.Error != nil || r.Msg.Result == nil {
		t.Fatalf("want a result, got %v", r)
	}
	return decodeObj(t, r.Msg.Result)
}

// text returns the text of the first content block of a result.
func (r resp) text(t testing.TB) string {
	t.Helper()
	res := r.result(t)
	c, _ := res["content"].([]any)
	if len(c) == 0 {
		t.Fatalf("result has no content: %s", r.Body)
	}
	s, _ := c[0].(M)["text"].(string)
	return s
}

// wantError asserts a JSON-RPC error with the given HTTP status and code.
func (r resp) wantError(t testing.TB, status int, code Code) *rpcError {
	t.Helper()
	if r.Status != status || r.Msg.Error == nil || r.Msg.Error.Code != code {
		t.Fatalf("want HTTP %d with error %d, got %v", status, code, r)
	}
	if r.Msg.Result != nil {
		t.Fatalf("error response also carries a result: %s", r.Body)
	}
	return r.Msg.Error
}

func decodeObj(t testing.TB, b []byte) M {
	t.Helper()
	var m M
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

// jsonEqual reports whether a and b are the same JSON (numbers compared by
// their literal).
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	dec := func(x []byte) any {
		var v any
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatalf("decode %s: %v", x, err)
		}
		return v
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

// parseSSE splits an event-stream body into data payloads, counting comments.
func parseSSE(t testing.TB, b []byte) (frames [][]byte, comments int) {
	t.Helper()
	for _, ev := range strings.Split(string(b), "\n\n") {
		if ev == "" {
			continue
		}
		for _, line := range strings.Split(ev, "\n") {
			switch {
			case strings.HasPrefix(line, ":"):
				comments++
			case strings.HasPrefix(line, "data: "):
				frames = append(frames, []byte(strings.TrimPrefix(line, "data: ")))
			default:
				t.Fatalf("unexpected SSE line %q in %q", line, b)
			}
		}
	}
	return frames, comments
}

// finishResp parses a complete body into r.
func finishResp(t testing.TB, r *resp) {
	t.Helper()
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		r.Frames, _ = parseSSE(t, r.Body)
		for _, f := range r.Frames {
			var m rpcMsg
			if err := json.Unmarshal(f, &m); err != nil {
				t.Fatalf("SSE frame is not JSON: %q", f)
			}
			if m.ID != nil {
				r.Msg = m
			}
		}
		return
	}
	if len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, &r.Msg); err != nil {
			t.Fatalf("response body is not JSON-RPC: %q", r.Body)
		}
	}
}

// post sends body with headers h to url over real HTTP.
func post(t testing.TB, url string, b []byte, h http.Header) resp {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	return do(t, req)
}

func do(t testing.TB, req *http.Request) resp {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	r := resp{Status: res.StatusCode, Header: res.Header, Body: b}
	finishResp(t, &r)
	return r
}

// rpc sends one request with conforming headers (edited by mods) over HTTP.
func rpc(t testing.TB, url string, id any, method string, p M, mods ...func(http.Header)) resp {
	t.Helper()
	b := body(t, id, method, p)
	h := stdHeaders(b)
	for _, m := range mods {
		m(h)
	}
	return post(t, url, b, h)
}

// serveRec runs one request through h in process (no network).
func serveRec(t testing.TB, h http.Handler, path string, b []byte, hd http.Header) resp {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+path, bytes.NewReader(b))
	req.Header = hd
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	r := resp{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	finishResp(t, &r)
	return r
}

// rpcRec is rpc in process.
func rpcRec(t testing.TB, h http.Handler, path string, id any, method string, p M, mods ...func(http.Header)) resp {
	t.Helper()
	b := body(t, id, method, p)
	hd := stdHeaders(b)
	for _, m := range mods {
		m(hd)
	}
	return serveRec(t, h, path, b, hd)
}

func setHeader(k, v string) func(http.Header) { return func(h http.Header) { h.Set(k, v) } }

func delHeader(k string) func(http.Header) { return func(h http.Header) { h.Del(k) } }

// sseStream reads a live event stream frame by frame.
type sseStream struct {
	t  testing.TB
	br *bufio.Reader
}

// next returns the next data payload, skipping comments.
func (s *sseStream) next() ([]byte, error) {
	var data []byte
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if data != nil {
				return data, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "data: "):
			data = []byte(strings.TrimPrefix(line, "data: "))
		default:
			s.t.Errorf("unexpected SSE line %q", line)
		}
	}
}

// nextMsg returns the next frame decoded.
func (s *sseStream) nextMsg() (rpcMsg, []byte) {
	s.t.Helper()
	f, err := s.next()
	if err != nil {
		s.t.Fatalf("reading the event stream: %v", err)
	}
	var m rpcMsg
	if err := json.Unmarshal(f, &m); err != nil {
		s.t.Fatalf("frame is not JSON: %q", f)
	}
	return m, f
}

// openStream posts a request and returns its open event stream.
func openStream(t testing.TB, ctx context.Context, url string, id any, method string, p M) (*http.Response, *sseStream) {
	t.Helper()
	b := body(t, id, method, p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = stdHeaders(b)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("want an event stream, got HTTP %d %q: %s", res.StatusCode, ct, b)
	}
	return res, &sseStream{t: t, br: bufio.NewReader(res.Body)}
}

// logRec is one captured log record.
type logRec struct {
	Level slog.Level
	Msg   string
	Attrs string // "k=v k=v"
}

// logCapture is a slog.Handler that records everything.
type logCapture struct {
	mu    *sync.Mutex
	recs  *[]logRec
	attrs []slog.Attr
}

func newLogCapture() *logCapture { return &logCapture{mu: &sync.Mutex{}, recs: &[]logRec{}} }

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	for _, a := range c.attrs {
		fmt.Fprintf(&sb, "%s=%v ", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&sb, "%s=%v ", a.Key, a.Value); return true })
	c.mu.Lock()
	*c.recs = append(*c.recs, logRec{Level: r.Level, Msg: r.Message, Attrs: sb.String()})
	c.mu.Unlock()
	return nil
}

func (c *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	n := *c
	n.attrs = append(append([]slog.Attr(nil), c.attrs...), as...)
	return &n
}

func (c *logCapture) WithGroup(string) slog.Handler { return c }

func (c *logCapture) logger() *slog.Logger { return slog.New(c) }

// records returns the captured records.
func (c *logCapture) records() []logRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]logRec(nil), *c.recs...)
}

// count returns how many records at level mention substr (message or attrs).
func (c *logCapture) count(level slog.Level, substr string) int {
	n := 0
	for _, r := range c.records() {
		if r.Level == level && (strings.Contains(r.Msg, substr) || strings.Contains(r.Attrs, substr)) {
			n++
		}
	}
	return n
}

// newServer returns a server whose logs are captured.
func newServer(t testing.TB, opts *Options) (*Server, *logCapture) {
	t.Helper()
	lc := newLogCapture()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = lc.logger()
	}
	s, err := NewServer(Implementation{Name: "weft-test-server", Version: "9.9.9"}, &o)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	// Registered first, so it runs after the test's other cleanups (the
	// HTTP servers in front of s): a server's background work (the 2025
	// session sweeper, the task runner) ends with Shutdown, and a test that
	// leaves it running leaks the goroutine and the whole server into every
	// later test (issue 41: twenty runs in one process grew by 40 goroutines
	// and 40 MB each, and TestAbuseMemoryBounded's baseline with them).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutting the test server down: %v", err)
		}
	})
	return s, lc
}

// startHTTP serves h on a loopback test server.
func startHTTP(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// textResult is a CallToolResult with one text block.
func textResult(s string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(s)}}
}

// noArgs is the argument type of tools without arguments.
type noArgs struct{}

// addText registers an untyped tool answering text.
func addText(t testing.TB, s *Server, name, text string) {
	t.Helper()
	must(t, s.AddTool(Tool{Name: name, Description: "Answers " + text + "."},
		func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult(text), nil }))
}

// waitFor receives from ch or fails after the hang guard.
func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("hang guard: %s did not happen", what)
	}
	var zero T
	return zero
}

func mustParse(t testing.TB, s string) exactjson.Value {
	t.Helper()
	v, err := exactjson.ParseString(s, exactjson.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var errBoom = errors.New("database password is hunter2")
