package weft

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// prepareOperation runs the checks every MRTR-capable operation shares:
// required capabilities, inputResponses structure and request state.
func (s *Server) prepareOperation(ctx context.Context, req *Request, op *operation) *Error {
	req.op = op
	missing := exactjson.Value{}
	for _, d := range op.inputs {
		supported := clientSupports(req.ClientCapabilities, d.kind)
		if d.req == Required && !supported {
			missing = mergeCapabilities(missing, capabilityFor(d.kind))
		}
		if d.req == Conditional && !supported {
			req.holdOutput = true
		}
	}
	if missing.Kind() != exactjson.KindNull {
		return errMissingCapabilities(missing)
	}
	if ir, ok := req.Params.Get("inputResponses"); ok {
		if ir.Kind() != exactjson.KindObject {
			return withStatus(InvalidParams("params.inputResponses must be an object"), http.StatusBadRequest)
		}
		if ir.Len() > s.limits.MaxInputResponses {
			return withStatus(InvalidParams("Too many input responses"), http.StatusBadRequest)
		}
		req.inputResponses = InputResponses{ir}
	}
	if e := s.openStateObserved(ctx, req, op); e != nil { // weft: telemetry hook (otel.go)
		return e
	}
	for i, ir := 0, req.inputResponses.v; i < ir.Len(); i++ {
		m := ir.Member(i)
		method := ""
		if req.stateMeta != nil {
			method = req.stateMeta.method(m.Name)
		}
		if err := checkInputResponse(m.Value, method); err != nil {
			return withStatus(InvalidParams(fmt.Sprintf("Invalid input response %q: %v", m.Name, err)), http.StatusBadRequest)
		}
	}
	return nil
}

// runOperation calls the handler through the observer and interceptor and
// turns its outcome into a reply. encode writes a complete result.
func (s *Server) runOperation(ctx context.Context, req *Request, call func(context.Context) (any, error), encode func(result any) reply) reply {
	var res any
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("weft: handler panic: %v", p)
				s.log.Error("weft: handler panic", "method", req.Method, "name", req.Name, "panic", p)
			}
		}()
		if ic := s.opts.Interceptor; ic != nil {
			res, err = ic(ctx, req, call)
		} else {
			res, err = call(ctx)
		}
	}()
	rep, outcome := s.finishOperation(ctx, req, res, err, encode)
	rep.outcome = outcome
	return rep
}

func (s *Server) finishOperation(ctx context.Context, req *Request, res any, err error, encode func(any) reply) (reply, Outcome) {
	if err != nil {
		var ir *InputRequired
		var te *ToolError
		var rt *runAsTask
		switch {
		case errors.As(err, &ir):
			return s.inputRequired(ctx, req, ir)
		case errors.As(err, &rt) && req.Method == "tools/call":
			return s.createTask(ctx, req, rt)
		case errors.As(err, &te) && req.Method == "tools/call":
			return encode(&CallToolResult{IsError: true, Content: []Content{TextContent(te.Message)}}), OutcomeComplete
		case ctx.Err() != nil:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return errReply(req.ID, withStatus(internalError(err), http.StatusGatewayTimeout)), OutcomeDeadlineExceeded
			}
			return errReply(req.ID, internalError(err)), OutcomeCancelled
		}
		e := asError(err)
		if e.reserved && e.Code == CodeInternalError {
			s.log.Error("weft: handler failed", "method", req.Method, "name", req.Name, "err", err)
			return errReply(req.ID, e), OutcomeInternalError
		}
		if e.reserved {
			return errReply(req.ID, e), OutcomeProtocolError
		}
		return errReply(req.ID, e), OutcomeApplicationError
	}
	if ir, ok := res.(*InputRequired); ok {
		return s.inputRequired(ctx, req, ir)
	}
	rep := encode(res)
	if rep.err != nil {
		return rep, OutcomeInternalError
	}
	return rep, OutcomeComplete
}

// inputRequired validates and encodes an input_required result.
func (s *Server) inputRequired(ctx context.Context, req *Request, ir *InputRequired) (reply, Outcome) {
	op := req.op
	programming := func(err error) (reply, Outcome) {
		s.log.Error("weft: handler returned an invalid input_required result (programming error)", "method", req.Method, "name", req.Name, "err", err)
		return errReply(req.ID, internalError(err)), OutcomeInternalError
	}
	if ir == nil {
		return programming(errors.New("nil *InputRequired"))
	}
	if ir.err != nil {
		return programming(ir.err)
	}
	if op == nil {
		return programming(errors.New("input_required is allowed only for tools/call, prompts/get and resources/read"))
	}
	if len(ir.keys) == 0 && ir.mode == StateNone {
		return programming(errors.New("an input_required result needs at least one input request or state"))
	}
	if len(ir.keys) > s.limits.MaxInputResponses {
		return programming(fmt.Errorf("%d input requests exceed MaxInputResponses", len(ir.keys)))
	}
	// Every emitted request must be declared; collect missing capabilities
	// before anything of the result is exposed.
	missing := exactjson.Value{}
	for i, k := range ir.keys {
		r := ir.requests[i]
		d, ok := op.declaration(r.decl.kind)
		if !ok || d != r.decl {
			return programming(fmt.Errorf("input request %q (%s) is not declared by %q", k, r.decl.kind, op.name))
		}
		if r.kind != r.decl.kind {
			if _, ok := op.declaration(r.kind); !ok {
				return programming(fmt.Errorf("input request %q needs %s, which %q does not declare", k, r.kind, op.name))
			}
		}
		if !clientSupports(req.ClientCapabilities, r.kind) {
			missing = mergeCapabilities(missing, capabilityFor(r.kind))
		}
		if err := s.checkElicitation(r); err != nil {
			return programming(fmt.Errorf("input request %q: %w", k, err))
		}
	}
	if missing.Kind() != exactjson.KindNull {
		return errReply(req.ID, errMissingCapabilities(missing)), OutcomeProtocolError
	}
	var token string
	switch ir.mode {
	case StateApplication:
		if op.stateMode != StateApplication {
			return programming(fmt.Errorf("%q returned application state but declares %s", op.name, op.stateMode))
		}
		if ir.appState == "" || len(ir.appState) > MaxApplicationStateBytes || !utf8Valid(ir.appState) {
			return programming(errors.New("application state must be a non-empty UTF-8 string of at most 65,536 bytes"))
		}
		token = ir.appState
	case StateFramework:
		if op.stateMode != StateFramework {
			return programming(fmt.Errorf("%q returned framework state but declares %s", op.name, op.stateMode))
		}
		var e *Error
		if token, e = s.sealStateObserved(ctx, req, ir); e != nil { // weft: telemetry hook (otel.go)
			return errReply(req.ID, e), OutcomeInternalError
		}
	}
	rep := s.resultReply("input_required", func(e *enc) {
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
		if token != "" {
			e.str("requestState", token)
		}
	}, nil, exactjson.Value{})
	if rep.err != nil {
		return rep, OutcomeInternalError
	}
	return rep, OutcomeInputRequired
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// tools/call

func (s *Server) handleToolsCall(ctx context.Context, req *Request, in *inbound) reply {
	s.mu.RLock()
	t, ok := s.tools.get(req.Name)
	s.mu.RUnlock()
	if !ok || !s.Visible(ctx, req, KindTool, req.Name) {
		return errReply(req.ID, withStatus(InvalidParams("Unknown tool"), http.StatusBadRequest))
	}
	args, hasArgs := req.Params.Get("arguments")
	if hasArgs && args.Kind() != exactjson.KindObject && args.Kind() != exactjson.KindNull {
		return errReply(req.ID, withStatus(InvalidParams("params.arguments must be an object"), http.StatusBadRequest))
	}
	if t.tool.Task == TaskRequired && !req.TasksSupported() {
		return errReply(req.ID, errMissingCapabilities(tasksCapability()))
	}
	if in.header != nil && len(t.mirrors) > 0 {
		if e := checkMirrors(in.header, t.mirrors, args); e != nil {
			return errReply(req.ID, e)
		}
	}
	if e := s.prepareOperation(ctx, req, t.op); e != nil {
		return errReply(req.ID, e)
	}
	call := func(ctx context.Context) (any, error) {
		a := args
		if a.Kind() == exactjson.KindNull {
			a = exactjson.Object()
		}
		// A verified retry skips validating arguments its state proves
		// were validated against this same schema when it was emitted.
		// The pre-check accepts the common valid case without the full
		// validator, which decides everything else.
		if !req.argsVerified(t.op) && (t.fastInput == nil || !t.fastInput.accepts(a)) {
			if err := t.input.Validate(toAny(a)); err != nil {
				return &CallToolResult{IsError: true, Content: []Content{TextContent("Arguments do not match the tool's inputSchema: " + err.Error())}}, nil
			}
		}
		req.argsChecked = true
		return t.handler(ctx, req)
	}
	return s.runOperation(ctx, req, call, func(res any) reply {
		r, ok := res.(*CallToolResult)
		if !ok || r == nil {
			s.log.Error("weft: tool handler returned no result", "tool", req.Name)
			return errReply(req.ID, internalError(errors.New("tool handler returned no result")))
		}
		if t.output != nil && !r.IsError && !t.trustedOutput {
			if r.StructuredContent.Kind() == exactjson.KindNull {
				s.log.Error("weft: tool with an output schema returned no structuredContent", "tool", req.Name)
				return errReply(req.ID, internalError(errors.New("missing structuredContent")))
			}
			if err := t.output.Validate(toAny(r.StructuredContent)); err != nil {
				s.log.Error("weft: tool output does not match its outputSchema", "tool", req.Name, "err", err)
				return errReply(req.ID, internalError(err))
			}
		}
		return s.resultReply("complete", r.encode, nil, r.Meta)
	})
}

// prompts/get

func (s *Server) handlePromptsGet(ctx context.Context, req *Request, in *inbound) reply {
	s.mu.RLock()
	p, ok := s.prompts.get(req.Name)
	s.mu.RUnlock()
	if !ok || !s.Visible(ctx, req, KindPrompt, req.Name) {
		return errReply(req.ID, withStatus(InvalidParams("Unknown prompt"), http.StatusBadRequest))
	}
	args := map[string]string{}
	if av, ok := req.Params.Get("arguments"); ok && av.Kind() != exactjson.KindNull {
		if av.Kind() != exactjson.KindObject {
			return errReply(req.ID, withStatus(InvalidParams("params.arguments must be an object of strings"), http.StatusBadRequest))
		}
		for k, v := range av.All() {
			sv, ok := v.AsString()
			if !ok {
				return errReply(req.ID, withStatus(InvalidParams("prompt arguments must be strings"), http.StatusBadRequest))
			}
			args[k] = sv
		}
	}
	for _, a := range p.prompt.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return errReply(req.ID, withStatus(InvalidParams("Missing required argument "+a.Name), http.StatusBadRequest))
		}
	}
	if e := s.prepareOperation(ctx, req, p.op); e != nil {
		return errReply(req.ID, e)
	}
	return s.runOperation(ctx, req, func(ctx context.Context) (any, error) {
		return p.handler(ctx, req, args)
	}, func(res any) reply {
		r, ok := res.(*GetPromptResult)
		if !ok || r == nil {
			return errReply(req.ID, internalError(errors.New("prompt handler returned no result")))
		}
		return s.resultReply("complete", r.encode, nil, r.Meta)
	})
}

// resources/read

func (s *Server) handleResourcesRead(ctx context.Context, req *Request, in *inbound) reply {
	if len(req.Name) > s.limits.MaxURIBytes {
		return errReply(req.ID, withStatus(InvalidParams("Resource URI too long"), http.StatusBadRequest))
	}
	op, h, cache, vars, ok := s.findResource(req.Name)
	if !ok || !s.Visible(ctx, req, op.kind, op.name) {
		return errReply(req.ID, ResourceNotFound(req.Name))
	}
	req.uriParams = vars
	if e := s.prepareOperation(ctx, req, op); e != nil {
		return errReply(req.ID, e)
	}
	retry := req.Params.Has("inputResponses") || req.Params.Has("requestState")
	return s.runOperation(ctx, req, func(ctx context.Context) (any, error) {
		return h(ctx, req)
	}, func(res any) reply {
		r, ok := res.(*ReadResourceResult)
		if !ok || r == nil {
			return errReply(req.ID, internalError(errors.New("resource handler returned no result")))
		}
		if len(r.Contents) == 0 {
			return errReply(req.ID, ResourceNotFound(req.Name))
		}
		c := cache
		if r.Cache != nil {
			c = *r.Cache
		}
		if retry || req.Identity.Partition != "" {
			// Results of MRTR retries and caller-specific reads are never shared.
			c.Public = false
			if retry {
				c.TTLMillis = 0
			}
		}
		return s.resultReply("complete", r.encode, &c, r.Meta)
	})
}

// completion/complete

func (s *Server) handleComplete(ctx context.Context, req *Request, in *inbound) reply {
	ref, _ := req.Params.Get("ref")
	arg, _ := req.Params.Get("argument")
	rt, _ := ref.Get("type")
	argName, ok1 := func() (string, bool) { v, _ := arg.Get("name"); return v.AsString() }()
	argValue, ok2 := func() (string, bool) { v, _ := arg.Get("value"); return v.AsString() }()
	if !ok1 || !ok2 {
		return errReply(req.ID, withStatus(InvalidParams("params.argument needs string name and value"), http.StatusBadRequest))
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
			return errReply(req.ID, withStatus(InvalidParams("Unknown prompt"), http.StatusBadRequest))
		}
		known := false
		for _, a := range p.prompt.Arguments {
			known = known || a.Name == argName
		}
		if !known {
			return errReply(req.ID, withStatus(InvalidParams("Unknown prompt argument"), http.StatusBadRequest))
		}
		handler = p.prompt.Complete
	case "ref/resource":
		uv, _ := ref.Get("uri")
		uri, _ := uv.AsString()
		s.mu.RLock()
		t, ok := s.templates.get(uri)
		s.mu.RUnlock()
		if !ok || !s.Visible(ctx, req, KindResourceTemplate, uri) {
			return errReply(req.ID, withStatus(InvalidParams("Unknown resource template"), http.StatusBadRequest))
		}
		handler = t.tmpl.Complete
	default:
		return errReply(req.ID, withStatus(InvalidParams(`params.ref.type must be "ref/prompt" or "ref/resource"`), http.StatusBadRequest))
	}
	var c Completion
	if handler != nil {
		var err error
		if c, err = handler(ctx, req, cr); err != nil {
			e := asError(err)
			if e.Code == CodeInternalError {
				s.log.Error("weft: completion handler failed", "err", err)
			}
			return errReply(req.ID, e)
		}
	}
	values := c.Values
	hasMore := c.HasMore
	if len(values) > MaxCompletionValues {
		values, hasMore = values[:MaxCompletionValues], true
	}
	if values == nil {
		values = []string{}
	}
	return s.resultReply("complete", func(e *enc) {
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
	}, nil, exactjson.Value{})
}
