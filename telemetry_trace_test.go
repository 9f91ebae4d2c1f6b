package weft

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftmcp/weft/metrics"
	"github.com/weftmcp/weft/task"
)

// The client's trace context, as in SEP-414's example.
const (
	clientTraceID = "0af7651916cd43dd8448eb211c80319c"
	clientSpanID  = "00f067aa0ba902b7"
	clientParent  = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

// Strings a request carries that no span, metric or log may repeat.
const (
	secretArg     = "ARG-SECRET-1d8c"
	secretToken   = "TOKEN-SECRET-77f2"
	secretBaggage = "BAGGAGE-SECRET-51aa"
)

func newTracer(t testing.TB) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// bearerAdmission admits every request carrying a bearer token.
func bearerAdmission(ctx context.Context, r *AdmissionRequest) (Identity, error) {
	if r.BearerToken == "" {
		return Identity{}, &AdmissionError{Status: http.StatusUnauthorized, Message: "Unauthorized"}
	}
	return Identity{Principal: "alice", Partition: "tenant-1"}, nil
}

func spansNamed(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attrOf(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// assertNoSecrets fails if any span carries one of the secrets in its name,
// attributes, status, events or links.
func assertNoSecrets(t *testing.T, spans tracetest.SpanStubs, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		var sb strings.Builder
		sb.WriteString(s.Name + " " + s.Status.Description)
		for _, a := range s.Attributes {
			sb.WriteString(" " + string(a.Key) + "=" + a.Value.String())
		}
		for _, e := range s.Events {
			sb.WriteString(" " + e.Name)
			for _, a := range e.Attributes {
				sb.WriteString(" " + string(a.Key) + "=" + a.Value.String())
			}
		}
		for _, l := range s.Links {
			for _, a := range l.Attributes {
				sb.WriteString(" " + string(a.Key) + "=" + a.Value.String())
			}
			sb.WriteString(" " + l.SpanContext.TraceState().String())
		}
		got := sb.String()
		for _, sec := range secrets {
			if sec != "" && strings.Contains(got, sec) {
				t.Errorf("span %q carries %q: %s", s.Name, sec, got)
			}
		}
	}
}

// TestTracingContinuesMetaTraceparent sends a state round trip with a
// traceparent in _meta and finds the server's spans parented to it.
func TestTracingContinuesMetaTraceparent(t *testing.T) {
	tp, exp := newTracer(t)
	f := newStateFixture(t, &Options{TracerProvider: tp, Admission: bearerAdmission})
	f.serveHTTP(t)
	auth := setHeader("Authorization", "Bearer "+secretToken)
	traceMeta := M{"traceparent": clientParent, "tracestate": "vendor=opaque", "baggage": "user=" + secretBaggage}

	first := toolCall(elicitCaps, "flow", M{"note": secretArg})
	first = withMeta(first, traceMeta)
	r := f.send(t, "/mcp", 1, "tools/call", first, auth)
	token := tokenOf(t, r)

	retry := withMeta(toolCall(elicitCaps, "flow", M{"note": secretArg}), traceMeta)
	retry["requestState"] = token
	retry["inputResponses"] = M{"approve": M{"action": "accept", "content": M{"ok": true}}}
	if r := f.send(t, "/mcp", 2, "tools/call", retry, auth); r.Status != 200 || r.result(t)["resultType"] != "complete" {
		t.Fatalf("retry: %v", r)
	}

	spans := exp.GetSpans()
	servers := spansNamed(spans, "tools/call flow")
	if len(servers) != 2 {
		t.Fatalf("want 2 server spans named %q, got %d: %v", "tools/call flow", len(servers), names(spans))
	}
	for _, sv := range servers {
		if sv.SpanKind != trace.SpanKindServer {
			t.Errorf("server span kind %v", sv.SpanKind)
		}
		if got := sv.SpanContext.TraceID().String(); got != clientTraceID {
			t.Errorf("server span trace id %s, want the client's %s", got, clientTraceID)
		}
		if got := sv.Parent.SpanID().String(); got != clientSpanID || !sv.Parent.IsRemote() {
			t.Errorf("server span parent %s (remote %v), want the client's span %s", got, sv.Parent.IsRemote(), clientSpanID)
		}
		if got := sv.Parent.TraceState().String(); got != "vendor=opaque" {
			t.Errorf("tracestate %q was not continued", got)
		}
		for key, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "flow",
			"mcp.protocol.version": ProtocolVersion, "network.transport": "tcp"} {
			if v, ok := attrOf(sv, key); !ok || v.AsString() != want {
				t.Errorf("server span %s = %q, want %q", key, v.String(), want)
			}
		}
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	// Every child hangs (directly or through mcp.handler) under a server span.
	wantParent := map[string]string{
		"mcp.admission":  "tools/call flow",
		"mcp.handler":    "tools/call flow",
		"mcp.state.seal": "mcp.handler",
		"mcp.state.open": "tools/call flow", // verified before the Observer, the middleware and the handler
	}
	for child, parent := range wantParent {
		found := spansNamed(spans, child)
		if len(found) == 0 {
			t.Errorf("no %s span: %v", child, names(spans))
		}
		for _, c := range found {
			p, ok := byID[c.Parent.SpanID()]
			if !ok || p.Name != parent {
				t.Errorf("%s span's parent is %q, want %q", child, p.Name, parent)
			}
			if c.SpanContext.TraceID().String() != clientTraceID {
				t.Errorf("%s span is in trace %s", child, c.SpanContext.TraceID())
			}
		}
	}
	if o, ok := attrOf(servers[0], "weft.outcome"); !ok || o.AsString() != "input_required" {
		t.Errorf("first call outcome %q", o.String())
	}
	if o, ok := attrOf(servers[1], "weft.outcome"); !ok || o.AsString() != "complete" {
		t.Errorf("retry outcome %q", o.String())
	}
	// Neither the arguments, the bearer token, the baggage nor any part of
	// the sealed state appears anywhere.
	assertNoSecrets(t, spans, secretArg, secretToken, secretBaggage, token, token[len(token)-24:], token[8:32])
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestTracingBoundsAndTransportLink: oversize or malformed trace context is
// ignored (the request is served under the transport's span, as a new trace
// without one); a valid one replaces the transport's span as parent and is
// linked to it.
func TestTracingBoundsAndTransportLink(t *testing.T) {
	tp, exp := newTracer(t)
	s, _ := httpTestServer(t, &Options{TracerProvider: tp})
	transportTracer := tp.Tracer("transport")
	var mu sync.Mutex
	var transport trace.SpanContext
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := transportTracer.Start(r.Context(), "HTTP POST")
		mu.Lock()
		transport = span.SpanContext()
		mu.Unlock()
		s.ServeHTTP(w, r.WithContext(ctx))
		span.End()
	})
	ts := startHTTP(t, h)
	for _, c := range []struct {
		name        string
		traceparent any
		continued   bool
	}{
		{"valid", clientParent, true},
		{"oversize", clientParent + strings.Repeat("0", maxTraceparentBytes), false},
		{"malformed", "00-zzzz-" + clientSpanID + "-01", false},
		{"not a string", 7, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp.Reset()
			p := withMeta(toolCall(nil, "echo", nil), M{"traceparent": c.traceparent, "baggage": strings.Repeat("k=v,", 3000)})
			if r := rpc(t, ts.URL, 1, "tools/call", p); r.Status != 200 {
				t.Fatalf("%v", r)
			}
			sv := spansNamed(exp.GetSpans(), "tools/call echo")
			mu.Lock()
			transport := transport
			mu.Unlock()
			if len(sv) != 1 {
				t.Fatalf("spans %v", names(exp.GetSpans()))
			}
			if c.continued {
				if sv[0].Parent.SpanID().String() != clientSpanID || len(sv[0].Links) != 1 || sv[0].Links[0].SpanContext.SpanID() != transport.SpanID() {
					t.Errorf("parent %s links %v, want the client's span and a link to the transport span", sv[0].Parent.SpanID(), sv[0].Links)
				}
				return
			}
			if sv[0].Parent.SpanID() != transport.SpanID() || sv[0].SpanContext.TraceID() != transport.TraceID() || len(sv[0].Links) != 0 {
				t.Errorf("parent %s, want the transport span %s", sv[0].Parent.SpanID(), transport.SpanID())
			}
		})
	}
}

// TestTracingTaskStep: a task step's span continues the trace context sent
// with the call that created the task.
func TestTracingTaskStep(t *testing.T) {
	tp, exp := newTracer(t)
	store := task.NewMemoryStore(nil)
	t.Cleanup(func() { _ = store.Close() })
	s, _ := newServer(t, &Options{TracerProvider: tp, Tasks: &TaskOptions{Store: store, PollInterval: 10 * time.Millisecond}})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	must(t, s.AddTool(Tool{Name: "job", Description: "Runs as a task.", Task: TaskOptional},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if req.Task() == nil {
				return nil, RunAsTask(nil)
			}
			return textResult("done"), nil
		}))
	ts := startHTTP(t, s)
	p := withMeta(toolCall(tasksCaps, "job", M{"note": secretArg}), M{"traceparent": clientParent})
	if r := rpc(t, ts.URL, 1, "tools/call", p); r.result(t)["resultType"] != "task" {
		t.Fatalf("want a task, got %v", r)
	}
	deadline := time.Now().Add(hangGuard)
	var steps []tracetest.SpanStub
	for len(steps) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		steps = spansNamed(exp.GetSpans(), "mcp.task.step")
	}
	if len(steps) != 1 {
		t.Fatalf("task step spans: %v", names(exp.GetSpans()))
	}
	st := steps[0]
	if st.SpanContext.TraceID().String() != clientTraceID || st.Parent.SpanID().String() != clientSpanID {
		t.Errorf("step span in trace %s under %s, want the client's call", st.SpanContext.TraceID(), st.Parent.SpanID())
	}
	if v, _ := attrOf(st, "weft.task.result"); v.AsString() != "completed" {
		t.Errorf("step result %q", v.String())
	}
	if v, _ := attrOf(st, "gen_ai.tool.name"); v.AsString() != "job" {
		t.Errorf("step tool %q", v.String())
	}
	assertNoSecrets(t, exp.GetSpans(), secretArg)
}

var tasksCaps = M{"extensions": M{TasksExtension: M{}}}

// TestStateFailureReasonsBounded: every reason openState can give maps to a
// named metric label (none falls through to "other").
func TestStateFailureReasonsBounded(t *testing.T) {
	src, err := os.ReadFile("state.go")
	must(t, err)
	reasons := regexp.MustCompile(`fail\("([^"]+)"\)`).FindAllStringSubmatch(string(src), -1)
	if len(reasons) < 8 {
		t.Fatalf("found only %d reasons in state.go", len(reasons))
	}
	check := func(msg string) {
		t.Helper()
		if got := stateFailureReason(errInvalidState(errorString(msg))); got == "other" {
			t.Errorf("reason %q maps to %q", msg, got)
		}
	}
	for _, r := range reasons {
		check(r[1])
	}
	for _, r := range []string{"open: auth_failed", "open: unknown_key", "open: malformed", "open: too_large", "binding: x",
		"malformed state plaintext", "malformed state keys", "malformed state request id"} {
		check(r)
	}
	if got := stateFailureReason(errInvalidState(errorString("open: auth_failed"))); got != "auth_failed" {
		t.Errorf("auth_failed maps to %q", got)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// BenchmarkToolsCallTelemetry is BenchmarkToolsCall with tracing (every
// span sampled, none exported), Prometheus metrics and the request log (to a
// discarding JSON handler) all on.
func BenchmarkToolsCallTelemetry(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	mp, _, err := metrics.NewPrometheus(prometheus.NewRegistry())
	must(b, err)
	s, err := NewServer(Implementation{Name: "bench", Version: "1.0.0"}, &Options{TracerProvider: tp, MeterProvider: mp,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	type addArgs struct {
		A int64 `json:"a"`
		B int64 `json:"b"`
	}
	type sum struct {
		Sum int64 `json:"sum"`
	}
	must(b, AddTool(s, Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, req *Request, in addArgs) (sum, error) { return sum{Sum: in.A + in.B}, nil }))
	msg := body(b, 1, "tools/call", withMeta(toolCall(nil, "add", M{"a": 40, "b": 2}), M{"traceparent": clientParent}))
	h := stdHeaders(msg)
	b.ReportAllocs()
	for b.Loop() {
		if err := serveOnce(s, msg, h); err != nil {
			b.Fatal(err)
		}
	}
}
