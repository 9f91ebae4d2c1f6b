package weft

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"unsafe"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/hdr"
	"github.com/weftmcp/weft/internal/mirror"
)

// Meta keys of MCP 2026-07-28.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// supportedVersions lists the protocol versions served by the modern pipeline.
var supportedVersions = []string{ProtocolVersion}

// legacyOnly are methods removed in 2026-07-28.
func legacyOnly(method string) bool {
	switch method {
	case "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
		"notifications/initialized", "notifications/roots/list_changed", "tasks/result", "tasks/list":
		return true
	}
	return false
}

// inbound is one message handed to the pipeline by a transport.
type inbound struct {
	body []byte
	// owned reports that body is a buffer of its own that nothing writes
	// after it is read (HTTP): it is then parsed in place, not copied.
	owned      bool
	header     http.Header // nil on stdio
	endpoint   string
	transport  string
	remoteAddr string
	out        notifier
	target     string // the body's tool/prompt name, resource URI or task id, for admission
	// early, when set, sends a reply before the handler returns (the
	// deadline of a handler that ignores its context); the transport then
	// drops the handler's own reply.
	early func(reply)
}

// reply is the pipeline's answer; the transport writes it.
type reply struct {
	none    bool   // a notification: nothing to send (HTTP 202)
	id      ID     // echoed id
	result  []byte // encoded result object
	err     *Error
	header  http.Header // extra response headers (admission challenges)
	status  int         // HTTP status override for admission rejections
	outcome Outcome     // for observers; derived from err when zero
}

// classify derives the outcome of a reply that does not carry one.
func (r reply) classify() Outcome {
	switch {
	case r.outcome != 0:
		return r.outcome
	case r.err == nil:
		return OutcomeComplete
	case r.err.Code == CodeRateLimited || r.status >= 400 && r.status != http.StatusBadRequest || r.err.HTTPStatus() == http.StatusServiceUnavailable:
		return OutcomeRejected
	case !r.err.reserved:
		return OutcomeApplicationError
	case r.err.Code == CodeInternalError:
		return OutcomeInternalError
	}
	return OutcomeProtocolError
}

func errReply(id ID, e *Error) reply { return reply{id: id, err: e} }

// serve runs one message through the pipeline.
func (s *Server) serve(ctx context.Context, in *inbound) (rep reply) {
	if s.cfgErr != nil {
		return errReply(ID{}, internalError(s.cfgErr))
	}
	if !s.bus.serving.Load() {
		s.bus.serving.Store(true)
	}
	rt := s.tel.begin(ctx, in) // weft: telemetry hook (observe.go): span, metrics, request log
	defer rt.end(&rep)
	var v exactjson.Value
	var err error
	ps, _ := s.parsers.Get().(*exactjson.Parser)
	if ps == nil {
		ps = new(exactjson.Parser)
	}
	if in.owned {
		// The parsed strings alias the body, which is never written again.
		v, err = ps.ParseString(unsafe.String(unsafe.SliceData(in.body), len(in.body)), s.limits.JSON)
	} else {
		v, err = ps.Parse(in.body, s.limits.JSON)
	}
	s.parsers.Put(ps)
	if err != nil {
		return errReply(ID{}, withCause(protocolError(CodeParseError, "Parse error: "+err.Error(), exactjson.Value{}), err))
	}
	if rep, ok := s.serveLegacy(ctx, in, v, rt); ok { // weft: 2025-11-25 era hook (legacy.go)
		return rep
	}
	m, perr := parseMessage(v)
	if perr != nil {
		return errReply(m.id, perr)
	}
	if m.isNotify {
		// 2026-07-28 defines no client notifications over HTTP; stdio's
		// notifications/cancelled is handled by the stdio transport.
		return reply{none: true}
	}
	ctx = rt.parsed(ctx, &m) // weft: telemetry hook: the server span continues params._meta traceparent
	if s.closing.Load() {
		return errReply(m.id, withStatus(protocolError(CodeInternalError, "Server is shutting down", exactjson.Value{}), http.StatusServiceUnavailable))
	}
	meta, _ := m.params.Get("_meta")
	if legacyOnly(m.method) && !meta.Has(metaProtocolVersion) {
		return errReply(m.id, methodNotFound(m.method))
	}
	// 1. Required _meta.
	version, caps, e := requiredMeta(meta)
	if e != nil {
		return errReply(m.id, e)
	}
	// 2. HTTP metadata headers agree with the body.
	if in.header != nil {
		if e := checkHeaders(in.header, version, m.method); e != nil {
			return errReply(m.id, e)
		}
	}
	// 3. Version.
	if !versionSupported(version) {
		return errReply(m.id, unsupportedVersion(version))
	}
	// 4. Method.
	h, ok := s.methods(m.method)
	if !ok {
		return errReply(m.id, methodNotFound(m.method))
	}
	name, e := targetName(m.method, m.params)
	if cm, ok := s.customMethod(m.method); ok && cm.opts.NameParam != "" {
		name, e = nameParam(cm.opts.NameParam, m.params)
	}
	if e != nil {
		return errReply(m.id, e)
	}
	if in.header != nil && name.required {
		if e := checkNameHeader(in.header, name.value); e != nil {
			return errReply(m.id, e)
		}
	}
	// 5. Admission (with the verified target name: the Mcp-Name header, if
	// any, was checked against the body above).
	in.target = name.value
	ident, rej := s.admitObserved(ctx, in, m.method) // weft: telemetry hook (otel.go)
	if rej != nil {
		rej.id = m.id // JSON-RPC: an error echoes the id it could read
		return *rej
	}
	req := &Request{
		Method:             m.method,
		ID:                 m.id,
		ProtocolVersion:    version,
		Name:               name.value,
		Params:             m.params,
		Meta:               meta,
		ClientCapabilities: caps,
		Identity:           ident,
		Header:             in.header,
		Endpoint:           in.endpoint,
		srv:                s,
		out:                in.out,
		logLevel:           -1,
	}
	req.ClientInfo, _ = meta.Get(metaClientInfo)
	if pt, ok := meta.Get("progressToken"); ok && (pt.Kind() == exactjson.KindString || isInteger(pt)) {
		req.progressToken = pt
	}
	if lv, ok := meta.Get(metaLogLevel); ok {
		l, _ := lv.AsString()
		if req.logLevel = levelIndex(LogLevel(l)); req.logLevel < 0 {
			return errReply(m.id, InvalidParams("Unknown log level"))
		}
	}
	rt.admitted(req) // weft: telemetry hook
	if obs := s.opts.Observer; obs != nil {
		obs.RequestStarted(ctx, req)
		defer func() {
			var err error
			if rep.err != nil {
				err = rep.err
			}
			obs.RequestFinished(ctx, req, rep.classify(), err)
		}()
	}
	if rl := s.opts.RateLimiter; rl != nil {
		if ok, retry := rl.Allow(ctx, rateKey(ident, in)); !ok {
			rep = rateLimitedReply(retry)
			rep.id = m.id
			return rep
		}
	}
	if m.method == "subscriptions/listen" {
		// Long-lived: bounded per partition, exempt from the handler gate and deadline.
		s.inflight.Add(1)
		defer s.inflight.Done()
		rep = s.guarded(ctx, req, in, h)
		rep.id = m.id
		return rep
	}
	rep = s.runGated(ctx, req, in, h)
	rep.id = m.id
	return rep
}

// runGated runs a handler under the overload controls: it takes a slot of
// the handler gate (HTTP 503 when the queue is full), bounds the call by
// RequestTimeout (HTTP 504 and a cancelled context) and, when the client goes
// away, gives a cooperative handler a moment to finish. A handler that
// ignores its context keeps its slot until it returns.
func (s *Server) runGated(ctx context.Context, req *Request, in *inbound, h methodHandler) reply {
	if err := s.gate.acquire(ctx); err != nil {
		return busyReply()
	}
	defer s.gate.release() // a handler that ignores its context keeps its slot until it returns
	s.inflight.Add(1)
	defer s.inflight.Done()
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	// The handler runs on this goroutine (no hand-off: that was a third of
	// a call's CPU). A handler that ignores its context past the deadline
	// still gets its client answered on time: the transport's early-reply
	// hook sends the 504 and drops whatever the handler returns later.
	if in.early != nil {
		// On the deadline of ctx itself (no second timer); stop runs before
		// cancel, and a client that went away needs no early reply.
		stop := context.AfterFunc(ctx, func() {
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return
			}
			s.log.Warn("weft: request deadline exceeded; the handler is still running", "method", req.Method, "name", req.Name)
			rep := deadlineReply()
			rep.id = req.ID
			rep.outcome = OutcomeDeadlineExceeded
			in.early(rep)
		})
		defer stop()
	}
	rep := s.guarded(ctx, req, in, h)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && rep.err != nil && rep.outcome != OutcomeComplete {
		rep = deadlineReply()
		rep.outcome = OutcomeDeadlineExceeded
	}
	return rep
}

// guarded runs a method handler, turning a panic into an internal error.
func (s *Server) guarded(ctx context.Context, req *Request, in *inbound, h methodHandler) (rep reply) {
	ctx, endSpan := s.handlerSpan(ctx, req) // weft: telemetry hook (otel.go): the mcp.handler span
	defer endSpan(&rep)
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("weft: handler panic", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			rep = errReply(req.ID, internalError(fmt.Errorf("panic: %v", p)))
		}
	}()
	return h(ctx, req, in)
}

type methodHandler func(ctx context.Context, req *Request, in *inbound) reply

func (s *Server) methods(method string) (methodHandler, bool) {
	nt, np, nr := s.catalogSizes()
	switch method {
	case "server/discover":
		return s.handleDiscover, true
	case "subscriptions/listen":
		return s.handleListen, true
	case "tools/list":
		return s.handleToolsList, nt > 0
	case "tools/call":
		return s.handleToolsCall, nt > 0
	case "prompts/list":
		return s.handlePromptsList, np > 0
	case "prompts/get":
		return s.handlePromptsGet, np > 0
	case "resources/list":
		return s.handleResourcesList, nr > 0
	case "resources/templates/list":
		return s.handleTemplatesList, nr > 0
	case "resources/read":
		return s.handleResourcesRead, nr > 0
	case "completion/complete":
		return s.handleComplete, np > 0 || nr > 0
	case "tasks/get":
		return s.handleTasksGet, s.taskEngine() != nil
	case "tasks/update":
		return s.handleTasksUpdate, s.taskEngine() != nil
	case "tasks/cancel":
		return s.handleTasksCancel, s.taskEngine() != nil
	}
	if m, ok := s.customMethod(method); ok {
		return s.handleCustom(m), true
	}
	return nil, false
}

func methodNotFound(method string) *Error {
	return protocolError(CodeMethodNotFound, "Method not found", exactjson.Object(
		exactjson.Field("method", exactjson.String(method)),
		exactjson.Field("supported", stringArray(supportedVersions))))
}

func stringArray(ss []string) exactjson.Value {
	vs := make([]exactjson.Value, len(ss))
	for i, s := range ss {
		vs[i] = exactjson.String(s)
	}
	return exactjson.Array(vs...)
}

func requiredMeta(meta exactjson.Value) (string, exactjson.Value, *Error) {
	if meta.Kind() != exactjson.KindObject {
		return "", exactjson.Value{}, withStatus(InvalidParams(`Missing params._meta with "`+metaProtocolVersion+`" and "`+metaClientCapabilities+`"`), http.StatusBadRequest)
	}
	pv, ok := meta.Get(metaProtocolVersion)
	version, isStr := pv.AsString()
	if !ok || !isStr || version == "" {
		return "", exactjson.Value{}, withStatus(InvalidParams(`Missing or invalid params._meta["`+metaProtocolVersion+`"]`), http.StatusBadRequest)
	}
	caps, ok := meta.Get(metaClientCapabilities)
	if !ok || caps.Kind() != exactjson.KindObject {
		return "", exactjson.Value{}, withStatus(InvalidParams(`Missing or invalid params._meta["`+metaClientCapabilities+`"]`), http.StatusBadRequest)
	}
	return version, caps, nil
}

func versionSupported(v string) bool {
	for _, s := range supportedVersions {
		if s == v {
			return true
		}
	}
	return false
}

func unsupportedVersion(requested string) *Error {
	return protocolError(CodeUnsupportedProtocolVersion, "Unsupported protocol version", exactjson.Object(
		exactjson.Field("supported", stringArray(supportedVersions)),
		exactjson.Field("requested", exactjson.String(requested))))
}

func headerMismatch(msg string) *Error {
	return protocolError(CodeHeaderMismatch, "Header mismatch: "+msg, exactjson.Value{})
}

// headerValue returns a decoded metadata header, whether it was present, and
// an error for an undecodable value.
func headerValue(h http.Header, name string) (string, bool, error) {
	vs := h.Values(name)
	if len(vs) == 0 {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", true, fmt.Errorf("%s appears more than once", name)
	}
	v, err := hdr.Decode(vs[0])
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", name, err)
	}
	return v, true, nil
}

func checkHeaders(h http.Header, version, method string) *Error {
	pv, ok, err := headerValue(h, "MCP-Protocol-Version")
	switch {
	case err != nil:
		return headerMismatch(err.Error())
	case !ok:
		return headerMismatch("MCP-Protocol-Version header is required")
	case pv != version:
		return headerMismatch("MCP-Protocol-Version header differs from params._meta")
	}
	mv, ok, err := headerValue(h, "Mcp-Method")
	switch {
	case err != nil:
		return headerMismatch(err.Error())
	case !ok:
		return headerMismatch("Mcp-Method header is required")
	case mv != method:
		return headerMismatch("Mcp-Method header differs from the request method")
	}
	return nil
}

func checkNameHeader(h http.Header, name string) *Error {
	nv, ok, err := headerValue(h, "Mcp-Name")
	switch {
	case err != nil:
		return headerMismatch(err.Error())
	case !ok:
		return headerMismatch("Mcp-Name header is required for this method")
	case nv != name:
		return headerMismatch("Mcp-Name header differs from the request target")
	}
	return nil
}

type target struct {
	value    string
	required bool
}

// targetName extracts params.name / params.uri / params.taskId.
func targetName(method string, params exactjson.Value) (target, *Error) {
	var member string
	switch method {
	case "tools/call", "prompts/get":
		member = "name"
	case "resources/read":
		member = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		member = "taskId"
	default:
		return target{}, nil
	}
	return nameParam(member, params)
}

func nameParam(member string, params exactjson.Value) (target, *Error) {
	v, ok := params.Get(member)
	s, isStr := v.AsString()
	if !ok || !isStr {
		return target{}, InvalidParams(fmt.Sprintf("params.%s must be a string", member))
	}
	return target{value: s, required: true}, nil
}

// checkMirrors validates Mcp-Param-* headers of a tools/call against the
// arguments they mirror.
func checkMirrors(h http.Header, mirrors []mirror.Mirror, args exactjson.Value) *Error {
	for _, m := range mirrors {
		v, present := m.Lookup(args)
		hv, hok, err := headerValue(h, "Mcp-Param-"+m.Header)
		if err != nil {
			return headerMismatch(err.Error())
		}
		if !present {
			if hok {
				return headerMismatch("Mcp-Param-" + m.Header + " is sent but the argument is absent")
			}
			continue
		}
		if !hok {
			return headerMismatch("Mcp-Param-" + m.Header + " header is required")
		}
		if !mirrorEqual(m.Type, v, hv) {
			return headerMismatch("Mcp-Param-" + m.Header + " differs from the argument")
		}
	}
	return nil
}

func mirrorEqual(typ string, v exactjson.Value, hv string) bool {
	switch v.Kind() {
	case exactjson.KindString:
		s, _ := v.AsString()
		return s == hv
	case exactjson.KindBool:
		b, _ := v.AsBool()
		return strconv.FormatBool(b) == hv
	case exactjson.KindNumber:
		n, _ := v.AsNumber()
		hn, err := exactjson.ParseNumber(hv)
		return err == nil && n.Cmp(hn) == 0
	}
	return false
}

func (s *Server) admit(ctx context.Context, in *inbound, method string) (Identity, *reply) {
	if s.opts.Admission == nil {
		return Identity{}, nil
	}
	ar := &AdmissionRequest{Method: method, Name: in.target, Header: in.header, RemoteAddr: in.remoteAddr, Transport: in.transport}
	if in.header != nil {
		if len(in.header.Values("Authorization")) > 1 {
			// RFC 6750: one method of presenting a token per request.
			r := reply{err: protocolError(CodeInvalidRequest, "More than one Authorization header", exactjson.Value{}),
				status: http.StatusBadRequest, header: http.Header{"WWW-Authenticate": {`Bearer error="invalid_request"`}}}
			return Identity{}, &r
		}
		if a := in.header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			ar.BearerToken = strings.TrimSpace(a[7:])
		}
	}
	id, err := s.opts.Admission(ctx, ar)
	if err == nil {
		if len(id.Partition) > MaxPartitionBytes {
			s.log.Error("weft: admission returned a partition longer than MaxPartitionBytes")
			r := errReply(ID{}, internalError(errors.New("partition too long")))
			return Identity{}, &r
		}
		return id, nil
	}
	var ae *AdmissionError
	if !errors.As(err, &ae) {
		ae = &AdmissionError{Status: http.StatusUnauthorized, Message: "Unauthorized"}
	}
	r := reply{err: protocolError(CodeInvalidRequest, ae.Message, exactjson.Value{}), status: ae.Status, header: http.Header{}}
	for k, vs := range ae.Header {
		r.header[k] = vs
	}
	if ae.Challenge != "" {
		r.header.Set("WWW-Authenticate", ae.Challenge)
	}
	return Identity{}, &r
}

// result encoding

// encodeResult encodes a result object: resultType, the body, optional cache
// hints, and _meta (user meta plus serverInfo).
func (s *Server) encodeResult(resultType string, body func(e *enc), cache *CachePolicy, userMeta exactjson.Value) ([]byte, error) {
	e := &enc{b: make([]byte, 0, 256)}
	e.open()
	e.str("resultType", resultType)
	if body != nil {
		body(e)
	}
	if cache != nil {
		cache.encode(e)
	}
	if !s.opts.OmitServerInfo || userMeta.Kind() == exactjson.KindObject {
		e.name("_meta")
		e.open()
		for k, v := range userMeta.All() {
			if k == metaServerInfo {
				continue
			}
			e.value(k, v)
		}
		if !s.opts.OmitServerInfo {
			e.name(metaServerInfo)
			e.open()
			e.str("name", s.impl.Name)
			e.str("version", s.impl.Version)
			e.strOpt("title", s.impl.Title)
			e.close()
		}
		e.close()
	}
	e.close()
	if e.err != nil {
		return nil, e.err
	}
	if len(e.b) > s.limits.MaxOutputBytes {
		return nil, fmt.Errorf("result of %d bytes exceeds MaxOutputBytes (%d)", len(e.b), s.limits.MaxOutputBytes)
	}
	return e.b, nil
}

func (s *Server) resultReply(resultType string, body func(e *enc), cache *CachePolicy, meta exactjson.Value) reply {
	b, err := s.encodeResult(resultType, body, cache, meta)
	if err != nil {
		s.log.Error("weft: encoding a result failed", "err", err)
		return reply{err: internalError(err)}
	}
	return reply{result: b}
}

func (s *Server) listCache() *CachePolicy {
	if s.opts.Cache != nil {
		c := *s.opts.Cache
		return &c
	}
	return &CachePolicy{Public: s.opts.Admission == nil && s.opts.Visible == nil}
}

// discovery and lists

// catalogSizes counts the registered tools, prompts, and resources plus
// resource templates.
func (s *Server) catalogSizes() (tools, prompts, resources int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tools.len(), s.prompts.len(), s.resources.len() + s.templates.len()
}

// capabilities returns a writer of the ServerCapabilities member, derived
// from what is registered; withExtensions adds the extensions map
// (2026-07-28; 2025-11-25 capabilities have none).
func (s *Server) capabilities(withExtensions bool) func(e *enc) {
	nt, np, nr := s.catalogSizes()
	var exts []exactjson.Member
	if withExtensions {
		s.mu.RLock()
		for k, v := range s.extensions {
			exts = append(exts, exactjson.Field(k, v))
		}
		s.mu.RUnlock()
	}
	return func(e *enc) {
		e.name("capabilities")
		e.open()
		if nt > 0 {
			e.raw("tools", []byte(`{"listChanged":true}`))
		}
		if np > 0 {
			e.raw("prompts", []byte(`{"listChanged":true}`))
		}
		if nr > 0 {
			e.raw("resources", []byte(`{"listChanged":true,"subscribe":true}`))
		}
		if np > 0 || nr > 0 {
			e.raw("completions", []byte(`{}`))
		}
		e.raw("logging", []byte(`{}`))
		if len(exts) > 0 {
			e.value("extensions", exactjson.Object(exts...))
		}
		e.close()
	}
}

func (s *Server) handleDiscover(ctx context.Context, req *Request, in *inbound) reply {
	caps := s.capabilities(true)
	return s.resultReply("complete", func(e *enc) {
		e.value("supportedVersions", stringArray(supportedVersions))
		caps(e)
		e.strOpt("instructions", s.opts.Instructions)
	}, s.listCache(), exactjson.Value{})
}

// page applies cursor pagination to n items.
func (s *Server) page(req *Request, n int) (start, end int, next string, e *Error) {
	if cv, ok := req.Params.Get("cursor"); ok {
		c, isStr := cv.AsString()
		if !isStr || len(c) > s.limits.MaxCursorBytes {
			return 0, 0, "", InvalidParams("Invalid cursor")
		}
		if c != "" {
			raw, err := base64.RawURLEncoding.DecodeString(c)
			if err != nil || !strings.HasPrefix(string(raw), "o:") {
				return 0, 0, "", InvalidParams("Invalid cursor")
			}
			off, err := strconv.Atoi(string(raw[2:]))
			if err != nil || off < 0 || off > n {
				return 0, 0, "", InvalidParams("Invalid cursor")
			}
			start = off
		}
	}
	end = min(start+s.opts.PageSize, n)
	if end < n {
		next = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(end)))
	}
	return start, end, next, nil
}

func (s *Server) handleToolsList(ctx context.Context, req *Request, in *inbound) reply {
	s.mu.RLock()
	all := s.tools.list()
	s.mu.RUnlock()
	return listReply(s, ctx, req, all, KindTool, "tools", func(t *toolEntry) string { return t.tool.Name }, (*toolEntry).encode)
}

// listReply answers a catalog list method: one page (params.cursor) of the
// items of all that req may see (Options.Visible, by the name key gives),
// as the array member, each written by encode.
func listReply[T any](s *Server, ctx context.Context, req *Request, all []T, kind ItemKind, member string, key func(T) string, encode func(T, *enc)) reply {
	vis := all[:0:0]
	for _, it := range all {
		if s.Visible(ctx, req, kind, key(it)) {
			vis = append(vis, it)
		}
	}
	start, end, next, e := s.page(req, len(vis))
	if e != nil {
		return errReply(req.ID, e)
	}
	return s.resultReply("complete", func(e *enc) {
		e.name(member)
		e.b = append(e.b, '[')
		for i, it := range vis[start:end] {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			encode(it, e)
		}
		e.b = append(e.b, ']')
		e.strOpt("nextCursor", next)
	}, s.listCache(), exactjson.Value{})
}

func (t *toolEntry) encode(e *enc) {
	e.open()
	e.str("name", t.tool.Name)
	e.strOpt("title", t.tool.Title)
	e.str("description", t.tool.Description)
	e.raw("inputSchema", t.inSchema)
	if t.outSchem != nil {
		e.raw("outputSchema", t.outSchem)
	}
	if a := t.tool.Annotations; a != nil {
		e.name("annotations")
		e.open()
		e.strOpt("title", a.Title)
		for _, h := range []struct {
			n string
			v *bool
		}{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
			if h.v != nil {
				e.boolean(h.n, *h.v)
			}
		}
		e.close()
	}
	e.valueOpt("_meta", t.tool.Meta)
	e.close()
}

func (s *Server) handlePromptsList(ctx context.Context, req *Request, in *inbound) reply {
	s.mu.RLock()
	all := s.prompts.list()
	s.mu.RUnlock()
	return listReply(s, ctx, req, all, KindPrompt, "prompts", func(p *promptEntry) string { return p.prompt.Name },
		func(p *promptEntry, e *enc) { p.prompt.encode(e) })
}

func (s *Server) handleResourcesList(ctx context.Context, req *Request, in *inbound) reply {
	s.mu.RLock()
	all := s.resources.list()
	s.mu.RUnlock()
	return listReply(s, ctx, req, all, KindResource, "resources", func(r *resourceEntry) string { return r.res.URI },
		func(r *resourceEntry, e *enc) {
			e.open()
			r.res.encodeFields(e)
			e.close()
		})
}

func (s *Server) handleTemplatesList(ctx context.Context, req *Request, in *inbound) reply {
	s.mu.RLock()
	all := s.templates.list()
	s.mu.RUnlock()
	return listReply(s, ctx, req, all, KindResourceTemplate, "resourceTemplates", func(t *templateEntry) string { return t.tmpl.URITemplate },
		func(t *templateEntry, e *enc) { t.tmpl.encode(e) })
}
