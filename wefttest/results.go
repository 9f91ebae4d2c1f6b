package wefttest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// Result types of MCP 2026-07-28.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
)

// Result is what the results of tools/call, prompts/get and resources/read
// share: the result type and, for an input_required result, the input
// requests and the request state to echo on retry. It is embedded in
// [ToolResult], [PromptResult] and [ResourceResult].
type Result struct {
	// ResultType is "complete", "input_required" or an extension's type.
	ResultType string
	// InputRequests are the keyed requests of an input_required result.
	InputRequests map[string]InputRequest
	// RequestState is the opaque state of an input_required result ("" when
	// absent). Retries echo it exactly.
	RequestState string
	// Meta is the result's _meta (serverInfo...); null when absent.
	Meta exactjson.Value
	// Raw is the whole result object.
	Raw exactjson.Value
	// Response is the HTTP exchange that carried the result (status,
	// headers, progress and log notifications).
	Response *Response

	method   string
	params   exactjson.Value // the request params without inputResponses and requestState
	hasState bool
}

// InputRequired reports whether the result is an input_required result.
func (r *Result) InputRequired() bool { return r.ResultType == ResultInputRequired }

// InputKeys returns the keys of InputRequests, sorted.
func (r *Result) InputKeys() []string {
	keys := make([]string, 0, len(r.InputRequests))
	for k := range r.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// InputRequest is one client request embedded in an input_required result:
// elicitation/create, sampling/createMessage or roots/list.
type InputRequest struct {
	Method string
	Params exactjson.Value // null when absent
}

// Content is one content block of a tool result or a prompt message.
type Content struct {
	// Type is "text", "image", "audio", "resource" or "resource_link".
	Type string
	// Text is the text of a text block.
	Text string
	// Data is the decoded data of an image or audio block.
	Data []byte
	// MimeType is the media type of image, audio and resource-link blocks.
	MimeType string
	// URI and Name identify the resource of a resource_link block.
	URI, Name string
	// Resource is the embedded resource of a resource block.
	Resource *ResourceContents
	// Raw is the whole block.
	Raw exactjson.Value
}

// ResourceContents is one entry of resources/read contents, or the resource
// of an embedded-resource block.
type ResourceContents struct {
	URI      string
	MimeType string
	// Text is the text of text contents.
	Text string
	// Blob is the decoded blob of binary contents; nil for text contents.
	Blob []byte
	// Raw is the whole contents object.
	Raw exactjson.Value
}

// ToolResult is the result of tools/call.
type ToolResult struct {
	Result
	// Content holds the content blocks of a complete result.
	Content []Content
	// StructuredContent is the structured result; null when absent.
	StructuredContent exactjson.Value
	// IsError reports a tool execution error the model should see.
	IsError bool
}

// Text joins the text of the text blocks with newlines.
func (r *ToolResult) Text() string { return joinText(r.Content) }

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string
	Content Content
}

// PromptResult is the result of prompts/get.
type PromptResult struct {
	Result
	Description string
	Messages    []PromptMessage
}

// Text joins the text of the messages' text blocks with newlines.
func (r *PromptResult) Text() string {
	cs := make([]Content, len(r.Messages))
	for i, m := range r.Messages {
		cs[i] = m.Content
	}
	return joinText(cs)
}

// ResourceResult is the result of resources/read.
type ResourceResult struct {
	Result
	Contents []ResourceContents
	// TTLMillis and CacheScope are the caching hints of a complete result.
	TTLMillis  int64
	CacheScope string
}

// Text joins the text of the text contents with newlines.
func (r *ResourceResult) Text() string {
	var parts []string
	for _, c := range r.Contents {
		if c.Blob == nil {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func joinText(cs []Content) string {
	var parts []string
	for _, c := range cs {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Tool is one entry of tools/list.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema, OutputSchema and Annotations are null when absent.
	InputSchema  exactjson.Value
	OutputSchema exactjson.Value
	Annotations  exactjson.Value
	// Raw is the whole tool object.
	Raw exactjson.Value
}

// DiscoverResult is the result of server/discover.
type DiscoverResult struct {
	SupportedVersions []string
	Capabilities      exactjson.Value
	Instructions      string
	// ServerInfo is _meta["io.modelcontextprotocol/serverInfo"]; null when absent.
	ServerInfo exactjson.Value
	TTLMillis  int64
	CacheScope string
	Raw        exactjson.Value
	Response   *Response
}

func protocolErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

// op sends an MRTR-capable request and decodes what all its results share.
func (c *Client) op(ctx context.Context, method string, params exactjson.Value) (Result, error) {
	resp, sent, err := c.call(ctx, method, params)
	if err != nil {
		return Result{}, err
	}
	if resp.Error != nil {
		return Result{}, resp.Error
	}
	r := Result{Raw: resp.Result, Response: resp, method: method, params: params.Without("inputResponses", "requestState")}
	rt, ok := getString(resp.Result, "resultType")
	if !ok {
		return r, protocolErrorf("%s result has no string resultType", method)
	}
	r.ResultType = rt
	r.Meta, _ = resp.Result.Get("_meta")
	if rt != ResultInputRequired {
		return r, nil
	}
	irs, hasIRs := resp.Result.Get("inputRequests")
	sv, hasState := resp.Result.Get("requestState")
	if !hasIRs && !hasState {
		return r, protocolErrorf("input_required result has neither inputRequests nor requestState")
	}
	if hasState {
		s, ok := sv.AsString()
		if !ok {
			return r, protocolErrorf("requestState is not a string")
		}
		r.RequestState, r.hasState = s, true
	}
	if hasIRs && irs.Kind() != exactjson.KindObject {
		return r, protocolErrorf("inputRequests is not an object")
	}
	meta, _ := sent.Get("_meta")
	caps, _ := meta.Get(MetaClientCapabilities)
	r.InputRequests = map[string]InputRequest{}
	for k, v := range irs.All() {
		m, ok := getString(v, "method")
		if !ok {
			return r, protocolErrorf("input request %q has no method", k)
		}
		p, _ := v.Get("params")
		ir := InputRequest{Method: m, Params: p}
		if err := declared(caps, ir); err != nil {
			return r, protocolErrorf("input request %q: %v", k, err)
		}
		r.InputRequests[k] = ir
	}
	return r, nil
}

// declared checks that the client declared the capability an input request
// needs: a server MUST NOT send one the client does not support.
func declared(caps exactjson.Value, ir InputRequest) error {
	switch ir.Method {
	case "elicitation/create":
		mode, ok := getString(ir.Params, "mode")
		if !ok {
			mode = "form"
		}
		e, _ := caps.Get("elicitation")
		hasForm, hasURL := e.Has("form"), e.Has("url")
		switch {
		case e.Kind() != exactjson.KindObject:
			return errors.New("the client did not declare elicitation")
		case mode == "url" && !hasURL:
			return errors.New("the client did not declare URL-mode elicitation")
		case mode == "form" && hasURL && !hasForm:
			return errors.New("the client did not declare form-mode elicitation")
		case mode != "url" && mode != "form":
			return fmt.Errorf("unknown elicitation mode %q", mode)
		}
	case "sampling/createMessage":
		s, _ := caps.Get("sampling")
		if s.Kind() != exactjson.KindObject {
			return errors.New("the client did not declare sampling")
		}
		if (ir.Params.Has("tools") || ir.Params.Has("toolChoice")) && !s.Has("tools") {
			return errors.New("the client did not declare sampling with tools")
		}
	case "roots/list":
		if r, _ := caps.Get("roots"); r.Kind() != exactjson.KindObject {
			return errors.New("the client did not declare roots")
		}
	default:
		return fmt.Errorf("unknown input request method %q", ir.Method)
	}
	return nil
}

func decodeTool(b Result) (*ToolResult, error) {
	r := &ToolResult{Result: b}
	if b.ResultType != ResultComplete {
		return r, nil
	}
	content, ok := b.Raw.Get("content")
	if !ok || content.Kind() != exactjson.KindArray {
		return r, protocolErrorf("tools/call result has no content array")
	}
	for v := range content.Values() {
		c, err := decodeContent(v)
		if err != nil {
			return r, err
		}
		r.Content = append(r.Content, c)
	}
	r.StructuredContent, _ = b.Raw.Get("structuredContent")
	if v, ok := b.Raw.Get("isError"); ok {
		if r.IsError, ok = v.AsBool(); !ok {
			return r, protocolErrorf("isError is not a boolean")
		}
	}
	return r, nil
}

func decodePrompt(b Result) (*PromptResult, error) {
	r := &PromptResult{Result: b}
	if b.ResultType != ResultComplete {
		return r, nil
	}
	r.Description, _ = getString(b.Raw, "description")
	msgs, ok := b.Raw.Get("messages")
	if !ok || msgs.Kind() != exactjson.KindArray {
		return r, protocolErrorf("prompts/get result has no messages array")
	}
	for m := range msgs.Values() {
		role, ok := getString(m, "role")
		if !ok {
			return r, protocolErrorf("prompt message has no role")
		}
		cv, _ := m.Get("content")
		c, err := decodeContent(cv)
		if err != nil {
			return r, err
		}
		r.Messages = append(r.Messages, PromptMessage{Role: role, Content: c})
	}
	return r, nil
}

func decodeResource(b Result) (*ResourceResult, error) {
	r := &ResourceResult{Result: b}
	if b.ResultType != ResultComplete {
		return r, nil
	}
	contents, ok := b.Raw.Get("contents")
	if !ok || contents.Kind() != exactjson.KindArray {
		return r, protocolErrorf("resources/read result has no contents array")
	}
	for v := range contents.Values() {
		rc, err := decodeResourceContents(v)
		if err != nil {
			return r, err
		}
		r.Contents = append(r.Contents, rc)
	}
	var err error
	if r.TTLMillis, r.CacheScope, err = cacheHints(b.Raw); err != nil {
		return r, err
	}
	return r, nil
}

// cacheHints decodes the required ttlMs and cacheScope of a cacheable result.
func cacheHints(v exactjson.Value) (int64, string, error) {
	tv, _ := v.Get("ttlMs")
	n, _ := tv.AsNumber()
	ttl, ok := n.Int64()
	if tv.Kind() != exactjson.KindNumber || !ok || ttl < 0 {
		return 0, "", protocolErrorf("cacheable result needs an integer ttlMs >= 0")
	}
	scope, _ := getString(v, "cacheScope")
	if scope != "public" && scope != "private" {
		return 0, "", protocolErrorf(`cacheable result needs cacheScope "public" or "private"`)
	}
	return ttl, scope, nil
}

func decodeContent(v exactjson.Value) (Content, error) {
	c := Content{Raw: v}
	var ok bool
	if c.Type, ok = getString(v, "type"); !ok {
		return c, protocolErrorf("content block has no type: %s", v)
	}
	c.MimeType, _ = getString(v, "mimeType")
	switch c.Type {
	case "text":
		if c.Text, ok = getString(v, "text"); !ok {
			return c, protocolErrorf("text block has no text")
		}
	case "image", "audio":
		d, _ := getString(v, "data")
		b, err := base64.StdEncoding.DecodeString(d)
		if err != nil {
			return c, protocolErrorf("%s block data is not base64: %v", c.Type, err)
		}
		c.Data = b
	case "resource":
		rv, _ := v.Get("resource")
		rc, err := decodeResourceContents(rv)
		if err != nil {
			return c, err
		}
		c.Resource = &rc
	case "resource_link":
		c.URI, _ = getString(v, "uri")
		c.Name, _ = getString(v, "name")
	}
	return c, nil
}

func decodeResourceContents(v exactjson.Value) (ResourceContents, error) {
	rc := ResourceContents{Raw: v}
	var ok bool
	if rc.URI, ok = getString(v, "uri"); !ok {
		return rc, protocolErrorf("resource contents have no uri")
	}
	rc.MimeType, _ = getString(v, "mimeType")
	if b, ok := getString(v, "blob"); ok {
		blob, err := base64.StdEncoding.DecodeString(b)
		if err != nil {
			return rc, protocolErrorf("resource blob is not base64: %v", err)
		}
		if blob == nil {
			blob = []byte{}
		}
		rc.Blob = blob
	} else if rc.Text, ok = getString(v, "text"); !ok {
		return rc, protocolErrorf("resource contents have neither text nor blob")
	}
	return rc, nil
}

// CallTool calls a tool. args is nil (no arguments), an exactjson.Value, or
// any Go value that marshals to a JSON object. A JSON-RPC error is returned
// as *[RPCError]; a tool execution error is a result with IsError set.
//
// To send the Mcp-Param-{Name} headers the client needs the tool's input
// schema: the first call with arguments lists the tools once (an extra
// tools/list request, visible to admission), and [Client.ListTools]
// refreshes that cache.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*ToolResult, error) {
	params := exactjson.Object(exactjson.Field("name", exactjson.String(name)))
	switch a := args.(type) {
	case nil:
	case exactjson.Value:
		if a.Kind() != exactjson.KindNull {
			params = params.With("arguments", a)
		}
	default:
		v, err := exactjson.FromGo(a)
		if err != nil {
			return nil, fmt.Errorf("wefttest: tool arguments: %w", err)
		}
		params = params.With("arguments", v)
	}
	return c.toolRound(ctx, params)
}

func (c *Client) toolRound(ctx context.Context, params exactjson.Value) (*ToolResult, error) {
	b, err := c.op(ctx, "tools/call", params)
	if err != nil {
		return nil, err
	}
	return decodeTool(b)
}

// GetPrompt gets a prompt with string arguments (nil for none).
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*PromptResult, error) {
	params := exactjson.Object(exactjson.Field("name", exactjson.String(name)))
	if args != nil {
		keys := make([]string, 0, len(args))
		for k := range args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		ms := make([]exactjson.Member, len(keys))
		for i, k := range keys {
			ms[i] = exactjson.Field(k, exactjson.String(args[k]))
		}
		params = params.With("arguments", exactjson.Object(ms...))
	}
	return c.promptRound(ctx, params)
}

func (c *Client) promptRound(ctx context.Context, params exactjson.Value) (*PromptResult, error) {
	b, err := c.op(ctx, "prompts/get", params)
	if err != nil {
		return nil, err
	}
	return decodePrompt(b)
}

// ReadResource reads a resource.
func (c *Client) ReadResource(ctx context.Context, uri string) (*ResourceResult, error) {
	return c.resourceRound(ctx, exactjson.Object(exactjson.Field("uri", exactjson.String(uri))))
}

func (c *Client) resourceRound(ctx context.Context, params exactjson.Value) (*ResourceResult, error) {
	b, err := c.op(ctx, "resources/read", params)
	if err != nil {
		return nil, err
	}
	return decodeResource(b)
}

// retryParams builds the params of a retry of prev: the original params plus
// inputResponses (omitted when responses is empty) and the exact echo of
// requestState (only when prev carried one).
func retryParams(prev *Result, method string, responses map[string]exactjson.Value) (exactjson.Value, error) {
	switch {
	case prev == nil:
		return exactjson.Value{}, errors.New("wefttest: retry of a nil result")
	case prev.method != method:
		return exactjson.Value{}, fmt.Errorf("wefttest: cannot retry a %s result as %s", prev.method, method)
	case !prev.InputRequired():
		return exactjson.Value{}, fmt.Errorf("wefttest: only an input_required result can be retried (got %q)", prev.ResultType)
	}
	params := prev.params
	if len(responses) > 0 {
		keys := make([]string, 0, len(responses))
		for k := range responses {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		ms := make([]exactjson.Member, len(keys))
		for i, k := range keys {
			ms[i] = exactjson.Field(k, responses[k])
		}
		params = params.With("inputResponses", exactjson.Object(ms...))
	}
	if prev.hasState {
		params = params.With("requestState", exactjson.String(prev.RequestState))
	}
	return params, nil
}

// Retry repeats the tools/call of an input_required result as a new request
// (with a new id): the same params plus inputResponses and the echoed
// requestState. responses may be empty for a state-only retry.
func (c *Client) Retry(ctx context.Context, prev *ToolResult, responses map[string]exactjson.Value) (*ToolResult, error) {
	if prev == nil {
		return nil, errors.New("wefttest: retry of a nil result")
	}
	params, err := retryParams(&prev.Result, "tools/call", responses)
	if err != nil {
		return nil, err
	}
	return c.toolRound(ctx, params)
}

// RetryPrompt is [Client.Retry] for prompts/get.
func (c *Client) RetryPrompt(ctx context.Context, prev *PromptResult, responses map[string]exactjson.Value) (*PromptResult, error) {
	if prev == nil {
		return nil, errors.New("wefttest: retry of a nil result")
	}
	params, err := retryParams(&prev.Result, "prompts/get", responses)
	if err != nil {
		return nil, err
	}
	return c.promptRound(ctx, params)
}

// RetryResource is [Client.Retry] for resources/read.
func (c *Client) RetryResource(ctx context.Context, prev *ResourceResult, responses map[string]exactjson.Value) (*ResourceResult, error) {
	if prev == nil {
		return nil, errors.New("wefttest: retry of a nil result")
	}
	params, err := retryParams(&prev.Result, "resources/read", responses)
	if err != nil {
		return nil, err
	}
	return c.resourceRound(ctx, params)
}

// listMember maps a list method to the result member holding its items.
var listMember = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}

// maxPages bounds ListAll against a server whose cursors never end.
const maxPages = 10000

// ListAll calls a list method (tools/list, prompts/list, resources/list or
// resources/templates/list), following nextCursor through every page, and
// returns the items.
func (c *Client) ListAll(ctx context.Context, method string) ([]exactjson.Value, error) {
	member, ok := listMember[method]
	if !ok {
		return nil, fmt.Errorf("wefttest: %q is not a list method", method)
	}
	var items []exactjson.Value
	seen := map[string]bool{}
	params := exactjson.Object()
	for range maxPages {
		resp, err := c.Call(ctx, method, params)
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		if rt, _ := getString(resp.Result, "resultType"); rt != ResultComplete {
			return nil, protocolErrorf("%s result has resultType %q, want complete", method, rt)
		}
		if _, _, err := cacheHints(resp.Result); err != nil {
			return nil, err
		}
		list, ok := resp.Result.Get(member)
		if !ok || list.Kind() != exactjson.KindArray {
			return nil, protocolErrorf("%s result has no %s array", method, member)
		}
		items = append(items, list.Elements()...)
		next, ok := getString(resp.Result, "nextCursor")
		if !ok {
			return items, nil
		}
		if seen[next] {
			return nil, protocolErrorf("%s repeats cursor %q", method, next)
		}
		seen[next] = true
		params = exactjson.Object(exactjson.Field("cursor", exactjson.String(next)))
	}
	return nil, protocolErrorf("%s has more than %d pages", method, maxPages)
}

// ListTools lists every tool (all pages) and refreshes the client's cache of
// input schemas, which the Mcp-Param-{Name} headers of later tool calls are
// computed from.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	items, err := c.ListAll(ctx, "tools/list")
	if err != nil {
		return nil, err
	}
	tools := make([]Tool, 0, len(items))
	byName := make(map[string]Tool, len(items))
	for _, v := range items {
		t := Tool{Raw: v}
		var ok bool
		if t.Name, ok = getString(v, "name"); !ok {
			return nil, protocolErrorf("a tool has no name")
		}
		t.Title, _ = getString(v, "title")
		t.Description, _ = getString(v, "description")
		t.InputSchema, _ = v.Get("inputSchema")
		t.OutputSchema, _ = v.Get("outputSchema")
		t.Annotations, _ = v.Get("annotations")
		if t.InputSchema.Kind() != exactjson.KindObject {
			return nil, protocolErrorf("tool %q has no inputSchema object", t.Name)
		}
		tools = append(tools, t)
		byName[t.Name] = t
	}
	c.mu.Lock()
	c.tools = byName
	c.mu.Unlock()
	return tools, nil
}

// Discover calls server/discover.
func (c *Client) Discover(ctx context.Context) (*DiscoverResult, error) {
	resp, err := c.Call(ctx, "server/discover", exactjson.Value{})
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	v := resp.Result
	d := &DiscoverResult{Raw: v, Response: resp}
	if rt, _ := getString(v, "resultType"); rt != ResultComplete {
		return d, protocolErrorf("server/discover resultType is %q, want complete", rt)
	}
	sv, _ := v.Get("supportedVersions")
	for e := range sv.Values() {
		s, ok := e.AsString()
		if !ok {
			return d, protocolErrorf("supportedVersions holds a non-string")
		}
		d.SupportedVersions = append(d.SupportedVersions, s)
	}
	if len(d.SupportedVersions) == 0 {
		return d, protocolErrorf("server/discover has no supportedVersions")
	}
	if d.Capabilities, _ = v.Get("capabilities"); d.Capabilities.Kind() != exactjson.KindObject {
		return d, protocolErrorf("server/discover has no capabilities object")
	}
	d.Instructions, _ = getString(v, "instructions")
	meta, _ := v.Get("_meta")
	d.ServerInfo, _ = meta.Get(MetaServerInfo)
	if d.TTLMillis, d.CacheScope, err = cacheHints(v); err != nil {
		return d, err
	}
	return d, nil
}
