package weft

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/weftmcp/weft/exactjson"
)

// The operations: tools/call, prompts/get, resources/read (the methods that
// may answer input_required) and completion/complete. Each checks its
// request (unknown target, arguments, capabilities, inputResponses and
// request state), calls the application's handler and returns its typed
// result; dispatch.go runs them inside the shared stages and middleware.

// prepared is what verifying an operation request resolved: its target and
// the arguments checked so far. Retry answers and state are on the Request.
type prepared struct {
	tool       *toolEntry
	args       exactjson.Value
	prompt     *promptEntry
	promptArgs map[string]string
	resource   ResourceHandler
	cache      CachePolicy
}

// isOperation reports the methods whose requests are verified before the
// Observer, the middleware and the handler see them.
func isOperation(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

// verifyOperation resolves an operation request's target and verifies what
// it carries (required capabilities, inputResponses, request state), so that
// the one *Request reaching the Observer, every middleware and the handler
// already holds the verified answers, state and round. dispatch calls it
// first; a panic in the application code it runs (visibility filters) is
// the internal error.
func (s *Server) verifyOperation(ctx context.Context, req *Request) (e *Error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("weft: panic while verifying a request", "method", req.Method, "name", req.Name, "panic", p, "stack", string(debug.Stack()))
			req.retry, req.prep = nil, nil
			e = internalError(fmt.Errorf("panic: %v", p))
		}
	}()
	p, e := s.prepare(ctx, req)
	if e != nil {
		req.retry = nil // nothing unverified stays visible
		return e
	}
	req.prep = p
	return nil
}

// preparedOf returns what verifyOperation resolved for req, verifying it now
// when the request did not come through dispatch's verification (task
// steps).
func (s *Server) preparedOf(ctx context.Context, req *Request) (*prepared, *Error) {
	if p := req.prep; p != nil {
		return p, nil
	}
	return s.prepare(ctx, req)
}

// prepare resolves and checks an operation request, in the order a client
// sees the errors: unknown target, malformed arguments, capabilities,
// metadata headers, then inputResponses and request state.
func (s *Server) prepare(ctx context.Context, req *Request) (*prepared, *Error) {
	switch req.Method {
	case "tools/call":
		s.mu.RLock()
		t, ok := s.tools.get(req.Name)
		s.mu.RUnlock()
		if !ok || !s.Visible(ctx, req, KindTool, req.Name) {
			return nil, InvalidParams("Unknown tool")
		}
		args, hasArgs := req.Params.Get("arguments")
		if hasArgs && args.Kind() != exactjson.KindObject && args.Kind() != exactjson.KindNull {
			return nil, InvalidParams("params.arguments must be an object")
		}
		if t.tool.Task == TaskRequired && !req.TasksSupported() {
			return nil, errMissingCapabilities(tasksCapability())
		}
		if req.Header != nil && len(t.mirrors) > 0 && req.ProtocolVersion == ProtocolVersion { // 2025-11-25 clients send no Mcp-Param headers
			if e := checkMirrors(req.Header, t.mirrors, args); e != nil {
				return nil, e
			}
		}
		if e := s.prepareOperation(ctx, req, t.op); e != nil {
			return nil, e
		}
		return &prepared{tool: t, args: args}, nil
	case "prompts/get":
		s.mu.RLock()
		p, ok := s.prompts.get(req.Name)
		s.mu.RUnlock()
		if !ok || !s.Visible(ctx, req, KindPrompt, req.Name) {
			return nil, InvalidParams("Unknown prompt")
		}
		args := map[string]string{}
		if av, ok := req.Params.Get("arguments"); ok && av.Kind() != exactjson.KindNull {
			if av.Kind() != exactjson.KindObject {
				return nil, InvalidParams("params.arguments must be an object of strings")
			}
			for k, v := range av.All() {
				sv, ok := v.AsString()
				if !ok {
					return nil, InvalidParams("prompt arguments must be strings")
				}
				args[k] = sv
			}
		}
		for _, a := range p.prompt.Arguments {
			if _, ok := args[a.Name]; a.Required && !ok {
				return nil, InvalidParams("Missing required argument " + a.Name)
			}
		}
		if e := s.prepareOperation(ctx, req, p.op); e != nil {
			return nil, e
		}
		return &prepared{prompt: p, promptArgs: args}, nil
	case "resources/read":
		if len(req.Name) > s.limits.MaxURIBytes {
			return nil, InvalidParams("Resource URI too long")
		}
		op, h, cache, vars, ok := s.findResource(req.Name)
		if !ok || !s.Visible(ctx, req, op.kind, op.name) {
			return nil, ResourceNotFound(req.Name)
		}
		req.uriParams = vars
		if e := s.prepareOperation(ctx, req, op); e != nil {
			return nil, e
		}
		return &prepared{resource: h, cache: cache}, nil
	}
	return nil, internalError(fmt.Errorf("weft: %s is not an operation", req.Method))
}

// prepareOperation runs the checks every MRTR-capable operation shares:
// required capabilities, inputResponses structure and request state.
func (s *Server) prepareOperation(ctx context.Context, req *Request, op *operation) *Error {
	req.op = op
	missing := exactjson.Value{}
	for _, d := range op.inputs {
		supported := clientSupports(req.ClientCapabilities, d.kind)
		if d.req == RequiredCapability && !supported {
			missing = mergeCapabilities(missing, capabilityFor(d.kind))
		}
		if d.req == ConditionalCapability && !supported {
			req.holdOutput = true
		}
	}
	if missing.Kind() != exactjson.KindNull {
		return errMissingCapabilities(missing)
	}
	if ir, ok := req.bound().params.Get("inputResponses"); ok {
		if ir.Kind() != exactjson.KindObject {
			return InvalidParams("params.inputResponses must be an object")
		}
		if ir.Len() > s.limits.MaxInputResponses {
			return InvalidParams("Too many input responses")
		}
		req.retried().inputResponses = InputResponses{ir}
	}
	if e := s.openStateObserved(ctx, req, op); e != nil { // state.go, in the mcp.state.open span
		return e
	}
	for i, ir := 0, req.InputResponses().v; i < ir.Len(); i++ {
		m := ir.Member(i)
		method := ""
		if sm := req.stateMeta(); sm != nil {
			method = sm.Method(m.Name)
		}
		if err := checkInputResponse(m.Value, method); err != nil {
			return InvalidParams(fmt.Sprintf("Invalid input response %q: %v", m.Name, err))
		}
	}
	return nil
}

// prepareInputRequired checks an input_required result before anything of
// it reaches the client (only declared kinds; every missing CONDITIONAL
// capability reported at once; the elicitation policies) and seals its
// framework state into ir.token. It reports false with the error reply.
func (s *Server) prepareInputRequired(ctx context.Context, req *Request, ir *InputRequired) (reply, bool) {
	op := req.op
	programming := func(err error) (reply, bool) {
		return reply{err: s.programmingError(ctx, req, fmt.Errorf("invalid input_required result: %w", err)), outcome: OutcomeInternalError}, false
	}
	if ir.err != nil {
		return programming(ir.err)
	}
	if op == nil {
		return programming(errors.New("input_required is allowed only for tools/call, prompts/get and resources/read: return it from a tool, prompt or resource handler"))
	}
	if len(ir.keys) == 0 && ir.mode == StateNone {
		return programming(errors.New("an input_required result needs at least one input request or state: build it with weft.AskInput (InputRequired.Ask) or set state with WithFrameworkState or WithApplicationState"))
	}
	if len(ir.keys) > s.limits.MaxInputResponses {
		return programming(fmt.Errorf("%d input requests exceed MaxInputResponses (%d): ask fewer at once, or raise Options.Limits.MaxInputResponses", len(ir.keys), s.limits.MaxInputResponses))
	}
	// Every emitted request must be declared; collect missing capabilities
	// before anything of the result is exposed.
	missing := exactjson.Value{}
	for i, k := range ir.keys {
		r := ir.requests[i]
		d, ok := op.declaration(r.decl.kind)
		if !ok || d != r.decl {
			return programming(fmt.Errorf("input request %q (%s) is not declared by %q: add %s to %s.Inputs and ask through that declaration", k, r.decl.kind, op.name, declarationCall(r.decl.kind), declaringType(op.kind)))
		}
		if r.kind != r.decl.kind {
			if _, ok := op.declaration(r.kind); !ok {
				return programming(fmt.Errorf("input request %q needs %s, which %q does not declare: add %s to %s.Inputs", k, r.kind, op.name, declarationCall(r.kind), declaringType(op.kind)))
			}
		}
		if !clientSupports(req.ClientCapabilities, r.kind) {
			missing = mergeCapabilities(missing, capabilityFor(r.kind))
		}
		if err := s.checkElicitation(r); err != nil {
			return programming(fmt.Errorf("input request %q: %w", k, err))
		}
		// Numbers the client's parser would refuse (both eras: a 2025-11-25
		// client gets the params in a server-to-client request).
		if err := s.limits.JSON.CheckNumbers(r.params); err != nil {
			return programming(fmt.Errorf("input request %q: %w", k, err))
		}
	}
	if missing.Kind() != exactjson.KindNull {
		return reply{err: errMissingCapabilities(missing), outcome: OutcomeProtocolError}, false
	}
	var token string
	switch ir.mode {
	case StateApplication:
		if op.stateMode != StateApplication {
			return programming(fmt.Errorf("%q returned application state but declares %s: set %s.StateMode (weft.StateApplication)", op.name, op.stateMode, declaringType(op.kind)))
		}
		if ir.appState == "" || len(ir.appState) > maxApplicationStateBytes || !utf8Valid(ir.appState) {
			return programming(errors.New("application state must be a non-empty UTF-8 string of at most 65,536 bytes: pass one to WithApplicationState, or keep larger state with WithFrameworkState (weft.StateFramework)"))
		}
		token = ir.appState
	case StateFramework:
		if op.stateMode != StateFramework {
			return programming(fmt.Errorf("%q returned framework state but declares %s: set %s.StateMode (weft.StateFramework)", op.name, op.stateMode, declaringType(op.kind)))
		}
		var e *Error
		if token, e = s.sealStateObserved(ctx, req, ir); e != nil { // state.go, in the mcp.state.seal span
			return reply{err: e, outcome: OutcomeInternalError}, false
		}
	}
	ir.token = token
	return reply{}, true
}

// operationResult is what an operation's handler returned, as a Result and
// an error: an *InputRequired stays the error, for the middleware to see as
// the handler returned it; nil results are the dispatcher's to report.
func operationResult[R Result](res R, err error) (Result, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}

// inputRequiredOr returns the *InputRequired err carries as the result the
// core encodes, or err (out of line: its errors.As target costs an
// allocation).
func inputRequiredOr(err error) (Result, error) {
	var ir *InputRequired
	if errors.As(err, &ir) {
		if ir == nil {
			ir = &InputRequired{err: errors.New("nil *InputRequired")} // reported as the programming error it is
		}
		return askResult{ir}, nil
	}
	return nil, err
}

// tools/call

func (s *Server) handleToolsCall(ctx context.Context, req *Request) (Result, error) {
	p, e := s.preparedOf(ctx, req)
	if e != nil {
		return nil, e
	}
	t, args := p.tool, p.args
	if args.Kind() == exactjson.KindNull {
		args = exactjson.Object()
	}
	// A verified retry skips validating arguments its state proves were
	// validated against this same schema when it was emitted. The
	// pre-check accepts the common valid case without the full validator,
	// which decides everything else.
	if !req.argsVerified(t.op) && (t.fastInput == nil || !t.fastInput.Accepts(args)) {
		if err := t.input.Validate(args.Any()); err != nil {
			return &CallToolResult{IsError: true, Content: []Content{TextContent("Arguments do not match the tool's inputSchema: " + err.Error())}}, nil
		}
	}
	req.argsChecked = true
	res, err := s.callTool(ctx, req, t)
	if err != nil {
		return nil, err
	}
	if ct, ok := res.(*CallToolResult); ok && ct != nil && t.output != nil && !ct.IsError && !t.trustedOutput {
		if ct.StructuredContent.Kind() == exactjson.KindNull {
			return nil, s.programmingError(ctx, req, errors.New("the tool declares an OutputSchema but returned no structuredContent: set CallToolResult.StructuredContent (the generic weft.AddTool sets it from the handler's output), or drop Tool.OutputSchema"))
		}
		if err := t.output.Validate(ct.StructuredContent.Any()); err != nil {
			return nil, s.programmingError(ctx, req, fmt.Errorf("structuredContent does not match the tool's outputSchema: fix the handler's CallToolResult.StructuredContent or Tool.OutputSchema: %w", err))
		}
	}
	return res, nil
}

// callTool calls a tool's handler and normalizes its return: a [ToolError]
// becomes an isError result, [RunAsTask] a new task (tools/call only, not
// inside a task step).
func (s *Server) callTool(ctx context.Context, req *Request, t *toolEntry) (Result, error) {
	res, err := t.handler(ctx, req)
	if err == nil {
		return res, nil
	}
	return s.toolError(ctx, req, err)
}

// toolError normalizes the error a tool's handler returned.
func (s *Server) toolError(ctx context.Context, req *Request, err error) (Result, error) {
	var te *ToolError
	var rt *runAsTask
	switch {
	case errors.As(err, &te):
		return &CallToolResult{IsError: true, Content: []Content{TextContent(te.Message)}}, nil
	case errors.As(err, &rt):
		if req.task != nil {
			return nil, errors.New("weft: RunAsTask returned from inside a task")
		}
		return s.createTask(ctx, req, rt)
	}
	var rl *relayedTask
	if errors.As(err, &rl) && req.task == nil {
		return s.createRelayedTask(ctx, req, rl) // proxy.go
	}
	return nil, err
}

// prompts/get

func (s *Server) handlePromptsGet(ctx context.Context, req *Request) (Result, error) {
	pr, e := s.preparedOf(ctx, req)
	if e != nil {
		return nil, e
	}
	p, args := pr.prompt, pr.promptArgs
	return operationResult(p.handler(ctx, req, args))
}

// resources/read

func (s *Server) handleResourcesRead(ctx context.Context, req *Request) (Result, error) {
	p, e := s.preparedOf(ctx, req)
	if e != nil {
		return nil, e
	}
	h, cache := p.resource, p.cache
	res, err := h(ctx, req)
	if err != nil || res == nil {
		return operationResult(res, err)
	}
	if len(res.Contents) == 0 {
		return nil, ResourceNotFound(req.Name)
	}
	// The caching hint: the resource's, or the handler's own; results of
	// MRTR retries and caller-specific reads are never shared, and retries
	// are immediately stale.
	c := cache
	if res.Cache != nil {
		c = *res.Cache
	}
	retry := req.Params.Has("inputResponses") || req.Params.Has("requestState")
	if retry || req.Identity.Partition != "" {
		c.Public = false
		if retry {
			c.TTLMillis = 0
		}
	}
	out := *res
	out.Cache = &c
	return &out, nil
}

// completion/complete

func (s *Server) handleComplete(ctx context.Context, req *Request) (Result, error) {
	ref, _ := req.Params.Get("ref")
	arg, _ := req.Params.Get("argument")
	rt, _ := ref.Get("type")
	nv, _ := arg.Get("name")
	vv, _ := arg.Get("value")
	argName, ok1 := nv.AsString()
	argValue, ok2 := vv.AsString()
	if !ok1 || !ok2 {
		return nil, InvalidParams("params.argument needs string name and value")
	}
	cr := CompletionRequest{Argument: argName, Value: argValue, Context: map[string]string{}}
	if cv, ok := req.Params.Get("context"); ok {
		if av, ok := cv.Get("arguments"); ok {
			for k, v := range av.All() {
				if sv, ok := v.AsString(); ok {
					cr.Context[k] = sv
				}
			}
		}
	}
	var handler CompletionHandler
	rtype, _ := rt.AsString()
	switch rtype {
	case "ref/prompt":
		nv, _ := ref.Get("name")
		name, _ := nv.AsString()
		s.mu.RLock()
		p, ok := s.prompts.get(name)
		s.mu.RUnlock()
		if !ok || !s.Visible(ctx, req, KindPrompt, name) {
			return nil, InvalidParams("Unknown prompt")
		}
		known := false
		for _, a := range p.prompt.Arguments {
			known = known || a.Name == argName
		}
		if !known {
			return nil, InvalidParams("Unknown prompt argument")
		}
		handler = p.prompt.Complete
	case "ref/resource":
		uv, _ := ref.Get("uri")
		uri, _ := uv.AsString()
		s.mu.RLock()
		t, ok := s.templates.get(uri)
		s.mu.RUnlock()
		if !ok || !s.Visible(ctx, req, KindResourceTemplate, uri) {
			return nil, InvalidParams("Unknown resource template")
		}
		handler = t.tmpl.Complete
	default:
		return nil, InvalidParams(`params.ref.type must be "ref/prompt" or "ref/resource"`)
	}
	res := &CompleteResult{}
	if handler != nil {
		c, err := handler(ctx, req, cr)
		if err != nil {
			return nil, err
		}
		res.Completion = c
	}
	return res, nil
}
