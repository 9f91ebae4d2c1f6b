package weft

import (
	"fmt"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/jsonrpc"
	"github.com/weftmcp/weft/task"
)

// Result is the typed result of an MCP method, as handlers return it and
// [Middleware] sees it before the framework encodes it for the client's
// protocol era. It is one of this package's result types:
//
//   - server/discover: [*DiscoverResult]
//   - tools/list, prompts/list, resources/list, resources/templates/list:
//     [*ListToolsResult], [*ListPromptsResult], [*ListResourcesResult],
//     [*ListResourceTemplatesResult]
//   - tools/call, prompts/get, resources/read: [*CallToolResult],
//     [*GetPromptResult], [*ReadResourceResult], or [*CreateTaskResult]
//     when a tool continues as a durable task
//   - completion/complete: [*CompleteResult]
//   - tasks/get: [*GetTaskResult]; tasks/update, tasks/cancel and the
//     2025-11-25 session methods (ping, logging/setLevel,
//     resources/subscribe, resources/unsubscribe): [*EmptyResult]
//   - subscriptions/listen: [*EmptyResult] when the stream closes
//   - initialize (2025-11-25 sessions): [*InitializeResult]
//   - custom methods ([Server.HandleMethod]): [*MethodResult]
//
// A middleware may replace a result with another of these types; the set is
// closed so that every result has one exact encoding in both eras.
type Result interface {
	// resultType is the 2026-07-28 resultType member.
	resultType() string
	// encodeBody writes the result's own members, in the form of e's era
	// where the eras differ.
	encodeBody(e *enc)
	// resultMeta is the application's _meta, merged with serverInfo.
	resultMeta() exactjson.Value
	// cachePolicy is the caching hint (ttlMs, cacheScope), nil when the
	// result is not cacheable.
	cachePolicy() *CachePolicy
}

// CacheHint returns the caching hint a result carries (ttlMs and
// cacheScope in 2026-07-28), and false when it carries none: only
// discovery, the lists, resource reads and custom results with a Cache are
// cacheable.
func CacheHint(res Result) (CachePolicy, bool) {
	if res == nil || isNilResult(res) {
		return CachePolicy{}, false
	}
	if c := res.cachePolicy(); c != nil {
		return *c, true
	}
	return CachePolicy{}, false
}

// noMeta gives a result type no _meta and no caching hint.
type noMeta struct{}

func (noMeta) resultMeta() exactjson.Value { return exactjson.Value{} }
func (noMeta) cachePolicy() *CachePolicy   { return nil }

// DiscoverResult is the result of server/discover.
type DiscoverResult struct {
	SupportedVersions []string
	// Capabilities is the ServerCapabilities object (derived from what is
	// registered; extensions included).
	Capabilities exactjson.Value
	Instructions string
	// Cache is the caching hint ([Options.Cache]).
	Cache *CachePolicy
}

func (*DiscoverResult) resultType() string            { return "complete" }
func (r *DiscoverResult) resultMeta() exactjson.Value { return exactjson.Value{} }
func (r *DiscoverResult) cachePolicy() *CachePolicy   { return r.Cache }
func (r *DiscoverResult) encodeBody(e *enc) {
	e.value("supportedVersions", stringArray(r.SupportedVersions))
	e.value("capabilities", r.Capabilities)
	e.strOpt("instructions", r.Instructions)
}

// InitializeResult is the result of a 2025-11-25 initialize.
type InitializeResult struct {
	ProtocolVersion string
	// Capabilities is the ServerCapabilities object (no extensions).
	Capabilities exactjson.Value
	ServerInfo   Implementation
	Instructions string
	noMeta
	sessionID string // the session opened (sent as Mcp-Session-Id on HTTP)
}

func (*InitializeResult) resultType() string { return "complete" }
func (r *InitializeResult) encodeBody(e *enc) {
	e.str("protocolVersion", r.ProtocolVersion)
	e.value("capabilities", r.Capabilities)
	e.name("serverInfo")
	r.ServerInfo.encode(e)
	e.strOpt("instructions", r.Instructions)
}

func (impl Implementation) encode(e *enc) {
	e.open()
	e.str("name", impl.Name)
	e.str("version", impl.Version)
	e.strOpt("title", impl.Title)
	e.close()
}

// Page is one page of a list method's items: [ListToolsResult],
// [ListPromptsResult], [ListResourcesResult] or
// [ListResourceTemplatesResult]. The items share the server's registrations
// (schemas included): treat them as read-only.
type Page[T Tool | Prompt | ResourceInfo | ResourceTemplate] struct {
	Items      []T
	NextCursor string
	// Cache is the caching hint ([Options.Cache]).
	Cache *CachePolicy
}

// The results of the list methods.
type (
	ListToolsResult             = Page[Tool]             // tools/list
	ListPromptsResult           = Page[Prompt]           // prompts/list
	ListResourcesResult         = Page[ResourceInfo]     // resources/list
	ListResourceTemplatesResult = Page[ResourceTemplate] // resources/templates/list
)

func (*Page[T]) resultType() string           { return "complete" }
func (*Page[T]) resultMeta() exactjson.Value  { return exactjson.Value{} }
func (r *Page[T]) cachePolicy() *CachePolicy  { return r.Cache }
func (r *Page[T]) nextCursor() string         { return r.NextCursor }
func (r *Page[T]) withCursor(c string) Result { o := *r; o.NextCursor = c; return &o }

// paged is a list result with a nextCursor, which 2025-11-25 sessions get
// sealed (a copy: the result itself may be cached by middleware).
type paged interface {
	nextCursor() string
	withCursor(string) Result
}

func (r *Page[T]) encodeBody(e *enc) {
	var member string
	switch any((*T)(nil)).(type) {
	case *Tool:
		member = "tools"
	case *Prompt:
		member = "prompts"
	case *ResourceInfo:
		member = "resources"
	default:
		member = "resourceTemplates"
	}
	e.name(member)
	e.b = append(e.b, '[')
	for i := range r.Items {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		encodeListItem(e, &r.Items[i])
	}
	e.b = append(e.b, ']')
	e.strOpt("nextCursor", r.NextCursor)
}

// encodeListItem encodes one item of a list page for the client's era.
func encodeListItem[T Tool | Prompt | ResourceInfo | ResourceTemplate](e *enc, item *T) {
	switch it := any(item).(type) {
	case *Tool:
		it.encode(e)
	case *Prompt:
		it.encode(e)
	case *ResourceInfo:
		e.open()
		it.encodeFields(e)
		e.close()
	case *ResourceTemplate:
		it.encode(e)
	}
}

func (*CallToolResult) resultType() string            { return "complete" }
func (r *CallToolResult) resultMeta() exactjson.Value { return r.Meta }
func (*CallToolResult) cachePolicy() *CachePolicy     { return nil }

func (*GetPromptResult) resultType() string            { return "complete" }
func (r *GetPromptResult) resultMeta() exactjson.Value { return r.Meta }
func (*GetPromptResult) cachePolicy() *CachePolicy     { return nil }

func (*ReadResourceResult) resultType() string            { return "complete" }
func (r *ReadResourceResult) resultMeta() exactjson.Value { return r.Meta }
func (r *ReadResourceResult) cachePolicy() *CachePolicy   { return r.Cache }

// CompleteResult is the result of completion/complete.
type CompleteResult struct {
	Completion Completion
	noMeta
}

func (*CompleteResult) resultType() string { return "complete" }
func (r *CompleteResult) encodeBody(e *enc) {
	c := r.Completion
	values, hasMore := c.Values, c.HasMore
	if len(values) > maxCompletionValues {
		values, hasMore = values[:maxCompletionValues], true
	}
	if values == nil {
		values = []string{}
	}
	e.name("completion")
	e.open()
	e.value("values", stringArray(values))
	if c.Total > 0 {
		e.integer("total", int64(c.Total))
	}
	if hasMore {
		e.boolean("hasMore", true)
	}
	e.close()
}

// CreateTaskResult answers a tools/call that continues as a durable task
// (resultType "task").
type CreateTaskResult struct {
	Task *task.Record
	noMeta
}

func (*CreateTaskResult) resultType() string  { return "task" }
func (r *CreateTaskResult) encodeBody(e *enc) { encodeTaskFields(e, r.Task, false) }

// GetTaskResult is the result of tasks/get: the task with its status
// payload (input requests, result or error).
type GetTaskResult struct {
	Task *task.Record
	noMeta
}

func (*GetTaskResult) resultType() string  { return "complete" }
func (r *GetTaskResult) encodeBody(e *enc) { encodeTaskFields(e, r.Task, true) }

// EmptyResult is a result without members of its own, optionally with _meta.
type EmptyResult struct {
	Meta exactjson.Value
}

func (*EmptyResult) resultType() string            { return "complete" }
func (*EmptyResult) encodeBody(*enc)               {}
func (r *EmptyResult) resultMeta() exactjson.Value { return r.Meta }
func (*EmptyResult) cachePolicy() *CachePolicy     { return nil }

func (*MethodResult) resultType() string            { return "complete" }
func (r *MethodResult) resultMeta() exactjson.Value { return r.Meta }
func (r *MethodResult) cachePolicy() *CachePolicy   { return r.Cache }
func (r *MethodResult) encodeBody(e *enc) {
	for k, v := range r.Body.All() {
		if k == "resultType" || k == "_meta" || k == "ttlMs" || k == "cacheScope" {
			continue
		}
		e.value(k, v)
	}
}

// askResult is the input_required result the core encodes for an
// *InputRequired an operation returned as its error. It is not a Result an
// application can return: input_required has one way out of a handler or
// a middleware, the error.
type askResult struct{ *InputRequired }

func (askResult) resultType() string          { return "input_required" }
func (askResult) resultMeta() exactjson.Value { return exactjson.Value{} }
func (askResult) cachePolicy() *CachePolicy   { return nil }
func (ir askResult) encodeBody(e *enc) {
	if len(ir.keys) > 0 {
		e.name("inputRequests")
		e.open()
		for i, k := range ir.keys {
			e.name(k)
			e.open()
			e.str("method", ir.requests[i].Method())
			e.value("params", ir.requests[i].params)
			e.close()
		}
		e.close()
	}
	if ir.token != "" {
		e.str("requestState", ir.token)
	}
}

// encodeResult encodes a result object for the client's era. 2026-07-28
// results carry resultType, the caching hint where there is one, and
// _meta with the application's members and serverInfo; 2025-11-25 results
// carry none of these (serverInfo came with initialize) and the
// application's _meta only. Results are bounded by Limits.MaxOutputBytes.
func (s *Server) encodeResult(res Result, to era) ([]byte, error) {
	b, _, _, err := s.encodeResultIn(res, to, nil)
	return b, err
}

// encodeResultIn encodes res; with a non-nil id, inside the JSON-RPC
// response that carries it, so that the transport sends the buffer as it is
// (no second copy): wire is then the whole response, result the result
// object within it, and buf the pooled buffer holding them, which the
// transport may give back with putWire once it has written wire.
func (s *Server) encodeResultIn(res Result, to era, id *ID) (result, wire []byte, buf *[]byte, err error) {
	e := &enc{nums: &s.limits.JSON, era: to} // numbers as the clients' parsers accept them (docs/limits.md)
	start := 0
	if id != nil {
		buf, _ = s.wires.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
			*buf = make([]byte, 0, 512)
		}
		e.b = jsonrpc.AppendResponsePrefix((*buf)[:0], id.v)
		start = len(e.b)
	} else {
		e.b = make([]byte, 0, 256)
	}
	e.open()
	envelope := to.resultEnvelope()
	if envelope {
		e.str("resultType", res.resultType())
	}
	res.encodeBody(e)
	userMeta := res.resultMeta()
	if envelope {
		if c := res.cachePolicy(); c != nil {
			c.encode(e)
		}
	}
	withInfo := envelope && !s.opts.OmitServerInfo
	if withInfo || userMeta.Kind() == exactjson.KindObject && (envelope || hasMemberBesides(userMeta, metaServerInfo)) {
		e.name("_meta")
		e.open()
		for k, v := range userMeta.All() {
			if k == metaServerInfo {
				continue
			}
			e.value(k, v)
		}
		if withInfo {
			e.name(metaServerInfo)
			s.impl.encode(e)
		}
		e.close()
	}
	e.close()
	if e.err != nil {
		return nil, nil, nil, e.err
	}
	if n := len(e.b) - start; n > s.limits.MaxOutputBytes {
		return nil, nil, nil, fmt.Errorf("result of %d bytes exceeds MaxOutputBytes (%d)", n, s.limits.MaxOutputBytes)
	}
	result = e.b[start:len(e.b):len(e.b)]
	if id == nil {
		return result, nil, nil, nil
	}
	wire = append(e.b, '}')
	*buf = wire
	return result, wire, buf, nil
}

// maxPooledWire bounds the response buffers kept for reuse.
const maxPooledWire = 16 << 10

// putWire takes back a response buffer of encodeResultIn once the transport
// has written it (nothing may read it afterwards).
func (s *Server) putWire(buf *[]byte) {
	if buf == nil || cap(*buf) > maxPooledWire {
		return
	}
	*buf = (*buf)[:0]
	s.wires.Put(buf)
}

func hasMemberBesides(obj exactjson.Value, name string) bool {
	for k := range obj.All() {
		if k != name {
			return true
		}
	}
	return false
}
