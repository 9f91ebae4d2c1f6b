package weft

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// requestTelemetry follows one message through [Server.serve]: its server
// span, its metrics and its "mcp request" log line. A nil *requestTelemetry
// (telemetry and request logging all off) does nothing.
type requestTelemetry struct {
	t         *telemetry
	start     time.Time
	ctx       context.Context
	transport string
	isReq     bool   // the envelope was valid and the message is a request
	method    string // bounded method label
	id        ID
	span      trace.Span // nil without tracing
	req       *Request   // nil until admitted
}

// begin starts following a message; it is called before the body is parsed.
func (t *telemetry) begin(ctx context.Context, in *inbound) *requestTelemetry {
	if t == nil || (t.tracer == nil && t.m == nil && !t.s.log.Enabled(ctx, slog.LevelDebug)) {
		return nil // nothing to record: no allocation
	}
	return &requestTelemetry{t: t, start: time.Now(), ctx: ctx, transport: in.transport}
}

// parsed records a request with a valid envelope and starts its server span,
// continuing the trace context of params._meta. The returned context carries
// the span and any baggage the client sent.
func (rt *requestTelemetry) parsed(ctx context.Context, m *message) context.Context {
	if rt == nil {
		return ctx
	}
	rt.isReq, rt.id = true, m.id
	rt.method = rt.t.s.methodLabel(m.method)
	t := rt.t
	if t.tracer == nil {
		rt.ctx = ctx
		return ctx
	}
	meta, _ := m.params.Get("_meta")
	parent, transport := t.extract(ctx, meta)
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", rt.method),
		attribute.String("jsonrpc.protocol.version", "2.0"),
	}
	if id := idText(m.id); id != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", id))
	}
	switch rt.transport {
	case "http":
		attrs = append(attrs, attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"))
	case "stdio":
		attrs = append(attrs, attribute.String("network.transport", "pipe"))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(rt.start), trace.WithAttributes(attrs...)}
	if transport.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: transport}))
	}
	ctx, rt.span = t.tracer.Start(parent, rt.method, opts...)
	rt.ctx = ctx
	return ctx
}

// admitted records the admitted request.
func (rt *requestTelemetry) admitted(req *Request) {
	if rt != nil {
		rt.req = req
	}
}

// end records the reply: metrics, span attributes and status, and the log
// line. Nothing of the arguments, headers, tokens, state or error messages
// is recorded: only the method, the registered target name, the id, the
// outcome, the error code and the duration.
func (rt *requestTelemetry) end(rep *reply) {
	if rt == nil {
		return
	}
	if !rt.isReq && (rep.err == nil || rep.err.Code != CodeParseError && rep.err.Code != CodeInvalidRequest) {
		// A notification (nothing was requested), or a message served by
		// another path (an era adapter's answers and notifications). Unparsable bodies and
		// invalid envelopes are counted, as method "invalid".
		return
	}
	t := rt.t
	s := t.s
	dur := time.Since(rt.start)
	outcome := rep.classify()
	method := rt.method
	if !rt.isReq {
		method = "invalid"
	}
	nameKey, name := s.targetOf(rt.req)
	var code Code
	if rep.err != nil {
		code = rep.err.Code
	}
	ctx := rt.ctx
	if m := t.m; m != nil {
		base := []attribute.KeyValue{
			attribute.String("method", method),
			attribute.String("outcome", outcome.String()),
			attribute.String("name", name),
		}
		m.Duration.Record(ctx, dur.Seconds(), metric.WithAttributes(base...))
		if code != 0 {
			base = append(base, attribute.String("code", strconv.Itoa(int(code))))
		}
		m.Requests.Add(ctx, 1, metric.WithAttributes(base...))
	}
	if span := rt.span; span != nil {
		if name != "" {
			span.SetName(method + " " + name)
			span.SetAttributes(attribute.String(nameKey, name))
			if method == "tools/call" {
				span.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"))
			}
		}
		if req := rt.req; req != nil {
			span.SetAttributes(attribute.String("mcp.protocol.version", req.ProtocolVersion))
		}
		span.SetAttributes(attribute.String("weft.outcome", outcome.String()))
		if rep.err != nil {
			c := strconv.Itoa(int(code))
			span.SetAttributes(attribute.String("error.type", c), attribute.String("rpc.response.status_code", c))
			span.SetStatus(codes.Error, outcome.String())
		}
		span.End()
	}
	if s.log.Enabled(ctx, slog.LevelDebug) {
		attrs := make([]slog.Attr, 0, 9)
		attrs = append(attrs, slog.String("method", method))
		if name != "" {
			attrs = append(attrs, slog.String("name", name))
		}
		if id := idText(rt.id); id != "" {
			attrs = append(attrs, slog.String("id", id))
		}
		attrs = append(attrs, slog.String("outcome", outcome.String()), slog.Duration("duration", dur))
		if code != 0 {
			attrs = append(attrs, slog.Int("code", int(code)))
		}
		attrs = append(attrs, slog.String("transport", rt.transport))
		if rt.span != nil {
			if sc := rt.span.SpanContext(); sc.IsValid() {
				attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
			}
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "mcp request", attrs...)
	}
}
