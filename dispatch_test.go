package weft

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// catalogServer registers tools (in a deliberately unsorted order), prompts,
// a resource and a template.
func catalogServer(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, _ := newServer(t, opts)
	for _, n := range []string{"zeta", "alpha", "mid", "beta"} {
		addText(t, s, n, n)
	}
	must(t, s.AddPrompt(Prompt{Name: "greet", Description: "Greets.", Arguments: []PromptArgument{{Name: "who", Required: true}},
		Complete: func(ctx context.Context, req *Request, c CompletionRequest) (Completion, error) {
			return Completion{Values: []string{c.Value + "ice"}, Total: 1}, nil
		}},
		func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent("hello " + args["who"])}}}, nil
		}))
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://static", Name: "static"}, Cache: CachePolicy{TTLMillis: 60000, Public: true}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "static")}}, nil
		}))
	must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "item "+req.URIParams()["id"])}}, nil
		}))
	return s
}

func TestResultsCarryResultTypeServerInfoAndCacheHints(t *testing.T) {
	s := catalogServer(t, &Options{Instructions: "Be kind."})
	ts := startHTTP(t, s)
	cases := []struct {
		method    string
		p         M
		cacheable bool
		ttl       string
		scope     string
	}{
		{"server/discover", params(nil), true, "0", "public"},
		{"tools/list", params(nil), true, "0", "public"},
		{"prompts/list", params(nil), true, "0", "public"},
		{"resources/list", params(nil), true, "0", "public"},
		{"resources/templates/list", params(nil), true, "0", "public"},
		{"resources/read", params(M{"uri": "test://static"}), true, "60000", "public"},
		{"resources/read", params(M{"uri": "test://items/42"}), true, "0", "private"},
		{"tools/call", toolCall(nil, "alpha", nil), false, "", ""},
		{"prompts/get", params(M{"name": "greet", "arguments": M{"who": "bob"}}), false, "", ""},
		{"completion/complete", params(M{"ref": M{"type": "ref/prompt", "name": "greet"}, "argument": M{"name": "who", "value": "al"}}), false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.method+fmt.Sprint(c.p["uri"]), func(t *testing.T) {
			r := rpc(t, ts.URL, 1, c.method, c.p)
			if r.Status != 200 {
				t.Fatalf("%v", r)
			}
			res := r.result(t)
			if res["resultType"] != "complete" {
				t.Errorf("resultType = %v", res["resultType"])
			}
			mt, _ := res["_meta"].(M)
			if si, _ := mt[metaServerInfo].(M); si["name"] != "weft-test-server" || si["version"] != "9.9.9" {
				t.Errorf("_meta serverInfo = %v", mt)
			}
			ttl, hasTTL := res["ttlMs"]
			scope, hasScope := res["cacheScope"]
			if hasTTL != c.cacheable || hasScope != c.cacheable {
				t.Fatalf("cacheable=%v but ttlMs=%v cacheScope=%v", c.cacheable, ttl, scope)
			}
			if c.cacheable && (fmt.Sprint(ttl) != c.ttl || scope != c.scope) {
				t.Errorf("ttlMs=%v cacheScope=%v, want %s %s", ttl, scope, c.ttl, c.scope)
			}
		})
	}
	res := rpc(t, ts.URL, 1, "server/discover", params(nil)).result(t)
	if res["instructions"] != "Be kind." || fmt.Sprint(res["supportedVersions"]) != "["+ProtocolVersion+"]" {
		t.Errorf("discover: %v", res)
	}
	caps := res["capabilities"].(M)
	for _, k := range []string{"tools", "prompts", "resources", "completions", "logging"} {
		if _, ok := caps[k]; !ok {
			t.Errorf("capabilities lack %s: %v", k, caps)
		}
	}
}

func TestCachePolicyOptions(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  Options
		ttl   string
		scope string
	}{
		{"configured", Options{Cache: &CachePolicy{TTLMillis: 5000}}, "5000", "private"},
		{"admission makes lists private", Options{Admission: func(context.Context, *AdmissionRequest) (Identity, error) { return Identity{}, nil }}, "0", "private"},
		{"visible makes lists private", Options{Visible: func(context.Context, *Request, ItemKind, string) bool { return true }}, "0", "private"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := catalogServer(t, &c.opts)
			for _, m := range []string{"server/discover", "tools/list", "prompts/list", "resources/list"} {
				res := rpcRec(t, s, "/mcp", 1, m, params(nil)).result(t)
				if fmt.Sprint(res["ttlMs"]) != c.ttl || res["cacheScope"] != c.scope {
					t.Errorf("%s: ttlMs=%v cacheScope=%v", m, res["ttlMs"], res["cacheScope"])
				}
			}
		})
	}
	// A read by an identified partition is never public.
	s := catalogServer(t, &Options{Admission: func(context.Context, *AdmissionRequest) (Identity, error) {
		return Identity{Partition: "p"}, nil
	}})
	res := rpcRec(t, s, "/mcp", 1, "resources/read", params(M{"uri": "test://static"})).result(t)
	if res["cacheScope"] != "private" || fmt.Sprint(res["ttlMs"]) != "60000" {
		t.Errorf("partitioned read: %v", res)
	}
}

func TestOmitServerInfo(t *testing.T) {
	s := catalogServer(t, &Options{OmitServerInfo: true})
	for _, m := range []string{"server/discover", "tools/list"} {
		r := rpcRec(t, s, "/mcp", 1, m, params(nil))
		if res := r.result(t); res["_meta"] != nil || res["resultType"] != "complete" {
			t.Errorf("%s: %s", m, r.Body)
		}
	}
	// Application _meta is still sent.
	must(t, s.AddTool(Tool{Name: "m", Description: "Has result meta."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("x")}, Meta: mustParse(t, `{"app/key":1,"`+metaServerInfo+`":"spoofed"}`)}, nil
	}))
	r := rpcRec(t, s, "/mcp", 1, "tools/call", toolCall(nil, "m", nil))
	if mt := r.result(t)["_meta"]; !jsonEqual(t, []byte(mustJSON(mt)), []byte(`{"app/key":1}`)) {
		t.Errorf("_meta = %v (an application must not set serverInfo)", mt)
	}
}

func toolNames(t testing.TB, r resp) ([]string, string) {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor *string `json:"nextCursor"`
	}
	if err := json.Unmarshal(r.Msg.Result, &res); err != nil || r.Msg.Error != nil {
		t.Fatalf("tools/list: %v", r)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	next := "<none>"
	if res.NextCursor != nil {
		next = *res.NextCursor
	}
	return names, next
}

func TestToolsListStableOrder(t *testing.T) {
	s := catalogServer(t, nil)
	ts := startHTTP(t, s)
	first := rpc(t, ts.URL, 1, "tools/list", params(nil))
	names, next := toolNames(t, first)
	if strings.Join(names, ",") != "zeta,alpha,mid,beta" || next != "<none>" {
		t.Fatalf("tools = %v next=%s, want registration order and one page", names, next)
	}
	for i := range 5 {
		if r := rpc(t, ts.URL, 1, "tools/list", params(nil)); !bytes.Equal(r.Body, first.Body) {
			t.Fatalf("call %d differs:\n%s\n%s", i, r.Body, first.Body)
		}
	}
	// Replacing a tool keeps its place; removing closes the gap.
	addText(t, s, "alpha", "alpha2")
	if !s.RemoveTool("mid") || s.RemoveTool("mid") {
		t.Fatal("RemoveTool")
	}
	names, _ = toolNames(t, rpc(t, ts.URL, 1, "tools/list", params(nil)))
	if strings.Join(names, ",") != "zeta,alpha,beta" {
		t.Errorf("after replace and remove: %v", names)
	}
	if r := rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "alpha", nil)); r.text(t) != "alpha2" {
		t.Errorf("the replacement does not answer: %s", r.Body)
	}
}

func TestToolsListPagination(t *testing.T) {
	s := catalogServer(t, &Options{PageSize: 1})
	ts := startHTTP(t, s)
	var all []string
	cursor := any(nil)
	for page := 0; ; page++ {
		p := params(nil)
		if cursor != nil {
			p["cursor"] = cursor
		}
		names, next := toolNames(t, rpc(t, ts.URL, 1, "tools/list", p))
		if len(names) != 1 {
			t.Fatalf("page %d has %v", page, names)
		}
		all = append(all, names...)
		if next == "<none>" {
			break
		}
		if page > 10 {
			t.Fatal("pagination does not end")
		}
		cursor = next
	}
	if strings.Join(all, ",") != "zeta,alpha,mid,beta" {
		t.Errorf("walked %v", all)
	}
	// An empty cursor is a valid cursor: the first page.
	if names, _ := toolNames(t, rpc(t, ts.URL, 1, "tools/list", params(M{"cursor": ""}))); strings.Join(names, ",") != "zeta" {
		t.Errorf("empty cursor: %v", names)
	}
	for _, bad := range []any{"!!!", "bzoxMA", "bzo5OQ", "bzotMQ", "eDox", json.Number("1"), M{}, strings.Repeat("A", defaultMaxCursorBytes+1)} {
		t.Run(fmt.Sprint(bad)[:min(len(fmt.Sprint(bad)), 12)], func(t *testing.T) {
			for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
				rpc(t, ts.URL, 9, m, params(M{"cursor": bad})).wantError(t, 400, CodeInvalidParams)
			}
		})
	}
}

// TestVisibleHidesEverywhere: a hidden tool, prompt or resource is absent
// from lists and answers exactly like an unknown one.
func TestVisibleHidesEverywhere(t *testing.T) {
	visible := func(ctx context.Context, req *Request, kind ItemKind, name string) bool {
		return !strings.Contains(name, "secret") || req.Identity.Principal == "admin"
	}
	s, _ := newServer(t, &Options{Visible: visible, Admission: func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
		return Identity{Principal: r.BearerToken}, nil
	}})
	var called atomic.Int32
	for _, n := range []string{"open", "secret"} {
		must(t, s.AddTool(Tool{Name: n, Description: n}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
			called.Add(1)
			return textResult("ran"), nil
		}))
		must(t, s.AddPrompt(Prompt{Name: n + "-prompt"}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
			called.Add(1)
			return &GetPromptResult{}, nil
		}))
		must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://" + n, Name: n}}, func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			called.Add(1)
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "", "x")}}, nil
		}))
	}
	ts := startHTTP(t, s)
	names, _ := toolNames(t, rpc(t, ts.URL, 1, "tools/list", params(nil)))
	if strings.Join(names, ",") != "open" {
		t.Errorf("tools/list shows %v", names)
	}
	if r := rpc(t, ts.URL, 1, "prompts/list", params(nil)); strings.Contains(string(r.Body), "secret") {
		t.Errorf("prompts/list shows a hidden prompt: %s", r.Body)
	}
	if r := rpc(t, ts.URL, 1, "resources/list", params(nil)); strings.Contains(string(r.Body), "secret") {
		t.Errorf("resources/list shows a hidden resource: %s", r.Body)
	}
	for _, c := range []struct{ method, hidden, unknown, member string }{
		{"tools/call", "secret", "nonexistent", "name"},
		{"prompts/get", "secret-prompt", "nonexistent", "name"},
		{"resources/read", "test://secret", "test://nonexistent", "uri"},
	} {
		hidden := rpc(t, ts.URL, 5, c.method, params(M{c.member: c.hidden}))
		unknown := rpc(t, ts.URL, 5, c.method, params(M{c.member: c.unknown}))
		if hidden.Msg.Error == nil || hidden.Msg.Error.Code != CodeInvalidParams {
			t.Errorf("%s of a hidden target: %v", c.method, hidden)
		}
		// resources/read names the URI in its error data; compare with the
		// URI substituted.
		ub := strings.ReplaceAll(string(unknown.Body), c.unknown, c.hidden)
		if hidden.Status != unknown.Status || string(hidden.Body) != ub {
			t.Errorf("%s: a hidden target is distinguishable from an unknown one:\nhidden:  %d %s\nunknown: %d %s", c.method, hidden.Status, hidden.Body, unknown.Status, unknown.Body)
		}
		admin := rpc(t, ts.URL, 5, c.method, params(M{c.member: c.hidden}), setHeader("Authorization", "Bearer admin"))
		if admin.Status != 200 || admin.Msg.Error != nil {
			t.Errorf("%s: the admin cannot reach it: %v", c.method, admin)
		}
	}
	if n := called.Load(); n != 3 {
		t.Errorf("handlers ran %d times, want 3 (admin only)", n)
	}
}

// outcomeRecorder is an Observer that records every callback.
type outcomeRecorder struct {
	mu       sync.Mutex
	started  int
	finished []Outcome
	same     bool
	seen     map[*Request]bool
}

func (o *outcomeRecorder) RequestStarted(ctx context.Context, req *Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started++
	if o.seen == nil {
		o.seen = map[*Request]bool{}
	}
	o.seen[req] = true
}

func (o *outcomeRecorder) RequestFinished(ctx context.Context, req *Request, outcome Outcome, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished = append(o.finished, outcome)
	o.same = o.seen[req]
}

func TestHandlerErrorsAreSanitized(t *testing.T) {
	obs := &outcomeRecorder{}
	s, lc := newServer(t, &Options{Observer: obs})
	ts := startHTTP(t, s)
	internal := `{"code":-32603,"message":"Internal error"}`
	cases := []struct {
		name    string
		h       func() (*CallToolResult, error)
		status  int
		errJSON string // the exact "error" member; "" for a result
		isError string // text of an isError result
		outcome Outcome
		logged  string // substring of an Error log line
	}{
		{"reserved -32001", func() (*CallToolResult, error) { return nil, NewError(-32001, "Spoofed").WithData("d") }, 500, internal, "", OutcomeInternalError, "reserved error code -32001"},
		{"reserved -32768", func() (*CallToolResult, error) { return nil, NewError(-32768, "Spoofed") }, 500, internal, "", OutcomeInternalError, "reserved"},
		{"reserved -32000", func() (*CallToolResult, error) { return nil, NewError(-32000, "Spoofed") }, 500, internal, "", OutcomeInternalError, "reserved"},
		{"reserved -32602", func() (*CallToolResult, error) { return nil, NewError(CodeInvalidParams, "Spoofed") }, 500, internal, "", OutcomeInternalError, "reserved"},
		{"application -32769", func() (*CallToolResult, error) { return nil, NewError(-32769, "Custom") }, 200, `{"code":-32769,"message":"Custom"}`, "", OutcomeApplicationError, ""},
		{"framework rate-limit code -31999", func() (*CallToolResult, error) { return nil, NewError(CodeRateLimited, "Spoofed") }, 500, internal, "", OutcomeInternalError, "reserved error code -31999"},
		{"application -31998", func() (*CallToolResult, error) { return nil, NewError(-31998, "Custom") }, 200, `{"code":-31998,"message":"Custom"}`, "", OutcomeApplicationError, ""},
		{"application 1000 with data", func() (*CallToolResult, error) {
			return nil, NewError(1000, "Quota exceeded").WithData(exactjson.Object(exactjson.Field("retryAfter", exactjson.Int(5))))
		}, 200, `{"code":1000,"message":"Quota exceeded","data":{"retryAfter":5}}`, "", OutcomeApplicationError, ""},
		{"application 1000 with Go data", func() (*CallToolResult, error) {
			return nil, NewError(1000, "Quota exceeded").WithData(struct {
				RetryAfter int `json:"retryAfter"`
			}{5})
		}, 200, `{"code":1000,"message":"Quota exceeded","data":{"retryAfter":5}}`, "", OutcomeApplicationError, ""},
		{"data that does not marshal", func() (*CallToolResult, error) {
			return nil, NewError(1000, "Quota exceeded").WithData(make(chan int))
		}, 500, internal, "", OutcomeInternalError, "data of error 1000"},
		{"wrapped application error", func() (*CallToolResult, error) {
			return nil, fmt.Errorf("context: %w", NewError(1001, "Wrapped"))
		}, 200, `{"code":1001,"message":"Wrapped"}`, "", OutcomeApplicationError, ""},
		{"plain Go error", func() (*CallToolResult, error) { return nil, errBoom }, 500, internal, "", OutcomeInternalError, "hunter2"},
		{"panic", func() (*CallToolResult, error) { panic("hunter2 leaked in a panic") }, 500, internal, "", OutcomeInternalError, "hunter2"},
		{"panic with an error", func() (*CallToolResult, error) { panic(errBoom) }, 500, internal, "", OutcomeInternalError, "hunter2"},
		{"nil result", func() (*CallToolResult, error) { return nil, nil }, 500, internal, "", OutcomeInternalError, "no result"},
		{"InvalidParams", func() (*CallToolResult, error) { return nil, InvalidParams("Bad date") }, 400, `{"code":-32602,"message":"Bad date"}`, "", OutcomeProtocolError, ""},
		{"ToolError", func() (*CallToolResult, error) { return nil, &ToolError{Message: "The city is unknown."} }, 200, "", "The city is unknown.", OutcomeComplete, ""},
		{"ToolErrorf", func() (*CallToolResult, error) { return nil, ToolErrorf("bad %d", 7) }, 200, "", "bad 7", OutcomeComplete, ""},
		{"wrapped ToolError", func() (*CallToolResult, error) { return nil, fmt.Errorf("x: %w", &ToolError{Message: "inner"}) }, 200, "", "inner", OutcomeComplete, ""},
	}
	for i, c := range cases {
		name := fmt.Sprintf("t%d", i)
		must(t, s.AddTool(Tool{Name: name, Description: c.name}, func(ctx context.Context, req *Request) (*CallToolResult, error) { return c.h() }))
		t.Run(c.name, func(t *testing.T) {
			before := len(lc.records())
			r := rpc(t, ts.URL, i, "tools/call", toolCall(nil, name, nil))
			if r.Status != c.status {
				t.Errorf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if strings.Contains(string(r.Body), "hunter2") || strings.Contains(string(r.Body), "Spoofed") {
				t.Errorf("server-side detail leaked: %s", r.Body)
			}
			if c.errJSON != "" {
				var raw struct {
					Error json.RawMessage `json:"error"`
				}
				must(t, json.Unmarshal(r.Body, &raw))
				if string(raw.Error) != c.errJSON {
					t.Errorf("error = %s, want exactly %s", raw.Error, c.errJSON)
				}
			} else {
				res := r.result(t)
				if res["isError"] != true || r.text(t) != c.isError || res["resultType"] != "complete" {
					t.Errorf("want an isError result %q, got %s", c.isError, r.Body)
				}
			}
			obs.mu.Lock()
			got := obs.finished[len(obs.finished)-1]
			same := obs.same
			obs.mu.Unlock()
			if got != c.outcome || !same {
				t.Errorf("outcome %v (same request %v), want %v", got, same, c.outcome)
			}
			if c.logged != "" {
				found := false
				for _, rec := range lc.records()[before:] {
					found = found || (rec.Level == slog.LevelError && strings.Contains(rec.Msg+rec.Attrs, c.logged))
				}
				if !found {
					t.Errorf("no error log line mentions %q: %v", c.logged, lc.records()[before:])
				}
			}
		})
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.started != len(cases) || len(obs.finished) != len(cases) {
		t.Errorf("observer saw %d starts and %d finishes for %d requests", obs.started, len(obs.finished), len(cases))
	}
}

type bigIn struct {
	N int64            `json:"n"`
	D exactjson.Number `json:"d"`
	S string           `json:"s,omitempty"`
}

type bigOut struct {
	N    int64            `json:"n"`
	Next int64            `json:"next"`
	D    exactjson.Number `json:"d"`
}

func TestTypedToolExactNumbers(t *testing.T) {
	s, _ := newServer(t, nil)
	got := make(chan bigIn, 1)
	must(t, AddTool(s, Tool{Name: "big", Description: "Echoes exact numbers."}, func(ctx context.Context, req *Request, in bigIn) (bigOut, error) {
		got <- in
		return bigOut{N: in.N, Next: in.N + 1, D: in.D}, nil
	}))
	ts := startHTTP(t, s)
	r := rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "big", M{"n": json.Number("9007199254740993"), "d": json.Number("1.50")}))
	in := <-got
	if in.N != 9007199254740993 || in.D.String() != "1.50" {
		t.Errorf("handler got n=%d d=%s", in.N, in.D)
	}
	var res struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	must(t, json.Unmarshal(r.Msg.Result, &res))
	want := `{"n":9007199254740993,"next":9007199254740994,"d":1.50}`
	if string(res.StructuredContent) != want {
		t.Errorf("structuredContent = %s, want %s", res.StructuredContent, want)
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != want || res.IsError {
		t.Errorf("content = %+v", res.Content)
	}
	// The inferred schemas are listed.
	var list struct {
		Tools []struct {
			InputSchema  M `json:"inputSchema"`
			OutputSchema M `json:"outputSchema"`
		} `json:"tools"`
	}
	must(t, json.Unmarshal(rpc(t, ts.URL, 2, "tools/list", params(nil)).Msg.Result, &list))
	in0 := list.Tools[0].InputSchema
	if in0["type"] != "object" || in0["properties"].(M)["n"].(M)["type"] != "integer" || fmt.Sprint(in0["required"]) != "[n d]" {
		t.Errorf("inferred input schema %v", in0)
	}
	if list.Tools[0].OutputSchema["type"] != "object" {
		t.Errorf("inferred output schema %v", list.Tools[0].OutputSchema)
	}
}

func TestSchemaViolationIsToolError(t *testing.T) {
	s, _ := newServer(t, nil)
	var calls atomic.Int32
	must(t, AddTool(s, Tool{Name: "big", Description: "Typed."}, func(ctx context.Context, req *Request, in bigIn) (bigOut, error) {
		calls.Add(1)
		return bigOut{}, nil
	}))
	must(t, s.AddTool(Tool{Name: "authored", Description: "Authored schema.",
		InputSchema: []byte(`{"type":"object","properties":{"age":{"type":"integer","minimum":0}},"required":["age"],"additionalProperties":false}`)},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			calls.Add(1)
			return textResult("ok"), nil
		}))
	ts := startHTTP(t, s)
	for _, c := range []struct {
		tool string
		args any
	}{
		{"big", M{"n": "abc", "d": 1}},
		{"big", M{"d": 1}},
		{"big", M{"n": json.Number("1.5"), "d": 1}},
		{"authored", M{"age": -1}},
		{"authored", M{"age": 3, "extra": true}},
		{"authored", nil},
	} {
		p := toolCall(nil, c.tool, nil)
		if c.args != nil {
			p["arguments"] = c.args
		}
		r := rpc(t, ts.URL, 1, "tools/call", p)
		if r.Status != 200 || r.result(t)["isError"] != true || !strings.HasPrefix(r.text(t), "Arguments do not match") {
			t.Errorf("%s %v: want an isError result, got %v", c.tool, c.args, r)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handlers ran %d times on invalid arguments", n)
	}
	// Arguments that are not an object are a protocol error.
	for _, a := range []any{[]any{}, "x", json.Number("1")} {
		p := toolCall(nil, "authored", nil)
		p["arguments"] = a
		rpc(t, ts.URL, 1, "tools/call", p).wantError(t, 400, CodeInvalidParams)
	}
	if r := rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "authored", M{"age": 3})); r.text(t) != "ok" {
		t.Errorf("valid arguments: %v", r)
	}
}

func TestOutputSchemaEnforced(t *testing.T) {
	s, lc := newServer(t, nil)
	var out atomic.Pointer[exactjson.Value]
	must(t, s.AddTool(Tool{Name: "o", Description: "Structured.", OutputSchema: []byte(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`)},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("x")}, StructuredContent: *out.Load()}, nil
		}))
	ts := startHTTP(t, s)
	ok := mustParse(t, `{"x":1}`)
	out.Store(&ok)
	if r := rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "o", nil)); r.Status != 200 || r.Msg.Error != nil {
		t.Fatalf("conforming output: %v", r)
	}
	for _, bad := range []string{`{"x":"one"}`, `{}`, `null`} {
		v := mustParse(t, bad)
		out.Store(&v)
		rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "o", nil)).wantError(t, 500, CodeInternalError)
	}
	if lc.count(slog.LevelError, "outputSchema")+lc.count(slog.LevelError, "structuredContent") < 3 {
		t.Errorf("output violations were not logged: %v", lc.records())
	}
}

// TestAuthoredSchemaKeptAsWritten: tools/list sends the authored schemas
// byte for byte, only insignificant whitespace removed.
func TestAuthoredSchemaKeptAsWritten(t *testing.T) {
	in := `{
	  "type" : "object",
	  "$schema": "https://json-schema.org/draft/2020-12/schema",
	  "properties": {
	    "zulu": {"type": "string", "description": "caf\u00e9 \"quoted\""},
	    "alpha": {"type": "number", "minimum": 1.50, "maximum": 1E+2}
	  },
	  "required": ["zulu"]
	}`
	out := "{ \"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}} }"
	s, _ := newServer(t, nil)
	must(t, s.AddTool(Tool{Name: "authored", Description: "Authored.", InputSchema: []byte(in), OutputSchema: []byte(out)},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return &CallToolResult{StructuredContent: mustParse(t, `{"n":1}`)}, nil
		}))
	r := rpcRec(t, s, "/mcp", 1, "tools/list", params(nil))
	var list struct {
		Tools []struct {
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	must(t, json.Unmarshal(r.Msg.Result, &list))
	for _, c := range []struct {
		got      json.RawMessage
		authored string
	}{
		{list.Tools[0].InputSchema, in}, {list.Tools[0].OutputSchema, out},
	} {
		var want bytes.Buffer
		must(t, json.Compact(&want, []byte(c.authored)))
		if string(c.got) != want.String() {
			t.Errorf("schema sent as\n%s\nwant\n%s", c.got, want.String())
		}
	}
}

func TestToolRegistrationRules(t *testing.T) {
	h := func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("x"), nil }
	for _, c := range []struct {
		name   string
		tool   Tool
		handle ToolHandler
		ok     bool
	}{
		{"valid", Tool{Name: "a.b-c_D9", Description: "d"}, h, true},
		{"empty name", Tool{Name: "", Description: "d"}, h, false},
		{"space in name", Tool{Name: "a b", Description: "d"}, h, false},
		{"129 characters", Tool{Name: strings.Repeat("a", 129), Description: "d"}, h, false},
		{"128 characters", Tool{Name: strings.Repeat("a", 128), Description: "d"}, h, true},
		{"no description (recommended, not required)", Tool{Name: "a", Description: " "}, h, true},
		{"nil handler", Tool{Name: "a", Description: "d"}, nil, false},
		{"schema not an object type", Tool{Name: "a", Description: "d", InputSchema: []byte(`{"type":"string"}`)}, h, false},
		{"schema not JSON", Tool{Name: "a", Description: "d", InputSchema: []byte(`{"type":`)}, h, false},
		{"schema with a duplicate member", Tool{Name: "a", Description: "d", InputSchema: []byte(`{"type":"object","type":"object"}`)}, h, false},
		{"external $ref", Tool{Name: "a", Description: "d", InputSchema: []byte(`{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`)}, h, false},
		{"zero input declaration", Tool{Name: "a", Description: "d", Inputs: []Input{FormInput{}}}, h, false},
		{"duplicate input declaration", Tool{Name: "a", Description: "d", Inputs: []Input{Roots(RequiredCapability), Roots(ConditionalCapability)}}, h, false},
		{"unknown state mode", Tool{Name: "a", Description: "d", StateMode: StateMode(9)}, h, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newServer(t, nil)
			err := s.AddTool(c.tool, c.handle)
			if (err == nil) != c.ok {
				t.Errorf("AddTool: %v, want ok=%v", err, c.ok)
			}
		})
	}
}

// TestToolWithoutDescription: a tool without a description is registered,
// and the registration says at Debug what to set.
func TestToolWithoutDescription(t *testing.T) {
	h := func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("x"), nil }
	s, logs := newServer(t, nil)
	must(t, s.AddTool(Tool{Name: "bare"}, h))
	must(t, s.AddTool(Tool{Name: "described", Description: "d"}, h))
	if n := logs.count(slog.LevelDebug, "set Tool.Description"); n != 1 {
		t.Errorf("%d Debug lines naming Tool.Description, want 1 (for the tool without one): %v", n, logs.records())
	}
	if n := logs.count(slog.LevelWarn, "") + logs.count(slog.LevelInfo, "") + logs.count(slog.LevelError, ""); n != 0 {
		t.Errorf("registration logged above Debug: %v", logs.records())
	}
}

func TestXMCPHeaderRegistration(t *testing.T) {
	h := func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("x"), nil }
	for _, c := range []struct {
		name   string
		schema string
		ok     bool
	}{
		{"string", `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}`, true},
		{"integer and boolean", `{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"}}}`, true},
		{"nested through properties", `{"type":"object","properties":{"o":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Inner"}}}}}`, true},
		{"number", `{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`, false},
		{"object", `{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}`, false},
		{"no type", `{"type":"object","properties":{"o":{"x-mcp-header":"O"}}}`, false},
		{"type array", `{"type":"object","properties":{"o":{"type":["string","null"],"x-mcp-header":"O"}}}`, false},
		{"under items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"Item"}}}}`, false},
		{"under anyOf", `{"type":"object","anyOf":[{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}]}`, false},
		{"under $defs", `{"type":"object","$defs":{"r":{"type":"string","x-mcp-header":"R"}},"properties":{"r":{"$ref":"#/$defs/r"}}}`, false},
		{"under if", `{"type":"object","if":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}}`, false},
		{"on the root", `{"type":"object","x-mcp-header":"Root"}`, false},
		{"duplicate", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"Region"}}}`, false},
		{"duplicate ignoring case", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"rEGION"}}}`, false},
		{"empty name", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, false},
		{"not a token", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Bad Name"}}}`, false},
		{"colon", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A:B"}}}`, false},
		{"not a string", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newServer(t, nil)
			err := s.AddTool(Tool{Name: "t", Description: "d", InputSchema: []byte(c.schema)}, h)
			if (err == nil) != c.ok {
				t.Errorf("AddTool: %v, want ok=%v", err, c.ok)
			}
			if err != nil && rpcRec(t, s, "/mcp", 1, "tools/list", params(nil)).Status != 404 {
				t.Errorf("a rejected tool was registered")
			}
		})
	}
}

func TestMcpParamHeaders(t *testing.T) {
	s, _ := newServer(t, nil)
	must(t, s.AddTool(Tool{Name: "h", Description: "Mirrors arguments into headers.",
		InputSchema: []byte(`{"type":"object","properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"count":{"type":["integer"]},
			"n":{"type":"integer","x-mcp-header":"N"},
			"flag":{"type":"boolean","x-mcp-header":"Flag"},
			"o":{"type":"object","properties":{"deep":{"type":"string","x-mcp-header":"Deep"}}}}}`)},
		func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("ok"), nil }))
	ts := startHTTP(t, s)
	hd := func(kv ...string) []func(http.Header) {
		var out []func(http.Header)
		for i := 0; i < len(kv); i += 2 {
			out = append(out, setHeader(kv[i], kv[i+1]))
		}
		return out
	}
	for _, c := range []struct {
		name string
		args M
		hdr  []func(http.Header)
		ok   bool
	}{
		{"no mirrored arguments", M{}, nil, true},
		{"matching", M{"region": "eu-west", "n": 42, "flag": true, "o": M{"deep": "x"}},
			hd("Mcp-Param-Region", "eu-west", "Mcp-Param-N", "42", "Mcp-Param-Flag", "true", "Mcp-Param-Deep", "x"), true},
		{"lowercase header name", M{"region": "eu"}, []func(http.Header){rawKey("Mcp-Param-Region", "mcp-param-region", "eu")}, true},
		{"Base64 sentinel", M{"region": "Zürich "}, hd("Mcp-Param-Region", "=?base64?WsO8cmljaCA=?="), true},
		{"integer compared numerically", M{"n": 42}, hd("Mcp-Param-N", "42.0"), true},
		{"null argument needs no header", M{"region": nil}, nil, true}, // (then fails the schema: isError)
		{"mismatch", M{"region": "eu-west"}, hd("Mcp-Param-Region", "us-east"), false},
		{"value case differs", M{"region": "eu"}, hd("Mcp-Param-Region", "EU"), false},
		{"missing header", M{"region": "eu-west"}, nil, false},
		{"missing nested header", M{"o": M{"deep": "x"}}, nil, false},
		{"header without argument", M{}, hd("Mcp-Param-Region", "eu-west"), false},
		{"header for a null argument", M{"region": nil}, hd("Mcp-Param-Region", "null"), false},
		{"integer mismatch", M{"n": 42}, hd("Mcp-Param-N", "43"), false},
		{"integer header not a number", M{"n": 42}, hd("Mcp-Param-N", "forty-two"), false},
		{"boolean mismatch", M{"flag": true}, hd("Mcp-Param-Flag", "false"), false},
		{"boolean spelled differently", M{"flag": true}, hd("Mcp-Param-Flag", "True"), false},
		{"bad Base64", M{"region": "eu"}, hd("Mcp-Param-Region", "=?base64?ZXU?="), false},
		{"literal non-ASCII", M{"region": "Zürich"}, hd("Mcp-Param-Region", "Zürich"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rpc(t, ts.URL, 1, "tools/call", toolCall(nil, "h", c.args), c.hdr...)
			if c.ok {
				if r.Status != 200 || r.Msg.Error != nil {
					t.Errorf("want success, got %v", r)
				}
				if v, has := c.args["region"]; has && v == nil {
					return // null passes the header check, then fails the schema
				}
				if r.text(t) != "ok" {
					t.Errorf("want the handler's answer, got %v", r)
				}
				return
			}
			r.wantError(t, 400, CodeHeaderMismatch)
		})
	}
	// stdio has no headers: the mirrors are not checked there.
	if r := rpcRec(t, s, "/mcp", 1, "tools/call", toolCall(nil, "h", M{"region": "eu"}), setHeader("Mcp-Param-Region", "eu")); r.Status != 200 {
		t.Errorf("in-process: %v", r)
	}
}

func TestPromptsAndResourcesErrors(t *testing.T) {
	s := catalogServer(t, nil)
	ts := startHTTP(t, s)
	rpc(t, ts.URL, 1, "prompts/get", params(M{"name": "greet"})).wantError(t, 400, CodeInvalidParams)
	rpc(t, ts.URL, 1, "prompts/get", params(M{"name": "greet", "arguments": M{"who": 1}})).wantError(t, 400, CodeInvalidParams)
	rpc(t, ts.URL, 1, "prompts/get", params(M{"name": "nope"})).wantError(t, 400, CodeInvalidParams)
	e := rpc(t, ts.URL, 1, "resources/read", params(M{"uri": "test://nope"})).wantError(t, 400, CodeInvalidParams)
	if !jsonEqual(t, e.Data, []byte(`{"uri":"test://nope"}`)) {
		t.Errorf("resource-not-found data %s", e.Data)
	}
	rpc(t, ts.URL, 1, "tools/call", params(M{"name": 5}), setHeader("Mcp-Name", "5")).wantError(t, 400, CodeInvalidParams)
	// Methods of capabilities the server lacks are not found.
	empty, _ := newServer(t, nil)
	for _, m := range []string{"tools/list", "tools/call", "prompts/list", "resources/read", "completion/complete"} {
		p := params(M{"name": "x", "uri": "x"})
		rpcRec(t, empty, "/mcp", 1, m, p).wantError(t, 404, CodeMethodNotFound)
	}
	r := rpc(t, ts.URL, 1, "completion/complete", params(M{"ref": M{"type": "ref/prompt", "name": "greet"}, "argument": M{"name": "who", "value": "al"}}))
	if c := r.result(t)["completion"].(M); fmt.Sprint(c["values"]) != "[alice]" || fmt.Sprint(c["total"]) != "1" {
		t.Errorf("completion %v", c)
	}
}

// TestObserverSeesEveryAdmittedRequest: Options.Observer is documented to get
// start and finish callbacks, exactly once each, for every admitted request,
// including list requests and calls rejected after admission.
func TestObserverSeesEveryAdmittedRequest(t *testing.T) {
	obs := &outcomeRecorder{}
	s, _ := newServer(t, &Options{Observer: obs})
	must(t, s.AddTool(Tool{Name: "needs", Description: "Needs roots.", Inputs: []Input{Roots(RequiredCapability)}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("x"), nil }))
	for i, c := range []struct {
		method string
		p      M
		want   Outcome
	}{
		{"tools/list", params(nil), OutcomeComplete},
		{"server/discover", params(nil), OutcomeComplete},
		{"tools/call", toolCall(nil, "unknown", nil), OutcomeProtocolError},
		{"tools/call", toolCall(nil, "needs", nil), OutcomeProtocolError},
		{"tools/call", toolCall(M{"roots": M{}}, "needs", M{}), OutcomeComplete},
	} {
		obs.mu.Lock()
		startedBefore, finishedBefore := obs.started, len(obs.finished)
		obs.mu.Unlock()
		rpcRec(t, s, "/mcp", i, c.method, c.p)
		obs.mu.Lock()
		started, finished := obs.started-startedBefore, obs.finished[finishedBefore:]
		obs.mu.Unlock()
		if started != 1 || len(finished) != 1 || finished[0] != c.want {
			t.Errorf("%s %v: %d starts, finishes %v; want one each, outcome %v", c.method, c.p["name"], started, finished, c.want)
		}
	}
}
