package weft

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/progerr"
	"github.com/weftmcp/weft/internal/race"
	"github.com/weftmcp/weft/seal"
)

// countingProtector counts the protector calls of a server.
type countingProtector struct {
	inner       seal.Protector
	seals, open atomic.Int32
}

func (p *countingProtector) Seal(ctx context.Context, binding, plaintext []byte) (string, error) {
	p.seals.Add(1)
	return p.inner.Seal(ctx, binding, plaintext)
}

func (p *countingProtector) Open(ctx context.Context, token string, binding []byte) ([]byte, error) {
	p.open.Add(1)
	return p.inner.Open(ctx, token, binding)
}

// inputServer has a stateless tool that records the responses it sees.
type inputServer struct {
	s    *Server
	lc   *logCapture
	mu   sync.Mutex
	last InputResponses
	runs int
}

func newInputServer(t testing.TB, opts *Options) *inputServer {
	t.Helper()
	is := &inputServer{}
	is.s, is.lc = newServer(t, opts)
	form := Form(ConditionalCapability)
	must(t, is.s.AddTool(Tool{Name: "ask", Description: "Asks for approval.", Inputs: []Input{form}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			is.mu.Lock()
			is.last, is.runs = req.InputResponses(), is.runs+1
			is.mu.Unlock()
			if req.InputResponses().Len() > 0 {
				return textResult("got " + strings.Join(req.InputResponses().Keys(), ",")), nil
			}
			return nil, AskInput("approve", form.Ask("Approve?", approveSchema))
		}))
	return is
}

func (is *inputServer) seen() (InputResponses, int) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.last, is.runs
}

func TestInputResponsesValidation(t *testing.T) {
	is := newInputServer(t, &Options{Limits: Limits{MaxInputResponses: 3}})
	ts := startHTTP(t, is.s)
	accept := func(content any) M { return M{"action": "accept", "content": content} }
	cases := []struct {
		name  string
		value any // the inputResponses member
		ok    bool
	}{
		{"accept with scalars and a string array", M{"approve": accept(M{"s": "x", "n": json.Number("3.50"), "b": true, "a": []string{"p", "q"}})}, true},
		{"accept without content", M{"approve": M{"action": "accept"}}, true},
		{"decline", M{"approve": M{"action": "decline"}}, true},
		{"cancel with null content", M{"approve": M{"action": "cancel", "content": nil}}, true},
		{"sampling result", M{"approve": M{"role": "assistant", "content": M{"type": "text", "text": "hi"}, "model": "m"}}, true},
		{"roots result", M{"approve": M{"roots": []M{{"uri": "file:///a"}}}}, true},
		{"empty object", M{}, true},
		{"three responses", M{"a": M{"action": "cancel"}, "b": M{"action": "cancel"}, "c": M{"action": "cancel"}}, true},

		{"null", nil, false},
		{"array", []any{}, false},
		{"string", "accept", false},
		{"response not an object", M{"approve": json.Number("5")}, false},
		{"response a string", M{"approve": "accept"}, false},
		{"response null", M{"approve": nil}, false},
		{"response empty", M{"approve": M{}}, false},
		{"unknown action", M{"approve": M{"action": "maybe"}}, false},
		{"nested object in content", M{"approve": accept(M{"o": M{"a": 1}})}, false},
		{"null in content", M{"approve": accept(M{"o": nil})}, false},
		{"number array in content", M{"approve": accept(M{"a": []any{1}})}, false},
		{"content not an object", M{"approve": accept("yes")}, false},
		{"decline with content", M{"approve": M{"action": "decline", "content": M{"ok": true}}}, false},
		{"root without uri", M{"approve": M{"roots": []M{{"name": "a"}}}}, false},
		{"sampling without model", M{"approve": M{"role": "assistant", "content": M{"type": "text", "text": "hi"}}}, false},
		{"four responses", M{"a": M{"action": "cancel"}, "b": M{"action": "cancel"}, "c": M{"action": "cancel"}, "d": M{"action": "cancel"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, before := is.seen()
			p := toolCall(elicitCaps, "ask", nil)
			p["inputResponses"] = c.value
			r := rpc(t, ts.URL, 2, "tools/call", p)
			_, after := is.seen()
			if c.ok {
				if r.Status != 200 || r.Msg.Error != nil {
					t.Fatalf("want success, got %v", r)
				}
				return
			}
			r.wantError(t, 400, CodeInvalidParams)
			if after != before {
				t.Errorf("the handler ran on malformed input responses")
			}
		})
	}
}

// TestInputResponsesPreserved: responses reach the handler exactly, unknown
// keys and members included, in the order the client sent them.
func TestInputResponsesPreserved(t *testing.T) {
	is := newInputServer(t, nil)
	raw := `{"zeta":{"action":"cancel"},"approve":{"action":"accept","content":{"amount":3.50,"tags":["a","b"]},"x-extra":{"kept":[1,{"deep":null}]}},"alpha":{"roots":[{"uri":"file:///r","name":"r","_meta":{}}]}}`
	p := toolCall(elicitCaps, "ask", nil)
	p["inputResponses"] = json.RawMessage(raw)
	r := rpcRec(t, is.s, "/mcp", 1, "tools/call", p)
	if r.text(t) != "got alpha,approve,zeta" {
		t.Fatalf("result %s", r.Body)
	}
	in, _ := is.seen()
	var order []string
	for k := range in.All() {
		order = append(order, k)
	}
	if strings.Join(order, ",") != "zeta,approve,alpha" {
		t.Errorf("All() order %v, want the client's", order)
	}
	v, _ := in.Get("approve")
	if got, want := v.String(), `{"action":"accept","content":{"amount":3.50,"tags":["a","b"]},"x-extra":{"kept":[1,{"deep":null}]}}`; got != want {
		t.Errorf("approve = %s, want exactly %s", got, want)
	}
	if m := in.Missing("approve", "later", "zeta", "other"); fmt.Sprint(m) != "[later other]" {
		t.Errorf("Missing = %v", m)
	}
	// The declaration reads the answers it asked for.
	req, form := &Request{retry: &retryState{inputResponses: in}}, Form(RequiredCapability)
	content, outcome, ok, err := form.Answer(req, "approve")
	if err != nil || !ok || outcome != Accepted || content.String() != `{"amount":3.50,"tags":["a","b"]}` {
		t.Errorf("Answer = %s %v %v %v", content, outcome, ok, err)
	}
	if _, outcome, ok, err := form.Answer(req, "zeta"); err != nil || !ok || outcome != Cancelled {
		t.Errorf("Answer of a cancel: %v %v %v", outcome, ok, err)
	}
	if _, _, ok, err := form.Answer(req, "absent"); ok || err != nil {
		t.Errorf("Answer of an absent key: %v %v", ok, err)
	}
	if _, _, ok, err := form.Answer(req, "alpha"); !ok || err == nil {
		t.Errorf("Answer of a roots result must fail: %v", err)
	}
}

// TestInputResponseShapeBoundByState: with framework state the server knows
// which method each key was issued for; an answer of another shape under that
// key is malformed, while an unexpected key may hold any union member.
func TestInputResponseShapeBoundByState(t *testing.T) {
	f := newStateFixture(t, nil)
	tok := tokenOf(t, f.call(t, "/mcp", 1, "flow", nil, nil))
	sampling := M{"role": "assistant", "content": M{"type": "text", "text": "hi"}, "model": "m"}
	before := f.calls()
	r := f.call(t, "/mcp", 2, "flow", nil, M{"requestState": tok, "inputResponses": M{"approve": sampling}})
	r.wantError(t, 400, CodeInvalidParams)
	if f.calls() != before {
		t.Errorf("the handler ran")
	}
	r = f.call(t, "/mcp", 3, "flow", nil, M{"requestState": tok, "inputResponses": M{"approve": M{"action": "accept"}, "unexpected": sampling}})
	if r.Status != 200 || r.text(t) != "approved" {
		t.Fatalf("%v", r)
	}
	if got := f.last(t); !got.responses.Has("unexpected") || got.responses.Len() != 2 {
		t.Errorf("the unexpected key is not visible: %v", got.responses.Keys())
	}
}

// TestInvalidInputRequiredIsProgrammingError: results a handler may not
// return become -32603 with an error log line; nothing of them is sent. The
// in-process client that sent the request is told the cause (a
// *ProgrammingError through the request's context), and the message names
// the setting or call that fixes it.
func TestInvalidInputRequiredIsProgrammingError(t *testing.T) {
	form := Form(ConditionalCapability)
	sampling := Sampling(ConditionalCapability)
	cases := []struct {
		name string
		mode StateMode
		ir   func() *InputRequired
	}{
		{"undeclared kind", StateNone, func() *InputRequired {
			return AskInput("r", Roots(ConditionalCapability).Ask())
		}},
		{"declared kind with another requirement", StateNone, func() *InputRequired {
			return AskInput("e", Form(RequiredCapability).Ask("Approve?", approveSchema))
		}},
		{"sampling with tools declared as Sampling", StateNone, func() *InputRequired {
			return AskInput("s", sampling.Ask(SamplingRequest{Messages: []SamplingMessage{{Role: RoleUser, Content: TextContent("Hi")}},
				MaxTokens: 5, Tools: []SamplingTool{{Name: "lookup"}}}))
		}},
		{"malformed sampling request", StateNone, func() *InputRequired {
			return AskInput("s", sampling.Ask(SamplingRequest{MaxTokens: 5}))
		}},
		{"form without a message", StateNone, func() *InputRequired {
			return AskInput("e", form.Ask(" ", approveSchema))
		}},
		{"form schema outside the flat shape", StateNone, func() *InputRequired {
			return AskInput("e", form.Ask("Where?", mustParse(t, `{"type":"object","properties":{"a":{"type":"object"}}}`)))
		}},
		{"zero declaration", StateNone, func() *InputRequired {
			return AskInput("e", FormInput{}.Ask("x", approveSchema))
		}},
		{"zero typed declaration", StateNone, func() *InputRequired {
			return AskInput("e", TypedFormInput[struct{}]{}.Ask("x"))
		}},
		{"undeclared typed form with a secret", StateNone, func() *InputRequired {
			type login struct {
				Password string `json:"password"`
			}
			return AskInput("e", FormOf[login](ConditionalCapability).Ask("Sign in"))
		}},
		{"framework state that does not encode", StateFramework, func() *InputRequired {
			return AskInput("e", form.Ask("a", approveSchema)).WithFrameworkState(func() {})
		}},
		{"duplicate key", StateNone, func() *InputRequired {
			return AskInput("e", form.Ask("a", approveSchema)).Ask("e", form.Ask("b", approveSchema))
		}},
		{"key of invalid UTF-8", StateNone, func() *InputRequired { return AskInput("\xff", form.Ask("a", approveSchema)) }},
		{"nothing at all", StateNone, func() *InputRequired { return new(InputRequired) }},
		{"framework state on a stateless tool", StateNone, func() *InputRequired {
			return AskInput("e", form.Ask("a", approveSchema)).WithFrameworkState(exactjson.Object())
		}},
		{"application state on a framework tool", StateFramework, func() *InputRequired {
			return AskInput("e", form.Ask("a", approveSchema)).WithApplicationState("x")
		}},
		{"framework state on an application tool", StateApplication, func() *InputRequired {
			return AskInput("e", form.Ask("a", approveSchema)).WithFrameworkState(exactjson.Object())
		}},
		{"nil", StateNone, func() *InputRequired { return nil }},
		{"form field asking for a secret", StateNone, func() *InputRequired {
			return AskInput("e", form.Ask("Sign in", mustParse(t, `{"type":"object","properties":{"password":{"type":"string"}}}`)))
		}},
		{"URL outside the URL policy", StateNone, func() *InputRequired {
			return AskInput("u", URL(ConditionalCapability).Ask("Sign in", "https://evil.example/login"))
		}},
	}
	// The fix each message names, for the mistakes issue #26 lists (the
	// others must still report a *ProgrammingError).
	fixes := map[string]string{
		"undeclared kind":                          "add weft.Roots(...) to weft.Tool.Inputs",
		"declared kind with another requirement":   "ask through that declaration",
		"sampling with tools declared as Sampling": "without WithTools",
		"duplicate key":                            "give each InputRequired.Ask of one result its own key",
		"nothing at all":                           "build it with weft.AskInput",
		"framework state on a stateless tool":      "returned framework state but declares none: set weft.Tool.StateMode (weft.StateFramework)",
		"application state on a framework tool":    "set weft.Tool.StateMode (weft.StateApplication)",
		"framework state on an application tool":   "set weft.Tool.StateMode (weft.StateFramework)",
		"URL outside the URL policy":               "Options.URLElicitation",
		"framework state that does not encode":     "framework state",
		"undeclared typed form with a secret":      "request secrets with URL mode",
	}
	caps := M{"elicitation": M{"form": M{}, "url": M{}}, "sampling": M{"tools": M{}}, "roots": M{}}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prot := &countingProtector{inner: managerFor(t, fixedKey(t, "k", 1))}
			s, lc := newServer(t, &Options{Protector: prot})
			must(t, s.AddTool(Tool{Name: "bad", Description: "Returns an invalid input_required.", Inputs: []Input{form, sampling, URL(ConditionalCapability)}, StateMode: c.mode},
				func(ctx context.Context, req *Request) (*CallToolResult, error) {
					ir := c.ir()
					if ir == nil {
						var nilIR *InputRequired
						return nil, nilIR
					}
					return nil, ir
				}))
			var reported []error
			b := body(t, i, "tools/call", toolCall(caps, "bad", nil))
			hreq := httptest.NewRequestWithContext(progerr.WithReporter(context.Background(), func(err error) { reported = append(reported, err) }),
				http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(b))
			hreq.Header = stdHeaders(b)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, hreq)
			want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32603,"message":"Internal error"}}`, i)
			if got := strings.TrimSpace(rec.Body.String()); rec.Code != 500 || got != want {
				t.Errorf("got %d %s, want 500 %s", rec.Code, got, want)
			}
			var pe *ProgrammingError
			if len(reported) != 1 || !errors.As(reported[0], &pe) || pe.Method != "tools/call" || pe.Name != "bad" {
				t.Fatalf("reported %v, want one *ProgrammingError of tools/call \"bad\"", reported)
			}
			if fix := fixes[c.name]; !strings.Contains(pe.Error(), fix) {
				t.Errorf("message %q does not name the fix %q", pe.Error(), fix)
			}
			if lc.count(slog.LevelError, "programming error") != 1 {
				t.Errorf("want one error log line about the programming error, got %v", lc.records())
			}
			if n := prot.seals.Load(); n != 0 {
				t.Errorf("the protector sealed %d times", n)
			}
		})
	}
}

// conditionalServer declares every input kind with ConditionalCapability and emits the
// kinds listed in the "emit" argument, with framework state.
func conditionalServer(t testing.TB) (*Server, *countingProtector, *atomic.Int32, chan [3]any) {
	prot := &countingProtector{inner: managerFor(t, fixedKey(t, "k", 1))}
	s, _ := newServer(t, &Options{Protector: prot, URLElicitation: elicit.URLPolicy{AllowedOrigins: []string{"https://example.com"}}})
	decls := map[string]Input{
		"form": Form(ConditionalCapability), "url": URL(ConditionalCapability),
		"sampling": Sampling(ConditionalCapability), "roots": Roots(ConditionalCapability),
	}
	reqs := map[string]func() InputRequest{
		"form": func() InputRequest { return decls["form"].(FormInput).Ask("Name?", approveSchema) },
		"url":  func() InputRequest { return decls["url"].(URLInput).Ask("Sign in.", "https://example.com/auth?h=1") },
		"sampling": func() InputRequest {
			return decls["sampling"].(SamplingInput).Ask(SamplingRequest{Messages: []SamplingMessage{{Role: RoleUser, Content: TextContent("Hi")}}, MaxTokens: 10})
		},
		"roots": func() InputRequest { return decls["roots"].(RootsInput).Ask() },
	}
	var runs atomic.Int32
	held := make(chan [3]any, 16)
	must(t, s.AddTool(Tool{Name: "cond", Description: "Emits what it is told.", StateMode: StateFramework,
		Inputs: []Input{decls["form"], decls["url"], decls["sampling"], decls["roots"]}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			runs.Add(1)
			perr := req.Progress(1, 0, "")
			sent, lerr := req.Log(LevelEmergency, "", exactjson.String("x"))
			held <- [3]any{req.CanReportProgress(), perr, sent && lerr == nil}
			ev, _ := req.Arguments().Get("emit")
			ir := new(InputRequired)
			for e := range ev.Values() {
				k, _ := e.AsString()
				ir.Ask(k, reqs[k]())
			}
			if len(ir.Keys()) == 0 {
				return textResult("nothing needed"), nil
			}
			return nil, ir.WithFrameworkState(exactjson.Object(exactjson.Field("secret-phase", exactjson.String("p"))))
		}))
	return s, prot, &runs, held
}

func TestConditionalCapabilitiesCheckedWhenEmitted(t *testing.T) {
	s, prot, runs, held := conditionalServer(t)
	ts := startHTTP(t, s)
	all := []string{"form", "url", "sampling", "roots"}
	const full = `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`
	cases := []struct {
		caps string
		emit []string
		want string // requiredCapabilities; "" for success
	}{
		{`{}`, all, `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`},
		{`{}`, []string{"url", "roots"}, `{"elicitation":{"url":{}},"roots":{}}`},
		{`{"sampling":{},"elicitation":{}}`, all, `{"elicitation":{"url":{}},"roots":{}}`},
		{`{"elicitation":{"url":{}}}`, []string{"form"}, `{"elicitation":{"form":{}}}`},
		{`{}`, nil, ""},
		{full, all, ""},
	}
	for _, c := range cases {
		t.Run(c.caps+fmt.Sprint(c.emit), func(t *testing.T) {
			prot.seals.Store(0)
			p := withMeta(toolCall(json.RawMessage(c.caps), "cond", M{"emit": c.emit}), M{"progressToken": "pt", metaLogLevel: "debug"})
			r := rpc(t, ts.URL, 5, "tools/call", p)
			h := <-held
			missing := c.caps != full // some conditional capability is missing
			if c.want == "" {
				if r.Status != 200 || r.Msg.Error != nil {
					t.Fatalf("want success, got %v", r)
				}
				if len(c.emit) > 0 {
					if res := r.result(t); res["resultType"] != "input_required" || prot.seals.Load() != 1 {
						t.Errorf("want input_required sealed once, got %s (%d seals)", r.Body, prot.seals.Load())
					}
				}
			} else {
				e := r.wantError(t, 400, CodeMissingRequiredCapability)
				if want := `{"requiredCapabilities":` + c.want + `}`; !jsonEqual(t, e.Data, []byte(want)) {
					t.Errorf("data %s, want %s", e.Data, want)
				}
				for _, leak := range []string{"inputRequests", "requestState", "result", "example.com", "Name?", "secret-phase"} {
					if strings.Contains(string(r.Body), leak) {
						t.Errorf("the rejection leaks %q: %s", leak, r.Body)
					}
				}
				if n := prot.seals.Load(); n != 0 {
					t.Errorf("the protector ran %d times before the rejection", n)
				}
			}
			// While any conditional capability is missing, output is held:
			// no progress, no log, a plain JSON response.
			if missing {
				if h[0] != false || !errors.Is(h[1].(error), ErrNoProgress) || h[2] != false {
					t.Errorf("output not held: CanReportProgress=%v Progress=%v Log sent=%v", h[0], h[1], h[2])
				}
				if ct := r.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want a held JSON response", ct)
				}
			} else if h[0] != true || h[1] != nil || h[2] != true {
				t.Errorf("with every capability progress and logs flow: %v", h)
			}
		})
	}
	if runs.Load() != int32(len(cases)) {
		t.Errorf("handler runs %d", runs.Load())
	}
}

// TestRequiredCapabilityCheckedBeforeHandler: a required capability is
// checked after admission and before the handler, every call.
func TestRequiredCapabilityCheckedBeforeHandler(t *testing.T) {
	var runs atomic.Int32
	s, _ := newServer(t, &Options{Admission: func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
		if r.BearerToken == "" {
			return Identity{}, &AdmissionError{Status: 401, Message: "Unauthorized"}
		}
		return Identity{Principal: r.BearerToken}, nil
	}})
	must(t, s.AddTool(Tool{Name: "req", Description: "Needs sampling and roots.", Inputs: []Input{Sampling(RequiredCapability), Roots(RequiredCapability), Form(ConditionalCapability)}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			runs.Add(1)
			return textResult("ran"), nil
		}))
	ts := startHTTP(t, s)
	auth := setHeader("Authorization", "Bearer alice")
	for i := range 2 {
		e := rpc(t, ts.URL, i, "tools/call", toolCall(M{"sampling": M{}}, "req", nil), auth).wantError(t, 400, CodeMissingRequiredCapability)
		if !jsonEqual(t, e.Data, []byte(`{"requiredCapabilities":{"roots":{}}}`)) {
			t.Errorf("data %s", e.Data)
		}
	}
	// Admission comes first.
	if r := rpc(t, ts.URL, 3, "tools/call", toolCall(nil, "req", nil)); r.Status != 401 {
		t.Errorf("without credentials: %v", r)
	}
	if runs.Load() != 0 {
		t.Fatalf("the handler ran %d times without its required capabilities", runs.Load())
	}
	if r := rpc(t, ts.URL, 4, "tools/call", toolCall(M{"sampling": M{}, "roots": M{}}, "req", nil), auth); r.text(t) != "ran" {
		t.Errorf("with the capabilities: %v", r)
	}
}

// TestInputRequiredForPromptsAndResources: prompts/get and resources/read
// may ask for input; a resource retry result is never shared or cached.
func TestInputRequiredForPromptsAndResources(t *testing.T) {
	form := Form(ConditionalCapability)
	s, _ := newServer(t, nil)
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://gated", Name: "gated"}, Cache: CachePolicy{TTLMillis: 60000, Public: true}, Inputs: []Input{form}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			if !req.InputResponses().Has("ok") {
				return nil, AskInput("ok", form.Ask("Open?", approveSchema))
			}
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "opened")}}, nil
		}))
	must(t, s.AddPrompt(Prompt{Name: "gated", Inputs: []Input{form}},
		func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
			if !req.InputResponses().Has("ok") {
				return nil, AskInput("ok", form.Ask("Open?", approveSchema))
			}
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent("opened")}}}, nil
		}))
	must(t, s.AddPrompt(Prompt{Name: "completing", Complete: func(ctx context.Context, req *Request, c CompletionRequest) (Completion, error) {
		return Completion{}, AskInput("ok", form.Ask("Open?", approveSchema))
	}, Arguments: []PromptArgument{{Name: "a"}}}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{}, nil
	}))
	ts := startHTTP(t, s)
	answer := M{"ok": M{"action": "accept", "content": M{"ok": true}}}
	for _, c := range []struct{ method, member, target string }{{"resources/read", "uri", "test://gated"}, {"prompts/get", "name", "gated"}} {
		r := rpc(t, ts.URL, 1, c.method, paramsCaps(elicitCaps, M{c.member: c.target}))
		if res := r.result(t); res["resultType"] != "input_required" || res["ttlMs"] != nil || res["cacheScope"] != nil {
			t.Errorf("%s: %s", c.method, r.Body)
		}
		r = rpc(t, ts.URL, 2, c.method, paramsCaps(elicitCaps, M{c.member: c.target, "inputResponses": answer}))
		res := r.result(t)
		if res["resultType"] != "complete" || !strings.Contains(string(r.Body), "opened") {
			t.Errorf("%s retry: %s", c.method, r.Body)
		}
		if c.method == "resources/read" && (fmt.Sprint(res["ttlMs"]) != "0" || res["cacheScope"] != "private") {
			t.Errorf("a retry result must not be cacheable: ttlMs=%v cacheScope=%v", res["ttlMs"], res["cacheScope"])
		}
	}
	// Methods that cannot ask for input turn an InputRequired into -32603.
	r := rpc(t, ts.URL, 3, "completion/complete", paramsCaps(elicitCaps, M{"ref": M{"type": "ref/prompt", "name": "completing"}, "argument": M{"name": "a", "value": ""}}))
	r.wantError(t, 500, CodeInternalError)
	if strings.Contains(string(r.Body), "inputRequests") {
		t.Errorf("leaked: %s", r.Body)
	}
}

// TestFrameworkStateTypes: T exactly exactjson.Value is the verified state
// itself, handed over without an allocation; any other T, an interface
// included, is decoded.
func TestFrameworkStateTypes(t *testing.T) {
	st, err := exactjson.ParseString(`{"phase":"confirming","n":1E+2}`, exactjson.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{retry: &retryState{fwState: st, hasFwState: true}}
	for _, tc := range []struct {
		name string
		get  func() (any, bool, error)
		want string // %v of the value
	}{
		{"value", func() (any, bool, error) { return FrameworkState[exactjson.Value](req) }, `{"phase":"confirming","n":1E+2}`},
		{"interface", func() (any, bool, error) { return FrameworkState[any](req) }, `map[n:100 phase:confirming]`},
		{"struct", func() (any, bool, error) {
			return FrameworkState[struct {
				Phase string `json:"phase"`
				N     int    `json:"n"`
			}](req)
		}, `{confirming 100}`},
		{"absent", func() (any, bool, error) { return FrameworkState[exactjson.Value](&Request{}) }, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok, err := tc.get()
			if err != nil || ok != (tc.want != "") {
				t.Fatalf("FrameworkState = %v, %v, %v", v, ok, err)
			}
			if got := fmt.Sprint(v); ok && got != tc.want {
				t.Errorf("FrameworkState = %s, want %s", got, tc.want)
			}
		})
	}
	if race.Enabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = FrameworkState[exactjson.Value](req) }); n != 0 {
		t.Errorf("FrameworkState[exactjson.Value] made %v allocations, want 0", n)
	}
}
