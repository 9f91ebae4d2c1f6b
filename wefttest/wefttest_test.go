package wefttest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

// ---- fixture server ----

type noArgs struct{}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// trip is book_trip's framework state.
type trip struct {
	Phase string `json:"phase"`
	City  string `json:"city,omitempty"`
}

type fixture struct {
	srv     *weft.Server
	stopped chan struct{} // closed when the "wait" tool sees its cancellation
}

func text(s string) *weft.CallToolResult {
	return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(s)}}
}

func formSchema(name, typ string) exactjson.Value {
	return exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(exactjson.Field(name,
			exactjson.Object(exactjson.Field("type", exactjson.String(typ)))))),
		exactjson.Field("required", exactjson.Array(exactjson.String(name))))
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newFixture(t *testing.T, opts *weft.Options) *fixture {
	t.Helper()
	if opts == nil {
		opts = &weft.Options{}
	}
	opts.Logger = quietLogger()
	if opts.Instructions == "" {
		opts.Instructions = "Fixture server."
	}
	srv, err := weft.NewServer(weft.Implementation{Name: "fixture", Version: "1.2.3"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, stopped: make(chan struct{})}
	s := f.srv
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// A typed tool: inferred schemas, structured output.
	must(weft.AddTool(s, weft.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, req *weft.Request, in addIn) (addOut, error) {
			return addOut{Sum: in.A + in.B}, nil
		}))

	// An MRTR tool: two rounds of form elicitation with framework state.
	form := weft.Form(weft.RequiredCapability)
	must(weft.AddTool(s, weft.Tool{Name: "book_trip", Description: "Books a trip after asking where and confirming.",
		Inputs: []weft.Input{form}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			askCity := weft.AskInput("destination", form.Ask("Where to?", formSchema("city", "string"))).
				WithFrameworkState(trip{Phase: "destination"})
			st, _, err := weft.FrameworkState[trip](req)
			if err != nil {
				return nil, err
			}
			switch st.Phase {
			case "destination":
				a, outcome, ok, err := form.Answer(req, "destination")
				if err != nil || !ok {
					return nil, askCity
				}
				city, _ := a.Get("city")
				name, _ := city.AsString()
				if outcome != weft.Accepted || name == "" {
					return nil, weft.ToolErrorf("trip cancelled")
				}
				return nil, weft.AskInput("confirm", form.Ask("Book a trip to "+name+"?", formSchema("ok", "boolean"))).
					WithFrameworkState(trip{Phase: "confirm", City: name})
			case "confirm":
				a, outcome, ok, err := form.Answer(req, "confirm")
				if yes, _ := a.Get("ok"); err != nil || !ok || outcome != weft.Accepted || !exactjson.Equal(yes, exactjson.Bool(true)) {
					return nil, weft.ToolErrorf("trip cancelled")
				}
				return text("Booked a trip to " + st.City + "."), nil
			}
			return nil, askCity
		}))

	// An MRTR tool asking for three kinds of input at once.
	cform, sampling, roots := weft.Form(weft.ConditionalCapability), weft.Sampling(weft.ConditionalCapability), weft.Roots(weft.ConditionalCapability)
	must(weft.AddTool(s, weft.Tool{Name: "survey", Description: "Asks for a name, a model answer and the roots.",
		Inputs: []weft.Input{cform, sampling, roots}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			in := req.InputResponses()
			if len(in.Missing("name", "poem", "roots")) > 0 {
				return nil, weft.AskInput("name", cform.Ask("Your name?", formSchema("name", "string"))).
					Ask("poem", sampling.Ask(weft.SamplingRequest{MaxTokens: 50,
						Messages: []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("Write a haiku.")}}})).
					Ask("roots", roots.Ask())
			}
			content, _, _, err := cform.Answer(req, "name")
			if err != nil {
				return nil, err
			}
			nv, _ := content.Get("name")
			name, _ := nv.AsString()
			poem, _, err := sampling.Answer(req, "poem")
			if err != nil {
				return nil, err
			}
			rs, _, err := roots.Answer(req, "roots")
			if err != nil {
				return nil, err
			}
			return text(fmt.Sprintf("name=%s model=%s roots=%d", name, poem.Model, len(rs))), nil
		}))

	// A state-only input_required (load shedding), then success.
	must(weft.AddTool(s, weft.Tool{Name: "shed", Description: "Asks for an immediate retry once.", StateMode: weft.StateApplication},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if st, ok := req.ApplicationState(); ok && st == "retry-me" {
				return text("served after retry"), nil
			}
			return nil, new(weft.InputRequired).WithApplicationState("retry-me")
		}))

	// A tool that needs sampling on every call.
	must(weft.AddTool(s, weft.Tool{Name: "needs_sampling", Description: "Needs sampling.",
		Inputs: []weft.Input{weft.Sampling(weft.RequiredCapability)}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			return text("ok"), nil
		}))

	// Progress and logging.
	must(weft.AddTool(s, weft.Tool{Name: "count", Description: "Counts to three with progress."},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				if err := req.Progress(float64(i), 3, fmt.Sprintf("step %d", i)); err != nil && !errors.Is(err, weft.ErrNoProgress) {
					return nil, err
				}
			}
			if _, err := req.Log(weft.LevelInfo, "count", exactjson.String("counted")); err != nil {
				return nil, err
			}
			return text("counted to 3"), nil
		}))

	// A tool that runs until cancelled.
	must(weft.AddTool(s, weft.Tool{Name: "wait", Description: "Reports progress, then waits for cancellation."},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if err := req.Progress(1, 0, "started"); err != nil {
				return nil, err
			}
			<-ctx.Done()
			close(f.stopped)
			return nil, ctx.Err()
		}))

	// x-mcp-header arguments.
	must(s.AddTool(weft.Tool{Name: "weather", Description: "Weather for a region.",
		InputSchema: []byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},` +
			`"days":{"type":"integer","x-mcp-header":"Days"}},"required":["region"]}`)},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			r, _ := req.Arguments().Get("region")
			region, _ := r.AsString()
			return text("Weather for " + region), nil
		}))

	// Prompts.
	must(s.AddPrompt(weft.Prompt{Name: "greet", Description: "Greets someone.",
		Arguments: []weft.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			return &weft.GetPromptResult{Description: "A greeting", Messages: []weft.PromptMessage{
				{Role: weft.RoleUser, Content: weft.TextContent("Say hello to " + args["name"] + ".")}}}, nil
		}))
	must(s.AddPrompt(weft.Prompt{Name: "grüße", Description: "A prompt whose name is not ASCII."},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			return &weft.GetPromptResult{Messages: []weft.PromptMessage{{Role: weft.RoleUser, Content: weft.TextContent("Grüß Gott!")}}}, nil
		}))
	pform := weft.Form(weft.ConditionalCapability)
	must(s.AddPrompt(weft.Prompt{Name: "ask_topic", Description: "Asks for a topic first.", Inputs: []weft.Input{pform}},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			r, ok := req.InputResponses().Get("topic")
			if !ok {
				return nil, weft.AskInput("topic", pform.Ask("Which topic?", formSchema("topic", "string")))
			}
			c, _ := r.Get("content")
			tv, _ := c.Get("topic")
			topic, _ := tv.AsString()
			return &weft.GetPromptResult{Messages: []weft.PromptMessage{{Role: weft.RoleUser, Content: weft.TextContent("Tell me about " + topic + ".")}}}, nil
		}))

	// Resources.
	must(s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "test://readme", Name: "readme", MimeType: "text/plain"},
		Cache: weft.CachePolicy{TTLMillis: 60000, Public: true}},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "text/plain", "Read me.")}}, nil
		}))
	must(s.AddResourceTemplate(weft.ResourceTemplate{URITemplate: "test://users/{id}", Name: "user"},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			id := req.URIParams()["id"]
			if id == "nobody" {
				return nil, weft.ResourceNotFound(req.Name)
			}
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "text/plain", "user "+id)}}, nil
		}))
	rform := weft.Form(weft.RequiredCapability)
	must(s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "test://vault", Name: "vault"},
		Inputs: []weft.Input{rform}, StateMode: weft.StateApplication},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			st, hasState := req.ApplicationState()
			r, ok := req.InputResponses().Get("answer")
			if !hasState || st != "vault-nonce" || !ok {
				return nil, weft.AskInput("answer", rform.Ask("Riddle answer?", formSchema("answer", "string"))).
					WithApplicationState("vault-nonce")
			}
			c, _ := r.Get("content")
			pv, _ := c.Get("answer")
			if p, _ := pv.AsString(); p != "open sesame" {
				return nil, weft.NewError(1000, "Wrong answer")
			}
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{
				weft.TextResource(req.Name, "text/plain", "the treasure"),
				weft.BlobResource(req.Name+"/key", "application/octet-stream", []byte{0, 1, 2}),
			}}, nil
		}))
	return f
}

var allCaps = wefttest.Capabilities(weft.Form(weft.RequiredCapability), weft.Sampling(weft.RequiredCapability), weft.Roots(weft.RequiredCapability))

func rpcError(t *testing.T, err error) *wefttest.RPCError {
	t.Helper()
	var re *wefttest.RPCError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not a *wefttest.RPCError", err)
	}
	return re
}

// ---- tests ----

func TestDiscover(t *testing.T) {
	c := wefttest.NewWireClient(newFixture(t, nil).srv)
	d, err := c.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.SupportedVersions) != 1 || d.SupportedVersions[0] != weft.ProtocolVersion {
		t.Errorf("supportedVersions = %v", d.SupportedVersions)
	}
	for _, k := range []string{"tools", "prompts", "resources"} {
		if !d.Capabilities.Has(k) {
			t.Errorf("capabilities lack %s: %s", k, d.Capabilities)
		}
	}
	if d.Instructions != "Fixture server." {
		t.Errorf("instructions = %q", d.Instructions)
	}
	if n, _ := d.ServerInfo.Get("name"); n.String() != `"fixture"` {
		t.Errorf("serverInfo = %s", d.ServerInfo)
	}
	if d.CacheScope != "public" || d.TTLMillis != 0 {
		t.Errorf("cache hints = %d %q", d.TTLMillis, d.CacheScope)
	}
}

func TestListTools(t *testing.T) {
	c := wefttest.NewWireClient(newFixture(t, nil).srv)
	tools, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	want := "add book_trip survey shed needs_sampling count wait weather"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
	if tools[0].OutputSchema.Kind() != exactjson.KindObject || tools[0].Description != "Adds two integers." {
		t.Errorf("add tool = %s", tools[0].Raw)
	}
	prompts, err := c.ListAll(t.Context(), "prompts/list")
	if err != nil || len(prompts) != 3 {
		t.Fatalf("prompts/list = %v, %v", prompts, err)
	}
	templates, err := c.ListAll(t.Context(), "resources/templates/list")
	if err != nil || len(templates) != 1 {
		t.Fatalf("resources/templates/list = %v, %v", templates, err)
	}
	if _, err := c.ListAll(t.Context(), "tools/call"); err == nil {
		t.Error("ListAll accepted a non-list method")
	}
}

func TestListAllPages(t *testing.T) {
	f := newFixture(t, &weft.Options{PageSize: 3})
	c := wefttest.NewWireClient(f.srv)
	tools, err := c.ListTools(t.Context())
	if err != nil || len(tools) != 8 {
		t.Fatalf("ListTools over pages of 3 = %d tools, %v", len(tools), err)
	}
}

func TestCallTypedTool(t *testing.T) {
	c := wefttest.NewWireClient(newFixture(t, nil).srv)
	for _, args := range []any{
		map[string]int{"a": 2, "b": 3},
		addIn{A: 2, B: 3},
		exactjson.Object(exactjson.Field("a", exactjson.Int(2)), exactjson.Field("b", exactjson.Int(3))),
	} {
		res, err := c.CallTool(t.Context(), "add", args)
		if err != nil {
			t.Fatal(err)
		}
		if res.ResultType != wefttest.ResultComplete || res.IsError || res.InputRequired() {
			t.Fatalf("result = %s", res.Raw)
		}
		if got := res.StructuredContent.String(); got != `{"sum":5}` {
			t.Errorf("structuredContent = %s", got)
		}
		if out, err := wefttest.StructuredAs[addOut](res); err != nil || out.Sum != 5 {
			t.Errorf("StructuredAs = %+v, %v", out, err)
		}
		if res.Text() != `{"sum":5}` || len(res.Content) != 1 || res.Content[0].Type != "text" {
			t.Errorf("content = %+v", res.Content)
		}
		if res.Response.HTTPStatus != http.StatusOK || res.Response.Streamed || len(res.Response.Notifications) != 0 {
			t.Errorf("response = %+v", res.Response)
		}
		if info, _ := res.Meta.Get(wefttest.MetaServerInfo); !info.Has("name") {
			t.Errorf("_meta = %s", res.Meta)
		}
	}
	// Arguments that violate the schema are a tool execution error.
	res, err := c.CallTool(t.Context(), "add", map[string]any{"a": "two", "b": 3})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Text(), "inputSchema") {
		t.Errorf("schema violation = %s", res.Raw)
	}
	// A result without structuredContent, or of another shape, is an error
	// of StructuredAs.
	if _, err := wefttest.StructuredAs[addOut](res); err == nil || !strings.Contains(err.Error(), "no structuredContent") {
		t.Errorf("StructuredAs without structuredContent: %v", err)
	}
	ok, err := c.CallTool(t.Context(), "add", addIn{A: 1, B: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wefttest.StructuredAs[[]string](ok); err == nil {
		t.Error("StructuredAs decoded an object into a slice")
	}
}

func TestCallRawAndFreshIDs(t *testing.T) {
	c := wefttest.NewWireClient(newFixture(t, nil).srv)
	var ids []string
	for range 3 {
		resp, err := c.Call(t.Context(), "tools/list", exactjson.Value{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Error != nil || !resp.Result.Has("tools") {
			t.Fatalf("tools/list = %+v", resp)
		}
		ids = append(ids, resp.ID.String())
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Errorf("ids are not fresh: %v", ids)
	}
	// A caller's own _meta members win over the client's.
	resp, err := c.Call(t.Context(), "server/discover", exactjson.Object(exactjson.Field("_meta", exactjson.Object(
		exactjson.Field(wefttest.MetaProtocolVersion, exactjson.String("2025-11-25"))))))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil || weft.Code(resp.Error.Code) != weft.CodeUnsupportedProtocolVersion || resp.HTTPStatus != http.StatusBadRequest {
		t.Errorf("old version = %+v %+v", resp, resp.Error)
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t, nil)
	c := wefttest.NewWireClient(f.srv)
	ctx := t.Context()

	_, err := c.CallTool(ctx, "no_such_tool", nil)
	re := rpcError(t, err)
	if weft.Code(re.Code) != weft.CodeInvalidParams || re.HTTPStatus != http.StatusBadRequest || re.Message != "Unknown tool" {
		t.Errorf("unknown tool = %+v", re)
	}

	// The same through Call: not a Go error.
	resp, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("no_such_tool"))))
	if err != nil || resp.Error == nil || resp.Error.Code != -32602 {
		t.Errorf("Call unknown tool = %+v, %v", resp, err)
	}

	resp, err = c.Call(ctx, "ping", exactjson.Value{})
	if err != nil || resp.Error == nil || weft.Code(resp.Error.Code) != weft.CodeMethodNotFound || resp.HTTPStatus != http.StatusNotFound {
		t.Errorf("ping = %+v, %v", resp, err)
	}

	_, err = c.CallTool(ctx, "needs_sampling", nil)
	re = rpcError(t, err)
	req, _ := re.Data.Get("requiredCapabilities")
	if weft.Code(re.Code) != weft.CodeMissingRequiredCapability || re.HTTPStatus != http.StatusBadRequest || !req.Has("sampling") {
		t.Errorf("missing capability = %+v", re)
	}
	// Declared: accepted.
	sc := wefttest.NewWireClient(f.srv, wefttest.WithCapabilities(wefttest.Capabilities(weft.Sampling(weft.RequiredCapability))))
	if res, err := sc.CallTool(ctx, "needs_sampling", nil); err != nil || res.Text() != "ok" {
		t.Errorf("with sampling = %v, %v", res, err)
	}

	vc := wefttest.NewWireClient(f.srv, wefttest.WithProtocolVersion("2099-01-01"))
	_, err = vc.Discover(ctx)
	re = rpcError(t, err)
	if sup, _ := re.Data.Get("supported"); weft.Code(re.Code) != weft.CodeUnsupportedProtocolVersion || sup.Len() != 1 {
		t.Errorf("unsupported version = %+v", re)
	}
}

func TestInputRequiredByHand(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()

	// Without the form capability the tool cannot even start.
	_, err := wefttest.NewWireClient(f.srv).CallTool(ctx, "book_trip", nil)
	if re := rpcError(t, err); weft.Code(re.Code) != weft.CodeMissingRequiredCapability {
		t.Fatalf("no capability = %+v", re)
	}

	c := wefttest.NewWireClient(f.srv, wefttest.WithCapabilities(wefttest.Capabilities(weft.Form(weft.RequiredCapability))))
	r1, err := c.CallTool(ctx, "book_trip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r1.InputRequired() || r1.RequestState == "" || strings.Join(r1.InputKeys(), ",") != "destination" {
		t.Fatalf("round 1 = %s", r1.Raw)
	}
	ir := r1.InputRequests["destination"]
	if msg, _ := ir.Params.Get("message"); ir.Method != "elicitation/create" || msg.String() != `"Where to?"` {
		t.Errorf("input request = %+v", ir)
	}
	accept := func(member string, v exactjson.Value) exactjson.Value {
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
			exactjson.Field("content", exactjson.Object(exactjson.Field(member, v))))
	}
	r2, err := c.Retry(ctx, r1, map[string]exactjson.Value{"destination": accept("city", exactjson.String("Lisbon"))})
	if err != nil {
		t.Fatal(err)
	}
	if !r2.InputRequired() || r2.InputRequests["confirm"].Method != "elicitation/create" || r2.RequestState == r1.RequestState {
		t.Fatalf("round 2 = %s", r2.Raw)
	}
	if r2.Response.ID.String() == r1.Response.ID.String() {
		t.Error("the retry reused the request id")
	}
	r3, err := c.Retry(ctx, r2, map[string]exactjson.Value{"confirm": accept("ok", exactjson.Bool(true))})
	if err != nil {
		t.Fatal(err)
	}
	if r3.InputRequired() || r3.Text() != "Booked a trip to Lisbon." {
		t.Fatalf("round 3 = %s", r3.Raw)
	}
	if _, err := c.Retry(ctx, r3, nil); err == nil {
		t.Error("Retry of a complete result succeeded")
	}

	// Sealed state is bound to the endpoint: the same retry posted elsewhere fails.
	other := wefttest.NewWireClient(f.srv, wefttest.WithEndpoint("/elsewhere"),
		wefttest.WithCapabilities(wefttest.Capabilities(weft.Form(weft.RequiredCapability))))
	_, err = other.Retry(ctx, r1, map[string]exactjson.Value{"destination": accept("city", exactjson.String("Lisbon"))})
	if re := rpcError(t, err); weft.Code(re.Code) != weft.CodeInvalidParams || re.Message != "Invalid request state" {
		t.Errorf("retry on another endpoint = %+v", re)
	}

	// A state-only input_required result: retry with no responses.
	s1, err := c.CallTool(ctx, "shed", nil)
	if err != nil || !s1.InputRequired() || len(s1.InputRequests) != 0 || s1.RequestState != "retry-me" {
		t.Fatalf("shed = %+v, %v", s1, err)
	}
	s2, err := c.Retry(ctx, s1, nil)
	if err != nil || s2.Text() != "served after retry" {
		t.Fatalf("shed retry = %+v, %v", s2, err)
	}
}

func TestCallToolWithInput(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	c := wefttest.NewWireClient(f.srv, wefttest.WithCapabilities(allCaps))

	final, rounds, err := c.CallToolWithInput(ctx, "book_trip", nil, wefttest.WireByKey(map[string]wefttest.WireResponder{
		"destination": wefttest.WireAcceptForm(map[string]any{"city": "Kyoto"}),
		"confirm":     wefttest.WireAcceptForm(map[string]any{"ok": true}),
	}), 0)
	if err != nil {
		t.Fatal(err)
	}
	if final.Text() != "Booked a trip to Kyoto." || len(rounds) != 3 || rounds[2] != final {
		t.Fatalf("final = %s after %d rounds", final.Raw, len(rounds))
	}
	for i, want := range []string{"destination", "confirm"} {
		if !rounds[i].InputRequired() || rounds[i].InputKeys()[0] != want {
			t.Errorf("round %d = %s", i+1, rounds[i].Raw)
		}
	}

	// Declining ends the flow with a tool error after two rounds.
	final, rounds, err = c.CallToolWithInput(ctx, "book_trip", nil, wefttest.WireDecline(), 5)
	if err != nil || !final.IsError || final.Text() != "trip cancelled" || len(rounds) != 2 {
		t.Errorf("decline = %v, %d rounds, %v", final, len(rounds), err)
	}

	// The round limit.
	final, rounds, err = c.CallToolWithInput(ctx, "book_trip", nil, wefttest.WireAcceptForm(map[string]any{"city": "Oslo", "ok": true}), 2)
	if !errors.Is(err, wefttest.ErrMaxRounds) || len(rounds) != 2 || !final.InputRequired() {
		t.Errorf("max rounds = %v, %d rounds, %v", final, len(rounds), err)
	}

	// A request no responder answers.
	_, _, err = c.CallToolWithInput(ctx, "book_trip", nil, wefttest.WireRootsOf("file:///tmp"), 0)
	if err == nil || !strings.Contains(err.Error(), `"destination"`) {
		t.Errorf("unanswered = %v", err)
	}

	// Three kinds of input in one round.
	final, rounds, err = c.CallToolWithInput(ctx, "survey", nil, wefttest.WireChain(
		wefttest.WireAcceptForm(map[string]any{"name": "Ada"}),
		wefttest.WireSampleText("test-model", "Autumn moonlight"),
		wefttest.WireRootsOf("file:///a", "file:///b"),
	), 0)
	if err != nil || final.Text() != "name=Ada model=test-model roots=2" || len(rounds) != 2 {
		t.Errorf("survey = %v, %d rounds, %v", final, len(rounds), err)
	}
	if len(rounds[0].InputRequests) != 3 {
		t.Errorf("survey round 1 = %s", rounds[0].Raw)
	}
}

func TestConditionalInputsFollowCapabilities(t *testing.T) {
	f := newFixture(t, nil)
	// Only form elicitation declared: the server must not embed sampling or
	// roots, and weft reports the missing ones as -32021.
	c := wefttest.NewWireClient(f.srv, wefttest.WithCapabilities(wefttest.Capabilities(weft.Form(weft.RequiredCapability))))
	_, err := c.CallTool(t.Context(), "survey", nil)
	re := rpcError(t, err)
	req, _ := re.Data.Get("requiredCapabilities")
	if weft.Code(re.Code) != weft.CodeMissingRequiredCapability || !req.Has("sampling") || !req.Has("roots") || req.Has("elicitation") {
		t.Errorf("survey with form only = %+v", re)
	}
}

func TestProgressAndLogs(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()

	var mu sync.Mutex
	var live []string
	c := wefttest.NewWireClient(f.srv, wefttest.WithProgress(), wefttest.WithLogLevel(weft.LevelInfo),
		wefttest.WithNotificationHandler(func(n wefttest.Notification) {
			mu.Lock()
			live = append(live, n.Method)
			mu.Unlock()
		}))
	res, err := c.CallTool(ctx, "count", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := res.Response
	if !resp.Streamed || resp.HTTPStatus != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("response = %+v", resp)
	}
	ps := resp.Progress()
	if len(ps) != 3 {
		t.Fatalf("progress = %+v", ps)
	}
	for i, p := range ps {
		if p.Progress != float64(i+1) || p.Total != 3 || p.Message != fmt.Sprintf("step %d", i+1) || p.Token.String() != resp.ID.String() {
			t.Errorf("progress %d = %+v (id %s)", i, p, resp.ID)
		}
	}
	methods := []string{"notifications/progress", "notifications/progress", "notifications/progress", "notifications/message"}
	if len(resp.Notifications) != 4 {
		t.Fatalf("notifications = %+v", resp.Notifications)
	}
	for i, n := range resp.Notifications {
		if n.Method != methods[i] {
			t.Errorf("notification %d = %s", i, n.Method)
		}
	}
	mu.Lock()
	if strings.Join(live, ",") != strings.Join(methods, ",") {
		t.Errorf("live notifications = %v", live)
	}
	mu.Unlock()
	if res.Text() != "counted to 3" {
		t.Errorf("result = %s", res.Raw)
	}

	// Without a progress token there is no stream.
	res, err = wefttest.NewWireClient(f.srv).CallTool(ctx, "count", nil)
	if err != nil || res.Response.Streamed || len(res.Response.Notifications) != 0 {
		t.Errorf("no token = %+v, %v", res, err)
	}
}

func TestCancellation(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := wefttest.NewWireClient(f.srv, wefttest.WithProgress(), wefttest.WithNotificationHandler(func(n wefttest.Notification) {
		if n.Method == "notifications/progress" {
			cancel() // the client closes the stream after the first progress
		}
	}))
	resp, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("wait"))))
	if !errors.Is(err, context.Canceled) || errors.Is(err, wefttest.ErrHandlerRunning) {
		t.Fatalf("err = %v", err)
	}
	select {
	case <-f.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not see the cancellation")
	}
	if resp == nil || len(resp.Progress()) != 1 || resp.Progress()[0].Message != "started" {
		t.Errorf("partial response = %+v", resp)
	}
}

func TestPrompts(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	c := wefttest.NewWireClient(f.srv, wefttest.WithCapabilities(allCaps))

	p, err := c.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Description != "A greeting" || len(p.Messages) != 1 || p.Messages[0].Role != "user" || p.Text() != "Say hello to Ada." {
		t.Errorf("greet = %s", p.Raw)
	}
	_, err = c.GetPrompt(ctx, "greet", nil)
	if re := rpcError(t, err); weft.Code(re.Code) != weft.CodeInvalidParams || !strings.Contains(re.Message, "name") {
		t.Errorf("missing argument = %+v", re)
	}

	final, rounds, err := c.GetPromptWithInput(ctx, "ask_topic", nil, wefttest.WireAcceptForm(map[string]any{"topic": "tides"}), 0)
	if err != nil || final.Text() != "Tell me about tides." || len(rounds) != 2 {
		t.Errorf("ask_topic = %v, %d rounds, %v", final, len(rounds), err)
	}
	// By hand.
	r1, err := c.GetPrompt(ctx, "ask_topic", nil)
	if err != nil || !r1.InputRequired() {
		t.Fatalf("ask_topic round 1 = %v, %v", r1, err)
	}
	r2, err := c.RetryPrompt(ctx, r1, map[string]exactjson.Value{"topic": exactjson.Object(
		exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("topic", exactjson.String("owls")))))})
	if err != nil || r2.Text() != "Tell me about owls." {
		t.Errorf("ask_topic retry = %v, %v", r2, err)
	}
}

func TestResources(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	c := wefttest.NewWireClient(f.srv, wefttest.WithCapabilities(allCaps))

	r, err := c.ReadResource(ctx, "test://readme")
	if err != nil {
		t.Fatal(err)
	}
	if r.Text() != "Read me." || r.TTLMillis != 60000 || r.CacheScope != "public" || r.Contents[0].MimeType != "text/plain" {
		t.Errorf("readme = %s", r.Raw)
	}
	if r, err := c.ReadResource(ctx, "test://users/42"); err != nil || r.Text() != "user 42" {
		t.Errorf("template = %v, %v", r, err)
	}
	_, err = c.ReadResource(ctx, "test://users/nobody")
	re := rpcError(t, err)
	if uri, _ := re.Data.Get("uri"); weft.Code(re.Code) != weft.CodeInvalidParams || uri.String() != `"test://users/nobody"` {
		t.Errorf("not found = %+v", re)
	}

	final, rounds, err := c.ReadResourceWithInput(ctx, "test://vault", wefttest.WireAcceptForm(map[string]any{"answer": "open sesame"}), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 2 || rounds[0].RequestState != "vault-nonce" || final.Text() != "the treasure" {
		t.Errorf("vault = %s after %d rounds", final.Raw, len(rounds))
	}
	if len(final.Contents) != 2 || string(final.Contents[1].Blob) != "\x00\x01\x02" {
		t.Errorf("vault contents = %+v", final.Contents)
	}
	// A retry result is private and immediately stale.
	if final.CacheScope != "private" || final.TTLMillis != 0 {
		t.Errorf("retry cache hints = %d %q", final.TTLMillis, final.CacheScope)
	}
	// An application error.
	_, _, err = c.ReadResourceWithInput(ctx, "test://vault", wefttest.WireAcceptForm(map[string]any{"answer": "guess"}), 0)
	if re := rpcError(t, err); re.Code != 1000 || re.Message != "Wrong answer" {
		t.Errorf("wrong answer = %+v", re)
	}
}

// headerRecorder records the headers of the requests it passes on.
type headerRecorder struct {
	next http.Handler
	mu   sync.Mutex
	last http.Header
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.last = r.Header.Clone()
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

func (h *headerRecorder) get(key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last.Get(key)
}

func TestMetadataHeaders(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	rec := &headerRecorder{next: f.srv}
	c := wefttest.NewWireClient(rec)

	if _, err := c.GetPrompt(ctx, "greet", map[string]string{"name": "x"}); err != nil {
		t.Fatal(err)
	}
	if rec.get("MCP-Protocol-Version") != weft.ProtocolVersion || rec.get("Mcp-Method") != "prompts/get" || rec.get("Mcp-Name") != "greet" {
		t.Errorf("headers = %v", rec.last)
	}

	// A non-ASCII prompt name goes through the Base64 sentinel and is accepted.
	p, err := c.GetPrompt(ctx, "grüße", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.get("Mcp-Name"); got != "=?base64?Z3LDvMOfZQ==?=" || p.Text() != "Grüß Gott!" {
		t.Errorf("Mcp-Name = %q, text %q", got, p.Text())
	}

	// A non-ASCII tool name: the header is decoded and matches the body, so
	// the server answers "Unknown tool" (-32602), not HeaderMismatch (-32020).
	_, err = c.CallTool(ctx, "météo", nil)
	if re := rpcError(t, err); weft.Code(re.Code) != weft.CodeInvalidParams || re.Message != "Unknown tool" {
		t.Errorf("non-ASCII tool = %+v", re)
	}
	if got := rec.get("Mcp-Name"); !strings.HasPrefix(got, "=?base64?") {
		t.Errorf("Mcp-Name = %q", got)
	}

	// A resource URI with non-ASCII and one with surrounding spaces.
	for _, uri := range []string{"test://users/zoë", "test://users/ spaced "} {
		if _, err := c.ReadResource(ctx, uri); err != nil {
			t.Errorf("read %q: %v", uri, err)
		}
		if got := rec.get("Mcp-Name"); !strings.HasPrefix(got, "=?base64?") {
			t.Errorf("Mcp-Name for %q = %q", uri, got)
		}
	}

	// x-mcp-header arguments become Mcp-Param-{Name} headers.
	res, err := c.CallTool(ctx, "weather", map[string]any{"region": "Zürich", "days": 3})
	if err != nil || res.Text() != "Weather for Zürich" {
		t.Fatalf("weather = %v, %v", res, err)
	}
	if rec.get("Mcp-Param-Region") != "=?base64?WsO8cmljaA==?=" || rec.get("Mcp-Param-Days") != "3" {
		t.Errorf("param headers = %v", rec.last)
	}
	if _, err := c.CallTool(ctx, "weather", map[string]any{"region": "eu-west"}); err != nil {
		t.Fatal(err)
	}
	if rec.get("Mcp-Param-Region") != "eu-west" || rec.get("Mcp-Param-Days") != "" {
		t.Errorf("param headers = %v", rec.last)
	}
}

func TestSend(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	c := wefttest.NewWireClient(f.srv)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

	// A raw non-ASCII Mcp-Name (not Base64-encoded) is a HeaderMismatch.
	h := http.Header{}
	h.Set("MCP-Protocol-Version", weft.ProtocolVersion)
	h.Set("Mcp-Method", "prompts/get")
	h.Set("Mcp-Name", "grüße")
	resp, err := c.Send(ctx, []byte(`{"jsonrpc":"2.0","id":"a","method":"prompts/get","params":{"name":"grüße",`+meta+`}}`), h)
	if err != nil || resp.Error == nil || weft.Code(resp.Error.Code) != weft.CodeHeaderMismatch || resp.HTTPStatus != http.StatusBadRequest {
		t.Errorf("raw non-ASCII header = %+v, %v", resp, err)
	}
	// Missing metadata headers.
	resp, err = c.Send(ctx, []byte(`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{`+meta+`}}`), nil)
	if err != nil || resp.Error == nil || weft.Code(resp.Error.Code) != weft.CodeHeaderMismatch {
		t.Errorf("no headers = %+v, %v", resp, err)
	}
	// Not JSON.
	resp, err = c.Send(ctx, []byte(`{"jsonrpc":`), nil)
	if err != nil || resp.Error == nil || weft.Code(resp.Error.Code) != weft.CodeParseError {
		t.Errorf("parse error = %+v, %v", resp, err)
	}
	// A notification: 202, no JSON-RPC response.
	resp, err = c.Send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`), nil)
	if err != nil || resp.HTTPStatus != http.StatusAccepted || resp.Error != nil || resp.Result.Kind() != exactjson.KindNull {
		t.Errorf("notification = %+v, %v", resp, err)
	}
}

func TestAdmission(t *testing.T) {
	f := newFixture(t, &weft.Options{Admission: func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		if r.BearerToken != "s3cret" {
			return weft.Identity{}, &weft.AdmissionError{Status: http.StatusUnauthorized, Message: "Unauthorized",
				Challenge: `Bearer realm="fixture"`}
		}
		return weft.Identity{Principal: "alice", Partition: "alice"}, nil
	}})
	ctx := t.Context()
	_, err := wefttest.NewWireClient(f.srv).CallTool(ctx, "add", map[string]int{"a": 1, "b": 1})
	re := rpcError(t, err)
	if re.HTTPStatus != http.StatusUnauthorized || re.Header.Get("WWW-Authenticate") != `Bearer realm="fixture"` {
		t.Errorf("unauthenticated = %+v", re)
	}
	c := wefttest.NewWireClient(f.srv, wefttest.WithHeader("Authorization", "Bearer s3cret"),
		wefttest.WithCapabilities(allCaps))
	if res, err := c.CallTool(ctx, "add", map[string]int{"a": 1, "b": 1}); err != nil || res.StructuredContent.String() != `{"sum":2}` {
		t.Errorf("authenticated = %v, %v", res, err)
	}
	// Partitioned framework state works across rounds for the same principal.
	final, _, err := c.CallToolWithInput(ctx, "book_trip", nil, wefttest.WireAcceptForm(map[string]any{"city": "Rome", "ok": true}), 0)
	if err != nil || final.Text() != "Booked a trip to Rome." {
		t.Errorf("book_trip = %v, %v", final, err)
	}
	// Lists are private once admission is configured.
	d, err := c.Discover(ctx)
	if err != nil || d.CacheScope != "private" {
		t.Errorf("discover = %+v, %v", d, err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	f := newFixture(t, nil)
	c := wefttest.NewWireClient(f.srv, wefttest.WithProgress(), wefttest.WithCapabilities(allCaps))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 16 {
		wg.Go(func() {
			res, err := c.CallTool(t.Context(), "add", map[string]int{"a": i, "b": 1})
			if err == nil && res.StructuredContent.String() != fmt.Sprintf(`{"sum":%d}`, i+1) {
				err = fmt.Errorf("sum of %d+1 = %s", i, res.StructuredContent)
			}
			errs <- err
		})
		wg.Go(func() {
			res, err := c.CallTool(t.Context(), "count", nil)
			if err == nil && len(res.Response.Progress()) != 3 {
				err = fmt.Errorf("progress = %v", res.Response.Progress())
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// fake answers every request with a canned body.
func fake(contentType string, status int, body func(id string) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := exactjsonParse(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id, _ := v.Get("id")
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body(id.String())))
	})
}

func exactjsonParse(r *http.Request) (exactjson.Value, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return exactjson.Value{}, err
	}
	return exactjson.Parse(b, exactjson.Limits{})
}

func TestProtocolViolations(t *testing.T) {
	ctx := t.Context()
	complete := `"result":{"resultType":"complete","content":[]}`
	cases := []struct {
		name string
		h    http.Handler
	}{
		{"wrong id", fake("application/json", 200, func(id string) string {
			return `{"jsonrpc":"2.0","id":999,` + complete + `}`
		})},
		{"no jsonrpc", fake("application/json", 200, func(id string) string { return `{"id":` + id + `,` + complete + `}` })},
		{"result and error", fake("application/json", 200, func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,` + complete + `,"error":{"code":1,"message":"x"}}`
		})},
		{"no resultType", fake("application/json", 200, func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[]}}`
		})},
		{"wrong content type", fake("text/plain", 200, func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,` + complete + `}`
		})},
		{"request on the stream", fake("text/event-stream", 200, func(id string) string {
			return `data: {"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}` + "\n\n" +
				`data: {"jsonrpc":"2.0","id":` + id + `,` + complete + `}` + "\n\n"
		})},
		{"message after the response", fake("text/event-stream", 200, func(id string) string {
			return `data: {"jsonrpc":"2.0","id":` + id + `,` + complete + `}` + "\n\n" +
				`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}` + "\n\n"
		})},
		{"truncated stream", fake("text/event-stream", 200, func(id string) string {
			return `data: {"jsonrpc":"2.0","id":` + id + `,` + complete + `}`
		})},
		{"undeclared input request", fake("application/json", 200, func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}}}}`
		})},
		{"empty input_required", fake("application/json", 200, func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"input_required"}}`
		})},
		{"no response", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})},
		{"panic", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wefttest.NewWireClient(tc.h).CallTool(ctx, "x", nil)
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.name != "panic" && !errors.Is(err, wefttest.ErrProtocol) {
				t.Errorf("err = %v, want ErrProtocol", err)
			}
		})
	}

	// A well-formed SSE stream with comments, CRLF line ends and a
	// multi-line data field is accepted.
	ok := fake("text/event-stream", 200, func(id string) string {
		return ": keep-alive\r\n\r\n" +
			"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":0.5}}\r\n\r\n" +
			`data:{"jsonrpc":"2.0","id":` + id + `,` + complete + "}\n\n"
	})
	res, err := wefttest.NewWireClient(ok).CallTool(ctx, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ps := res.Response.Progress(); len(ps) != 1 || ps[0].Progress != 0.5 {
		t.Errorf("progress = %+v", ps)
	}
}
