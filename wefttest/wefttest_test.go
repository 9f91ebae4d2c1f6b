package wefttest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
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

// answerFormsByMessage answers each form elicitation with the content
// listed for its message.
func answerFormsByMessage(answers map[string]map[string]any) wefttest.ElicitFunc {
	return func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
		m, _ := params.Get("message")
		msg, _ := m.AsString()
		content, ok := answers[msg]
		if !ok {
			return exactjson.Value{}, fmt.Errorf("unexpected question %q", msg)
		}
		return wefttest.AcceptForm(content)(ctx, params)
	}
}

// TestNewClient: the client package's client against the fixture server,
// in memory, with each of the Options.
func TestNewClient(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()

	t.Run("defaults", func(t *testing.T) {
		rec := &headerRecorder{next: f.srv}
		c := wefttest.NewClient(t, rec, nil)
		d, err := c.Discover(ctx)
		if err != nil || d.Instructions != "Fixture server." || !slices.Contains(d.SupportedVersions, weft.ProtocolVersion) {
			t.Fatalf("discover = %+v, %v", d, err)
		}
		res, err := c.CallTool(ctx, "add", addIn{A: 2, B: 3})
		if err != nil {
			t.Fatal(err)
		}
		if sum, err := client.StructuredAs[addOut](res); err != nil || sum.Sum != 5 {
			t.Errorf("add = %+v, %v", sum, err)
		}
		if rec.path() != wefttest.DefaultEndpoint || rec.host() != wefttest.Host || rec.remote() != wefttest.RemoteAddr {
			t.Errorf("request to %s at %s from %s", rec.path(), rec.host(), rec.remote())
		}
		// Without handlers the client declares no capabilities: a tool
		// that requires sampling is refused before it runs.
		_, err = c.CallTool(ctx, "needs_sampling", nil)
		var rerr *client.RPCError
		if !errors.As(err, &rerr) || weft.Code(rerr.Code) != weft.CodeMissingRequiredCapability || rerr.HTTPStatus != http.StatusBadRequest {
			t.Errorf("needs_sampling = %v", err)
		}
	})

	t.Run("header and endpoint", func(t *testing.T) {
		mux := http.NewServeMux()
		rec := &headerRecorder{next: f.srv}
		mux.Handle("/tenants/a/mcp", rec)
		c := wefttest.NewClient(t, mux, &wefttest.Options{Endpoint: "/tenants/a/mcp",
			Header: http.Header{"x-tenant": {"a"}, "User-Agent": {"tests"}}})
		if _, err := c.CallTool(ctx, "weather", map[string]any{"region": "Løvåsen", "days": 3}); err != nil {
			t.Fatal(err)
		}
		// The metadata headers are the client's own; Options.Header adds
		// and replaces.
		for k, want := range map[string]string{"X-Tenant": "a", "User-Agent": "tests", "Mcp-Method": "tools/call",
			"Mcp-Name": "weather", "Mcp-Param-Days": "3", "Mcp-Param-Region": "=?base64?TMO4dsOlc2Vu?="} {
			if got := rec.get(k); got != want {
				t.Errorf("%s: %q, want %q", k, got, want)
			}
		}
	})

	t.Run("handlers answer the rounds", func(t *testing.T) {
		c := wefttest.NewClient(t, f.srv, &wefttest.Options{Client: client.Options{Handlers: client.Handlers{
			Elicit: answerFormsByMessage(map[string]map[string]any{
				"Where to?":             {"city": "Kyoto"},
				"Book a trip to Kyoto?": {"ok": true},
				"Your name?":            {"name": "Ada"},
				"Which topic?":          {"topic": "tides"},
				"Riddle answer?":        {"answer": "open sesame"},
			}),
			Sample: wefttest.SampleText("test-model", "Autumn moonlight"),
			Roots:  wefttest.RootsOf("file:///a", "file:///b"),
		}}})
		res, err := c.CallTool(ctx, "book_trip", nil)
		if err != nil || res.Text() != "Booked a trip to Kyoto." {
			t.Errorf("book_trip = %v, %v", res, err)
		}
		res, err = c.CallTool(ctx, "survey", nil)
		if err != nil || res.Text() != "name=Ada model=test-model roots=2" {
			t.Errorf("survey = %v, %v", res, err)
		}
		res, err = c.CallTool(ctx, "shed", nil) // a state-only round
		if err != nil || res.Text() != "served after retry" {
			t.Errorf("shed = %v, %v", res, err)
		}
		p, err := c.GetPrompt(ctx, "ask_topic", nil)
		if err != nil || p.Text() != "Tell me about tides." {
			t.Errorf("ask_topic = %v, %v", p, err)
		}
		r, err := c.ReadResource(ctx, "test://vault")
		if err != nil || r.Text() != "the treasure" || len(r.Contents) != 2 || r.Contents[1].Blob != "AAEC" {
			t.Errorf("vault = %+v, %v", r, err)
		}
	})

	t.Run("declined", func(t *testing.T) {
		c := wefttest.NewClient(t, f.srv, &wefttest.Options{Client: client.Options{Handlers: client.Handlers{Elicit: wefttest.Decline()}}})
		if res, err := c.CallTool(ctx, "book_trip", nil); err != nil || !res.IsError || res.Text() != "trip cancelled" {
			t.Errorf("book_trip = %v, %v", res, err)
		}
	})

	t.Run("a round limit", func(t *testing.T) {
		c := wefttest.NewClient(t, f.srv, &wefttest.Options{Client: client.Options{MaxRounds: 1,
			Handlers: client.Handlers{Elicit: wefttest.AcceptForm(map[string]any{"city": "Oslo", "ok": true})}}})
		if _, err := c.CallTool(ctx, "book_trip", nil); !errors.Is(err, client.ErrTooManyRounds) {
			t.Errorf("book_trip = %v, want ErrTooManyRounds", err)
		}
	})

	t.Run("progress and logs", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		note := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, s)
		}
		c := wefttest.NewClient(t, f.srv, &wefttest.Options{Client: client.Options{
			LogLevel:   "info",
			OnProgress: func(p, total float64, msg string) { note(fmt.Sprintf("%v/%v %s", p, total, msg)) },
			OnLog:      func(level, logger string, data exactjson.Value) { note(level + " " + logger + " " + data.String()) },
		}})
		if res, err := c.CallTool(ctx, "count", nil); err != nil || res.Text() != "counted to 3" {
			t.Fatalf("count = %v, %v", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := `[1/3 step 1 2/3 step 2 3/3 step 3 info count "counted"]`; fmt.Sprint(got) != want {
			t.Errorf("notifications %v, want %s", got, want)
		}
	})

	t.Run("cancellation reaches the handler", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c := wefttest.NewClient(t, f.srv, &wefttest.Options{Client: client.Options{
			OnProgress: func(float64, float64, string) { cancel() }}})
		if _, err := c.CallTool(cctx, "wait", nil); !errors.Is(err, context.Canceled) {
			t.Errorf("wait = %v, want context.Canceled", err)
		}
		select {
		case <-f.stopped:
		case <-time.After(5 * time.Second):
			t.Fatal("the handler did not see the cancellation")
		}
	})

	t.Run("concurrent calls", func(t *testing.T) {
		c := wefttest.NewClient(t, f.srv, nil)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				res, err := c.CallTool(ctx, "add", addIn{A: i, B: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if sum, _ := client.StructuredAs[addOut](res); sum.Sum != i+1 {
					t.Errorf("add(%d, 1) = %d", i, sum.Sum)
				}
			})
		}
		wg.Wait()
	})

	t.Run("the 2025 era", func(t *testing.T) {
		// Asking a 2025-era client for input needs a session.
		f := newFixture(t, &weft.Options{Legacy: weft.LegacyOptions{InMemorySessions: true}})
		c := wefttest.NewClient(t, f.srv, &wefttest.Options{Client: client.Options{ProtocolVersion: client.LegacyProtocolVersion,
			Handlers: client.Handlers{Elicit: answerFormsByMessage(map[string]map[string]any{
				"Where to?": {"city": "Lima"}, "Book a trip to Lima?": {"ok": true}})}}})
		res, err := c.CallTool(ctx, "book_trip", nil)
		if err != nil || res.Text() != "Booked a trip to Lima." || c.ProtocolVersion() != client.LegacyProtocolVersion {
			t.Errorf("book_trip over 2025-11-25 = %v, %v (%s)", res, err, c.ProtocolVersion())
		}
	})
}

// headerRecorder records the last request it passes on.
type headerRecorder struct {
	next http.Handler
	mu   sync.Mutex
	last *http.Request
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.last = r.Clone(r.Context())
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

func (h *headerRecorder) request() *http.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		return &http.Request{Header: http.Header{}, URL: &url.URL{}}
	}
	return h.last
}

func (h *headerRecorder) get(key string) string { return h.request().Header.Get(key) }
func (h *headerRecorder) path() string          { return h.request().URL.Path }
func (h *headerRecorder) host() string          { return h.request().Host }
func (h *headerRecorder) remote() string        { return h.request().RemoteAddr }
