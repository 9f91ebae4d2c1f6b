package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/partners"
	"github.com/weftmcp/weft/internal/syncbuf"
)

// ---------------------------------------------------------------------------
// Helpers

func TestMain(m *testing.M) {
	if os.Getenv("WEFT_CLIENT_TEST_STDIO_SERVER") == "1" {
		srv := newStdioTestServer(slog.New(slog.NewTextHandler(os.Stderr, nil)), nil)
		if err := srv.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func mustParse(t testing.TB, s string) exactjson.Value {
	t.Helper()
	v, err := exactjson.ParseString(s, exactjson.Limits{})
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

func enc(v exactjson.Value) string {
	b, err := exactjson.Encode(v, 0)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startConformance builds ./cmd/weft-conformance into a temporary
// directory, starts it on a free loopback port and returns its /mcp URL.
func startConformance(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the conformance server")
	}
	bin := filepath.Join(t.TempDir(), "weft-conformance")
	build := exec.Command("go", "build", "-o", bin, "github.com/weftmcp/weft/cmd/weft-conformance")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build weft-conformance: %v\n%s", err, out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(partners.FreePort(t))
	partners.Start(t, exec.Command(bin, "-addr", addr), addr)
	return "http://" + addr + "/mcp"
}

// recorder is a Transport recording every exchange.
type recorder struct {
	Transport
	mu    sync.Mutex
	calls []exchange
}

type exchange struct {
	req  *Request
	resp *Response
	err  error
}

func (r *recorder) Do(ctx context.Context, req *Request, notify func(Notification)) (*Response, error) {
	resp, err := r.Transport.Do(ctx, req, notify)
	r.mu.Lock()
	r.calls = append(r.calls, exchange{req, resp, err})
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) MirrorsParamHeaders() bool {
	pt, ok := r.Transport.(ParamHeaderTransport)
	return ok && pt.MirrorsParamHeaders()
}

func (r *recorder) of(method string) []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []exchange
	for _, c := range r.calls {
		if c.req.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) methods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		out = append(out, c.req.Method)
	}
	return out
}

// headerLog is an http.RoundTripper recording request headers.
type headerLog struct {
	mu   sync.Mutex
	reqs []http.Header
}

func (h *headerLog) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.reqs = append(h.reqs, r.Header.Clone())
	h.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (h *headerLog) byMethod(method string) []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []http.Header
	for _, hd := range h.reqs {
		if hd.Get("Mcp-Method") == method {
			out = append(out, hd)
		}
	}
	return out
}

// testHandlers answer the conformance fixtures' input requests.
type testHandlers struct {
	mu      sync.Mutex
	elicits []exactjson.Value
	samples int
	roots   int
}

func (h *testHandlers) handlers() Handlers {
	return Handlers{
		Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
			h.mu.Lock()
			h.elicits = append(h.elicits, params)
			h.mu.Unlock()
			schema, _ := params.Get("requestedSchema")
			props, _ := schema.Get("properties")
			var content []exactjson.Member
			for name := range props.All() {
				switch name {
				case "name":
					content = append(content, exactjson.Field(name, exactjson.String("Alice")))
				case "ok":
					content = append(content, exactjson.Field(name, exactjson.Bool(true)))
				default:
					content = append(content, exactjson.Field(name, exactjson.String("testing")))
				}
			}
			return exactjson.Object(
				exactjson.Field("action", exactjson.String("accept")),
				exactjson.Field("content", exactjson.Object(content...))), nil
		},
		Sample: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
			h.mu.Lock()
			h.samples++
			h.mu.Unlock()
			if _, ok := params.Get("maxTokens"); !ok {
				return exactjson.Value{}, errors.New("sampling params without maxTokens")
			}
			return exactjson.ParseString(`{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"test-model","stopReason":"endTurn"}`, exactjson.Limits{})
		},
		Roots: func(ctx context.Context) (exactjson.Value, error) {
			h.mu.Lock()
			h.roots++
			h.mu.Unlock()
			return exactjson.ParseString(`{"roots":[{"uri":"file:///tmp/a","name":"a"},{"uri":"file:///tmp/b"}]}`, exactjson.Limits{})
		},
	}
}

// checkMRTR verifies the retries of one MRTR exchange: a new id each time,
// the original params unchanged, inputResponses answering exactly the
// previous inputRequests, and requestState echoed byte for byte.
func checkMRTR(t *testing.T, calls []exchange) {
	t.Helper()
	if len(calls) == 0 {
		t.Fatal("no requests recorded")
	}
	ids := map[int64]bool{}
	base := enc(calls[0].req.Params.Without("_meta"))
	for i, c := range calls {
		if ids[c.req.ID] {
			t.Errorf("request %d reuses id %d", i, c.req.ID)
		}
		ids[c.req.ID] = true
		if got := enc(c.req.Params.Without("_meta", "inputResponses", "requestState")); got != base {
			t.Errorf("retry %d changed the original params:\n got %s\nwant %s", i, got, base)
		}
		meta := metaOf(c.req.Params)
		for _, k := range []string{metaProtocolVersion, metaClientCapabilities, metaClientInfo} {
			if !meta.Has(k) {
				t.Errorf("request %d lacks _meta %s", i, k)
			}
		}
		if i == 0 {
			if c.req.Params.Has("inputResponses") || c.req.Params.Has("requestState") {
				t.Errorf("first request carries MRTR fields: %s", enc(c.req.Params))
			}
			continue
		}
		prev := calls[i-1].resp.Result
		if ps, ok := prev.Get("requestState"); ok {
			got, ok := c.req.Params.Get("requestState")
			if !ok || enc(got) != enc(ps) {
				t.Errorf("retry %d requestState = %s, want exact echo %s", i, enc(got), enc(ps))
			}
		} else if c.req.Params.Has("requestState") {
			t.Errorf("retry %d invents a requestState", i)
		}
		reqs, _ := prev.Get("inputRequests")
		resps, _ := c.req.Params.Get("inputResponses")
		var wantKeys, gotKeys []string
		for k := range reqs.All() {
			wantKeys = append(wantKeys, k)
		}
		for k := range resps.All() {
			gotKeys = append(gotKeys, k)
		}
		if !slices.Equal(wantKeys, gotKeys) {
			t.Errorf("retry %d answers %v, want %v", i, gotKeys, wantKeys)
		}
	}
}

// ---------------------------------------------------------------------------
// Against cmd/weft-conformance over Streamable HTTP

func TestConformance(t *testing.T) {
	url := startConformance(t)
	newClient := func(opts Options) (*Client, *recorder, *headerLog) {
		hl := &headerLog{}
		rec := &recorder{Transport: NewHTTPTransport(url, &HTTPOptions{Client: &http.Client{Transport: hl}})}
		return New(rec, &opts), rec, hl
	}

	t.Run("discover", func(t *testing.T) {
		t.Parallel()
		c, rec, hl := newClient(Options{ClientInfo: Implementation{Name: "weft-client-test", Version: "1.2.3"}})
		d, err := c.Discover(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(d.SupportedVersions, ProtocolVersion) {
			t.Errorf("supportedVersions = %v", d.SupportedVersions)
		}
		if !d.Capabilities.Has("tools") || !d.Capabilities.Has("prompts") {
			t.Errorf("capabilities = %s", enc(d.Capabilities))
		}
		if str(d.ServerInfo, "name") != "weft-conformance" {
			t.Errorf("serverInfo = %s", enc(d.ServerInfo))
		}
		if d.Instructions == "" || d.CacheScope == "" {
			t.Errorf("instructions %q cacheScope %q", d.Instructions, d.CacheScope)
		}
		// _meta on the wire.
		meta := metaOf(rec.calls[0].req.Params)
		if str(meta, metaProtocolVersion) != ProtocolVersion {
			t.Errorf("_meta = %s", enc(meta))
		}
		info, _ := meta.Get(metaClientInfo)
		if enc(info) != `{"name":"weft-client-test","version":"1.2.3"}` {
			t.Errorf("clientInfo = %s", enc(info))
		}
		caps, _ := meta.Get(metaClientCapabilities)
		if enc(caps) != `{}` {
			t.Errorf("clientCapabilities = %s, want {}", enc(caps))
		}
		h := hl.byMethod("server/discover")[0]
		if h.Get("MCP-Protocol-Version") != ProtocolVersion || h.Get("Accept") != "application/json, text/event-stream" || h.Get("Mcp-Name") != "" {
			t.Errorf("headers = %v", h)
		}
	})

	t.Run("list_tools", func(t *testing.T) {
		t.Parallel()
		c, _, _ := newClient(Options{})
		tools, err := c.ListTools(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]Tool{}
		for _, tl := range tools {
			names[tl.Name] = tl
		}
		for _, want := range []string{"test_simple_text", "test_tool_with_progress", "test_x_mcp_header", "test_input_required_result_multi_round", "json_schema_2020_12_tool"} {
			if _, ok := names[want]; !ok {
				t.Errorf("tools/list lacks %s", want)
			}
		}
		if tl := names["test_x_mcp_header"]; str(tl.InputSchema, "type") != "object" || tl.Description == "" {
			t.Errorf("test_x_mcp_header = %s", enc(tl.Raw))
		}
	})

	t.Run("simple_call", func(t *testing.T) {
		t.Parallel()
		c, rec, hl := newClient(Options{})
		ctx := testCtx(t)
		res, err := c.CallTool(ctx, "test_simple_text", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() != "This is a simple text response for testing." || res.IsError || res.ResultType != "complete" {
			t.Errorf("result = %s", enc(res.Raw))
		}
		if got := rec.methods(); !slices.Equal(got, []string{"server/discover", "tools/list", "tools/call"}) {
			t.Errorf("methods = %v (the era probe, then the call)", got)
		}
		h := hl.byMethod("tools/call")[0]
		if h.Get("Mcp-Name") != "test_simple_text" {
			t.Errorf("Mcp-Name = %q", h.Get("Mcp-Name"))
		}
		res, err = c.CallTool(ctx, "test_error_handling", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(res.Text(), "intentionally") {
			t.Errorf("error tool result = %s", enc(res.Raw))
		}
		res, err = c.CallTool(ctx, "test_multiple_content_types", nil)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, b := range res.Content {
			types = append(types, b.Type)
		}
		if !slices.Equal(types, []string{"text", "image", "resource"}) || res.Content[1].MimeType != "image/png" || res.Content[1].Data == "" ||
			res.Content[2].URI != "test://mixed-content-resource" {
			t.Errorf("content = %s", enc(res.Raw))
		}
		if got := len(rec.of("tools/list")); got != 1 {
			t.Errorf("tools/list sent %d times, want once", got)
		}
		_, err = c.CallTool(ctx, "no_such_tool", nil)
		var rerr *RPCError
		if !errors.As(err, &rerr) || rerr.Code != CodeInvalidParams {
			t.Errorf("unknown tool: err = %v", err)
		}
	})

	t.Run("progress", func(t *testing.T) {
		t.Parallel()
		type ev struct {
			p, total float64
			msg      string
		}
		var mu sync.Mutex
		var events []ev
		c, rec, _ := newClient(Options{OnProgress: func(p, total float64, msg string) {
			mu.Lock()
			events = append(events, ev{p, total, msg})
			mu.Unlock()
		}})
		res, err := c.CallTool(testCtx(t), "test_tool_with_progress", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() != "Progress complete." {
			t.Errorf("result = %s", enc(res.Raw))
		}
		mu.Lock()
		defer mu.Unlock()
		want := []ev{{0, 100, "step 1"}, {50, 100, "step 2"}, {100, 100, "step 3"}}
		if !slices.Equal(events, want) {
			t.Errorf("progress = %v, want %v", events, want)
		}
		call := rec.of("tools/call")[0]
		tok, ok := metaOf(call.req.Params).Get("progressToken")
		if !ok || enc(tok) != fmt.Sprint(call.req.ID) {
			t.Errorf("progressToken = %s", enc(tok))
		}
	})

	t.Run("logging", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var logs []string
		c, _, _ := newClient(Options{LogLevel: "info", OnLog: func(level, logger string, data exactjson.Value) {
			mu.Lock()
			s, _ := data.AsString()
			logs = append(logs, level+"/"+logger+"/"+s)
			mu.Unlock()
		}})
		if _, err := c.CallTool(testCtx(t), "test_logging_tool", nil); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{"info/test_logging_tool/Tool execution started", "info/test_logging_tool/Tool processing data", "info/test_logging_tool/Tool execution completed"}
		if !slices.Equal(logs, want) {
			t.Errorf("logs = %q", logs)
		}
	})

	mrtrCases := []struct {
		tool, want    string
		requests      int // tools/call requests in the exchange
		elicits       int
		samples, root int
	}{
		{"test_input_required_result_elicitation", "Hello, Alice!", 2, 1, 0, 0},
		{"test_input_required_result_sampling", "The model answered: Paris", 2, 0, 1, 0},
		{"test_input_required_result_list_roots", "The client has 2 root(s).", 2, 0, 0, 1},
		{"test_input_required_result_request_state", "state-ok", 2, 1, 0, 0},
		{"test_input_required_result_multiple_inputs", "All inputs received.", 2, 1, 1, 1},
		{"test_input_required_result_multi_round", "Both rounds completed.", 3, 2, 0, 0},
	}
	for _, tc := range mrtrCases {
		t.Run("mrtr/"+strings.TrimPrefix(tc.tool, "test_input_required_result_"), func(t *testing.T) {
			t.Parallel()
			th := &testHandlers{}
			c, rec, _ := newClient(Options{Handlers: th.handlers()})
			res, err := c.CallTool(testCtx(t), tc.tool, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != tc.want || res.IsError {
				t.Errorf("result = %s, want text %q", enc(res.Raw), tc.want)
			}
			calls := rec.of("tools/call")
			if len(calls) != tc.requests {
				t.Errorf("%d tools/call requests, want %d", len(calls), tc.requests)
			}
			checkMRTR(t, calls)
			th.mu.Lock()
			defer th.mu.Unlock()
			if len(th.elicits) != tc.elicits || th.samples != tc.samples || th.roots != tc.root {
				t.Errorf("handlers called: elicit %d sample %d roots %d", len(th.elicits), th.samples, th.roots)
			}
			caps, _ := metaOf(calls[0].req.Params).Get(metaClientCapabilities)
			if enc(caps) != `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}` {
				t.Errorf("derived capabilities = %s", enc(caps))
			}
		})
	}

	t.Run("mrtr/prompt", func(t *testing.T) {
		t.Parallel()
		th := &testHandlers{}
		c, rec, hl := newClient(Options{Handlers: th.handlers()})
		p, err := c.GetPrompt(testCtx(t), "test_input_required_result_prompt", nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Text() != "Prompt with context: testing" || len(p.Messages) != 1 || p.Messages[0].Role != "user" {
			t.Errorf("prompt = %s", enc(p.Raw))
		}
		checkMRTR(t, rec.of("prompts/get"))
		if len(rec.of("prompts/get")) != 2 {
			t.Errorf("prompts/get sent %d times", len(rec.of("prompts/get")))
		}
		for _, h := range hl.byMethod("prompts/get") {
			if h.Get("Mcp-Name") != "test_input_required_result_prompt" {
				t.Errorf("Mcp-Name = %q", h.Get("Mcp-Name"))
			}
		}
	})

	t.Run("mrtr/max_rounds", func(t *testing.T) {
		t.Parallel()
		th := &testHandlers{}
		c, _, _ := newClient(Options{Handlers: th.handlers(), MaxRounds: 1})
		_, err := c.CallTool(testCtx(t), "test_input_required_result_multi_round", nil)
		if !errors.Is(err, ErrTooManyRounds) {
			t.Fatalf("err = %v, want ErrTooManyRounds", err)
		}
		c, _, _ = newClient(Options{Handlers: th.handlers(), MaxRounds: 2})
		if _, err := c.CallTool(testCtx(t), "test_input_required_result_multi_round", nil); err != nil {
			t.Fatalf("MaxRounds 2: %v", err)
		}
	})

	t.Run("mrtr/missing_handler", func(t *testing.T) {
		t.Parallel()
		th := &testHandlers{}
		h := th.handlers()
		h.Sample = nil
		// Declares sampling without a handler for it.
		c, rec, _ := newClient(Options{Handlers: h, Capabilities: mustParse(t, `{"elicitation":{},"sampling":{}}`)})
		_, err := c.CallTool(testCtx(t), "test_input_required_result_sampling", nil)
		var mh *MissingHandlerError
		if !errors.As(err, &mh) || mh.Method != "sampling/createMessage" || !strings.Contains(err.Error(), "sampling/createMessage") {
			t.Fatalf("err = %v, want a MissingHandlerError naming sampling/createMessage", err)
		}
		if n := len(rec.of("tools/call")); n != 1 {
			t.Errorf("%d tools/call sent, want 1", n)
		}
	})

	t.Run("missing_capability", func(t *testing.T) {
		t.Parallel()
		c, _, _ := newClient(Options{})
		_, err := c.CallTool(testCtx(t), "test_missing_capability", nil)
		var rerr *RPCError
		if !errors.As(err, &rerr) || rerr.Code != CodeMissingRequiredClientCapability {
			t.Fatalf("err = %v, want -32021", err)
		}
		req, _ := rerr.Data.Get("requiredCapabilities")
		if !req.Has("sampling") || rerr.HTTPStatus != http.StatusBadRequest {
			t.Errorf("data = %s status %d", enc(rerr.Data), rerr.HTTPStatus)
		}
		th := &testHandlers{}
		c, _, _ = newClient(Options{Handlers: th.handlers()})
		res, err := c.CallTool(testCtx(t), "test_missing_capability", nil)
		if err != nil || res.Text() != "The client declared sampling." {
			t.Errorf("with sampling: %v %v", res, err)
		}
	})

	t.Run("x_mcp_header", func(t *testing.T) {
		t.Parallel()
		c, rec, hl := newClient(Options{})
		ctx := testCtx(t)
		res, err := c.CallTool(ctx, "test_x_mcp_header", map[string]any{"region": "us-west1", "query": "SELECT 1"})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || !strings.Contains(res.Text(), `"region":"us-west1"`) {
			t.Errorf("result = %s", enc(res.Raw))
		}
		if got := rec.methods(); !slices.Equal(got, []string{"server/discover", "tools/list", "tools/call"}) {
			t.Errorf("methods = %v (after the era probe, tools must be listed once before the first call)", got)
		}
		h := hl.byMethod("tools/call")[0]
		if h.Get("Mcp-Param-Region") != "us-west1" || h.Get("Mcp-Name") != "test_x_mcp_header" || h.Get("Mcp-Method") != "tools/call" {
			t.Errorf("headers = %v", h)
		}
		// Non-ASCII: Base64 sentinel, accepted by the server.
		if _, err := c.CallTool(ctx, "test_x_mcp_header", map[string]any{"region": "Zürich"}); err != nil {
			t.Fatal(err)
		}
		if got := hl.byMethod("tools/call")[1].Get("Mcp-Param-Region"); got != "=?base64?WsO8cmljaA==?=" {
			t.Errorf("Mcp-Param-Region = %q", got)
		}
		// Absent and null arguments: no header.
		for _, args := range []any{map[string]any{"query": "q"}, map[string]any{"region": nil}} {
			if _, err := c.CallTool(ctx, "test_x_mcp_header", args); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range hl.byMethod("tools/call")[2:] {
			if _, ok := h["Mcp-Param-Region"]; ok {
				t.Errorf("header sent for an absent argument: %v", h)
			}
		}
		if n := len(rec.of("tools/list")); n != 1 {
			t.Errorf("tools/list sent %d times", n)
		}
	})

	t.Run("concurrent_first_calls_list_once", func(t *testing.T) {
		t.Parallel()
		c, rec, _ := newClient(Options{})
		ctx := testCtx(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := c.CallTool(ctx, "test_x_mcp_header", map[string]any{"region": "eu"}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := len(rec.of("tools/list")); n != 1 {
			t.Errorf("tools/list sent %d times, want once", n)
		}
	})

	t.Run("prompts_resources_completion", func(t *testing.T) {
		t.Parallel()
		c, _, hl := newClient(Options{})
		ctx := testCtx(t)
		p, err := c.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "a", "arg2": "b"})
		if err != nil || p.Text() != "Prompt with arguments: arg1='a', arg2='b'" {
			t.Fatalf("prompt: %v %v", p, err)
		}
		r, err := c.ReadResource(ctx, "test://static-text")
		if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "This is the content of the static text resource." || r.CacheScope != "public" || r.TTLMillis != 60000 {
			t.Fatalf("resource: %+v %v", r, err)
		}
		if got := hl.byMethod("resources/read")[0].Get("Mcp-Name"); got != "test://static-text" {
			t.Errorf("Mcp-Name = %q", got)
		}
		r, err = c.ReadResource(ctx, "test://static-binary")
		if err != nil || r.Contents[0].Blob == "" || r.Contents[0].MimeType != "image/png" {
			t.Fatalf("binary resource: %+v %v", r, err)
		}
		_, err = c.ReadResource(ctx, "test://missing")
		var rerr *RPCError
		if !errors.As(err, &rerr) || rerr.Code != CodeInvalidParams {
			t.Errorf("missing resource: %v", err)
		}
		comp, err := c.Complete(ctx, PromptRef("test_prompt_with_arguments"), "arg1", "te", nil)
		if err != nil || !slices.Equal(comp.Values, []string{"test", "testing", "tested"}) {
			t.Fatalf("completion: %+v %v", comp, err)
		}
		prompts, err := c.ListPrompts(ctx)
		if err != nil || len(prompts) < 4 {
			t.Fatalf("prompts: %d %v", len(prompts), err)
		}
		res, err := c.ListResources(ctx)
		if err != nil || len(res) < 2 {
			t.Fatalf("resources: %d %v", len(res), err)
		}
	})

	t.Run("listen", func(t *testing.T) {
		t.Parallel()
		c, _, _ := newClient(Options{})
		ctx := testCtx(t)
		sub, err := c.Listen(ctx, ListenFilter{ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if b, _ := sub.Accepted.Get("toolsListChanged"); enc(b) != "true" {
			t.Errorf("accepted = %s", enc(sub.Accepted))
		}
		if _, err := c.CallTool(ctx, "test_trigger_tool_change", nil); err != nil {
			t.Fatal(err)
		}
		timeout := time.After(20 * time.Second)
		for {
			select {
			case n, ok := <-sub.Notifications():
				if !ok {
					t.Fatalf("stream closed: %v", sub.Err())
				}
				if n.Method != "notifications/tools/list_changed" {
					continue
				}
				if !metaOf(n.Params).Has(metaSubscriptionID) {
					t.Errorf("notification without subscriptionId: %s", enc(n.Params))
				}
				if err := sub.Close(); err != nil || sub.Err() != nil {
					t.Errorf("close: %v %v", err, sub.Err())
				}
				return
			case <-timeout:
				t.Fatal("no tools/list_changed")
			}
		}
	})

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		c, _, _ := newClient(Options{OnProgress: func(float64, float64, string) {}})
		ctx, cancel := context.WithTimeout(testCtx(t), 60*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.CallTool(ctx, "test_tool_with_progress", nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("cancellation took %v", time.Since(start))
		}
	})
}

// ---------------------------------------------------------------------------
// stdio against an in-process weft server

type noArgs struct{}

type echoArgs struct {
	N int `json:"n"`
}

// newStdioTestServer builds a small server: an MRTR tool, an echo tool, a
// progress tool and a tool that blocks until cancelled.
func newStdioTestServer(logger *slog.Logger, blocked chan<- string) *weft.Server {
	s, err := weft.NewServer(weft.Implementation{Name: "stdio-test", Version: "1"}, &weft.Options{Logger: logger, PageSize: 1})
	if err != nil {
		panic(err)
	}
	form := weft.Form(weft.ConditionalCapability)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	schema, _ := exactjson.ParseString(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`, exactjson.Limits{})
	must(weft.AddTool(s, weft.Tool{Name: "greet", Description: "Asks for a name.", Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			r, ok := req.InputResponses().Get("who")
			content, _ := r.Get("content")
			name, _ := content.Get("name")
			n, isStr := name.AsString()
			if !ok || !isStr {
				return nil, weft.AskInput("who", form.Ask("Who are you?", schema))
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Hello, " + n + "!")}}, nil
		}))
	must(weft.AddTool(s, weft.Tool{Name: "echo", Description: "Echoes n after reporting progress."},
		func(ctx context.Context, req *weft.Request, in echoArgs) (*weft.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				_ = req.Progress(float64(i), 3, fmt.Sprintf("n=%d step %d", in.N, i))
				time.Sleep(time.Millisecond)
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(fmt.Sprintf("echo %d", in.N))}}, nil
		}))
	must(weft.AddTool(s, weft.Tool{Name: "block", Description: "Blocks until cancelled."},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if blocked != nil {
				blocked <- "started"
			}
			<-ctx.Done()
			if blocked != nil {
				blocked <- "cancelled"
			}
			return nil, ctx.Err()
		}))
	return s
}

// startStdio serves srv over two io.Pipe pairs and returns the client side.
func startStdio(t *testing.T, srv *weft.Server) *StdioTransport {
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(ctx, sr, sw)
		sw.Close()
	}()
	tr := NewStdioTransport(cr, cw, nil)
	t.Cleanup(func() {
		_ = tr.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return tr
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestStdio(t *testing.T) {
	blocked := make(chan string, 4)
	srv := newStdioTestServer(quietLogger(), blocked)
	tr := startStdio(t, srv)
	var elicits sync.Map
	c := New(tr, &Options{Handlers: Handlers{Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
		elicits.Store(str(params, "message"), true)
		return exactjson.ParseString(`{"action":"accept","content":{"name":"Stdio"}}`, exactjson.Limits{})
	}}})

	ctx := testCtx(t)

	t.Run("discover_and_paginated_list", func(t *testing.T) {
		d, err := c.Discover(ctx)
		if err != nil || str(d.ServerInfo, "name") != "stdio-test" {
			t.Fatalf("discover: %+v %v", d, err)
		}
		tools, err := c.ListTools(ctx) // page size 1: three pages
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"block", "echo", "greet"}) {
			t.Errorf("tools = %v", names)
		}
	})

	t.Run("mrtr", func(t *testing.T) {
		res, err := c.CallTool(ctx, "greet", nil)
		if err != nil || res.Text() != "Hello, Stdio!" {
			t.Fatalf("greet: %v %v", res, err)
		}
		if _, ok := elicits.Load("Who are you?"); !ok {
			t.Error("elicit handler not called")
		}
	})

	t.Run("concurrent_multiplexing", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Go(func() {
				res, err := c.CallTool(ctx, "echo", map[string]any{"n": i})
				if err != nil {
					errs <- err
					return
				}
				if want := fmt.Sprintf("echo %d", i); res.Text() != want {
					errs <- fmt.Errorf("call %d got %q", i, res.Text())
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("progress_routed_by_token", func(t *testing.T) {
		// Two concurrent requests with their own progress tokens: each
		// sees only its own notifications, before its response.
		var wg sync.WaitGroup
		for i, tok := range []string{`"tok-a"`, `7`} {
			wg.Go(func() {
				id := int64(1000 + i)
				params := c.withMeta(mustParse(t, fmt.Sprintf(`{"name":"echo","arguments":{"n":%d}}`, id)), id, "tools/call", c.currentEra())
				meta := metaOf(params).With("progressToken", mustParse(t, tok))
				params = params.With("_meta", meta)
				var got []string
				resp, err := tr.Do(ctx, &Request{ID: id, Method: "tools/call", Params: params}, func(n Notification) {
					pt, _ := n.Params.Get("progressToken")
					got = append(got, enc(pt)+":"+str(n.Params, "message"))
				})
				if err != nil || resp.Error != nil {
					t.Errorf("request %d: %v %v", id, err, resp)
					return
				}
				var want []string
				for s := 1; s <= 3; s++ {
					want = append(want, fmt.Sprintf("%s:n=%d step %d", tok, id, s))
				}
				if !slices.Equal(got, want) {
					t.Errorf("request %d notifications = %q, want %q", id, got, want)
				}
			})
		}
		wg.Wait()
	})

	t.Run("cancel_sends_notifications_cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := c.CallTool(cctx, "block", nil)
			errc <- err
		}()
		if s := <-blocked; s != "started" {
			t.Fatalf("got %q", s)
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
		select {
		case s := <-blocked:
			if s != "cancelled" {
				t.Errorf("got %q", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the server never saw the cancellation")
		}
		// The transport still works.
		if res, err := c.CallTool(ctx, "echo", map[string]any{"n": 1}); err != nil || res.Text() != "echo 1" {
			t.Errorf("after cancel: %v %v", res, err)
		}
	})

	t.Run("listen", func(t *testing.T) {
		sub, err := c.Listen(ctx, ListenFilter{ToolsListChanged: true, PromptsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		// Prompts are not served: only tools/list_changed is honoured.
		if enc(sub.Accepted) != `{"toolsListChanged":true}` {
			t.Errorf("accepted = %s", enc(sub.Accepted))
		}
		// Another request in flight meanwhile is not disturbed.
		if res, err := c.CallTool(ctx, "echo", map[string]any{"n": 5}); err != nil || res.Text() != "echo 5" {
			t.Fatalf("echo during listen: %v %v", res, err)
		}
		err = weft.AddTool(srv, weft.Tool{Name: "late", Description: "Added while listening."},
			func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-sub.Notifications():
			if n.Method != "notifications/tools/list_changed" {
				t.Errorf("notification = %s", n.Method)
			}
			sid, _ := metaOf(n.Params).Get(metaSubscriptionID)
			if sid.Kind() != exactjson.KindNumber {
				t.Errorf("subscriptionId = %s", enc(sid))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
		}
		if err := sub.Close(); err != nil || sub.Err() != nil {
			t.Errorf("close: %v / %v", err, sub.Err())
		}
		if _, ok := <-sub.Notifications(); ok {
			t.Error("channel still open after Close")
		}
	})

	t.Run("closed", func(t *testing.T) {
		tr2 := startStdio(t, newStdioTestServer(quietLogger(), nil))
		c2 := New(tr2, nil)
		if _, err := c2.Discover(ctx); err != nil {
			t.Fatal(err)
		}
		_ = c2.Close()
		if _, err := c2.Discover(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("after close: %v", err)
		}
	})
}

// TestStdioCancelLine checks the exact notifications/cancelled line.
func TestStdioCancelLine(t *testing.T) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	tr := NewStdioTransport(cr, cw, nil)
	defer tr.Close()
	defer sw.Close()
	lines := make(chan string, 4)
	go func() {
		buf := make([]byte, 64<<10)
		var acc []byte
		for {
			n, err := sr.Read(buf)
			acc = append(acc, buf[:n]...)
			for {
				i := bytes.IndexByte(acc, '\n')
				if i < 0 {
					break
				}
				lines <- string(acc[:i])
				acc = acc[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := tr.Do(ctx, &Request{ID: 42, Method: "tools/call", Params: mustParse(t, `{"name":"x"}`)}, nil)
		errc <- err
	}()
	if l := <-lines; l != `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"x"}}` {
		t.Errorf("request line = %s", l)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if l := <-lines; l != `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42,"reason":"context canceled"}}` {
		t.Errorf("cancel line = %s", l)
	}
	// A late response for the cancelled id is dropped; unrouted log
	// messages reach the unrouted handler.
	got := make(chan Notification, 1)
	tr.SetUnroutedHandler(func(n Notification) { got <- n })
	fmt.Fprintln(sw, `{"jsonrpc":"2.0","id":42,"result":{"resultType":"complete"}}`)
	fmt.Fprintln(sw, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
	select {
	case n := <-got:
		if n.Method != "notifications/message" {
			t.Errorf("unrouted = %+v", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no unrouted notification")
	}
}

func TestCommandTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEFT_CLIENT_TEST_STDIO_SERVER=1")
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	tr, err := CommandTransport(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := New(tr, &Options{Handlers: Handlers{Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
		return exactjson.ParseString(`{"action":"accept","content":{"name":"Subprocess"}}`, exactjson.Limits{})
	}}})

	ctx := testCtx(t)
	d, err := c.Discover(ctx)
	if err != nil {
		t.Fatalf("discover: %v\n%s", err, stderr)
	}
	if str(d.ServerInfo, "name") != "stdio-test" {
		t.Errorf("serverInfo = %s", enc(d.ServerInfo))
	}
	res, err := c.CallTool(ctx, "greet", nil)
	if err != nil || res.Text() != "Hello, Subprocess!" {
		t.Fatalf("greet: %v %v", res, err)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if d := time.Since(start); d > CommandShutdownTimeout {
		t.Errorf("the server did not exit on stdin EOF (close took %v)", d)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Errorf("process state = %v", cmd.ProcessState)
	}
}

// ---------------------------------------------------------------------------
// A scripted fake Streamable HTTP server

type fakeRequest struct {
	id     int64
	method string
	params exactjson.Value
	header http.Header
	at     time.Time
}

type fakeServer struct {
	t      *testing.T
	handle func(r fakeRequest) (result exactjson.Value, rpcErr *RPCError)
	mu     sync.Mutex
	hmu    sync.Mutex // serializes handle
	reqs   []fakeRequest
	srv    *httptest.Server
}

func newFakeServer(t *testing.T, handle func(r fakeRequest) (exactjson.Value, *RPCError)) *fakeServer {
	f := &fakeServer{t: t, handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	v, err := exactjson.Parse(body, exactjson.Limits{})
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	idv, _ := v.Get("id")
	idn, _ := idv.AsNumber()
	id, _ := idn.Int64()
	method := str(v, "method")
	params, _ := v.Get("params")
	if method == "server/discover" {
		// The era probe of an unpinned client: this fake is a
		// 2026-07-28 server. Not recorded, so that tests see only
		// the requests they make.
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(enc(exactjson.Object(exactjson.Field("jsonrpc", exactjson.String("2.0")), exactjson.Field("id", idv),
			exactjson.Field("result", exactjson.Object(exactjson.Field("supportedVersions", exactjson.Array(exactjson.String(ProtocolVersion))), exactjson.Field("capabilities", exactjson.Object())))))))
		return
	}
	fr := fakeRequest{id: id, method: method, params: params, header: r.Header.Clone(), at: time.Now()}
	f.mu.Lock()
	f.reqs = append(f.reqs, fr)
	f.mu.Unlock()
	// Transport rules every request must follow.
	check := func(cond bool, format string, args ...any) {
		if !cond {
			f.t.Errorf("request %s: "+format, append([]any{method}, args...)...)
		}
	}
	meta := metaOf(params)
	check(r.Method == http.MethodPost, "HTTP method %s", r.Method)
	check(r.Header.Get("Content-Type") == "application/json", "Content-Type %q", r.Header.Get("Content-Type"))
	check(strings.Contains(r.Header.Get("Accept"), "application/json") && strings.Contains(r.Header.Get("Accept"), "text/event-stream"), "Accept %q", r.Header.Get("Accept"))
	check(r.Header.Get("MCP-Protocol-Version") == str(meta, metaProtocolVersion) && str(meta, metaProtocolVersion) == ProtocolVersion, "protocol version header/meta mismatch")
	check(r.Header.Get("Mcp-Method") == method, "Mcp-Method %q", r.Header.Get("Mcp-Method"))
	check(meta.Has(metaClientCapabilities) && meta.Has(metaClientInfo), "_meta = %s", enc(meta))
	if m := targetMember(method); m != "" {
		check(r.Header.Get("Mcp-Name") == str(params, m), "Mcp-Name %q, body %q", r.Header.Get("Mcp-Name"), str(params, m))
	}
	f.hmu.Lock()
	res, rerr := f.handle(fr)
	f.hmu.Unlock()
	var out exactjson.Value
	status := http.StatusOK
	if rerr != nil {
		e := exactjson.Object(exactjson.Field("code", exactjson.Int(int64(rerr.Code))), exactjson.Field("message", exactjson.String(rerr.Message)))
		out = exactjson.Object(exactjson.Field("jsonrpc", exactjson.String("2.0")), exactjson.Field("id", idv), exactjson.Field("error", e))
		if rerr.HTTPStatus != 0 {
			status = rerr.HTTPStatus
		}
	} else {
		out = exactjson.Object(exactjson.Field("jsonrpc", exactjson.String("2.0")), exactjson.Field("id", idv), exactjson.Field("result", res))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(enc(out)))
}

// answerDiscover answers the era probe of a client as a 2026-07-28 server
// and reports whether r was one.
func answerDiscover(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Mcp-Method") != "server/discover" {
		return false
	}
	v, _ := exactjson.ParseString(mustRead(r), exactjson.Limits{})
	id, _ := v.Get("id")
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":[%q],"capabilities":{}}}`, enc(id), ProtocolVersion)
	return true
}

func (f *fakeServer) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// wire summarizes the requests as "method params-without-_meta".
func (f *fakeServer) wire() []string {
	var out []string
	for _, r := range f.requests() {
		out = append(out, r.method+" "+enc(r.params.Without("_meta")))
	}
	return out
}

func (f *fakeServer) client(opts Options) *Client {
	return New(NewHTTPTransport(f.srv.URL, &HTTPOptions{Client: f.srv.Client()}), &opts)
}

func complete(text string) exactjson.Value {
	return exactjson.Object(
		exactjson.Field("resultType", exactjson.String("complete")),
		exactjson.Field("content", exactjson.Array(exactjson.Object(
			exactjson.Field("type", exactjson.String("text")),
			exactjson.Field("text", exactjson.String(text))))))
}

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("requests differ:\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}

// ---------------------------------------------------------------------------
// Tasks

const taskID = "786512e2-9e0d-44bd-8f29-789f320fe840"

func taskJSON(status, msg string, pollMs int, extra string) string {
	s := fmt.Sprintf(`{"resultType":"complete","taskId":%q,"status":%q,"createdAt":"2026-07-28T10:30:00Z","lastUpdatedAt":"2026-07-28T10:31:00Z","ttlMs":3600000,"pollIntervalMs":%d`, taskID, status, pollMs)
	if msg != "" {
		s += fmt.Sprintf(`,"statusMessage":%q`, msg)
	}
	return s + extra + "}"
}

const elicitName = `{"method":"elicitation/create","params":{"mode":"form","message":"Please enter your name.","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`
const elicitConfirm = `{"method":"elicitation/create","params":{"message":"Confirm?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`

func TestTaskFollowing(t *testing.T) {
	gets := []string{
		taskJSON("working", "Starting", 10, ""),
		taskJSON("input_required", "Waiting for your name", 10, `,"inputRequests":{"ask_name":`+elicitName+`}`),
		// Eventually consistent: the answered key is still listed.
		taskJSON("input_required", "Waiting for your name", 40, `,"inputRequests":{"ask_name":`+elicitName+`}`),
		// A new key next to the stale one: only the new one is answered.
		taskJSON("input_required", "Waiting for confirmation", 10, `,"inputRequests":{"ask_name":`+elicitName+`,"confirm":`+elicitConfirm+`}`),
		taskJSON("working", "Processing", 10, ""),
		taskJSON("completed", "Done", 10, `,"result":{"content":[{"type":"text","text":"Hello, Alice!"}],"isError":false,"structuredContent":{"greeting":"Hello"}}`),
	}
	var getN int
	f := newFakeServer(t, func(r fakeRequest) (exactjson.Value, *RPCError) {
		switch r.method {
		case "tools/list":
			return mustParse(t, `{"resultType":"complete","tools":[{"name":"long_job","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"public"}`), nil
		case "tools/call":
			s := taskJSON("working", "Queued", 10, "")
			return mustParse(t, strings.Replace(s, `"resultType":"complete"`, `"resultType":"task"`, 1)), nil
		case "tasks/get":
			s := gets[min(getN, len(gets)-1)]
			getN++
			return mustParse(t, s), nil
		case "tasks/update":
			return mustParse(t, `{"resultType":"complete"}`), nil
		}
		return exactjson.Value{}, &RPCError{Code: CodeMethodNotFound, Message: "no"}
	})
	type st struct{ status, msg string }
	var statuses []st
	th := &testHandlers{}
	c := f.client(Options{TasksEnabled: true, Handlers: th.handlers(), OnTaskStatus: func(_, s, m string) { statuses = append(statuses, st{s, m}) }})
	res, err := c.CallTool(testCtx(t), "long_job", map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "Hello, Alice!" || res.TaskID != taskID || res.IsError || enc(res.StructuredContent) != `{"greeting":"Hello"}` {
		t.Errorf("result = %+v", res)
	}
	tid := fmt.Sprintf(`{"taskId":%q}`, taskID)
	diffLines(t, f.wire(), []string{
		`tools/list {}`,
		`tools/call {"name":"long_job","arguments":{"n":1}}`,
		`tasks/get ` + tid,
		`tasks/get ` + tid,
		fmt.Sprintf(`tasks/update {"taskId":%q,"inputResponses":{"ask_name":{"action":"accept","content":{"name":"Alice"}}}}`, taskID),
		`tasks/get ` + tid,
		`tasks/get ` + tid,
		fmt.Sprintf(`tasks/update {"taskId":%q,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}}}`, taskID),
		`tasks/get ` + tid,
		`tasks/get ` + tid,
	})
	reqs := f.requests()
	ids := map[int64]bool{}
	for _, r := range reqs {
		if ids[r.id] {
			t.Errorf("id %d reused", r.id)
		}
		ids[r.id] = true
		caps, _ := metaOf(r.params).Get(metaClientCapabilities)
		ext, _ := caps.Get("extensions")
		if !ext.Has(TasksExtension) {
			t.Errorf("%s without the tasks extension: %s", r.method, enc(caps))
		}
	}
	// pollIntervalMs is honoured, including when it changes (40ms after
	// the third tasks/get).
	var getTimes []time.Time
	for _, r := range reqs {
		if r.method == "tasks/get" {
			getTimes = append(getTimes, r.at)
		}
	}
	for i := 1; i < len(getTimes); i++ {
		want := 10 * time.Millisecond
		if i == 3 {
			want = 40 * time.Millisecond
		}
		if gap := getTimes[i].Sub(getTimes[i-1]); gap < want-2*time.Millisecond {
			t.Errorf("tasks/get %d followed after %v, want ≥ %v", i, gap, want)
		}
	}
	wantStatuses := []st{{"working", "Queued"}, {"working", "Starting"}, {"input_required", "Waiting for your name"},
		{"input_required", "Waiting for confirmation"}, {"working", "Processing"}, {"completed", "Done"}}
	if !slices.Equal(statuses, wantStatuses) {
		t.Errorf("statuses = %v", statuses)
	}
	if len(th.elicits) != 2 {
		t.Errorf("elicit called %d times, want 2 (each key once)", len(th.elicits))
	}
}

// taskServer answers tools/call with a task and tasks/get with get(n).
func taskServer(t *testing.T, get func(n int) string) *fakeServer {
	var n int
	var mu sync.Mutex
	return newFakeServer(t, func(r fakeRequest) (exactjson.Value, *RPCError) {
		switch r.method {
		case "tools/list":
			return mustParse(t, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"public"}`), nil
		case "tools/call":
			return mustParse(t, strings.Replace(taskJSON("working", "", 20, ""), `"complete"`, `"task"`, 1)), nil
		case "tasks/get":
			mu.Lock()
			i := n
			n++
			mu.Unlock()
			return mustParse(t, get(i)), nil
		case "tasks/cancel", "tasks/update":
			return mustParse(t, `{"resultType":"complete"}`), nil
		}
		return exactjson.Value{}, &RPCError{Code: CodeMethodNotFound, Message: "no"}
	})
}

func TestTaskTerminalStates(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		f := taskServer(t, func(int) string {
			return taskJSON("failed", "Tool execution failed: API rate limit exceeded", 20, `,"error":{"code":-32603,"message":"API rate limit exceeded"}`)
		})
		_, err := f.client(Options{TasksEnabled: true}).CallTool(testCtx(t), "job", nil)
		var te *TaskError
		var rerr *RPCError
		if !errors.As(err, &te) || te.Status != "failed" || te.TaskID != taskID || !errors.As(err, &rerr) || rerr.Code != CodeInternalError || rerr.Message != "API rate limit exceeded" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		f := taskServer(t, func(int) string { return taskJSON("cancelled", "Stopped by an operator", 20, "") })
		_, err := f.client(Options{TasksEnabled: true}).CallTool(testCtx(t), "job", nil)
		var te *TaskError
		if !errors.As(err, &te) || te.Status != "cancelled" || te.StatusMessage != "Stopped by an operator" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("completed_with_tool_error", func(t *testing.T) {
		f := taskServer(t, func(int) string {
			return taskJSON("completed", "", 20, `,"result":{"content":[{"type":"text","text":"invalid input"}],"isError":true}`)
		})
		res, err := f.client(Options{TasksEnabled: true}).CallTool(testCtx(t), "job", nil)
		if err != nil || !res.IsError || res.Text() != "invalid input" || res.ResultType != "complete" {
			t.Fatalf("res = %+v err = %v", res, err)
		}
	})
	t.Run("context_cancellation_sends_tasks_cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		f := taskServer(t, func(n int) string {
			if n == 2 {
				cancel() // while the client waits for its next poll
			}
			return taskJSON("working", "", 20, "")
		})
		_, err := f.client(Options{TasksEnabled: true}).CallTool(ctx, "job", nil)
		var te *TaskError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &te) || te.TaskID != taskID {
			t.Fatalf("err = %v", err)
		}
		reqs := f.requests()
		last := reqs[len(reqs)-1]
		if last.method != "tasks/cancel" || enc(last.params.Without("_meta")) != fmt.Sprintf(`{"taskId":%q}`, taskID) || last.header.Get("Mcp-Name") != taskID {
			t.Errorf("last request = %s %s", last.method, enc(last.params))
		}
	})
	t.Run("handler_missing_abandons_and_cancels", func(t *testing.T) {
		f := taskServer(t, func(int) string {
			return taskJSON("input_required", "", 20, `,"inputRequests":{"llm":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}}`)
		})
		_, err := f.client(Options{TasksEnabled: true}).CallTool(testCtx(t), "job", nil)
		var mh *MissingHandlerError
		if !errors.As(err, &mh) || mh.Method != "sampling/createMessage" || mh.Key != "llm" {
			t.Fatalf("err = %v", err)
		}
		reqs := f.requests()
		if last := reqs[len(reqs)-1]; last.method != "tasks/cancel" {
			t.Errorf("last request = %s", last.method)
		}
	})
	t.Run("task_without_extension", func(t *testing.T) {
		f := taskServer(t, func(int) string { return taskJSON("working", "", 20, "") })
		_, err := f.client(Options{}).CallTool(testCtx(t), "job", nil)
		if !errors.Is(err, ErrProtocol) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestTaskMethods(t *testing.T) {
	f := taskServer(t, func(int) string {
		return taskJSON("input_required", "Need a name", 2500, `,"inputRequests":{"ask_name":`+elicitName+`}`)
	})
	c := f.client(Options{TasksEnabled: true})
	ctx := testCtx(t)
	task, err := c.GetTask(ctx, taskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.TaskID != taskID || task.Status != TaskInputRequired || task.StatusMessage != "Need a name" || task.PollInterval != 2500*time.Millisecond ||
		task.TTLMillis != 3600000 || !task.InputRequests.Has("ask_name") || task.CreatedAt != "2026-07-28T10:30:00Z" {
		t.Errorf("task = %+v", task)
	}
	if err := c.UpdateTask(ctx, taskID, mustParse(t, `{"ask_name":{"action":"decline"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.CancelTask(ctx, taskID); err != nil {
		t.Fatal(err)
	}
	tid := fmt.Sprintf(`{"taskId":%q}`, taskID)
	diffLines(t, f.wire(), []string{
		`tasks/get ` + tid,
		fmt.Sprintf(`tasks/update {"taskId":%q,"inputResponses":{"ask_name":{"action":"decline"}}}`, taskID),
		`tasks/cancel ` + tid,
	})

	// FollowTask resumes a known task.
	f2 := taskServer(t, func(n int) string {
		if n < 2 {
			return taskJSON("working", "", 5, "")
		}
		return taskJSON("completed", "", 5, `,"result":{"content":[{"type":"text","text":"resumed"}]}`)
	})
	res, err := f2.client(Options{TasksEnabled: true}).FollowTask(ctx, taskID)
	if err != nil || enc(res) != `{"content":[{"type":"text","text":"resumed"}]}` {
		t.Fatalf("FollowTask: %s %v", enc(res), err)
	}
	if got := len(f2.requests()); got != 3 {
		t.Errorf("FollowTask sent %d requests, want 3", got)
	}
}

func TestMcpNameEncoding(t *testing.T) {
	var raw []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answerDiscover(w, r) {
			return
		}
		mu.Lock()
		raw = append(raw, r.Header.Get("Mcp-Name"))
		mu.Unlock()
		v, _ := exactjson.ParseString(mustRead(r), exactjson.Limits{})
		id, _ := v.Get("id")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","contents":[],"ttlMs":0,"cacheScope":"private"}}`, enc(id))
	}))
	defer srv.Close()
	c := New(NewHTTPTransport(srv.URL, &HTTPOptions{Client: srv.Client()}), nil)
	for _, uri := range []string{"file:///tmp/ü.txt", "test://plain", "=?base64?abc?="} {
		if _, err := c.ReadResource(testCtx(t), uri); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"=?base64?ZmlsZTovLy90bXAvw7wudHh0?=", "test://plain", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="}
	if !slices.Equal(raw, want) {
		t.Errorf("Mcp-Name = %q, want %q", raw, want)
	}
}

func TestPollInterval(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{`{}`, DefaultPollInterval},
		{`{"pollIntervalMs":250}`, 250 * time.Millisecond},
		{`{"pollIntervalMs":120000}`, MaxPollInterval},
		{`{"pollIntervalMs":-5}`, DefaultPollInterval},
		{`{"pollIntervalMs":"fast"}`, DefaultPollInterval},
		{`{"pollIntervalMs":0}`, minPollInterval},
	} {
		if got := pollInterval(mustParse(t, tc.in)); got != tc.want {
			t.Errorf("pollInterval(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// ---------------------------------------------------------------------------
// MRTR edge cases and HTTP details on the fake server

func TestMRTRStateOnly(t *testing.T) {
	weird := "s\"\\é\u2028\x01"
	var n int
	f := newFakeServer(t, func(r fakeRequest) (exactjson.Value, *RPCError) {
		if r.method != "resources/read" {
			return exactjson.Value{}, &RPCError{Code: CodeMethodNotFound, Message: "no"}
		}
		n++
		switch {
		case str(r.params, "uri") == "test://forever":
			return exactjson.Object(exactjson.Field("resultType", exactjson.String("input_required")),
				exactjson.Field("requestState", exactjson.String(fmt.Sprint("s", n)))), nil
		case str(r.params, "uri") == "test://neither":
			return mustParse(t, `{"resultType":"input_required"}`), nil
		case n < 3:
			return exactjson.Object(exactjson.Field("resultType", exactjson.String("input_required")),
				exactjson.Field("requestState", exactjson.String(weird+fmt.Sprint(n)))), nil
		}
		return mustParse(t, `{"resultType":"complete","contents":[{"uri":"test://x","text":"ok"}],"ttlMs":0,"cacheScope":"private"}`), nil
	})
	c := f.client(Options{})
	ctx := testCtx(t)
	res, err := c.ReadResource(ctx, "test://x")
	if err != nil || res.Contents[0].Text != "ok" {
		t.Fatalf("read: %+v %v", res, err)
	}
	w1, _ := exactjson.Encode(exactjson.String(weird+"1"), 0)
	w2, _ := exactjson.Encode(exactjson.String(weird+"2"), 0)
	diffLines(t, f.wire(), []string{
		`resources/read {"uri":"test://x"}`,
		`resources/read {"uri":"test://x","requestState":` + string(w1) + `}`,
		`resources/read {"uri":"test://x","requestState":` + string(w2) + `}`,
	})

	before := len(f.requests())
	_, err = c.ReadResource(ctx, "test://forever")
	if !errors.Is(err, ErrTooManyRounds) {
		t.Fatalf("forever: %v", err)
	}
	if sent := len(f.requests()) - before; sent != 1+maxStateOnlyRetries {
		t.Errorf("state-only: %d requests, want %d", sent, 1+maxStateOnlyRetries)
	}
	_, err = c.ReadResource(ctx, "test://neither")
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("neither: %v", err)
	}
}

func TestHTTPHeadersAndErrors(t *testing.T) {
	var listN, callN atomic.Int32
	tools := `{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[
		{"name":"good","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"Count"},"flag":{"type":"boolean","x-mcp-header":"Flag"},
			"nested":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"Inner"}}},
			"x-mcp-header":{"type":"string"}},"default":{"x-mcp-header":"NotAnAnnotation"}}},
		{"name":"bad_number","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}},
		{"name":"bad_items","inputSchema":{"type":"object","properties":{"list":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string","x-mcp-header":"X"}}}}}}},
		{"name":"bad_dup","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Dup"},"b":{"type":"string","x-mcp-header":"dup"}}}},
		{"name":"bad_token","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Bad Name"}}}},
		{"name":"bad_oneof","inputSchema":{"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}}
	]`
	page2 := `{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[{"name":"plain","inputSchema":{"type":"object"}}]}`
	f := newFakeServer(t, func(r fakeRequest) (exactjson.Value, *RPCError) {
		switch r.method {
		case "tools/list":
			listN.Add(1)
			if str(r.params, "cursor") == "p2" {
				return mustParse(t, page2), nil
			}
			return mustParse(t, strings.TrimSuffix(tools, "}")+`,"nextCursor":"p2"}`), nil
		case "tools/call":
			if callN.Add(1) == 1 && str(r.params, "name") == "mismatch" {
				return exactjson.Value{}, &RPCError{Code: CodeHeaderMismatch, Message: "Header mismatch", HTTPStatus: 400}
			}
			return complete("ok"), nil
		}
		return exactjson.Value{}, &RPCError{Code: CodeMethodNotFound, Message: "Method not found", HTTPStatus: 404}
	})
	var logs syncbuf.Buffer
	c := New(NewHTTPTransport(f.srv.URL, &HTTPOptions{Client: f.srv.Client(), BearerToken: "s3cret"}), &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := testCtx(t)

	listed, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range listed {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"good", "plain"}) {
		t.Errorf("tools = %v (invalid x-mcp-header tools must be dropped)", names)
	}
	for _, bad := range []string{"bad_number", "bad_items", "bad_dup", "bad_token", "bad_oneof"} {
		if !strings.Contains(logs.String(), bad) {
			t.Errorf("no warning for %s", bad)
		}
		if _, err := c.CallTool(ctx, bad, nil); err == nil || !strings.Contains(err.Error(), "rejected") {
			t.Errorf("calling %s: %v", bad, err)
		}
	}
	_, err = c.CallTool(ctx, "good", map[string]any{"region": "=?base64?x?=", "n": 42, "flag": false, "nested": map[string]any{"b": " padded "}, "x-mcp-header": "v"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	h := reqs[len(reqs)-1].header
	want := map[string]string{
		"Mcp-Param-Region": "=?base64?PT9iYXNlNjQ/eD89?=",
		"Mcp-Param-Count":  "42",
		"Mcp-Param-Flag":   "false",
		"Mcp-Param-Inner":  "=?base64?IHBhZGRlZCA=?=",
		"Authorization":    "Bearer s3cret",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if h.Get("Mcp-Param-NotAnAnnotation") != "" {
		t.Error("a default value was taken for an annotation")
	}
	if listN.Load() != 2 {
		t.Errorf("tools/list pages fetched: %d", listN.Load())
	}

	// HeaderMismatch: list again, retry once.
	callN.Store(0)
	res, err := c.CallTool(ctx, "mismatch", nil)
	if err != nil || res.Text() != "ok" {
		t.Fatalf("mismatch retry: %v %v", res, err)
	}
	if listN.Load() != 4 || callN.Load() != 2 {
		t.Errorf("after mismatch: %d list pages, %d calls", listN.Load(), callN.Load())
	}

	// A JSON-RPC error with a 404 status.
	_, err = c.Call(ctx, "ping", nil)
	var rerr *RPCError
	if !errors.As(err, &rerr) || rerr.Code != CodeMethodNotFound || rerr.HTTPStatus != 404 {
		t.Errorf("ping: %v", err)
	}
}

func TestHTTPStatusWithoutJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://example/.well-known/oauth-protected-resource"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	c := New(NewHTTPTransport(srv.URL, &HTTPOptions{Client: srv.Client()}), nil)
	_, err := c.Discover(testCtx(t))
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 401 || !strings.Contains(he.Header.Get("WWW-Authenticate"), "resource_metadata") {
		t.Fatalf("err = %v", err)
	}
}

func TestSSEParsing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answerDiscover(w, r) {
			return
		}
		v, _ := exactjson.ParseString(mustRead(r), exactjson.Limits{})
		id, _ := v.Get("id")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		io.WriteString(w, ": keep-alive\n\n")
		io.WriteString(w, "retry: 1000\nid: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1,\"total\":2}}\n\n")
		fl.Flush()
		// Ignored: a foreign event type and a server request.
		io.WriteString(w, "event: other\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":99}}\n\n")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"roots/list\"}\n\n")
		// A message split over two data lines, CRLF line ends.
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\r\ndata: \"params\":{\"level\":\"info\",\"data\":\"hi\"}}\r\n\r\n")
		io.WriteString(w, ":\n")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", enc(id))
	}))
	defer srv.Close()
	var order []string
	c := New(NewHTTPTransport(srv.URL, &HTTPOptions{Client: srv.Client()}), &Options{
		OnProgress: func(p, total float64, _ string) { order = append(order, fmt.Sprintf("progress %v/%v", p, total)) },
		OnLog:      func(level, _ string, data exactjson.Value) { order = append(order, "log "+level+" "+enc(data)) },
	})

	c.mirrors = false // no implicit tools/list against this fake
	res, err := c.CallTool(testCtx(t), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	order = append(order, "result "+res.Text())
	if want := []string{"progress 1/2", `log info "hi"`, "result done"}; !slices.Equal(order, want) {
		t.Errorf("order = %q, want %q", order, want)
	}
}

func TestSSEStreamEndsEarly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
	}))
	defer srv.Close()
	c := New(NewHTTPTransport(srv.URL, &HTTPOptions{Client: srv.Client()}), nil)
	if _, err := c.Discover(testCtx(t)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v", err)
	}
}

func mustRead(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func TestCapabilitiesAndParams(t *testing.T) {
	noop := func(context.Context, exactjson.Value) (exactjson.Value, error) { return exactjson.Object(), nil }
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, `{}`},
		{Options{Handlers: Handlers{Elicit: noop}}, `{"elicitation":{"form":{},"url":{}}}`},
		{Options{Handlers: Handlers{Sample: noop}, TasksEnabled: true}, `{"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{Options{Capabilities: mustParse(t, `{"experimental":{"x":{}}}`), Handlers: Handlers{Sample: noop}}, `{"experimental":{"x":{}}}`},
		{Options{Capabilities: mustParse(t, `{"extensions":{"a/b":{}}}`), TasksEnabled: true}, `{"extensions":{"a/b":{},"io.modelcontextprotocol/tasks":{}}}`},
	} {
		c := New(&recorder{}, &tc.opts)
		if got := enc(c.Capabilities()); got != tc.want {
			t.Errorf("capabilities = %s, want %s", got, tc.want)
		}
	}
	c := New(&recorder{}, &Options{LogLevel: "debug"})
	p := c.withMeta(mustParse(t, `{"x":1,"_meta":{"traceparent":"00-abc","io.modelcontextprotocol/protocolVersion":"bogus"}}`), 5, "tools/call", c.currentEra())
	if got := enc(p); got != `{"x":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"weft-client","version":"dev"},"io.modelcontextprotocol/logLevel":"debug","traceparent":"00-abc"}}` {
		t.Errorf("params = %s", got)
	}
	for _, bad := range []any{[]int{1}, "x", json5{}} {
		if _, err := toParams(bad); err == nil {
			t.Errorf("toParams(%#v) accepted", bad)
		}
	}
}

type json5 struct{ C chan int }
