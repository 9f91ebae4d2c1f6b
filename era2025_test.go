package weft

import (
	"context"

	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/sessionstore"
)

func TestLegacyInitialize(t *testing.T) {
	s, _ := legacyServerFor(t, &Options{Instructions: "Be kind."})
	addText(t, s, "hello", "hi")
	ts := startHTTP(t, s)

	c := newLegacyClient(t, ts.URL)
	res := c.initialize()
	if res["protocolVersion"] != "2025-11-25" {
		t.Fatalf("protocolVersion %v", res["protocolVersion"])
	}
	info := res["serverInfo"].(M)
	if info["name"] != "weft-test-server" || info["version"] != "9.9.9" || res["instructions"] != "Be kind." {
		t.Fatalf("initialize result %v", res)
	}
	caps := res["capabilities"].(M)
	if _, ok := caps["tools"]; !ok || caps["logging"] == nil || caps["prompts"] != nil || caps["resources"] != nil {
		t.Fatalf("capabilities %v", caps)
	}
	if _, ok := res["resultType"]; ok {
		t.Fatal("initialize result carries resultType")
	}
	if len(c.sid) != 43 {
		t.Fatalf("session id %q: want 43 base64url characters (256 bits)", c.sid)
	}
	for _, r := range c.sid {
		if r < 0x21 || r > 0x7e {
			t.Fatalf("session id %q has a non-visible character", c.sid)
		}
	}
	// Every initialize opens a new session.
	c2 := newLegacyClient(t, ts.URL)
	c2.initialize()
	if c2.sid == c.sid {
		t.Fatal("two sessions share an id")
	}

	// Version negotiation.
	for _, tc := range []struct{ asked, want string }{
		{"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-11-25"}, {"2099-01-01", "2025-11-25"}, {"2026-07-28", "2025-11-25"},
	} {
		r := post(t, ts.URL, body(t, 1, "initialize", M{"protocolVersion": tc.asked, "capabilities": M{},
			"clientInfo": M{"name": "x", "version": "1"}}), c.headersWithout())
		if got := r.result(t)["protocolVersion"]; got != tc.want {
			t.Errorf("initialize asking %s negotiated %v, want %s", tc.asked, got, tc.want)
		}
	}

	// Malformed initialize params.
	for _, p := range []M{
		{"capabilities": M{}, "clientInfo": M{"name": "x", "version": "1"}},
		{"protocolVersion": "2025-11-25", "clientInfo": M{"name": "x", "version": "1"}},
		{"protocolVersion": "2025-11-25", "capabilities": []any{}, "clientInfo": M{}},
		{"protocolVersion": "2025-11-25", "capabilities": M{}},
	} {
		post(t, ts.URL, body(t, 7, "initialize", p), c.headersWithout()).wantError(t, 400, CodeInvalidParams)
	}
	// initialize inside a session.
	c.call(8, "initialize", M{"protocolVersion": "2025-11-25", "capabilities": M{}, "clientInfo": M{"name": "x", "version": "1"}}).
		wantError(t, 400, CodeInvalidRequest)
}

// headersWithout returns headers without any session.
func (c *legacyClient) headersWithout() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	return h
}

func TestLegacyEraSelection(t *testing.T) {
	// A modern-only endpoint names its versions, and the setting that
	// serves 2025-era clients, in its answer to initialize.
	modern, _ := newServer(t, &Options{Legacy: LegacyOptions{Disabled: true}})
	addText(t, modern, "hello", "hi")
	mts := startHTTP(t, modern)
	c := newLegacyClient(t, mts.URL)
	r := post(t, mts.URL, body(t, 1, "initialize", M{"protocolVersion": "2025-11-25", "capabilities": M{},
		"clientInfo": M{"name": "x", "version": "1"}}), c.headersWithout())
	e := r.wantError(t, 404, CodeMethodNotFound)
	if !strings.Contains(string(e.Data), `"supported":["2026-07-28"]`) {
		t.Fatalf("modern-only initialize error names no versions: %s", e.Data)
	}
	if !strings.Contains(e.Message, "Options.Legacy.Disabled") {
		t.Fatalf("modern-only initialize error does not say how to serve 2025-era clients: %q", e.Message)
	}
	if r := c.raw(http.MethodGet, func(h http.Header) { h.Set("Mcp-Session-Id", "abc") }); r.Status != 405 {
		t.Fatalf("GET on a modern-only endpoint: %v", r)
	}

	// Both eras: modern requests stay modern even with a session header.
	both, _ := legacyServerFor(t, nil)
	addText(t, both, "hello", "hi")
	bts := startHTTP(t, both)
	lc := newLegacyClient(t, bts.URL)
	lc.initialize()
	m := rpc(t, bts.URL, 1, "tools/call", toolCall(nil, "hello", nil), setHeader("Mcp-Session-Id", lc.sid))
	if got := m.result(t)["resultType"]; got != "complete" {
		t.Fatalf("modern request with a session header was not served as modern: %v", m)
	}
	l := lc.call(2, "tools/call", M{"name": "hello"})
	if _, ok := l.result(t)["resultType"]; ok || l.text(t) != "hi" {
		t.Fatalf("legacy result %v", l)
	}
	// Without a session, a non-modern request is still validated as modern.
	post(t, bts.URL, body(t, 3, "tools/list", M{}), lc.headersWithout()).wantError(t, 400, CodeInvalidParams)
	// GET and DELETE without a session stay 405.
	req, _ := http.NewRequest(http.MethodGet, bts.URL, nil)
	if r := do(t, req); r.Status != 405 {
		t.Fatalf("GET without session: %v", r)
	}

	// Legacy only: modern requests get -32022 naming the legacy versions.
	only, _ := legacyServerFor(t, &Options{Legacy: LegacyOptions{Only: true, Versions: []string{"2025-11-25"}}})
	addText(t, only, "hello", "hi")
	ots := startHTTP(t, only)
	e = rpc(t, ots.URL, 1, "tools/list", params(nil)).wantError(t, 400, CodeUnsupportedProtocolVersion)
	if !strings.Contains(string(e.Data), `"supported":["2025-11-25"]`) {
		t.Fatalf("legacy-only error data %s", e.Data)
	}
	post(t, ots.URL, body(t, 3, "tools/list", M{}), lc.headersWithout()).wantError(t, 400, CodeInvalidRequest)
	oc := newLegacyClient(t, ots.URL)
	oc.initialize()
	if oc.call(2, "tools/list", nil).Status != 200 {
		t.Fatal("legacy-only endpoint does not serve legacy clients")
	}
}

func TestLegacyOptionsValidation(t *testing.T) {
	for _, o := range []LegacyOptions{{Versions: []string{"2024-11-05"}}, {IdleTimeout: -1}, {MaxRounds: -1},
		{MaxRounds: legacyMaxRoundsCeiling + 1}, {InputTimeout: 25 * time.Hour}, {MaxLifetime: 31 * 24 * time.Hour},
		{IdleTimeout: 2 * time.Hour, MaxLifetime: time.Hour}, {Limits: sessionstore.Limits{MaxSessions: -1}},
		{Limits: sessionstore.Limits{MaxPendingAnswers: sessionstore.MaxPendingAnswersCeiling + 1}},
		{Disabled: true, Only: true}, {InMemorySessions: true, Store: sessionstore.NewMemory(nil)},
		{Limits: sessionstore.Limits{MaxSessions: 5}}} {
		if _, err := NewServer(Implementation{}, &Options{Legacy: o}); err == nil {
			t.Errorf("LegacyOptions %+v accepted", o)
		}
	}
}

func TestLegacySessionChecks(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := legacyServerFor(t, &Options{Now: clock.now, Legacy: LegacyOptions{IdleTimeout: time.Minute, MaxLifetime: 5 * time.Minute}})
	addText(t, s, "hello", "hi")
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	sess, err := s.legacyAdapter().store.Get(context.Background(), c.sid)
	if err != nil || !sess.Initialized || string(sess.ClientCapabilities) != `{"elicitation":{},"roots":{"listChanged":true},"sampling":{}}` {
		t.Fatalf("stored session %+v, %v", sess, err)
	}

	// Unknown session: 404. Malformed: 404.
	for _, sid := range []string{"nope", "has space", strings.Repeat("a", 200)} {
		r := c.send(body(t, 1, "tools/list", nil), func(h http.Header) { h.Set("Mcp-Session-Id", sid) })
		if r.Status != 404 {
			t.Errorf("session %q: %v", sid, r)
		}
	}
	// Two session headers: 400.
	if r := c.send(body(t, 1, "tools/list", nil), func(h http.Header) { h.Add("Mcp-Session-Id", "x") }); r.Status != 400 {
		t.Errorf("two session ids: %v", r)
	}
	// Protocol version header must match the session's.
	if r := c.send(body(t, 1, "tools/list", nil), func(h http.Header) { h.Set("MCP-Protocol-Version", "2025-06-18") }); r.Status != 400 {
		t.Errorf("wrong version header: %v", r)
	}
	if r := c.send(body(t, 1, "tools/list", nil), func(h http.Header) { h.Del("MCP-Protocol-Version") }); r.Status != 200 {
		t.Errorf("no version header: %v", r)
	}
	// Idle expiry, and use keeping a session alive.
	for range 4 {
		clock.advance(40 * time.Second)
		if r := c.call(2, "ping", nil); r.Status != 200 {
			t.Fatalf("session expired while in use: %v", r)
		}
	}
	clock.advance(61 * time.Second)
	if r := c.call(3, "ping", nil); r.Status != 404 {
		t.Fatalf("idle session still served: %v", r)
	}
	// Absolute expiry.
	c.sid = ""
	c.initialize()
	for range 10 {
		clock.advance(40 * time.Second)
		_ = c.call(4, "ping", nil)
	}
	if r := c.call(5, "ping", nil); r.Status != 404 {
		t.Fatalf("session outlived MaxLifetime: %v", r)
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestLegacyMethods(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	addText(t, s, "hello", "hi")
	must(t, s.AddPrompt(Prompt{Name: "p", Description: "A prompt.", Arguments: []PromptArgument{{Name: "a", Required: true}},
		Complete: func(ctx context.Context, req *Request, c CompletionRequest) (Completion, error) {
			return Completion{Values: []string{"alpha"}}, nil
		}},
		func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent("a=" + args["a"])}}}, nil
		}))
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://r", Name: "r"}, Cache: CachePolicy{TTLMillis: 5, Public: true}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "R")}}, nil
		}))
	must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", req.URIParams()["id"])}}, nil
		}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	res := c.initialize()
	caps := res["capabilities"].(M)
	if caps["completions"] == nil || caps["resources"].(M)["subscribe"] != true || caps["prompts"].(M)["listChanged"] != true {
		t.Fatalf("capabilities %v", caps)
	}

	// ping answers exactly {}.
	if r := c.call(1, "ping", nil); string(r.Msg.Result) != `{}` {
		t.Fatalf("ping: %v", r)
	}
	noModernMembers := func(r resp) M {
		t.Helper()
		res := r.result(t)
		for _, k := range []string{"resultType", "ttlMs", "cacheScope"} {
			if _, ok := res[k]; ok {
				t.Fatalf("legacy result carries %s: %s", k, r.Body)
			}
		}
		if meta, ok := res["_meta"].(M); ok && meta[metaServerInfo] != nil {
			t.Fatalf("legacy result carries _meta serverInfo: %s", r.Body)
		}
		return res
	}
	if tools := noModernMembers(c.call(2, "tools/list", nil))["tools"].([]any); len(tools) != 1 {
		t.Fatalf("tools %v", tools)
	}
	noModernMembers(c.call(3, "prompts/list", nil))
	noModernMembers(c.call(4, "resources/list", nil))
	noModernMembers(c.call(5, "resources/templates/list", nil))
	if r := c.call(6, "resources/read", M{"uri": "test://t/42"}); noModernMembers(r)["contents"].([]any)[0].(M)["text"] != "42" {
		t.Fatalf("resources/read %v", r)
	}
	if r := c.call(7, "prompts/get", M{"name": "p", "arguments": M{"a": "x"}}); !strings.Contains(string(r.Body), "a=x") {
		t.Fatalf("prompts/get %v", r)
	}
	noModernMembers(c.call(7, "prompts/get", M{"name": "p", "arguments": M{"a": "x"}}))
	comp := noModernMembers(c.call(8, "completion/complete", M{"ref": M{"type": "ref/prompt", "name": "p"}, "argument": M{"name": "a", "value": "al"}}))
	if fmt.Sprint(comp["completion"].(M)["values"]) != "[alpha]" {
		t.Fatalf("completion %v", comp)
	}
	if c.call(9, "tools/call", M{"name": "hello"}).text(t) != "hi" {
		t.Fatal("tools/call")
	}

	// Error codes: JSON-RPC errors with HTTP 200; resource-not-found is -32002.
	e := c.call(10, "resources/read", M{"uri": "test://missing"}).wantError(t, 200, codeResourceNotFoundLegacy)
	if string(e.Data) != `{"uri":"test://missing"}` {
		t.Fatalf("not-found data %s", e.Data)
	}
	c.call(11, "tools/call", M{"name": "nope"}).wantError(t, 200, CodeInvalidParams)
	c.call(12, "prompts/get", M{"name": "p"}).wantError(t, 200, CodeInvalidParams)
	for _, m := range []string{"no/such", "server/discover", "subscriptions/listen", "tasks/get", "tasks/result"} {
		c.call(13, m, M{}).wantError(t, 200, CodeMethodNotFound)
	}
	c.call(14, "logging/setLevel", M{"level": "loud"}).wantError(t, 200, CodeInvalidParams)
	c.call(15, "logging/setLevel", M{}).wantError(t, 200, CodeInvalidParams)
	if r := c.call(16, "logging/setLevel", M{"level": "warning"}); string(r.Msg.Result) != `{}` {
		t.Fatalf("setLevel %v", r)
	}
	if sess, _ := s.legacyAdapter().store.Get(context.Background(), c.sid); sess.LogLevel != "warning" {
		t.Fatalf("log level not stored: %+v", sess)
	}
	c.call(17, "resources/subscribe", M{}).wantError(t, 200, CodeInvalidParams)
	// Envelope errors.
	if r := c.send([]byte(`{"jsonrpc":"2.0","id":1}`), nil); r.Status != 400 {
		t.Fatalf("no method: %v", r)
	}
	if r := c.send([]byte(`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`), nil); r.Status != 400 {
		t.Fatalf("bad response: %v", r)
	}
	if r := c.send([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}`), nil); r.Status != 400 {
		t.Fatalf("array params: %v", r)
	}
	// Notifications are accepted.
	if r := c.send(body(t, nil, "notifications/roots/list_changed", nil), nil); r.Status != 202 {
		t.Fatalf("notification: %v", r)
	}
}

func TestLegacyResultTranslation(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	must(t, s.AddTool(Tool{Name: "scalar", Description: "Returns scalar structured content.",
		OutputSchema: []byte(`{"type":"integer"}`)},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("7")}, StructuredContent: exactjson.Int(7),
				Meta: exactjson.Object(exactjson.Field("app", exactjson.Int(1)))}, nil
		}))
	must(t, s.AddTool(Tool{Name: "object", Description: "Returns object structured content.",
		OutputSchema: []byte(`{"type":"object"}`)},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("{}")}, StructuredContent: exactjson.Object(exactjson.Field("n", exactjson.Int(1)))}, nil
		}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	tools := c.call(1, "tools/list", nil).result(t)["tools"].([]any)
	if _, ok := tools[0].(M)["outputSchema"]; ok {
		t.Fatal("a non-object outputSchema reached a 2025-11-25 client")
	}
	if _, ok := tools[1].(M)["outputSchema"]; !ok {
		t.Fatal("an object outputSchema was dropped")
	}
	r := c.call(2, "tools/call", M{"name": "scalar"})
	res := r.result(t)
	if _, ok := res["structuredContent"]; ok {
		t.Fatalf("non-object structuredContent reached a 2025-11-25 client: %s", r.Body)
	}
	if meta := res["_meta"].(M); meta["app"] == nil || meta[metaServerInfo] != nil {
		t.Fatalf("user _meta lost or serverInfo kept: %s", r.Body)
	}
	if res := c.call(3, "tools/call", M{"name": "object"}).result(t); res["structuredContent"] == nil {
		t.Fatal("object structuredContent dropped")
	}
}

func TestLegacyPagination(t *testing.T) {
	s, _ := legacyServerFor(t, &Options{PageSize: 2})
	for i := range 5 {
		addText(t, s, fmt.Sprintf("t%d", i), "x")
	}
	must(t, s.AddPrompt(Prompt{Name: "p", Description: "P."}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{}, nil
	}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	var names []string
	cursor := ""
	var cursors []string
	for range 10 {
		p := M{}
		if cursor != "" {
			p["cursor"] = cursor
		}
		res := c.call(1, "tools/list", p).result(t)
		for _, tool := range res["tools"].([]any) {
			names = append(names, tool.(M)["name"].(string))
		}
		next, _ := res["nextCursor"].(string)
		if next == "" {
			break
		}
		if !strings.HasPrefix(next, "weft1.") {
			t.Fatalf("legacy cursor %q is not sealed", next)
		}
		cursors = append(cursors, next)
		cursor = next
	}
	if strings.Join(names, ",") != "t0,t1,t2,t3,t4" {
		t.Fatalf("paged tools %v", names)
	}
	// Forged, tampered, transplanted and cross-method cursors are rejected.
	other := newLegacyClient(t, ts.URL)
	other.initialize()
	for _, tc := range []struct {
		c      *legacyClient
		method string
		cursor any
	}{
		{c, "tools/list", "bzoy"},                                // a plain modern cursor
		{c, "tools/list", cursors[0] + "x"},                      // tampered
		{c, "tools/list", cursors[0][:len(cursors[0])-2] + "AA"}, // tampered
		{c, "prompts/list", cursors[0]},                          // another method
		{other, "tools/list", cursors[0]},                        // another session
		{c, "tools/list", 12},                                    // not a string
		{c, "tools/list", strings.Repeat("a", 5000)},             // too long
	} {
		tc.c.call(2, tc.method, M{"cursor": tc.cursor}).wantError(t, 200, CodeInvalidParams)
	}
	// An empty cursor is the first page.
	if n := len(c.call(3, "tools/list", M{"cursor": ""}).result(t)["tools"].([]any)); n != 2 {
		t.Fatalf("empty cursor gave %d tools", n)
	}
}

func TestLegacyIdentityBinding(t *testing.T) {
	var names sync.Map
	admit := func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
		if r.Method == "tools/call" {
			names.Store(r.Name, true)
		}
		switch r.BearerToken {
		case "alice", "alice2":
			return Identity{Principal: "alice", Partition: "acme"}, nil
		case "bob":
			return Identity{Principal: "bob", Partition: "acme"}, nil
		}
		return Identity{}, &AdmissionError{Status: 401, Message: "Unauthorized", Challenge: `Bearer realm="mcp"`}
	}
	s, _ := legacyServerFor(t, &Options{Admission: admit})
	addText(t, s, "hello", "hi")
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.token = "alice"
	c.initialize()
	if r := c.call(1, "ping", nil); r.Status != 200 {
		t.Fatal(r)
	}
	// Another credential of the same principal may use the session.
	c.token = "alice2"
	if r := c.call(2, "ping", nil); r.Status != 200 {
		t.Fatal(r)
	}
	// Another principal may not, nor learn that the session exists.
	c.token = "bob"
	if r := c.call(3, "ping", nil); r.Status != 404 {
		t.Fatalf("foreign principal: %v", r)
	}
	if r := c.raw(http.MethodDelete, nil); r.Status != 404 {
		t.Fatalf("foreign DELETE: %v", r)
	}
	if r := c.raw(http.MethodGet, nil); r.Status != 404 {
		t.Fatalf("foreign GET: %v", r)
	}
	// No credential: the admission challenge, before any session lookup.
	c.token = ""
	r := c.call(4, "ping", nil)
	if r.Status != 401 || r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("unauthenticated: %v", r)
	}
	c.token = "alice"
	// Admission sees the target of a legacy request too.
	if c.call(5, "tools/call", M{"name": "hello"}).text(t) != "hi" {
		t.Fatal("tools/call")
	}
	if _, ok := names.Load("hello"); !ok {
		t.Fatal("admission did not see the tool name")
	}
	if r := c.raw(http.MethodDelete, nil); r.Status != 204 {
		t.Fatalf("owner DELETE: %v", r)
	}
}

func TestLegacyDelete(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	started := make(chan struct{}, 1)
	form := Form(RequiredCapability)
	must(t, s.AddTool(Tool{Name: "ask", Description: "Asks.", Inputs: []Input{form}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if req.InputResponses().Len() == 0 {
				started <- struct{}{}
				return nil, AskInput("q", form.Ask("Q?", mustParse(t, `{"type":"object","properties":{}}`)))
			}
			return textResult("answered"), nil
		}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	// A call waiting for the client's answer ends when the session is deleted.
	done := make(chan resp, 1)
	go func() { done <- c.call(1, "tools/call", M{"name": "ask"}) }()
	waitFor(t, started, "the handler's first round")
	deadline := time.Now().Add(hangGuard)
	for { // the client has the server's request: the call waits for its answer
		c.mu.Lock()
		asked := len(c.requests)
		c.mu.Unlock()
		if asked > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client never got the server's request")
		}
		time.Sleep(time.Millisecond)
	}
	if r := c.raw(http.MethodDelete, nil); r.Status != 204 {
		t.Fatalf("DELETE: %v", r)
	}
	r := waitFor(t, done, "the waiting call to end")
	if r.Msg.Result != nil {
		t.Fatalf("the call completed after its session was deleted: %v", r)
	}
	if r := c.call(2, "ping", nil); r.Status != 404 {
		t.Fatalf("request after DELETE: %v", r)
	}
	if r := c.raw(http.MethodDelete, nil); r.Status != 404 {
		t.Fatalf("second DELETE: %v", r)
	}
}

func TestLegacySessionLimit(t *testing.T) {
	s, _ := legacyServerFor(t, &Options{Legacy: LegacyOptions{Limits: sessionstore.Limits{MaxSessions: 2}}})
	addText(t, s, "hello", "hi")
	ts := startHTTP(t, s)
	a := newLegacyClient(t, ts.URL)
	a.initialize()
	newLegacyClient(t, ts.URL).initialize()
	r := post(t, ts.URL, body(t, 1, "initialize", M{"protocolVersion": "2025-11-25", "capabilities": M{},
		"clientInfo": M{"name": "x", "version": "1"}}), a.headersWithout())
	if r.Status != 503 || r.Header.Get("Retry-After") == "" || r.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize beyond the limit: %v", r)
	}
	// A deleted session frees its slot.
	a.raw(http.MethodDelete, nil)
	newLegacyClient(t, ts.URL).initialize()
}

func TestLegacyLoggingAndProgress(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	must(t, AddTool(s, Tool{Name: "chatty", Description: "Logs and reports progress."},
		func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
			for _, l := range []LogLevel{LevelDebug, LevelInfo, LevelError} {
				if _, err := req.Log(l, "chatty", exactjson.String(string(l))); err != nil {
					return nil, err
				}
			}
			if req.CanReportProgress() {
				_ = req.Progress(1, 2, "half")
				_ = req.Progress(2, 2, "done")
			}
			si, ok := SessionFromContext(ctx)
			if !ok || si.ProtocolVersion != req.ProtocolVersion || si.Transport != "http" {
				return nil, errors.New("no session info")
			}
			return textResult("session " + si.ID), nil
		}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	// No logs before logging/setLevel; no progress without a token.
	r := c.call(1, "tools/call", M{"name": "chatty"})
	if r.text(t) != "session "+c.sid || len(c.seenNotes()) != 0 {
		t.Fatalf("first call: %v, notes %v", r, c.seenNotes())
	}
	c.call(2, "logging/setLevel", M{"level": "info"})
	r = c.call(3, "tools/call", M{"name": "chatty", "_meta": M{"progressToken": "p1"}})
	var got []string
	for _, n := range c.seenNotes() {
		got = append(got, n.Method+" "+string(n.Params))
	}
	want := []string{
		`notifications/message {"level":"info","logger":"chatty","data":"info"}`,
		`notifications/message {"level":"error","logger":"chatty","data":"error"}`,
		`notifications/progress {"progressToken":"p1","progress":1,"total":2,"message":"half"}`,
		`notifications/progress {"progressToken":"p1","progress":2,"total":2,"message":"done"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notifications:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.text(t) == "" {
		t.Fatal("no result after notifications")
	}
}

func TestLegacySubscriptionsAndGetStream(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	addText(t, s, "hello", "hi")
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://w", Name: "w"}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "w")}}, nil
		}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	for _, u := range []string{"test://w", "test://dir", "test://w"} {
		if r := c.call(1, "resources/subscribe", M{"uri": u}); string(r.Msg.Result) != "{}" {
			t.Fatalf("subscribe: %v", r)
		}
	}
	if sess, _ := s.legacyAdapter().store.Get(context.Background(), c.sid); strings.Join(sess.Subscriptions, " ") != "test://w test://dir" {
		t.Fatalf("subscriptions %v", sess.Subscriptions)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, st := c.openGet(ctx)
	defer res.Body.Close()
	// One stream per session per instance; an event stream must be accepted.
	if r := c.raw(http.MethodGet, nil); r.Status != http.StatusConflict {
		t.Fatalf("second GET: %v", r)
	}
	if r := c.raw(http.MethodGet, func(h http.Header) { h.Set("Accept", "application/json") }); r.Status != http.StatusNotAcceptable {
		t.Fatalf("GET without SSE: %v", r)
	}
	s.NotifyResourceUpdated("test://other")
	s.NotifyResourceUpdated("test://dir/file")
	m, _ := st.nextMsg()
	if m.Method != "notifications/resources/updated" || string(m.Params) != `{"uri":"test://dir/file"}` {
		t.Fatalf("first event %s %s", m.Method, m.Params)
	}
	addText(t, s, "more", "x")
	if m, _ := st.nextMsg(); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("want tools/list_changed, got %s", m.Method)
	}
	// Unsubscribing stops updates.
	c.call(2, "resources/unsubscribe", M{"uri": "test://dir"})
	s.NotifyResourceUpdated("test://dir/file")
	s.NotifyResourceUpdated("test://w")
	if m, _ := st.nextMsg(); string(m.Params) != `{"uri":"test://w"}` {
		t.Fatalf("after unsubscribe: %s", m.Params)
	}
	// DELETE ends the stream.
	c.raw(http.MethodDelete, nil)
	if _, err := st.next(); err == nil {
		t.Fatal("the GET stream outlived its session")
	}
}

func TestLegacySubscriptionLimits(t *testing.T) {
	s, _ := legacyServerFor(t, &Options{Limits: Limits{MaxResourceSubscriptions: 2}})
	addText(t, s, "hello", "hi")
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	// A server without resources has no subscriptions.
	c.call(1, "resources/subscribe", M{"uri": "test://a"}).wantError(t, 200, CodeMethodNotFound)
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://a", Name: "a"}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return nil, ResourceNotFound(req.Name)
		}))
	c.call(2, "resources/subscribe", M{"uri": "test://a"})
	c.call(3, "resources/subscribe", M{"uri": "test://b"})
	c.call(4, "resources/subscribe", M{"uri": "test://c"}).wantError(t, 200, CodeInvalidParams)
	c.call(5, "resources/unsubscribe", M{"uri": "test://a"})
	c.call(6, "resources/subscribe", M{"uri": "test://c"})
	// A handler's ResourceNotFound is -32002 too.
	c.call(7, "resources/read", M{"uri": "test://a"}).wantError(t, 200, codeResourceNotFoundLegacy)
}

func TestLegacyAnswers(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	addText(t, s, "hello", "hi")
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	// Unsolicited answers are accepted and dropped.
	for _, b := range []string{`{"jsonrpc":"2.0","id":"weft-00","result":{}}`, `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}`} {
		if r := c.send([]byte(b), nil); r.Status != 202 {
			t.Fatalf("answer %s: %v", b, r)
		}
	}
	// Answers need a live session.
	if r := c.send([]byte(`{"jsonrpc":"2.0","id":"x","result":{}}`), func(h http.Header) { h.Set("Mcp-Session-Id", "gone") }); r.Status != 404 {
		t.Fatalf("answer for an unknown session: %v", r)
	}
	if r := post(t, ts.URL, []byte(`{"jsonrpc":"2.0","id":"x","result":{}}`), c.headersWithout()); r.Status != 400 {
		t.Fatalf("answer without session: %v", r)
	}
}

func TestLegacyShutdownRefuses(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	addText(t, s, "hello", "hi")
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	must(t, s.Shutdown(context.Background()))
	if r := c.call(1, "ping", nil); r.Status != 503 {
		t.Fatalf("request during shutdown: %v", r)
	}
}

// Legacy requests get the same request log line (and span and metrics) as
// modern ones.
func TestLegacyTelemetry(t *testing.T) {
	s, lc := legacyServerFor(t, nil)
	addText(t, s, "hello", "hi")
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	c.call(3, "tools/call", M{"name": "hello"})
	c.call(4, "ping", nil)
	if lc.count(slog.LevelDebug, "method=tools/call name=hello id=3 outcome=complete") != 1 ||
		lc.count(slog.LevelDebug, "method=ping") != 1 || lc.count(slog.LevelDebug, "method=initialize") != 1 {
		for _, r := range lc.records() {
			t.Log(r)
		}
		t.Fatal("legacy requests were not logged")
	}
}

// handlerTransport serves requests with h in the same goroutine, so that a
// test can drive a server's HTTP handler inside a synctest bubble.
type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// TestLegacySweeperEnds (issue 41): the sweeper of the in-memory session
// stores starts with the first session and ends once the stores are empty,
// so a server nobody shuts down (an Example, a test) keeps no goroutine
// and is not pinned in memory. Before, it ran until Shutdown: twenty runs
// of the package's tests in one process leaked 40 goroutines and 40 MB a
// run, and TestAbuseMemoryBounded failed against the grown baseline.
func TestLegacySweeperEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := legacyServerFor(t, &Options{Legacy: LegacyOptions{IdleTimeout: 4 * time.Second}})
		addText(t, s, "t", "ok")
		c := newLegacyClient(t, "http://127.0.0.1/mcp")
		c.httpc = &http.Client{Transport: handlerTransport{s}}
		if s.legacyAdapter().sweeping.Load() {
			t.Error("a sweeper runs before any session")
		}
		c.initialize()
		synctest.Wait()
		if !s.legacyAdapter().sweeping.Load() {
			t.Fatal("a session is stored and no sweeper runs")
		}
		// The session expires after IdleTimeout; the sweep after that purges
		// it and the sweeper ends.
		time.Sleep(4*time.Second + 2*s.legacyAdapter().sweepInterval())
		synctest.Wait()
		if n := s.legacyAdapter().store.(*sessionstore.Memory).Len(); n != 0 {
			t.Errorf("%d sessions stored after their idle timeout", n)
		}
		if s.legacyAdapter().sweeping.Load() {
			t.Error("the sweeper still runs with no session stored")
		}
		// A new session starts it again.
		c.sid = ""
		c.initialize()
		synctest.Wait()
		if !s.legacyAdapter().sweeping.Load() {
			t.Fatal("a new session and no sweeper")
		}
	})
}
