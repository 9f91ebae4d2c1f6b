package client

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/weftmcp/weft/exactjson"
)

// LegacyProtocolVersion is the 2025-11-25 revision: an initialize
// handshake, a session (Mcp-Session-Id over HTTP), and input asked by
// server-to-client requests instead of input_required results. A client
// whose Options.ProtocolVersion is a dated revision up to it speaks that
// era; a 2026-07-28 client falls back to it when the server supports
// nothing newer.
const LegacyProtocolVersion = "2025-11-25"

// legacyVersions are the dated revisions the client speaks in the
// initialize era, newest first. 2024-11-05 is accepted from servers that
// still answer it (many stdio servers on older SDKs do); over HTTP only
// Streamable HTTP is spoken, not that revision's HTTP+SSE transport.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// isLegacy reports whether v is a revision of the initialize era.
func isLegacy(v string) bool { return v != "" && v < "2026" }

// notifier is a transport that can send notifications.
type notifier interface {
	Notify(ctx context.Context, method string, params exactjson.Value) error
}

// era is what the client negotiated: the version, and in the 2025 era
// the initialize result.
type era struct {
	version     string
	legacy      bool
	pinned      bool // Options.ProtocolVersion given: no fallback
	known       bool // pinned, or the era probe decided (era.go)
	initialized bool
	initResult  exactjson.Value
}

// currentEra returns a snapshot of the negotiated era.
func (c *Client) currentEra() era {
	c.eraMu.Lock()
	defer c.eraMu.Unlock()
	return c.era
}

// ensureInitialized runs the 2025-era initialize handshake once:
// initialize, then notifications/initialized.
func (c *Client) ensureInitialized(ctx context.Context) error {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	e := c.currentEra()
	if !e.legacy || e.initialized {
		return nil
	}
	params := exactjson.Object(
		exactjson.Field("protocolVersion", exactjson.String(e.version)),
		exactjson.Field("capabilities", legacyCapabilities(c.caps)),
		exactjson.Field("clientInfo", c.info))
	id := c.nextID.Add(1)
	resp, err := c.t.Do(ctx, &Request{ID: id, Method: "initialize", Params: params}, c.dispatch)
	if err != nil {
		return err
	}
	if resp == nil {
		return protocolErrorf("initialize: the transport returned no response")
	}
	if resp.Error != nil {
		return resp.Error
	}
	res := resp.Result
	version := str(res, "protocolVersion")
	if !slices.Contains(legacyVersions, version) {
		return protocolErrorf("initialize: the server chose protocol version %q, which this client does not speak", version)
	}
	if ht, ok := c.t.(*HTTPTransport); ok {
		ht.SetProtocolVersion(version)
	}
	if n, ok := c.t.(notifier); ok {
		if err := n.Notify(ctx, "notifications/initialized", exactjson.Object()); err != nil {
			return err
		}
	}
	c.eraMu.Lock()
	c.era.version, c.era.initialized, c.era.initResult = version, true, res
	c.eraMu.Unlock()
	if ht, ok := c.t.(*HTTPTransport); ok {
		// The server's requests and notifications outside any request
		// come on the GET stream; a server without one is fine.
		if err := ht.OpenSessionStream(SessionStreamHandlers{Notify: c.dispatch, Request: c.serveLegacy}); err != nil {
			c.log.Debug("client: no 2025-era GET stream", "err", err)
		}
	}
	return nil
}

// legacyCapabilities drops what the 2025 era does not know (the tasks
// extension's 2026 shape is kept: servers ignore unknown members).
func legacyCapabilities(caps exactjson.Value) exactjson.Value {
	if caps.Kind() != exactjson.KindObject {
		return exactjson.Object()
	}
	return caps
}

// switchToLegacy moves an unpinned client to the newest 2025-era
// revision the server listed, after it refused 2026-07-28.
func (c *Client) switchToLegacy(supported []string) bool {
	c.eraMu.Lock()
	defer c.eraMu.Unlock()
	if c.era.pinned || c.era.legacy {
		return false
	}
	for _, v := range legacyVersions {
		if slices.Contains(supported, v) {
			c.era = era{version: v, legacy: true, known: true}
			return true
		}
	}
	return false
}

// supportedVersions reads data.supported of an unsupported-version error.
func supportedVersions(e *RPCError) []string {
	var out []string
	sv, _ := e.Data.Get("supported")
	for v := range sv.Values() {
		if s, ok := v.AsString(); ok {
			out = append(out, s)
		}
	}
	return out
}

// legacyHeader adds the negotiated version header to a 2025-era request.
func legacyHeader(h http.Header, version string) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	out.Set("MCP-Protocol-Version", version)
	return out
}

// serveLegacy answers the server-to-client requests of the 2025 era
// through the handlers (ping is answered here).
func (c *Client) serveLegacy(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error) {
	if params.IsNull() {
		params = exactjson.Object()
	}
	h := c.opts.Handlers
	switch method {
	case "ping":
		return exactjson.Object(), nil
	case "elicitation/create":
		if h.Elicit != nil {
			res, err := h.Elicit(ctx, params)
			if err != nil {
				return exactjson.Value{}, err
			}
			return withElicitationDefaults(params, res), nil
		}
	case "sampling/createMessage":
		if h.Sample != nil {
			return h.Sample(ctx, params)
		}
	case "roots/list":
		if h.Roots != nil {
			return h.Roots(ctx)
		}
	}
	return exactjson.Value{}, &RPCError{Code: CodeMethodNotFound, Message: "the client does not handle " + method}
}

// withElicitationDefaults fills the fields an accepted form elicitation
// left out with the defaults of the requested schema (SEP-1034).
func withElicitationDefaults(params, res exactjson.Value) exactjson.Value {
	if str(res, "action") != "accept" {
		return res
	}
	schema, _ := params.Get("requestedSchema")
	props, _ := schema.Get("properties")
	if props.Kind() != exactjson.KindObject {
		return res
	}
	content, _ := res.Get("content")
	if content.IsNull() {
		content = exactjson.Object()
	}
	if content.Kind() != exactjson.KindObject {
		return res
	}
	changed := false
	for _, p := range props.Members() {
		if content.Has(p.Name) {
			continue
		}
		if d, ok := p.Value.Get("default"); ok {
			content = content.With(p.Name, d)
			changed = true
		}
	}
	if !changed {
		return res
	}
	return res.With("content", content)
}

// errSessionGone reports a request the server refused for an unknown
// session (see [ErrSessionExpired]): a new one must be initialized.
func errSessionGone(err error) bool { return errors.Is(err, ErrSessionExpired) }

// restartSession forgets the ended session so that the next request
// initializes a new one.
func (c *Client) restartSession(err error) {
	c.log.Info("client: the server no longer knows the session (it restarted or expired it); initializing another and sending the request once more", "err", err)
	if ht, ok := c.t.(*HTTPTransport); ok {
		ht.ResetSession()
	}
	c.eraMu.Lock()
	c.era.initialized = false
	c.eraMu.Unlock()
}

// legacyDiscover presents an initialize result as a DiscoverResult.
func legacyDiscover(e era) *DiscoverResult {
	caps, _ := e.initResult.Get("capabilities")
	info, _ := e.initResult.Get("serverInfo")
	return &DiscoverResult{SupportedVersions: []string{e.version}, Capabilities: caps, Instructions: str(e.initResult, "instructions"), ServerInfo: info, Raw: e.initResult}
}

// ProtocolVersion returns the protocol version the client speaks (the
// negotiated one in the 2025 era once initialized).
func (c *Client) ProtocolVersion() string { return c.currentEra().version }
