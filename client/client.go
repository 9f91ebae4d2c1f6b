package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// ProtocolVersion is the MCP revision this client speaks.
const ProtocolVersion = "2026-07-28"

// TasksExtension is the identifier of the Tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// _meta keys.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// DefaultMaxRounds is the default bound on MRTR retries per call.
const DefaultMaxRounds = 10

// maxStateOnlyRetries bounds consecutive retries of an input_required
// result that carries only requestState.
const maxStateOnlyRetries = 3

// Implementation identifies the client (sent as _meta clientInfo).
type Implementation struct {
	Name        string
	Version     string
	Title       string
	Description string
	WebsiteURL  string
}

func (i Implementation) value() exactjson.Value {
	m := []exactjson.Member{
		exactjson.Field("name", exactjson.String(i.Name)),
		exactjson.Field("version", exactjson.String(i.Version)),
	}
	for _, f := range []struct{ k, v string }{{"title", i.Title}, {"description", i.Description}, {"websiteUrl", i.WebsiteURL}} {
		if f.v != "" {
			m = append(m, exactjson.Field(f.k, exactjson.String(f.v)))
		}
	}
	return exactjson.Object(m...)
}

// Handlers answer the server's input requests (MRTR inputRequests and task
// inputRequests). Each receives the request's params and returns the
// matching result object. They may run concurrently.
type Handlers struct {
	// Elicit answers elicitation/create with an ElicitResult
	// {action, content?}.
	Elicit func(ctx context.Context, params exactjson.Value) (exactjson.Value, error)
	// Sample answers sampling/createMessage with a CreateMessageResult
	// {role, content, model, stopReason?}.
	Sample func(ctx context.Context, params exactjson.Value) (exactjson.Value, error)
	// Roots answers roots/list with a ListRootsResult {roots: [...]}.
	Roots func(ctx context.Context) (exactjson.Value, error)
}

// Options configure a [Client]. The zero value is usable.
type Options struct {
	// ClientInfo is sent as _meta clientInfo. Default {weft-client, dev}.
	ClientInfo Implementation
	// Capabilities are the client capabilities sent on every request. When
	// null (the zero Value) they are derived: elicitation {form, url} if
	// Handlers.Elicit is set, sampling if Handlers.Sample, roots if
	// Handlers.Roots. When TasksEnabled, the tasks extension is added to
	// derived or given capabilities.
	Capabilities exactjson.Value
	// Handlers answer input requests.
	Handlers Handlers
	// OnProgress receives notifications/progress of the client's requests.
	// When set, every request carries a progressToken.
	OnProgress func(progress, total float64, message string)
	// OnLog receives notifications/message; the server sends them only
	// when LogLevel is set.
	OnLog func(level, logger string, data exactjson.Value)
	// LogLevel, when set, is sent as _meta logLevel (debug, info, notice,
	// warning, error, critical, alert, emergency).
	LogLevel string
	// OnNotification receives every other notification of a request
	// (subscription notifications go to the Subscription instead).
	OnNotification func(Notification)
	// OnTaskStatus receives the id, status and statusMessage of a followed
	// task when the client starts following it and each time the status
	// or message changes.
	OnTaskStatus func(taskID, status, message string)
	// MaxRounds bounds the MRTR retries of one call. Default 10.
	MaxRounds int
	// TasksEnabled declares the tasks extension; CallTool then follows
	// tasks the server creates.
	TasksEnabled bool
	// ProtocolVersion pins the version sent. Unpinned (the default), the
	// client probes the server with server/discover before its first
	// request and speaks ProtocolVersion to a 2026-07-28 server and the
	// 2025 era (initialize) to any other, as the 2026-07-28 transport
	// pages describe. Pinned to 2026-07-28, it probes too and fails with
	// ErrLegacyServer against a 2025-era server; pinned to a 2025
	// revision, it initializes at once, and a server speaking only
	// 2026-07-28 fails with ErrModernServer.
	ProtocolVersion string
	// ProbeTimeout bounds the server/discover probe of an unpinned
	// client; a server silent for that long is taken to be of the 2025
	// era. Default DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Logger receives warnings (e.g. tools dropped for invalid
	// x-mcp-header annotations). Default: discard.
	Logger *slog.Logger
}

// Client is an MCP 2026-07-28 client. It is safe for concurrent use.
type Client struct {
	t         Transport
	opts      Options
	caps      exactjson.Value
	info      exactjson.Value
	maxRounds int
	log       *slog.Logger
	mirrors   bool
	nextID    atomic.Int64

	eraMu  sync.Mutex
	era    era        // the negotiated version (legacy.go)
	initMu sync.Mutex // serializes the 2025-era initialize

	listMu sync.Mutex // serializes the implicit tools/list
	mu     sync.Mutex
	listed bool
	tools  map[string]*toolHeaders
}

// New returns a client over t; nil opts means every default.
func New(t Transport, opts *Options) *Client {
	if opts == nil {
		opts = &Options{}
	}
	c := &Client{t: t, opts: *opts, maxRounds: opts.MaxRounds, log: opts.Logger}
	c.era = era{version: opts.ProtocolVersion, pinned: opts.ProtocolVersion != ""}
	if c.maxRounds <= 0 {
		c.maxRounds = DefaultMaxRounds
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.era.version == "" {
		c.era.version = ProtocolVersion
	}
	c.era.legacy = isLegacy(c.era.version)
	c.era.known = c.era.legacy // a pinned 2025 revision: no probe
	ci := opts.ClientInfo
	if ci.Name == "" {
		ci.Name = "weft-client"
	}
	if ci.Version == "" {
		ci.Version = "dev"
	}
	c.info = ci.value()
	c.caps = deriveCapabilities(c.opts)
	if pt, ok := t.(ParamHeaderTransport); ok && pt.MirrorsParamHeaders() {
		c.mirrors = true
	}
	if un, ok := t.(UnroutedNotifier); ok {
		un.SetUnroutedHandler(c.dispatch)
	}
	return c
}

func deriveCapabilities(opts Options) exactjson.Value {
	caps := opts.Capabilities
	if caps.Kind() != exactjson.KindObject {
		var m []exactjson.Member
		empty := exactjson.Object()
		if opts.Handlers.Elicit != nil {
			m = append(m, exactjson.Field("elicitation", exactjson.Object(
				exactjson.Field("form", empty), exactjson.Field("url", empty))))
		}
		if opts.Handlers.Sample != nil {
			m = append(m, exactjson.Field("sampling", empty))
		}
		if opts.Handlers.Roots != nil {
			m = append(m, exactjson.Field("roots", empty))
		}
		caps = exactjson.Object(m...)
	}
	if opts.TasksEnabled {
		ext, _ := caps.Get("extensions")
		if ext.Kind() != exactjson.KindObject {
			ext = exactjson.Object()
		}
		if !ext.Has(TasksExtension) {
			ext = ext.With(TasksExtension, exactjson.Object())
		}
		caps = caps.With("extensions", ext)
	}
	return caps
}

// Capabilities returns the client capabilities sent on every request.
func (c *Client) Capabilities() exactjson.Value { return c.caps }

// Transport returns the client's transport.
func (c *Client) Transport() Transport { return c.t }

// Close closes the transport.
func (c *Client) Close() error { return c.t.Close() }

// dispatch routes a request-scoped notification to the callbacks.
func (c *Client) dispatch(n Notification) {
	switch n.Method {
	case "notifications/progress":
		if c.opts.OnProgress != nil {
			c.opts.OnProgress(num(n.Params, "progress"), num(n.Params, "total"), str(n.Params, "message"))
		}
	case "notifications/message":
		if c.opts.OnLog != nil {
			data, _ := n.Params.Get("data")
			c.opts.OnLog(str(n.Params, "level"), str(n.Params, "logger"), data)
		}
	default:
		if c.opts.OnNotification != nil {
			c.opts.OnNotification(n)
		}
	}
}

// toParams converts params given to Call into a JSON object.
func toParams(params any) (exactjson.Value, error) {
	var v exactjson.Value
	var err error
	switch p := params.(type) {
	case nil:
		return exactjson.Object(), nil
	case exactjson.Value:
		v = p
		if v.IsNull() {
			return exactjson.Object(), nil
		}
	case *exactjson.Value:
		if p == nil || p.IsNull() {
			return exactjson.Object(), nil
		}
		v = *p
	case json.RawMessage:
		v, err = exactjson.Parse(p, exactjson.Limits{})
	case []byte:
		v, err = exactjson.Parse(p, exactjson.Limits{})
	default:
		v, err = exactjson.FromGo(params)
	}
	if err != nil {
		return exactjson.Value{}, fmt.Errorf("client: params: %w", err)
	}
	if v.Kind() != exactjson.KindObject {
		return exactjson.Value{}, fmt.Errorf("client: params must be a JSON object, not %s", v.Kind())
	}
	return v, nil
}

// toValue converts arbitrary JSON-able input to a Value.
func toValue(x any) (exactjson.Value, error) {
	switch p := x.(type) {
	case nil:
		return exactjson.Value{}, nil
	case exactjson.Value:
		return p, nil
	case json.RawMessage:
		return exactjson.Parse(p, exactjson.Limits{})
	case []byte:
		return exactjson.Parse(p, exactjson.Limits{})
	}
	return exactjson.FromGo(x)
}

// withMeta returns params with the request _meta filled in. Caller-given
// _meta members are kept; the protocol keys are the client's.
func (c *Client) withMeta(params exactjson.Value, id int64, method string, e era) exactjson.Value {
	meta := exactjson.Object()
	if !e.legacy {
		meta = exactjson.Object(
			exactjson.Field(metaProtocolVersion, exactjson.String(e.version)),
			exactjson.Field(metaClientCapabilities, c.caps),
			exactjson.Field(metaClientInfo, c.info))
	}
	if c.opts.LogLevel != "" && !e.legacy {
		meta = meta.With(metaLogLevel, exactjson.String(c.opts.LogLevel))
	}
	if c.opts.OnProgress != nil && method != "subscriptions/listen" {
		meta = meta.With("progressToken", exactjson.Int(id))
	}
	if given, ok := params.Get("_meta"); ok {
		for k, v := range given.All() {
			if !meta.Has(k) {
				meta = meta.With(k, v)
			}
		}
	}
	if meta.Len() == 0 {
		return params
	}
	return params.With("_meta", meta)
}

// roundTrip sends one request with a fresh id and returns its result. In
// the 2025 era it initializes first (and again when the server ended the
// session); a 2026-07-28 request refused as an unsupported version is
// retried once with a version the server lists (falling back to the
// 2025 era when the client's version was not pinned).
func (c *Client) roundTrip(ctx context.Context, method string, params exactjson.Value, header http.Header, notify func(Notification)) (exactjson.Value, error) {
	if notify == nil {
		notify = c.dispatch
	}
	var res exactjson.Value
	var err error
	if _, err := c.ensureEra(ctx); err != nil {
		return exactjson.Value{}, err
	}
	for attempt := 0; attempt < 2; attempt++ {
		e := c.currentEra()
		if e.legacy {
			if err = c.ensureInitialized(ctx); err != nil {
				if attempt == 0 && errSessionGone(err) {
					c.restartSession(err)
					continue
				}
				return exactjson.Value{}, c.eraError(err)
			}
			e = c.currentEra()
		}
		res, err = c.send(ctx, method, params, header, notify, e)
		if err == nil || attempt > 0 {
			break
		}
		var rerr *RPCError
		switch {
		case e.legacy && errSessionGone(err):
			c.restartSession(err)
		case !e.legacy && errors.As(err, &rerr) && rerr.Code == CodeUnsupportedProtocolVersion:
			supported := supportedVersions(rerr)
			if !slices.Contains(supported, e.version) && !c.switchToLegacy(supported) {
				return exactjson.Value{}, err
			}
		default:
			return exactjson.Value{}, err
		}
	}
	return res, err
}

// send sends one request in era e.
func (c *Client) send(ctx context.Context, method string, params exactjson.Value, header http.Header, notify func(Notification), e era) (exactjson.Value, error) {
	id := c.nextID.Add(1)
	req := &Request{ID: id, Method: method, Params: c.withMeta(params, id, method, e), Header: header}
	if e.legacy {
		req.Header = legacyHeader(header, e.version)
		req.OnServerRequest = c.serveLegacy
	}
	resp, err := c.t.Do(ctx, req, notify)
	if err != nil {
		return exactjson.Value{}, err
	}
	if resp == nil {
		return exactjson.Value{}, protocolErrorf("%s: the transport returned no response", method)
	}
	if resp.Error != nil {
		return exactjson.Value{}, resp.Error
	}
	if resp.Result.Kind() != exactjson.KindObject {
		return exactjson.Value{}, protocolErrorf("%s: result is not an object", method)
	}
	return resp.Result, nil
}

// Call sends one request (one round trip, no MRTR handling) and returns its
// result. params may be nil, an exactjson.Value, JSON bytes or any Go value
// that marshals to a JSON object; _meta is added. A JSON-RPC error is
// returned as *RPCError.
func (c *Client) Call(ctx context.Context, method string, params any) (exactjson.Value, error) {
	p, err := toParams(params)
	if err != nil {
		return exactjson.Value{}, err
	}
	return c.roundTrip(ctx, method, p, nil, nil)
}

// CallWithInput sends a request and runs the MRTR loop: input_required
// results are answered through the handlers and the request is retried
// until it completes. Task results are returned as they are.
func (c *Client) CallWithInput(ctx context.Context, method string, params any) (exactjson.Value, error) {
	p, err := toParams(params)
	if err != nil {
		return exactjson.Value{}, err
	}
	return c.mrtr(ctx, method, p, nil)
}

// resultType returns a result's resultType ("complete" when absent).
func resultType(v exactjson.Value) string {
	if s := str(v, "resultType"); s != "" {
		return s
	}
	return "complete"
}

// Discover calls server/discover; in the 2025 era it initializes and
// returns what the initialize result says (the negotiated version as the
// only supported one).
func (c *Client) Discover(ctx context.Context) (*DiscoverResult, error) {
	d, err := c.ensureEra(ctx)
	if err != nil {
		return nil, err
	}
	if d != nil {
		return d, nil // the era probe was this call's server/discover
	}
	if e := c.currentEra(); e.legacy {
		if err := c.ensureInitialized(ctx); err != nil {
			return nil, err
		}
		return legacyDiscover(c.currentEra()), nil
	}
	res, err := c.roundTrip(ctx, "server/discover", exactjson.Object(), nil, nil)
	if e := c.currentEra(); e.legacy {
		// The server refused 2026-07-28 and the client fell back: the
		// 2025 era has no server/discover, initialize says it all.
		if err := c.ensureInitialized(ctx); err != nil {
			return nil, err
		}
		return legacyDiscover(c.currentEra()), nil
	}
	if err != nil {
		return nil, err
	}
	return parseDiscover(res), nil
}

// listAll pages through a list method, returning the items of every page.
func (c *Client) listAll(ctx context.Context, method, member string) ([]exactjson.Value, error) {
	var out []exactjson.Value
	seen := map[string]bool{}
	params := exactjson.Object()
	for page := 0; ; page++ {
		res, err := c.roundTrip(ctx, method, params, nil, nil)
		if err != nil {
			return nil, err
		}
		items, _ := res.Get(member)
		out = append(out, items.Elements()...)
		cv, ok := res.Get("nextCursor")
		cursor, isStr := cv.AsString()
		if !ok || !isStr {
			return out, nil
		}
		if seen[cursor] || page >= 10000 {
			return nil, protocolErrorf("%s: pagination does not terminate (cursor %q repeated)", method, cursor)
		}
		seen[cursor] = true
		params = exactjson.Object(exactjson.Field("cursor", exactjson.String(cursor)))
	}
}

// ListTools lists every tool, following nextCursor. On a header-mirroring
// transport, tools whose x-mcp-header annotations are invalid are left out
// (and logged), and the input schemas are kept for Mcp-Param headers.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	items, err := c.listAll(ctx, "tools/list", "tools")
	if err != nil {
		return nil, err
	}
	tools := make([]Tool, 0, len(items))
	cache := map[string]*toolHeaders{}
	for _, it := range items {
		t := parseTool(it)
		th := &toolHeaders{}
		if c.mirrors {
			th.mirrors, th.invalid = findMirrors(t.InputSchema)
			if th.invalid != nil {
				c.log.Warn("client: dropping tool with an invalid x-mcp-header annotation", "tool", t.Name, "reason", th.invalid)
				cache[t.Name] = th
				continue
			}
		}
		cache[t.Name] = th
		tools = append(tools, t)
	}
	c.mu.Lock()
	c.tools, c.listed = cache, true
	c.mu.Unlock()
	return tools, nil
}

// ListPrompts lists every prompt (raw Prompt objects).
func (c *Client) ListPrompts(ctx context.Context) ([]exactjson.Value, error) {
	return c.listAll(ctx, "prompts/list", "prompts")
}

// ListResources lists every resource (raw Resource objects).
func (c *Client) ListResources(ctx context.Context) ([]exactjson.Value, error) {
	return c.listAll(ctx, "resources/list", "resources")
}

// ListResourceTemplates lists every resource template (raw objects).
func (c *Client) ListResourceTemplates(ctx context.Context) ([]exactjson.Value, error) {
	return c.listAll(ctx, "resources/templates/list", "resourceTemplates")
}

// paramHeaders returns the Mcp-Param-* headers for a tools/call, listing
// the tools first if the client has not yet done so.
func (c *Client) paramHeaders(ctx context.Context, name string, args exactjson.Value) (http.Header, error) {
	if !c.mirrors {
		return nil, nil
	}
	c.listMu.Lock()
	c.mu.Lock()
	listed := c.listed
	c.mu.Unlock()
	if !listed {
		if _, err := c.ListTools(ctx); err != nil {
			c.listMu.Unlock()
			return nil, fmt.Errorf("client: listing tools for their x-mcp-header parameters: %w", err)
		}
	}
	c.listMu.Unlock()
	c.mu.Lock()
	th := c.tools[name]
	c.mu.Unlock()
	if th == nil {
		return nil, nil // unknown to tools/list: the server will say so
	}
	if th.invalid != nil {
		return nil, fmt.Errorf("client: tool %q was rejected: %w", name, th.invalid)
	}
	return th.headers(args), nil
}

// CallTool calls a tool, running the MRTR loop and, when TasksEnabled,
// following a task the server creates. args may be nil, an
// exactjson.Value, JSON bytes, or any Go value marshaling to an object.
// A tool execution error is a result with IsError set, not an error.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*ToolResult, error) {
	av, err := toValue(args)
	if err != nil {
		return nil, fmt.Errorf("client: tool arguments: %w", err)
	}
	if av.IsNull() {
		av = exactjson.Object()
	}
	if av.Kind() != exactjson.KindObject {
		return nil, fmt.Errorf("client: tool arguments must be a JSON object, not %s", av.Kind())
	}
	params := exactjson.Object(exactjson.Field("name", exactjson.String(name)), exactjson.Field("arguments", av))
	header, err := c.paramHeaders(ctx, name, av)
	if err != nil {
		return nil, err
	}
	res, err := c.mrtr(ctx, "tools/call", params, header)
	var rerr *RPCError
	if c.mirrors && errors.As(err, &rerr) && rerr.Code == CodeHeaderMismatch {
		// The tool's schema may have changed: list again and retry once.
		if _, lerr := c.ListTools(ctx); lerr == nil {
			if header, err = c.paramHeaders(ctx, name, av); err != nil {
				return nil, err
			}
			res, err = c.mrtr(ctx, "tools/call", params, header)
		}
	}
	if err != nil {
		return nil, err
	}
	var taskID string
	if resultType(res) == "task" {
		if !c.opts.TasksEnabled {
			return nil, protocolErrorf("tools/call returned a task but the tasks extension was not declared")
		}
		taskID = str(res, "taskId")
		if res, err = c.followTask(ctx, res); err != nil {
			return nil, err
		}
	}
	tr := parseToolResult(res)
	tr.TaskID = taskID
	return tr, nil
}

// GetPrompt gets a prompt, running the MRTR loop.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*PromptResult, error) {
	params := exactjson.Object(exactjson.Field("name", exactjson.String(name)))
	if args != nil {
		m := make([]exactjson.Member, 0, len(args))
		for _, k := range sortedKeys(args) {
			m = append(m, exactjson.Field(k, exactjson.String(args[k])))
		}
		params = params.With("arguments", exactjson.Object(m...))
	}
	res, err := c.mrtr(ctx, "prompts/get", params, nil)
	if err != nil {
		return nil, err
	}
	if rt := resultType(res); rt != "complete" {
		return nil, protocolErrorf("prompts/get returned resultType %q", rt)
	}
	return parsePromptResult(res), nil
}

// ReadResource reads a resource, running the MRTR loop.
func (c *Client) ReadResource(ctx context.Context, uri string) (*ResourceResult, error) {
	res, err := c.mrtr(ctx, "resources/read", exactjson.Object(exactjson.Field("uri", exactjson.String(uri))), nil)
	if err != nil {
		return nil, err
	}
	if rt := resultType(res); rt != "complete" {
		return nil, protocolErrorf("resources/read returned resultType %q", rt)
	}
	return parseResourceResult(res), nil
}

// Ref is a completion reference: PromptRef or ResourceRef.
type Ref struct {
	Type string // "ref/prompt" or "ref/resource"
	Name string // prompt name
	URI  string // resource URI or URI template
}

// PromptRef references a prompt for completion.
func PromptRef(name string) Ref { return Ref{Type: "ref/prompt", Name: name} }

// ResourceRef references a resource (template) for completion.
func ResourceRef(uri string) Ref { return Ref{Type: "ref/resource", URI: uri} }

// Complete asks for completions of argument argName whose current value is
// value; contextArgs are the already-resolved arguments (may be nil).
func (c *Client) Complete(ctx context.Context, ref Ref, argName, value string, contextArgs map[string]string) (*Completion, error) {
	rm := []exactjson.Member{exactjson.Field("type", exactjson.String(ref.Type))}
	if ref.Type == "ref/resource" {
		rm = append(rm, exactjson.Field("uri", exactjson.String(ref.URI)))
	} else {
		rm = append(rm, exactjson.Field("name", exactjson.String(ref.Name)))
	}
	params := exactjson.Object(
		exactjson.Field("ref", exactjson.Object(rm...)),
		exactjson.Field("argument", exactjson.Object(
			exactjson.Field("name", exactjson.String(argName)),
			exactjson.Field("value", exactjson.String(value)))))
	if len(contextArgs) > 0 {
		m := make([]exactjson.Member, 0, len(contextArgs))
		for _, k := range sortedKeys(contextArgs) {
			m = append(m, exactjson.Field(k, exactjson.String(contextArgs[k])))
		}
		params = params.With("context", exactjson.Object(exactjson.Field("arguments", exactjson.Object(m...))))
	}
	res, err := c.roundTrip(ctx, "completion/complete", params, nil, nil)
	if err != nil {
		return nil, err
	}
	return parseCompletion(res), nil
}
