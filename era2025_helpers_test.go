package weft

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// legacyClient is a minimal MCP 2025-11-25 Streamable HTTP client for tests:
// it keeps the session id, answers server requests arriving on a call's
// event stream with onRequest, and records notifications.
type legacyClient struct {
	t       testing.TB
	url     string
	sid     string
	version string
	token   string // Authorization bearer token, if any
	caps    M
	name    string       // clientInfo.name; default "legacy-test"
	httpc   *http.Client // default http.DefaultClient

	mu        sync.Mutex
	onRequest func(method string, params M) (result any, err *rpcError)
	requests  []rpcMsg // server requests seen
	notes     []rpcMsg // notifications seen on call streams
}

func newLegacyClient(t testing.TB, url string) *legacyClient {
	return &legacyClient{t: t, url: url, version: LegacyVersion20251125,
		caps: M{"elicitation": M{}, "sampling": M{}, "roots": M{"listChanged": true}}}
}

func (c *legacyClient) headers() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		h.Set("Mcp-Session-Id", c.sid)
		h.Set("MCP-Protocol-Version", c.version)
	}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	return h
}

// initialize opens a session (and sends notifications/initialized).
func (c *legacyClient) initialize() M {
	c.t.Helper()
	name := c.name
	if name == "" {
		name = "legacy-test"
	}
	r := c.send(body(c.t, 0, "initialize", M{"protocolVersion": c.version, "capabilities": c.caps,
		"clientInfo": M{"name": name, "version": "1.0"}}), nil)
	if r.Status != 200 {
		c.t.Fatalf("initialize: %v", r)
	}
	c.sid = r.Header.Get("Mcp-Session-Id")
	if c.sid == "" {
		c.t.Fatalf("initialize returned no Mcp-Session-Id: %v", r)
	}
	res := r.result(c.t)
	c.version, _ = res["protocolVersion"].(string)
	if n := c.send(body(c.t, nil, "notifications/initialized", nil), nil); n.Status != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: %v", n)
	}
	return res
}

// call sends one request and returns its response, answering server
// requests that arrive on its stream.
func (c *legacyClient) call(id any, method string, p M) resp {
	c.t.Helper()
	return c.send(body(c.t, id, method, p), nil)
}

func (c *legacyClient) send(b []byte, mod func(http.Header)) resp {
	c.t.Helper()
	h := c.headers()
	if mod != nil {
		mod(h)
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header = h
	hc := c.httpc
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	r := resp{Status: res.StatusCode, Header: res.Header}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		r.Body, _ = io.ReadAll(res.Body)
		finishResp(c.t, &r)
		return r
	}
	st := &sseStream{t: c.t, br: bufio.NewReader(res.Body)}
	for {
		f, err := st.next()
		if err != nil {
			return r // stream ended without a response
		}
		r.Frames = append(r.Frames, f)
		var m rpcMsg
		if err := json.Unmarshal(f, &m); err != nil {
			c.t.Fatalf("frame is not JSON: %q", f)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			c.mu.Lock()
			c.requests = append(c.requests, m)
			handler := c.onRequest
			c.mu.Unlock()
			c.answer(m, handler)
		case m.Method != "":
			c.mu.Lock()
			c.notes = append(c.notes, m)
			c.mu.Unlock()
		default:
			r.Msg, r.Body = m, f
			return r
		}
	}
}

// answer posts the answer to a server request.
func (c *legacyClient) answer(m rpcMsg, handler func(string, M) (any, *rpcError)) {
	c.t.Helper()
	if handler == nil {
		return // never answers
	}
	var p M
	if len(m.Params) > 0 {
		p = decodeObj(c.t, m.Params)
	}
	result, rerr := handler(m.Method, p)
	msg := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	if r := c.send(b, nil); r.Status != http.StatusAccepted {
		c.t.Errorf("posting an answer: %v", r)
	}
}

func (c *legacyClient) seenRequests() []rpcMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rpcMsg(nil), c.requests...)
}

func (c *legacyClient) seenNotes() []rpcMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rpcMsg(nil), c.notes...)
}

// openGet opens the session's GET event stream.
func (c *legacyClient) openGet(ctx context.Context) (*http.Response, *sseStream) {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	req.Header = c.headers()
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		c.t.Fatalf("GET stream: HTTP %d %s", res.StatusCode, b)
	}
	return res, &sseStream{t: c.t, br: bufio.NewReader(res.Body)}
}

// raw performs a GET or DELETE with the session headers.
func (c *legacyClient) raw(method string, mod func(http.Header)) resp {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url, nil)
	req.Header = c.headers()
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if mod != nil {
		mod(req.Header)
	}
	return do(c.t, req)
}

// elicitAccept answers every elicitation with content, sampling with text
// and roots with one root.
func elicitAccept(content M) func(string, M) (any, *rpcError) {
	return func(method string, p M) (any, *rpcError) {
		switch method {
		case "elicitation/create":
			return M{"action": "accept", "content": content}, nil
		case "sampling/createMessage":
			return M{"role": "assistant", "content": M{"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}, nil
		case "roots/list":
			return M{"roots": []any{M{"uri": "file:///r", "name": "R"}}}, nil
		}
		return nil, &rpcError{Code: -32601, Message: "no"}
	}
}

// legacyServerFor returns a server serving both eras with the given options.
func legacyServerFor(t testing.TB, opts *Options) (*Server, *logCapture) {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Legacy.Store == nil {
		o.Legacy.InMemorySessions = true // the sessions these tests exercise
	}
	return newServer(t, &o)
}

// legacyAdapter is the server's 2025-era adapter, nil when the era is not
// served.
func (s *Server) legacyAdapter() *legacyServer {
	for _, a := range s.adapters {
		if l, ok := a.(*legacyServer); ok {
			return l
		}
	}
	return nil
}
