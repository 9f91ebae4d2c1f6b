package weft

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"runtime/debug"
	"strings"
	"time"
	"unsafe"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/progerr"
)

// Handler serves one admitted MCP request of any method and returns its
// typed [Result]. Errors follow the rules of [ToolHandler]: an [*Error] is
// sent as it is (application codes only), anything else as "Internal
// error".
type Handler func(ctx context.Context, req *Request) (Result, error)

// Middleware wraps the handler of every method: discovery, the list
// methods, tools/call, prompts/get, resources/read, completion/complete,
// subscriptions/listen, the tasks methods, custom methods, every method of
// 2025-11-25 sessions (initialize, ping, logging/setLevel and the resource
// subscriptions included) and the steps of durable tasks (Request.Task is
// set). It sees the method, the target name and the identity on the
// [Request] and the typed result before it is encoded; it may return
// without calling next, replace the result, or return an error. An
// operation that needs the client's input returns the [*InputRequired]
// (built by [AskInput]) as its error, the one way input_required leaves a
// handler or a middleware: errors.As finds it.
//
// [Options.Middleware] lists middleware outermost first. They run inside
// the framework's fixed stages (admission, the Observer, the rate limiter,
// the concurrency gate and the request deadline, the handler span and panic
// recovery) and outside the method's own checks (unknown tool, argument
// validation, request state), so a middleware also sees requests that those
// checks reject, as errors. For a subscriptions/listen stream detached
// from its HTTP/1.1 request, next returns once the stream is acknowledged,
// with an *EmptyResult, and what the middleware returns is not sent. See
// docs/architecture.md.
type Middleware func(next Handler) Handler

// errNoReply is returned by a handler that has nothing more to send: a
// listen stream whose client went away.
var errNoReply = errors.New("weft: no reply")

// frame is one server-to-client message on a request's stream: a
// notification, or a request when id is set (2025-11-25 sessions).
type frame struct {
	id     string
	method string
	params exactjson.Value
	// raw, when set, is the whole message already encoded (by appendFrame's
	// rules), raw followed by rawTail: a notification encoded once and sent
	// to many streams, each adding its own tail. method is still set.
	raw, rawTail string
}

// appendFrame is the one encoder of server-to-client messages.
func appendFrame(dst []byte, f frame) ([]byte, error) {
	if f.raw != "" {
		return append(append(dst, f.raw...), f.rawTail...), nil
	}
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if f.id != "" {
		dst = append(dst, `"id":`...)
		dst = appendQuoted(dst, f.id)
		dst = append(dst, ',')
	}
	dst = append(dst, `"method":`...)
	dst = appendQuoted(dst, f.method)
	if f.params.Kind() != exactjson.KindNull {
		dst = append(dst, `,"params":`...)
		var err error
		if dst, err = exactjson.AppendJSON(dst, f.params); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// frameSizeHint is a buffer size for encoding f.
func frameSizeHint(f frame) int {
	if f.raw != "" {
		return len(f.raw) + len(f.rawTail)
	}
	return 128
}

// stream is the seam between the dispatch core and a transport: where the
// server-to-client messages of one request go. Streamable HTTP switches its
// response to SSE on the first frame; stdio writes a line; a 2025-11-25
// session's GET stream writes an SSE frame; a task step turns progress into
// its status message.
type stream interface {
	// send writes one frame.
	send(f frame) error
	// canStream reports whether frames can reach the client at all (an
	// HTTP client that does not accept text/event-stream cannot get any).
	canStream() bool
}

var errNoStream = errors.New("weft: the client does not accept an event stream or the response is finished")

// inbound is one message handed to the dispatch core by a transport.
type inbound struct {
	body []byte
	// owned reports that body is a buffer of its own that nothing writes
	// after it is read (HTTP): it is then parsed in place, not copied.
	owned      bool
	header     http.Header // nil on stdio
	endpoint   string
	transport  string
	remoteAddr string
	out        stream
	// conn is the stdio connection the message came on (its 2025-11-25
	// session is the connection's); nil on HTTP.
	conn *stdioConn
	// early, when set, sends a reply before the handler returns (the
	// deadline of a handler that ignores its context); the transport then
	// drops the handler's own reply.
	early earlyReplier
}

// earlyReplier sends a reply before the handler returns: the HTTP
// transport's *httpResponder, or a replyFunc. An interface rather than a
// func value, so the HTTP transport passes its responder without
// allocating a method value.
type earlyReplier interface {
	finish(rep reply)
}

// replyFunc is an earlyReplier of a function.
type replyFunc func(reply)

func (f replyFunc) finish(rep reply) { f(rep) }

// reply is the core's answer to one message; the transport writes it.
type reply struct {
	none   bool   // a notification: nothing to send (HTTP 202)
	id     ID     // echoed id
	result []byte // encoded result object
	// wire, when set, is the whole success response around result (built
	// by the encoder for id; result aliases it): sent as it is.
	wire    []byte
	wireBuf *[]byte // wire's pooled buffer, for the transport to give back (putWire)
	err     *Error
	fault   fault           // what failed, beyond err's code and fault (errors.go)
	refusal *AdmissionError // the admission's rejection: its status, challenge and headers
	// sessionID is the 2025-era session an initialize opened, for the
	// transport to name (Mcp-Session-Id).
	sessionID string
	outcome   Outcome // for observers; derived from err when zero
	// res is the typed result a 2025-11-25 bridge round continues from (an
	// *InputRequired it answers with server-to-client requests).
	res Result
}

// classify derives the outcome of a reply that does not carry one.
func (r reply) classify() Outcome {
	switch {
	case r.outcome != 0:
		return r.outcome
	case r.err == nil:
		return OutcomeComplete
	case r.err.Code == CodeRateLimited || r.refusal != nil && r.refusal.Status != 0 && r.refusal.Status != http.StatusBadRequest ||
		r.fault != faultNone && r.fault != faultAnswered && r.fault != faultBadRequest || r.err.fault == faultUnavailable:
		return OutcomeRejected
	case !r.err.reserved:
		return OutcomeApplicationError
	case r.err.Code == CodeInternalError:
		return OutcomeInternalError
	}
	return OutcomeProtocolError
}

// errReply is the reply of an error.
func errReply(id ID, e *Error) reply { return reply{id: id, err: e} }

// serve runs one message of any era: it parses the body once, offers a
// message that is not of 2026-07-28 to the era adapters (era.go), which
// serve the messages of their eras, and validates a 2026-07-28 request in
// the spec's order, admits it and dispatches it.
func (s *Server) serve(ctx context.Context, in *inbound) (rep reply) {
	if !s.bus.serving.Load() {
		s.bus.serving.Store(true)
	}
	rt := s.tel.begin(ctx, in) // telemetry_request.go: span, metrics, request log
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
	if len(s.adapters) > 0 && (!s.modern || !isModern(v)) {
		for _, a := range s.adapters {
			if rep, ok := a.serveMessage(ctx, in, v, rt); ok {
				return rep
			}
		}
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
	ctx = rt.parsed(ctx, &m) // the server span continues params._meta traceparent
	if s.closing.Load() {
		return errReply(m.id, errShuttingDown())
	}
	meta, _ := m.params.Get("_meta")
	if removedIn2026(m.method) && !meta.Has(metaProtocolVersion) {
		e := methodNotFound(m.method)
		if m.method == "initialize" && len(s.adapters) == 0 {
			// Say how to opt in (the era is served unless disabled).
			e.Message = "Method not found: this server serves MCP 2026-07-28 only; its operator serves 2025-era clients by leaving weft.Options.Legacy.Disabled unset"
		}
		return errReply(m.id, e)
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
	h, ok := s.handler(m.method)
	if !ok {
		return errReply(m.id, methodNotFound(m.method))
	}
	name, e := s.targetName(m.method, m.params)
	if e != nil {
		return errReply(m.id, e)
	}
	if in.header != nil && name.required {
		if e := checkNameHeader(in.header, name.value); e != nil {
			return errReply(m.id, e)
		}
	}
	// 5. Admission, with the verified target name (the Mcp-Name header, if
	// any, was checked against the body above).
	ident, rej := s.admitObserved(ctx, in, m.method, name.value)
	if rej != nil {
		rej.id = m.id // JSON-RPC: an error echoes the id it could read
		return *rej
	}
	req := s.newRequest(in, m.method, m.id, version, name.value, m.params, caps, ident)
	if lv, ok := meta.Get(metaLogLevel); ok {
		l, _ := lv.AsString()
		if req.logLevel = levelIndex(LogLevel(l)); req.logLevel < 0 {
			return errReply(m.id, InvalidParams("Unknown log level"))
		}
	}
	rt.admitted(req)
	rep = s.dispatch(ctx, req, h, s.encModern)
	rep.id = m.id
	return rep
}

// newRequest builds the *Request of an admitted request.
func (s *Server) newRequest(in *inbound, method string, id ID, version, name string, params, caps exactjson.Value, ident Identity) *Request {
	meta, _ := params.Get("_meta")
	req := &Request{
		Method:             method,
		ID:                 id,
		ProtocolVersion:    version,
		Name:               name,
		Params:             params,
		Meta:               meta,
		ClientCapabilities: caps,
		Identity:           ident,
		Header:             in.header,
		Endpoint:           in.endpoint,
		srv:                s,
		transport:          in.transport,
		out:                in.out,
		early:              in.early,
		remoteAddr:         in.remoteAddr,
		logLevel:           -1,
	}
	req.ClientInfo, _ = meta.Get(metaClientInfo)
	if pt, ok := meta.Get("progressToken"); ok && (pt.Kind() == exactjson.KindString || isInteger(pt)) {
		req.progressToken = pt
	}
	req.bound() // before any middleware can change the exported fields
	return req
}

// dispatch runs an admitted request through the stages every method of
// both eras shares, in this order: the Observer (requests only), the rate
// limiter (once per client request), the concurrency gate with the request
// deadline (except subscriptions/listen and task steps), the handler span,
// panic recovery, the middleware chain and h. fin encodes the typed result
// for the client's era; a nil fin keeps the typed result (task steps).
func (s *Server) dispatch(ctx context.Context, req *Request, h Handler, fin encoder) reply {
	// An operation request is verified first (call.go), so that the one
	// *Request the Observer, the middleware and the handler see holds the
	// verified answers, state and round; one that fails verification is
	// observed and answered, and reaches neither middleware nor handler.
	var rejected *reply
	if req.task == nil && isOperation(req.Method) {
		if e := s.verifyOperation(ctx, req); e != nil {
			r := s.errorReply(ctx, req, e)
			rejected = &r
		}
	}
	obs := s.opts.Observer
	if obs == nil || req.task != nil {
		if rejected != nil {
			return *rejected
		}
		return s.admitted(ctx, req, h, fin)
	}
	obs.RequestStarted(ctx, req)
	var rep reply
	if rejected != nil {
		rep = *rejected
	} else {
		rep = s.admitted(ctx, req, h, fin) // no panic gets past run
	}
	var err error
	if rep.err != nil {
		err = rep.err
	}
	obs.RequestFinished(ctx, req, rep.classify(), err)
	return rep
}

// encoder encodes a typed result for the client's era (an input_required
// one checked and its state sealed already): (*Server).encodeModern, or an
// era adapter's; nil keeps the typed result (task steps).
type encoder func(ctx context.Context, req *Request, res Result) reply

// admitted runs the stages after the Observer.
func (s *Server) admitted(ctx context.Context, req *Request, h Handler, fin encoder) (rep reply) {
	if rl := s.opts.RateLimiter; rl != nil && req.task == nil && !req.charged {
		if ok, retry := rl.Allow(ctx, rateKey(req.Identity, req.remoteAddr)); !ok {
			return errReply(ID{}, RateLimited(retry))
		}
	}
	if req.task != nil {
		// Run by the task runner's own workers, which bound and track them.
		return s.run(ctx, req, h, fin)
	}
	if req.Method == "subscriptions/listen" {
		// Long-lived: bounded per partition, exempt from the gate and the
		// request deadline.
		s.inflight.Add(1)
		defer s.inflight.Done()
		return s.run(ctx, req, h, fin)
	}
	// A fair share of the slots and the queue per caller (overload.go).
	slot, err := s.gate.acquire(ctx, fairKeyOf(req.Identity, req.remoteAddr))
	if err != nil {
		return busyReply()
	}
	defer s.gate.release(slot) // a handler that ignores its context keeps its slot until it returns
	s.inflight.Add(1)
	defer s.inflight.Done()
	// The handler runs on this goroutine (no hand-off: that was a third of
	// a call's CPU). A handler that ignores its context past the deadline
	// still gets its client answered on time: the transport's early-reply
	// hook sends the 504 and drops whatever the handler returns later. One
	// timer serves the deadline of ctx and the early reply (deadline.go):
	// context.WithTimeout plus a timer of its own cost a quarter more of
	// the dispatcher's allocations. A client that went away early gets its
	// reply dropped by the transport.
	var expire func(*Request)
	if req.early != nil {
		expire = answerLate
	}
	rc := newRequestCtx(ctx, s.opts.RequestTimeout, expire, req)
	defer rc.release()
	ctx = rc
	rep = s.run(ctx, req, h, fin)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && rep.err != nil && rep.outcome != OutcomeComplete {
		rep = deadlineReply()
	}
	return rep
}

// answerLate answers a request whose handler is still running at the
// deadline: the 504, sent by the transport's early-reply hook.
func answerLate(req *Request) {
	req.srv.log.Warn("weft: request deadline exceeded; the handler is still running", "method", req.Method, "name", req.Name)
	rep := deadlineReply()
	rep.id = req.ID
	req.early.finish(rep)
}

// run calls h (the method's handler wrapped in the middleware) inside the
// handler span and the panic recovery, and turns its outcome into a reply.
func (s *Server) run(ctx context.Context, req *Request, h Handler, fin encoder) reply {
	ctx, endSpan := s.handlerSpan(ctx, req) // telemetry_trace.go: the mcp.handler span
	rep := s.result(ctx, req, h, fin)
	endSpan(rep) // result recovers every panic
	return rep
}

// result calls h and encodes what it returns, recovering a panic anywhere
// below (middleware, the method's checks, the application's handler, the
// encoding) into the internal error, logged with its stack.
func (s *Server) result(ctx context.Context, req *Request, h Handler, fin encoder) (rep reply) {
	defer func() {
		if p := recover(); p != nil {
			attrs := []any{"method", req.Method, "name", req.Name, "panic", p, "stack", string(debug.Stack())}
			if req.task != nil {
				attrs = append(attrs, "task", req.task.ID)
			}
			s.log.Error("weft: handler panic", attrs...)
			progerr.Report(ctx, &ProgrammingError{Method: req.Method, Name: req.Name,
				Err: fmt.Errorf("the handler panicked: %v (the stack is in the server's log, message \"weft: handler panic\")", p)})
			rep = reply{err: internalError(fmt.Errorf("panic: %v", p)), outcome: OutcomeInternalError}
		}
	}()
	res, err := h(ctx, req)
	if err != nil {
		// An operation that needs the client's input returns it as its
		// error, through the middleware; here it becomes the result.
		if res, err = inputRequiredOr(err); err != nil {
			return s.errorReply(ctx, req, err)
		}
	}
	if res == nil || isNilResult(res) {
		return reply{err: s.programmingError(ctx, req, errors.New("handler returned no result and no error: return a result, or an error")), outcome: OutcomeInternalError}
	}
	if fin == nil {
		return reply{res: res, outcome: outcomeOf(res)}
	}
	if ask, ok := res.(askResult); ok {
		// Checked against the client's capabilities, its state sealed.
		if rep, ok := s.prepareInputRequired(ctx, req, ask.InputRequired); !ok {
			return rep
		}
	}
	rep = fin(ctx, req, res)
	if rep.outcome == 0 && rep.err == nil {
		rep.outcome = outcomeOf(res)
	}
	return rep
}

// errorReply turns a handler's error into the error reply: an *Error with
// an application code as it is, a framework *Error as it is, anything else
// (and an application *Error posing with a reserved code) as "Internal
// error", logged in full.
func (s *Server) errorReply(ctx context.Context, req *Request, err error) reply {
	if errors.Is(err, errNoReply) {
		return reply{none: true, outcome: OutcomeCancelled}
	}
	var e *Error
	if !errors.As(err, &e) {
		switch {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			return reply{err: withFault(internalError(err), faultDeadline), outcome: OutcomeDeadlineExceeded}
		case ctx.Err() != nil:
			return reply{err: internalError(err), outcome: OutcomeCancelled}
		}
		e = internalError(err)
	}
	if checked := checkedError(e); checked != e {
		e = s.programmingError(ctx, req, fmt.Errorf("%w: use weft.NewError with a code outside -32768..-32000 (and not %d)", checked.cause, CodeRateLimited))
		return reply{err: e, outcome: OutcomeInternalError}
	}
	rep := errReply(ID{}, e)
	switch {
	case e.reserved && e.Code == CodeInternalError:
		if _, ok := e.cause.(*ProgrammingError); !ok {
			s.log.Error("weft: handler failed", "method", req.Method, "name", req.Name, "err", err)
		}
		rep.outcome = OutcomeInternalError
	case e.reserved && e.Code == CodeRateLimited:
		rep.outcome = OutcomeRejected
	case e.reserved:
		rep.outcome = OutcomeProtocolError
	default:
		rep.outcome = OutcomeApplicationError
	}
	return rep
}

// outcomeOf classifies a typed result.
func outcomeOf(res Result) Outcome {
	switch res.(type) {
	case askResult:
		return OutcomeInputRequired
	case *CreateTaskResult:
		return OutcomeTask
	}
	return OutcomeComplete
}

// isNilResult reports a typed nil pointer inside a Result (or a task
// result without its task).
func isNilResult(res Result) bool {
	switch r := res.(type) {
	case *CreateTaskResult:
		return r == nil || r.Task == nil
	case *GetTaskResult:
		return r == nil || r.Task == nil
	case askResult:
		return r.InputRequired == nil
	}
	return reflect.ValueOf(res).IsNil() // every other Result is a pointer
}

// encodeModern is the 2026-07-28 encoding of a result.
func (s *Server) encodeModern(_ context.Context, req *Request, res Result) reply {
	// Inside its response, under the id the request was admitted with.
	b, wire, buf, err := s.encodeResultIn(res, eraModern, &req.bound().id)
	if err != nil {
		s.log.Error("weft: encoding a result failed", "method", req.Method, "name", req.Name, "err", err)
		return reply{err: internalError(err), outcome: OutcomeInternalError}
	}
	return reply{result: b, wire: wire, wireBuf: buf}
}

// handler returns the middleware-wrapped handler of a method, and whether
// the method is served (a catalog method only while its catalog has items).
func (s *Server) handler(method string) (Handler, bool) {
	if h, ok := s.builtin[method]; ok {
		nt, np, nr := s.catalogSizes()
		switch method {
		case "tools/list", "tools/call":
			return h, nt > 0
		case "prompts/list", "prompts/get":
			return h, np > 0
		case "resources/list", "resources/templates/list", "resources/read":
			return h, nr > 0
		case "completion/complete":
			return h, np > 0 || nr > 0
		case "tasks/get", "tasks/update", "tasks/cancel":
			return h, s.taskEngine() != nil || s.hasTaskRelays()
		}
		return h, true
	}
	if m, ok := s.customMethod(method); ok {
		return m.handler, true
	}
	return nil, false
}

// wrap applies Options.Middleware to h, outermost first.
func (s *Server) wrap(h Handler) Handler {
	for i := len(s.opts.Middleware) - 1; i >= 0; i-- {
		if mw := s.opts.Middleware[i]; mw != nil {
			h = mw(h)
		}
	}
	return h
}

// builtinHandlers are the methods of both eras the server serves itself,
// wrapped in the middleware once.
func (s *Server) builtinHandlers() map[string]Handler {
	hs := map[string]Handler{
		"server/discover":      s.handleDiscover,
		"subscriptions/listen": s.handleListen,
		"tools/call":           s.handleToolsCall,
		"prompts/get":          s.handlePromptsGet,
		"resources/read":       s.handleResourcesRead,
		"completion/complete":  s.handleComplete,
		"tasks/get":            s.handleTasksGet,
		"tasks/update":         s.handleTasksUpdate,
		"tasks/cancel":         s.handleTasksCancel,
	}
	maps.Copy(hs, s.listHandlers())
	for m, h := range hs {
		hs[m] = s.wrap(h)
	}
	return hs
}

// errShuttingDown answers the requests that reach a server being shut down:
// 503 with Retry-After, so a client (or a load balancer) retries elsewhere.
func errShuttingDown() *Error {
	e := withFault(protocolError(CodeInternalError, "Server is shutting down", exactjson.Value{}), faultUnavailable)
	e.retryAfter = time.Second
	return e
}

// reservedCode reports the codes only the framework may emit.
func reservedCode(code Code) bool {
	return code >= -32768 && code <= -32000 || code == CodeRateLimited
}

// checkedError refuses an application *Error that carries a reserved code
// (built as a literal rather than with NewError): it becomes the internal
// error, with the attempt as its cause.
func checkedError(e *Error) *Error {
	if e.reserved || !reservedCode(e.Code) {
		return e
	}
	return internalError(fmt.Errorf("weft: application tried to emit reserved error code %d (%q)", e.Code, e.Message))
}

// Meta keys of MCP 2026-07-28.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// supportedVersions lists the protocol versions served by the modern era.
var supportedVersions = []string{ProtocolVersion}

// removedIn2026 are the methods 2026-07-28 removed.
func removedIn2026(method string) bool {
	switch method {
	case "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
		"notifications/initialized", "notifications/roots/list_changed", "tasks/result", "tasks/list":
		return true
	}
	return false
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

func appendQuoted(dst []byte, s string) []byte {
	b, err := exactjson.AppendJSON(dst, exactjson.String(s))
	if err != nil {
		return append(dst, `""`...)
	}
	return b
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
