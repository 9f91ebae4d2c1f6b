package weft

import (
	"context"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/otelinst"
	"github.com/weftmcp/weft/internal/taskgauge"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/task"
)

// instrumentationName names Weft's tracer and meter.
const instrumentationName = "github.com/weftmcp/weft"

// Bounds on the W3C trace context read from params._meta (SEP-414). A value
// that is longer, not a string or malformed is ignored: the request is still
// served, as a new trace (or under the transport's span).
const (
	maxTraceparentBytes = 512
	maxTracestateBytes  = 512
	maxBaggageBytes     = 8192
)

// KeyringReporter is implemented by protectors that can describe their
// keyring without secrets; [*seal.Manager] does. When the configured
// protector implements it, the weft.keyring.info gauge reports the active key
// id and the keyring fingerprint (docs/operations.md).
type KeyringReporter interface {
	Snapshot() seal.Snapshot
}

// telemetry is the server's tracing, metrics and request logging. Each part
// is off (and costs a nil check) unless configured.
type telemetry struct {
	s      *Server
	tracer trace.Tracer // nil: no tracing
	prop   propagation.TextMapPropagator
	m      *otelinst.Instruments // nil: no metrics
	tasks  taskgauge.Gauge
}

func newTelemetry(s *Server) *telemetry {
	t := &telemetry{s: s}
	if tp := s.opts.TracerProvider; tp != nil {
		t.tracer = tp.Tracer(instrumentationName)
		t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if mp := s.opts.MeterProvider; mp != nil {
		meter := mp.Meter(instrumentationName)
		m, err := otelinst.New(meter)
		if err == nil {
			_, err = meter.RegisterCallback(t.observe, m.Observables()...)
		}
		if err != nil {
			s.log.Warn("weft: creating metric instruments failed; some metrics may be missing", "err", err)
		}
		t.m = m
	}
	return t
}

// watchTasks follows the task store for the weft.tasks gauge (only when
// metrics are configured) until Shutdown.
func (t *telemetry) watchTasks(store task.Store) {
	if t != nil && t.m != nil && store != nil {
		t.tasks.Watch(store, t.s.done, t.s.log)
	}
}

// observe reports the gauges.
func (t *telemetry) observe(ctx context.Context, o metric.Observer) error {
	s, m := t.s, t.m
	if m == nil {
		return nil
	}
	s.mu.RLock()
	p, ephemeral := s.protector, s.ephemeral
	s.mu.RUnlock()
	if kr, ok := p.(KeyringReporter); ok {
		snap := kr.Snapshot()
		o.ObserveInt64(m.KeyringInfo, 1, metric.WithAttributes(
			attribute.String("active_key_id", snap.ActiveID),
			attribute.String("fingerprint", snap.Fingerprint.String()),
			attribute.Bool("ephemeral", ephemeral)))
		o.ObserveInt64(m.Verification, int64(len(snap.VerificationIDs)))
	}
	s.bus.mu.Lock()
	subs := len(s.bus.subs)
	s.bus.mu.Unlock()
	o.ObserveInt64(m.Subs, int64(subs))
	active, queued := s.gate.counts()
	o.ObserveInt64(m.Active, int64(active))
	o.ObserveInt64(m.Queued, int64(queued))
	if working, input, ok := t.tasks.Counts(); ok {
		o.ObserveInt64(m.Tasks, working, metric.WithAttributes(attribute.String("status", string(task.Working))))
		o.ObserveInt64(m.Tasks, input, metric.WithAttributes(attribute.String("status", string(task.InputRequired))))
	}
	return nil
}

// extract returns ctx with the W3C trace context and baggage of a request's
// _meta (SEP-414), and the span context that was current before (the
// transport's span, if any) when the _meta context replaced it as parent.
func (t *telemetry) extract(ctx context.Context, meta exactjson.Value) (context.Context, trace.SpanContext) {
	if meta.Kind() != exactjson.KindObject {
		return ctx, trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{}
	for _, f := range [...]struct {
		key string
		max int
	}{{"traceparent", maxTraceparentBytes}, {"tracestate", maxTracestateBytes}, {"baggage", maxBaggageBytes}} {
		v, ok := meta.Get(f.key)
		if !ok {
			continue
		}
		if s, isStr := v.AsString(); isStr && s != "" && len(s) <= f.max {
			carrier[f.key] = s
		}
	}
	if len(carrier) == 0 {
		return ctx, trace.SpanContext{}
	}
	before := trace.SpanContextFromContext(ctx)
	ctx = t.prop.Extract(ctx, carrier)
	if after := trace.SpanContextFromContext(ctx); before.IsValid() && !after.Equal(before) {
		return ctx, before
	}
	return ctx, trace.SpanContext{}
}

// methodLabel bounds a client-chosen method name: the methods MCP defines
// and the server's custom methods keep their name, anything else is "other".
func (s *Server) methodLabel(method string) string {
	switch method {
	case "server/discover", "subscriptions/listen", "tools/list", "tools/call", "prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read", "completion/complete",
		"tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list",
		"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		return method
	}
	if _, ok := s.customMethod(method); ok {
		return method
	}
	return "other"
}

// targetOf names the tool, prompt or resource of a request for metrics,
// spans and logs: only registered names are used (a resource is named by its
// registered URI or URI template, never the URI the client sent), so every
// value is chosen by the server. The key is the span attribute.
func (s *Server) targetOf(req *Request) (key, name string) {
	if req == nil || req.Name == "" {
		return "", ""
	}
	switch req.Method {
	case "tools/call":
		s.mu.RLock()
		_, ok := s.tools.get(req.Name)
		s.mu.RUnlock()
		if ok {
			return "gen_ai.tool.name", req.Name
		}
	case "prompts/get":
		s.mu.RLock()
		_, ok := s.prompts.get(req.Name)
		s.mu.RUnlock()
		if ok {
			return "gen_ai.prompt.name", req.Name
		}
	case "resources/read":
		if len(req.Name) > s.limits.MaxURIBytes {
			return "", ""
		}
		if op, _, _, _, ok := s.findResource(req.Name); ok {
			return "mcp.resource.uri", op.name
		}
	}
	return "", ""
}

// idText renders a JSON-RPC id for spans and logs, at most 64 bytes.
func idText(id ID) string {
	var s string
	switch id.v.Kind() {
	case exactjson.KindString:
		s, _ = id.v.AsString()
	case exactjson.KindNumber:
		n, _ := id.v.AsNumber()
		s = n.String()
	default:
		return ""
	}
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}

// admitObserved runs admission inside an "mcp.admission" span.
func (s *Server) admitObserved(ctx context.Context, in *inbound, method, target string) (Identity, *reply) {
	t := s.tel
	if t == nil || t.tracer == nil || s.opts.Admission == nil {
		return s.admit(ctx, in, method, target)
	}
	ctx, span := t.tracer.Start(ctx, "mcp.admission")
	defer span.End()
	id, rej := s.admit(ctx, in, method, target)
	if rej != nil {
		span.SetAttributes(attribute.String("weft.admission.result", "rejected"))
		if rej.refusal != nil && rej.refusal.Status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", rej.refusal.Status))
		}
		span.SetStatus(codes.Error, "rejected")
	} else {
		span.SetAttributes(attribute.String("weft.admission.result", "admitted"))
	}
	return id, rej
}

func noEnd(reply) {}

// handlerSpan starts the "mcp.handler" span around a method handler.
func (s *Server) handlerSpan(ctx context.Context, req *Request) (context.Context, func(reply)) {
	t := s.tel
	if t == nil || t.tracer == nil {
		return ctx, noEnd
	}
	ctx, span := t.tracer.Start(ctx, "mcp.handler")
	return ctx, func(rep reply) {
		if rep.err != nil {
			span.SetAttributes(attribute.String("error.type", strconv.Itoa(int(rep.err.Code))))
			span.SetStatus(codes.Error, rep.classify().String())
		}
		span.SetAttributes(attribute.String("weft.outcome", rep.classify().String()))
		span.End()
	}
}

// stateMode names a state mode for metrics.
func stateModeLabel(m StateMode) string {
	switch m {
	case StateApplication:
		return "application"
	case StateFramework:
		return "framework"
	}
	return "none"
}

// openStateObserved opens request state inside an "mcp.state.open" span and
// counts the result; a failure's reason is recorded server-side only.
func (s *Server) openStateObserved(ctx context.Context, req *Request, op *operation) *Error {
	t := s.tel
	if t == nil || (t.tracer == nil && t.m == nil) || !req.Params.Has("requestState") {
		return s.openState(ctx, req, op)
	}
	mode := stateModeLabel(op.stateMode)
	var span trace.Span
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, "mcp.state.open", trace.WithAttributes(attribute.String("weft.state.mode", mode)))
		defer span.End()
	}
	e := s.openState(ctx, req, op)
	result, reason := "ok", ""
	if e != nil {
		result, reason = "failed", stateFailureReason(e)
	}
	if m := t.m; m != nil {
		m.StateOpens.Add(ctx, 1, metric.WithAttributes(attribute.String("mode", mode), attribute.String("result", result)))
		if e != nil {
			m.StateFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
		}
	}
	if span != nil && e != nil {
		span.SetAttributes(attribute.String("weft.state.failure_reason", reason))
		span.SetStatus(codes.Error, "invalid request state")
	}
	return e
}

// stateFailureReason maps the server-side reason of a rejected request state
// (state.go) to a bounded metric label.
func stateFailureReason(e *Error) string {
	if e == nil || e.cause == nil {
		return "other"
	}
	msg := e.cause.Error()
	switch msg {
	case "not a string":
		return "not_string"
	case "state sent to an operation without state":
		return "unexpected_state"
	case "application state empty or too large":
		return "application_invalid"
	case "too large":
		return "too_large"
	case "decoded too large":
		return "decoded_too_large"
	case "issued after expiry", "lifetime longer than configured":
		return "bad_lifetime"
	case "expired":
		return "expired"
	case "round out of range":
		return "round_out_of_range"
	case "retry reuses the emitting request id":
		return "reused_request_id"
	}
	switch {
	case strings.HasPrefix(msg, "binding: "):
		return "binding"
	case strings.HasPrefix(msg, "open: "):
		switch r := strings.TrimPrefix(msg, "open: "); r {
		case seal.ReasonMalformed, seal.ReasonTooLarge, seal.ReasonUnknownKey, seal.ReasonAuthFailed:
			return r
		}
		return "open_failed"
	case strings.HasPrefix(msg, "malformed state"):
		return "malformed_plaintext"
	}
	return "other"
}

// sealStateObserved seals framework state inside an "mcp.state.seal" span
// and counts the result.
func (s *Server) sealStateObserved(ctx context.Context, req *Request, ir *InputRequired) (string, *Error) {
	t := s.tel
	if t == nil || (t.tracer == nil && t.m == nil) {
		return s.sealState(ctx, req, ir)
	}
	var span trace.Span
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, "mcp.state.seal", trace.WithAttributes(attribute.Int("weft.state.round", req.Round()+1)))
		defer span.End()
	}
	token, e := s.sealState(ctx, req, ir)
	result := "ok"
	if e != nil {
		result = "failed"
		if span != nil {
			span.SetStatus(codes.Error, "sealing request state failed")
		}
	}
	if m := t.m; m != nil {
		m.StateSeals.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
	}
	return token, e
}

// observedTaskStep runs a task step inside an "mcp.task.step" span, parented
// to the trace context the client sent with the call that created the task,
// and counts it.
func (s *Server) observedTaskStep(ctx context.Context, job *task.Job) (out task.Outcome, err error) {
	t := s.tel
	if t == nil || (t.tracer == nil && t.m == nil) {
		return s.runTaskStep(ctx, job)
	}
	start := time.Now()
	tool := job.Operation()
	var span trace.Span
	if t.tracer != nil {
		parent := ctx
		if p, perr := exactjson.Parse(job.Params(), exactjson.Limits{}); perr == nil {
			meta, _ := p.Get("_meta")
			parent, _ = t.extract(ctx, meta)
		}
		ctx, span = t.tracer.Start(parent, "mcp.task.step", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("gen_ai.tool.name", tool),
			attribute.String("weft.task.id", job.ID()),
			attribute.Int("weft.task.step", job.Step()),
			attribute.Int("weft.task.attempt", job.Attempt())))
	}
	m := t.m
	if m != nil {
		m.Leases.Add(ctx, 1)
	}
	result := "panic"
	defer func() {
		if m != nil {
			m.Leases.Add(ctx, -1)
			attrs := metric.WithAttributes(attribute.String("name", tool), attribute.String("result", result))
			m.TaskSteps.Add(ctx, 1, attrs)
			m.TaskDuration.Record(ctx, time.Since(start).Seconds(), attrs)
		}
		if span != nil {
			span.SetAttributes(attribute.String("weft.task.result", result))
			if result == "error" || result == "panic" || result == string(task.Failed) {
				span.SetStatus(codes.Error, result)
			}
			span.End()
		}
	}()
	out, err = s.runTaskStep(ctx, job)
	result = string(out.Status)
	if err != nil {
		result = "error"
	}
	return out, err
}
