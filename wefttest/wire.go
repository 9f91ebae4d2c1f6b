package wefttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/hdr"
	"github.com/weftmcp/weft/internal/mirror"
	"github.com/weftmcp/weft/internal/progerr"
)

// CancelGrace is how long a cancelled call waits for the handler to
// return before giving up with [ErrHandlerRunning].
const CancelGrace = 5 * time.Second

// Meta keys of MCP 2026-07-28 the client fills in.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

var (
	// ErrProtocol is wrapped by errors reporting a response that breaks MCP
	// or JSON-RPC.
	ErrProtocol = errors.New("wefttest: protocol violation")
	// ErrHandlerRunning is joined to the context error when a cancelled
	// handler has not returned within [CancelGrace]: the server does not
	// stop work promptly on cancellation.
	ErrHandlerRunning = errors.New("wefttest: the handler did not return within CancelGrace of cancellation")
	// ErrProgramming is wrapped, with the server's *weft.ProgrammingError,
	// by the error of a call during which the server found a mistake in the
	// application's code (an undeclared input request, state its StateMode
	// does not allow, output that fails the tool's output schema, ...): the
	// response itself only carries the sanitized -32603.
	ErrProgramming = errors.New("wefttest: the server reported a programming error")
)

// Client sends MCP requests to an http.Handler (normally a *weft.Server)
// in memory. Create it with [NewClient]. It is safe for concurrent use.
type Client struct {
	h        http.Handler
	endpoint string
	version  string
	caps     exactjson.Value
	info     exactjson.Value // clientInfo; null to omit
	header   http.Header
	meta     []exactjson.Member
	progress bool
	onNote   func(Notification)
	t        testing.TB // nil: programming errors are only returned

	nextID atomic.Int64

	mu    sync.Mutex
	tools map[string]Tool // the last tools/list, by name; nil before the first
}

// Option configures a [Client].
type Option func(*Client)

// NewWireClient returns a client for h, which is usually a *weft.Server but may
// be any handler in front of one (a mux, authentication middleware).
// Without options the client posts to [DefaultEndpoint], speaks
// weft.ProtocolVersion, declares no optional client capabilities ({}), and
// reports clientInfo {"name": "wefttest", "version": "0.0.0"}.
func NewWireClient(h http.Handler, opts ...Option) *Client {
	c := &Client{
		h:        h,
		endpoint: DefaultEndpoint,
		version:  weft.ProtocolVersion,
		caps:     exactjson.Object(),
		header:   http.Header{},
	}
	WithClientInfo("wefttest", "0.0.0")(c)
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithCapabilities sets the ClientCapabilities object sent in every
// request's _meta (default {}). [Capabilities] builds one from input kinds.
func WithCapabilities(caps exactjson.Value) Option {
	return func(c *Client) { c.caps = caps }
}

// WithHeader adds an HTTP header to every request, for example
// Authorization for admission tests. Headers set this way replace the
// client's own values of the same name, metadata headers included.
func WithHeader(key, value string) Option {
	return func(c *Client) { c.header.Add(key, value) }
}

// WithClientInfo sets the clientInfo sent in _meta. An empty name omits
// clientInfo (it is optional).
func WithClientInfo(name, version string) Option {
	return func(c *Client) {
		if name == "" {
			c.info = exactjson.Value{}
			return
		}
		c.info = exactjson.Object(
			exactjson.Field("name", exactjson.String(name)),
			exactjson.Field("version", exactjson.String(version)))
	}
}

// WithEndpoint sets the request path (default [DefaultEndpoint]). The
// endpoint is part of what framework-protected request state is bound to.
func WithEndpoint(path string) Option {
	return func(c *Client) { c.endpoint = path }
}

// WithProtocolVersion sets the protocol version sent in _meta and in the
// MCP-Protocol-Version header (default weft.ProtocolVersion), to test
// version negotiation.
func WithProtocolVersion(v string) Option {
	return func(c *Client) { c.version = v }
}

// WithProgress makes every request opt in to progress notifications: its
// _meta carries a progressToken equal to its (integer) JSON-RPC id.
func WithProgress() Option {
	return func(c *Client) { c.progress = true }
}

// WithLogLevel makes every request ask for log notifications at level and
// above (the io.modelcontextprotocol/logLevel _meta key).
func WithLogLevel(level weft.LogLevel) Option {
	return WithMeta(MetaLogLevel, exactjson.String(string(level)))
}

// WithMeta adds a member to every request's _meta (for example
// "traceparent"). It does not replace a member already there: one the
// params carry, or one the client sets itself (protocol version,
// capabilities, clientInfo, progressToken).
func WithMeta(key string, v exactjson.Value) Option {
	return func(c *Client) { c.meta = append(c.meta, exactjson.Field(key, v)) }
}

// WithTest reports the programming errors the server finds while serving
// the client's requests to t with t.Errorf, so that a test fails with their
// cause even where it expects an error response (they are also returned,
// wrapping [ErrProgramming]).
func WithTest(t testing.TB) Option {
	return func(c *Client) { c.t = t }
}

// WithNotificationHandler calls f for every notification on a request's
// SSE stream, in order, as soon as it is written and before the call
// returns. f runs on the handler's goroutine: it may cancel the call's
// context (to test cancellation mid-stream) but must not block for long.
func WithNotificationHandler(f func(Notification)) Option {
	return func(c *Client) { c.onNote = f }
}

// Response is one HTTP exchange of a JSON-RPC request.
type Response struct {
	// ID is the JSON-RPC id of the request.
	ID exactjson.Value
	// HTTPStatus is the HTTP status code.
	HTTPStatus int
	// Header holds the response headers as they were when the status was
	// written.
	Header http.Header
	// Streamed reports whether the response was an SSE stream.
	Streamed bool
	// Notifications are the notifications the stream carried before the
	// response, in order.
	Notifications []Notification
	// Result is the result object; null when the response is an error.
	Result exactjson.Value
	// Error is the JSON-RPC error; nil when the response is a result.
	Error *RPCError
}

// Notification is a JSON-RPC notification received on an SSE stream.
type Notification struct {
	Method string
	Params exactjson.Value
}

// Progress is the params of a notifications/progress.
type Progress struct {
	Token    exactjson.Value
	Progress float64
	Total    float64 // 0 when absent
	Message  string
}

// Progress returns the notifications/progress of the stream, in order.
func (r *Response) Progress() []Progress {
	var out []Progress
	for _, n := range r.Notifications {
		if n.Method != "notifications/progress" {
			continue
		}
		p := Progress{}
		p.Token, _ = n.Params.Get("progressToken")
		p.Progress = number(n.Params, "progress")
		p.Total = number(n.Params, "total")
		p.Message, _ = getString(n.Params, "message")
		out = append(out, p)
	}
	return out
}

func number(v exactjson.Value, name string) float64 {
	x, _ := v.Get(name)
	n, _ := x.AsNumber()
	return n.Float64()
}

// RPCError is a JSON-RPC error response. The typed methods of [Client]
// return it as their error; test for it with errors.As.
type RPCError struct {
	Code    int
	Message string
	Data    exactjson.Value // null when absent
	// HTTPStatus and Header are those of the HTTP response that carried
	// the error (400 for -32602 on an unknown tool, 401 with a
	// WWW-Authenticate challenge from admission, ...).
	HTTPStatus int
	Header     http.Header
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("wefttest: JSON-RPC error %d: %s (HTTP %d)", e.Code, e.Message, e.HTTPStatus)
}

// Call sends one JSON-RPC request with a fresh integer id and returns its
// response. params may be null. When params is an object (or null), the
// client adds the _meta members a 2026-07-28 client sends (only those the
// params do not already carry, so a test can send its own) and computes the
// metadata headers from the final body.
//
// A JSON-RPC error is not an error of Call: it is in [Response.Error]. The
// error is non-nil for a transport or protocol failure, when the server
// reported a programming error of the application (wrapping
// [ErrProgramming] and the *weft.ProgrammingError, whose message says what
// to fix; the response is returned too), and when ctx is done
// before the handler returns: the handler sees the cancellation (its request
// context is ctx) and Call returns the partial response (the notifications
// received so far) with ctx's error once the handler returned, or after
// [CancelGrace] with [ErrHandlerRunning] joined to it if the handler does not
// return.
func (c *Client) Call(ctx context.Context, method string, params exactjson.Value) (*Response, error) {
	resp, _, err := c.call(ctx, method, params)
	return resp, err
}

// call is Call that also returns the params as sent.
func (c *Client) call(ctx context.Context, method string, params exactjson.Value) (*Response, exactjson.Value, error) {
	id := c.nextID.Add(1)
	idv := exactjson.Int(id)
	params = c.fillMeta(params, idv)
	members := []exactjson.Member{
		exactjson.Field("jsonrpc", exactjson.String("2.0")),
		exactjson.Field("id", idv),
		exactjson.Field("method", exactjson.String(method)),
	}
	if params.Kind() != exactjson.KindNull {
		members = append(members, exactjson.Field("params", params))
	}
	body, err := exactjson.AppendJSON(nil, exactjson.Object(members...))
	if err != nil {
		return nil, params, fmt.Errorf("wefttest: encode request: %w", err)
	}
	h := c.metadataHeaders(ctx, method, params)
	resp, err := c.post(ctx, body, h, idv, false)
	return resp, params, err
}

// Send posts body exactly as given, for tests of malformed requests and
// header validation. header is sent as is, plus the client's [WithHeader]
// headers and Content-Type and Accept where header lacks them; no _meta or
// metadata header is computed. The response must echo the body's id when it
// can be read; a body without id is a notification, which normally gets an
// HTTP 202 and no JSON-RPC response.
func (c *Client) Send(ctx context.Context, body []byte, header http.Header) (*Response, error) {
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for k, vs := range c.header {
		if _, ok := h[k]; !ok {
			h[k] = append([]string(nil), vs...)
		}
	}
	setDefault(h, "Content-Type", "application/json")
	setDefault(h, "Accept", "application/json, text/event-stream")
	var id exactjson.Value
	notification := false
	if v, err := exactjson.Parse(body, exactjson.Limits{}); err == nil && v.Kind() == exactjson.KindObject {
		var ok bool
		id, ok = v.Get("id")
		notification = !ok && v.Has("method")
	}
	return c.post(ctx, body, h, id, notification)
}

func setDefault(h http.Header, key, value string) {
	if h.Get(key) == "" {
		h.Set(key, value)
	}
}

// fillMeta adds the client's _meta members to object (or null) params.
func (c *Client) fillMeta(params exactjson.Value, id exactjson.Value) exactjson.Value {
	switch params.Kind() {
	case exactjson.KindNull:
		params = exactjson.Object()
	case exactjson.KindObject:
	default:
		return params
	}
	meta, ok := params.Get("_meta")
	if !ok {
		meta = exactjson.Object()
	} else if meta.Kind() != exactjson.KindObject {
		return params
	}
	add := func(k string, v exactjson.Value) {
		if !meta.Has(k) && v.Kind() != exactjson.KindNull {
			meta = meta.With(k, v)
		}
	}
	add(MetaProtocolVersion, exactjson.String(c.version))
	add(MetaClientCapabilities, c.caps)
	add(MetaClientInfo, c.info)
	if c.progress {
		add("progressToken", id)
	}
	for _, m := range c.meta {
		add(m.Name, m.Value)
	}
	return params.With("_meta", meta)
}

// metadataHeaders builds the request headers: content negotiation, the
// 2026-07-28 metadata headers mirrored from the body, then the client's own.
func (c *Client) metadataHeaders(ctx context.Context, method string, params exactjson.Value) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	meta, _ := params.Get("_meta")
	if v, ok := getString(meta, MetaProtocolVersion); ok {
		h.Set("MCP-Protocol-Version", v)
	}
	h.Set("Mcp-Method", method)
	var member string
	switch method {
	case "tools/call", "prompts/get":
		member = "name"
	case "resources/read":
		member = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		member = "taskId"
	}
	if member != "" {
		if v, ok := getString(params, member); ok {
			h.Set("Mcp-Name", hdr.Encode(v))
		}
	}
	if method == "tools/call" {
		c.paramHeaders(ctx, h, params)
	}
	for k, vs := range c.header {
		h[k] = append([]string(nil), vs...)
	}
	return h
}

// paramHeaders adds the Mcp-Param-{Name} headers of a tools/call: for each
// input-schema property with "x-mcp-header" whose argument is present and
// not null. The schema comes from the client's tools/list cache (fetched on
// first need, refreshed by ListTools).
func (c *Client) paramHeaders(ctx context.Context, h http.Header, params exactjson.Value) {
	args, _ := params.Get("arguments")
	name, ok := getString(params, "name")
	if !ok || args.Kind() != exactjson.KindObject || args.Len() == 0 {
		return
	}
	t, ok := c.lookupTool(ctx, name)
	if !ok {
		return
	}
	ms, err := mirror.Find(t.InputSchema)
	if err != nil {
		return // a tool a real client rejects; the server reports the call
	}
	for _, m := range ms {
		if v, present := m.Lookup(args); present {
			if s, ok := mirror.HeaderValue(v); ok {
				h.Set("Mcp-Param-"+m.Header, s)
			}
		}
	}
}

// lookupTool finds a tool in the tools/list cache, listing the tools once
// if the cache is empty.
func (c *Client) lookupTool(ctx context.Context, name string) (Tool, bool) {
	c.mu.Lock()
	tools := c.tools
	c.mu.Unlock()
	if tools == nil {
		if _, err := c.ListTools(ctx); err != nil {
			return Tool{}, false
		}
		c.mu.Lock()
		tools = c.tools
		c.mu.Unlock()
	}
	t, ok := tools[name]
	return t, ok
}

// post runs one exchange through the handler.
func (c *Client) post(ctx context.Context, body []byte, header http.Header, id exactjson.Value, notification bool) (*Response, error) {
	var pmu sync.Mutex
	var perrs []error // the programming errors the server reports
	reported := func(resp *Response, err error) (*Response, error) {
		pmu.Lock()
		defer pmu.Unlock()
		if len(perrs) == 0 {
			return resp, err
		}
		perr := fmt.Errorf("%w: %w", ErrProgramming, errors.Join(perrs...))
		if c.t != nil {
			c.t.Helper()
			c.t.Errorf("%v", perr)
		}
		return resp, errors.Join(perr, err)
	}
	sctx := progerr.WithReporter(ctx, func(err error) {
		pmu.Lock()
		perrs = append(perrs, err)
		pmu.Unlock()
	})
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, "http://"+Host+c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("wefttest: build request: %w", err)
	}
	req.Header = header
	req.RemoteAddr = RemoteAddr
	req.RequestURI = c.endpoint
	rec := newRecorder(c.onNote)
	done := make(chan struct{})
	cancelled := false // ctx was done before the handler returned; read after done
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				rec.mu.Lock()
				rec.aborted = p
				rec.mu.Unlock()
			}
		}()
		c.h.ServeHTTP(rec, req)
		cancelled = ctx.Err() != nil
	}()
	select {
	case <-done:
		rec.close()
		if cancelled {
			return reported(rec.partial(id), ctx.Err())
		}
		return reported(rec.response(id, notification))
	case <-ctx.Done():
	}
	t := time.NewTimer(CancelGrace)
	defer t.Stop()
	select {
	case <-done:
		rec.close()
		return reported(rec.partial(id), ctx.Err())
	case <-t.C:
		rec.close()
		return reported(rec.partial(id), errors.Join(ctx.Err(), ErrHandlerRunning))
	}
}

// getString returns the string member name of object v.
func getString(v exactjson.Value, name string) (string, bool) {
	x, ok := v.Get(name)
	if !ok {
		return "", false
	}
	return x.AsString()
}
