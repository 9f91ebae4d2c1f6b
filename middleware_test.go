package weft

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
)

// methodLog records what a middleware sees: "method name" plus " task" for task
// steps and the protocol version's era.
type methodLog struct {
	mu  sync.Mutex
	got []string
}

func (s *methodLog) middleware(next Handler) Handler {
	return func(ctx context.Context, req *Request) (Result, error) {
		res, err := next(ctx, req)
		era := "2026"
		if req.ProtocolVersion != ProtocolVersion {
			era = "2025"
		}
		if req.Transport() == "stdio" {
			era += "/stdio"
		}
		entry := fmt.Sprintf("%s %s", era, req.Method)
		if req.Name != "" && req.Method != "tasks/get" && req.Method != "tasks/cancel" && req.Method != "tasks/update" {
			entry += " " + req.Name
		}
		if req.Task() != nil {
			entry += " step"
		}
		entry += " -> " + strings.ReplaceAll(fmt.Sprintf("%T", res), "github.com/weftmcp/weft.", "")
		if err != nil {
			entry += " error"
			if ir := (*InputRequired)(nil); errors.As(err, &ir) {
				entry += " *weft.InputRequired" // the one way input_required leaves a handler
			}
		}
		s.mu.Lock()
		s.got = append(s.got, entry)
		s.mu.Unlock()
		return res, err
	}
}

func (s *methodLog) has(entry string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.got, entry)
}

// TestMiddlewareSeesEveryMethod: one middleware wraps every method of both
// eras, on HTTP and stdio, and the steps of durable tasks, with the typed
// result.
func TestMiddlewareSeesEveryMethod(t *testing.T) {
	rec := &methodLog{}
	store := task.NewMemoryStore(nil)
	t.Cleanup(func() { _ = store.Close() })
	s, _ := legacyServerFor(t, &Options{Middleware: []Middleware{rec.middleware}, Tasks: &TaskOptions{Store: store, PollInterval: 10 * time.Millisecond}})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	addText(t, s, "echo", "hi")
	addWizard(t, s, "wizard", StateFramework)
	must(t, s.AddTool(Tool{Name: "job", Description: "Runs as a task.", Task: TaskOptional},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if req.Task() == nil {
				return nil, RunAsTask(nil)
			}
			return textResult("done"), nil
		}))
	must(t, s.AddPrompt(Prompt{Name: "greet", Description: "Greets.", Arguments: []PromptArgument{{Name: "who"}},
		Complete: func(ctx context.Context, req *Request, c CompletionRequest) (Completion, error) {
			return Completion{Values: []string{"world"}}, nil
		}},
		func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent("hello " + args["who"])}}}, nil
		}))
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "file:///a", Name: "a"}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{{URI: req.Name, Text: "a"}}}, nil
		}))
	must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: "file:///t/{x}", Name: "t"},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{{URI: req.Name, Text: "t"}}}, nil
		}))
	if _, err := s.HandleMethod("x/echo", MethodOptions{}, func(ctx context.Context, req *Request) (*MethodResult, error) {
		return &MethodResult{Body: exactjson.Object(exactjson.Field("ok", exactjson.Bool(true)))}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ts := startHTTP(t, s)

	// 2026-07-28 over HTTP.
	for i, c := range []struct {
		method string
		p      M
	}{
		{"server/discover", params(nil)},
		{"tools/list", params(nil)},
		{"tools/call", toolCall(nil, "echo", nil)},
		{"prompts/list", params(nil)},
		{"prompts/get", params(M{"name": "greet", "arguments": M{"who": "x"}})},
		{"resources/list", params(nil)},
		{"resources/templates/list", params(nil)},
		{"resources/read", params(M{"uri": "file:///t/1"})},
		{"completion/complete", params(M{"ref": M{"type": "ref/prompt", "name": "greet"}, "argument": M{"name": "who", "value": "w"}})},
		{"x/echo", params(nil)},
	} {
		if r := rpc(t, ts.URL, i+1, c.method, c.p); r.Status != 200 {
			t.Fatalf("%s: %v", c.method, r)
		}
	}
	r := rpc(t, ts.URL, 50, "tools/call", toolCall(tasksCaps, "job", nil))
	taskID, _ := r.result(t)["taskId"].(string)
	if taskID == "" {
		t.Fatalf("no task: %v", r)
	}
	deadline := time.Now().Add(hangGuard)
	for !rec.has("2026 tools/call job step -> *weft.CallToolResult") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for i, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		p := paramsCaps(tasksCaps, M{"taskId": taskID})
		if m == "tasks/update" {
			p["inputResponses"] = M{}
		}
		if r := rpc(t, ts.URL, 51+i, m, p, setHeader("Mcp-Name", taskID)); r.Status != 200 {
			t.Fatalf("%s: %v", m, r)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	res, st := openStream(t, ctx, ts.URL, 54, "subscriptions/listen", params(M{"notifications": M{"toolsListChanged": true}}))
	st.nextMsg() // the acknowledgement
	cancel()
	res.Body.Close()
	deadline = time.Now().Add(hangGuard)
	// Over HTTP/1.1 the stream is detached once acknowledged: next returns
	// then, with an *EmptyResult (listen_detached.go).
	for !rec.has("2026 subscriptions/listen -> *weft.EmptyResult") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}

	// 2025-11-25 over HTTP, the input bridge included.
	lc := newLegacyClient(t, ts.URL)
	lc.initialize()
	lc.onRequest = elicitAccept(M{"v": "x"})
	for i, c := range []struct {
		method string
		p      M
	}{
		{"ping", nil},
		{"logging/setLevel", M{"level": "info"}},
		{"resources/subscribe", M{"uri": "file:///a"}},
		{"resources/unsubscribe", M{"uri": "file:///a"}},
		{"tools/list", nil},
		{"tools/call", M{"name": "wizard"}},
		{"prompts/get", M{"name": "greet", "arguments": M{"who": "y"}}},
		{"resources/read", M{"uri": "file:///a"}},
	} {
		if r := lc.call(100+i, c.method, c.p); r.Status != 200 || strings.Contains(string(r.Body), `"error"`) {
			t.Fatalf("legacy %s: %v", c.method, r)
		}
	}

	// Both eras over stdio.
	stdio := startStdioPipe(t, s)
	stdio.roundTrip(t, body(t, 1, "tools/call", toolCall(nil, "echo", nil)))
	stdio.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	stdio.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))

	for _, want := range []string{
		"2026 server/discover -> *weft.DiscoverResult",
		"2026 tools/list -> *weft.Page[Tool]",
		"2026 tools/call echo -> *weft.CallToolResult",
		"2026 prompts/list -> *weft.Page[Prompt]",
		"2026 prompts/get greet -> *weft.GetPromptResult",
		"2026 resources/list -> *weft.Page[ResourceInfo]",
		"2026 resources/templates/list -> *weft.Page[ResourceTemplate]",
		"2026 resources/read file:///t/1 -> *weft.ReadResourceResult",
		"2026 completion/complete -> *weft.CompleteResult",
		"2026 x/echo -> *weft.MethodResult",
		"2026 tools/call job -> *weft.CreateTaskResult",
		"2026 tools/call job step -> *weft.CallToolResult",
		"2026 tasks/get -> *weft.GetTaskResult",
		"2026 tasks/cancel -> *weft.EmptyResult",
		"2026 tasks/update -> *weft.EmptyResult",
		"2026 subscriptions/listen -> *weft.EmptyResult",
		"2025 initialize -> *weft.InitializeResult",
		"2025 ping -> *weft.EmptyResult",
		"2025 logging/setLevel -> *weft.EmptyResult",
		"2025 resources/subscribe -> *weft.EmptyResult",
		"2025 resources/unsubscribe -> *weft.EmptyResult",
		"2025 tools/list -> *weft.Page[Tool]",
		"2025 tools/call wizard -> <nil> error *weft.InputRequired",
		"2025 tools/call wizard -> *weft.CallToolResult",
		"2025 prompts/get greet -> *weft.GetPromptResult",
		"2025 resources/read file:///a -> *weft.ReadResourceResult",
		"2026/stdio tools/call echo -> *weft.CallToolResult",
		"2025/stdio initialize -> *weft.InitializeResult",
		"2025/stdio ping -> *weft.EmptyResult",
	} {
		if !rec.has(want) {
			t.Errorf("the middleware did not see %q; it saw:\n%s", want, strings.Join(rec.got, "\n"))
		}
	}
}

// stdioPipe serves a server over stdio through in-process pipes.
type stdioPipe struct {
	in  *io.PipeWriter
	out *bufio.Reader
}

func startStdioPipe(t *testing.T, s *Server) *stdioPipe {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		<-done
	})
	return &stdioPipe{in: inW, out: bufio.NewReader(outR)}
}

// roundTrip sends one request line and returns the response line (skipping
// notifications).
func (p *stdioPipe) roundTrip(t *testing.T, line []byte) M {
	t.Helper()
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := p.out.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		m := decodeObj(t, b)
		if _, ok := m["id"]; ok {
			if _, bad := m["error"]; bad {
				t.Fatalf("stdio error: %s", b)
			}
			return m
		}
	}
}

// TestReservedCodeLiteralRefused: an *Error built as a literal with a
// reserved code is refused where errors are encoded, in every method.
func TestReservedCodeLiteralRefused(t *testing.T) {
	s, logs := newServer(t, nil)
	for _, code := range []Code{CodeInvalidParams, CodeMethodNotFound, CodeRateLimited, -32000, CodeInternalError} {
		name := fmt.Sprintf("c%d", -code)
		must(t, s.AddTool(Tool{Name: name, Description: "Poses as the framework."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return nil, fmt.Errorf("wrapped: %w", &Error{Code: code, Message: "forged", Data: exactjson.String("x")})
		}))
	}
	if _, err := s.HandleMethod("x/forge", MethodOptions{}, func(ctx context.Context, req *Request) (*MethodResult, error) {
		return nil, &Error{Code: CodeInvalidRequest, Message: "forged"}
	}); err != nil {
		t.Fatal(err)
	}
	for i, code := range []Code{CodeInvalidParams, CodeMethodNotFound, CodeRateLimited, -32000, CodeInternalError} {
		r := rpcRec(t, s, "/mcp", i, "tools/call", toolCall(nil, fmt.Sprintf("c%d", -code), nil))
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32603,"message":"Internal error"}}`, i)
		if r.Status != 500 || string(r.Body) != want {
			t.Errorf("code %d: got %v, want 500 %s", code, r, want)
		}
	}
	if r := rpcRec(t, s, "/mcp", 9, "x/forge", params(nil)); r.Status != 500 || !strings.Contains(string(r.Body), `"code":-32603`) {
		t.Errorf("custom method: %v", r)
	}
	if n := logs.count(slog.LevelError, "reserved error code"); n != 6 {
		t.Errorf("%d error logs name the forged code, want 6: %v", n, logs.records())
	}
	// Application codes pass unchanged.
	must(t, s.AddTool(Tool{Name: "app", Description: "An application error."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		return nil, &Error{Code: 4711, Message: "out of stock"}
	}))
	if r := rpcRec(t, s, "/mcp", 10, "tools/call", toolCall(nil, "app", nil)); !strings.Contains(string(r.Body), `"code":4711,"message":"out of stock"`) {
		t.Errorf("application error: %v", r)
	}
}

func panickingHandler() { panic(errors.New("kaboom")) }

// TestPanicStackLogged: a panic in any handler (tools, prompts, resources,
// task steps) is logged once with the stack of the panicking goroutine.
func TestPanicStackLogged(t *testing.T) {
	store := task.NewMemoryStore(nil)
	t.Cleanup(func() { _ = store.Close() })
	s, logs := newServer(t, &Options{Tasks: &TaskOptions{Store: store, PollInterval: 10 * time.Millisecond}})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	must(t, s.AddTool(Tool{Name: "boom", Description: "Panics."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		panickingHandler()
		return nil, nil
	}))
	must(t, s.AddTool(Tool{Name: "boomtask", Description: "Panics in its task.", Task: TaskOptional}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		if req.Task() == nil {
			return nil, RunAsTask(nil)
		}
		panickingHandler()
		return nil, nil
	}))
	must(t, s.AddPrompt(Prompt{Name: "boom", Description: "Panics."}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		panickingHandler()
		return nil, nil
	}))
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "file:///boom", Name: "boom"}}, func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
		panickingHandler()
		return nil, nil
	}))
	for i, c := range []struct {
		method string
		p      M
	}{
		{"tools/call", toolCall(nil, "boom", nil)},
		{"prompts/get", params(M{"name": "boom"})},
		{"resources/read", params(M{"uri": "file:///boom"})},
	} {
		if r := rpcRec(t, s, "/mcp", i, c.method, c.p); r.Status != 500 {
			t.Errorf("%s: %v", c.method, r)
		}
	}
	if r := rpcRec(t, s, "/mcp", 9, "tools/call", toolCall(tasksCaps, "boomtask", nil)); r.Status != 200 {
		t.Fatal(r)
	}
	deadline := time.Now().Add(hangGuard)
	for logs.count(slog.LevelError, "handler panic") < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	var withStack, task int
	for _, r := range logs.records() {
		if r.Msg != "weft: handler panic" {
			continue
		}
		if strings.Contains(r.Attrs, "panickingHandler") && strings.Contains(r.Attrs, "kaboom") {
			withStack++
		}
		if strings.Contains(r.Attrs, "task=") {
			task++
		}
	}
	if withStack < 4 || task < 1 {
		t.Fatalf("%d panic logs with the stack (want 4 or more), %d of a task step: %v", withStack, task, logs.records())
	}
}

// TestMiddlewareCannotRebindState: a middleware that rewrites the exported
// fields of a Request changes neither what request state is sealed to nor
// what a retry's state is verified against.
func TestMiddlewareCannotRebindState(t *testing.T) {
	tamper := func(next Handler) Handler {
		return func(ctx context.Context, req *Request) (Result, error) {
			req.Endpoint = "/other"
			req.ProtocolVersion = "1999-01-01"
			req.Identity.Partition = "someone-else"
			req.ID = StringID("forged")
			req.Params = req.Params.With("arguments", exactjson.Object(exactjson.Field("n", exactjson.Int(2))))
			return next(ctx, req)
		}
	}
	s, _ := newServer(t, &Options{Middleware: []Middleware{tamper}})
	form := Form(RequiredCapability)
	must(t, s.AddTool(Tool{Name: "confirm", Description: "Asks once.", Inputs: []Input{form}, StateMode: StateFramework},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if _, ok, _ := FrameworkState[exactjson.Value](req); ok {
				return textResult("confirmed"), nil
			}
			return nil, AskInput("ok", form.Ask("Sure?", mustParse(t, `{"type":"object","properties":{"yes":{"type":"boolean"}}}`))).
				WithFrameworkState(exactjson.String("asked"))
		}))
	caps := M{"elicitation": M{"form": M{}}}
	first := rpcRec(t, s, "/mcp", 1, "tools/call", toolCall(caps, "confirm", M{"n": 1})).result(t)
	state, _ := first["requestState"].(string)
	if state == "" {
		t.Fatalf("no state: %v", first)
	}
	retry := toolCall(caps, "confirm", M{"n": 1})
	retry["requestState"] = state
	retry["inputResponses"] = M{"ok": M{"action": "accept", "content": M{"yes": true}}}
	if got := rpcRec(t, s, "/mcp", 2, "tools/call", retry).text(t); got != "confirmed" {
		t.Fatalf("the retry as sent (state bound to the request as received): %q", got)
	}
	// The state is bound to the arguments as received: a retry with other
	// arguments fails, whatever the middleware makes of them.
	other := toolCall(caps, "confirm", M{"n": 2})
	other["requestState"] = state
	other["inputResponses"] = retry["inputResponses"]
	rpcRec(t, s, "/mcp", 3, "tools/call", other).wantError(t, 400, CodeInvalidParams)
}
