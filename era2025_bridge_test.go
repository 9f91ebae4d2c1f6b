package weft

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/sessionstore"
)

// addWizard registers a tool that asks three questions, one round each,
// with the given state mode. It is an ordinary 2026-07-28 handler.
func addWizard(t testing.TB, s *Server, name string, mode StateMode) {
	form := Form(RequiredCapability)
	schema := mustParse(t, `{"type":"object","properties":{"v":{"type":"string"}},"required":["v"]}`)
	must(t, s.AddTool(Tool{Name: name, Description: "Asks three questions.", Inputs: []Input{form}, StateMode: mode},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			// The answers so far travel in the state.
			var got []string
			switch mode {
			case StateFramework:
				if st, ok, _ := FrameworkState[exactjson.Value](req); ok {
					for v := range st.Values() {
						s, _ := v.AsString()
						got = append(got, s)
					}
				}
			case StateApplication:
				if st, ok := req.ApplicationState(); ok && st != "-" {
					got = strings.Split(st, ",")
				}
			case StateNone:
				got = nil
				for i := range 3 {
					if _, ok := req.InputResponses().Get(fmt.Sprintf("q%d", i)); ok {
						got = append(got, "?")
					}
				}
			}
			key := fmt.Sprintf("q%d", len(got))
			if mode != StateNone {
				if r, ok := req.InputResponses().Get(key); ok {
					c, _ := r.Get("content")
					v, _ := c.Get("v")
					s, _ := v.AsString()
					got = append(got, s)
				}
			}
			if len(got) == 3 {
				return textResult("answers: " + strings.Join(got, ",")), nil
			}
			ask := AskInput(fmt.Sprintf("q%d", len(got)), form.Ask(fmt.Sprintf("Question %d?", len(got)+1), schema))
			switch mode {
			case StateFramework:
				vs := make([]exactjson.Value, len(got))
				for i, g := range got {
					vs[i] = exactjson.String(g)
				}
				ask.WithFrameworkState(exactjson.Array(vs...))
			case StateApplication:
				st := strings.Join(got, ",")
				if st == "" {
					st = "-"
				}
				ask.WithApplicationState(st)
			}
			return nil, ask
		}))
}

func TestLegacyBridgeRounds(t *testing.T) {
	for _, mode := range []StateMode{StateFramework, StateApplication} {
		t.Run(mode.String(), func(t *testing.T) {
			s, _ := legacyServerFor(t, nil)
			addWizard(t, s, "wizard", mode)
			ts := startHTTP(t, s)
			c := newLegacyClient(t, ts.URL)
			c.initialize()
			n := 0
			c.onRequest = func(method string, p M) (any, *rpcError) {
				n++
				if method != "elicitation/create" || p["message"] != fmt.Sprintf("Question %d?", n) || p["mode"] != "form" {
					t.Errorf("server request %d: %s %v", n, method, p)
				}
				return M{"action": "accept", "content": M{"v": fmt.Sprintf("a%d", n)}}, nil
			}
			r := c.call(1, "tools/call", M{"name": "wizard"})
			if got := r.text(t); got != "answers: a1,a2,a3" {
				t.Fatalf("result %q (%v)", got, r)
			}
			// Every server request had a fresh, unguessable id.
			seen := map[string]bool{}
			for _, m := range c.seenRequests() {
				id := string(m.ID)
				if seen[id] || len(id) < 30 {
					t.Fatalf("server request id %s reused or short", id)
				}
				seen[id] = true
			}
			if len(seen) != 3 {
				t.Fatalf("%d server requests, want 3", len(seen))
			}
			// The same handler still serves 2026-07-28 clients with input_required.
			m := rpc(t, ts.URL, 2, "tools/call", toolCall(M{"elicitation": M{}}, "wizard", nil))
			if m.result(t)["resultType"] != "input_required" {
				t.Fatalf("modern call: %v", m)
			}
		})
	}
}

func TestLegacyBridgeInputKinds(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	form, sampling, roots := Form(ConditionalCapability), Sampling(ConditionalCapability), Roots(ConditionalCapability)
	all := []Input{form, sampling, roots}
	must(t, s.AddTool(Tool{Name: "all", Description: "Asks for everything at once.", Inputs: all},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			in := req.InputResponses()
			if len(in.Missing("name", "llm", "roots")) == 0 {
				b, _ := json.Marshal(in.Keys())
				return textResult(string(b)), nil
			}
			return nil, AskInput("name", form.Ask("Name?", mustParse(t, `{"type":"object","properties":{"n":{"type":"string"}}}`))).
				Ask("llm", sampling.Ask(SamplingRequest{Messages: []SamplingMessage{{Role: RoleUser, Content: TextContent("Capital?")}}, MaxTokens: 10})).
				Ask("roots", roots.Ask())
		}))
	must(t, s.AddPrompt(Prompt{Name: "p", Description: "Asks first.", Inputs: []Input{form}},
		func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
			if r, ok := req.InputResponses().Get("ctx"); ok {
				a, _ := r.Get("action")
				act, _ := a.AsString()
				return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent("action " + act)}}}, nil
			}
			return nil, AskInput("ctx", form.Ask("Context?", mustParse(t, `{"type":"object","properties":{}}`)))
		}))
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://guarded", Name: "g"}, Inputs: []Input{roots}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			if _, ok := req.InputResponses().Get("r"); ok {
				return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "ok")}}, nil
			}
			return nil, AskInput("r", roots.Ask())
		}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	c.onRequest = elicitAccept(M{"n": "x"})
	if got := c.call(1, "tools/call", M{"name": "all"}).text(t); got != `["llm","name","roots"]` {
		t.Fatalf("result %s", got)
	}
	var methods []string
	for _, m := range c.seenRequests() {
		methods = append(methods, m.Method)
	}
	if strings.Join(methods, " ") != "elicitation/create sampling/createMessage roots/list" {
		t.Fatalf("server requests %v", methods)
	}
	// prompts/get and resources/read are bridged as well; decline reaches the handler.
	c.onRequest = func(method string, p M) (any, *rpcError) {
		if method == "roots/list" {
			return M{"roots": []any{}}, nil
		}
		return M{"action": "decline"}, nil
	}
	if r := c.call(2, "prompts/get", M{"name": "p"}); !strings.Contains(string(r.Body), "action decline") {
		t.Fatalf("prompts/get: %v", r)
	}
	if r := c.call(3, "resources/read", M{"uri": "test://guarded"}); !strings.Contains(string(r.Body), `"text":"ok"`) {
		t.Fatalf("resources/read: %v", r)
	}
	// A client error fails the call and is reported.
	c.onRequest = func(string, M) (any, *rpcError) { return nil, &rpcError{Code: -1, Message: "user closed the dialog"} }
	e := c.call(4, "tools/call", M{"name": "all"}).wantError(t, 200, CodeInternalError)
	if !strings.Contains(string(e.Data), "user closed the dialog") || !strings.Contains(e.Message, "elicitation/create") {
		t.Fatalf("client error: %s %s", e.Message, e.Data)
	}
	// A malformed answer is invalid params.
	c.onRequest = func(method string, p M) (any, *rpcError) {
		if method == "elicitation/create" {
			return M{"action": "maybe"}, nil
		}
		return elicitAccept(nil)(method, p)
	}
	c.call(5, "tools/call", M{"name": "all"}).wantError(t, 200, CodeInvalidParams)
	// A client without the capability gets -32021 and no server request.
	bare := newLegacyClient(t, ts.URL)
	bare.caps = M{}
	bare.initialize()
	bare.onRequest = elicitAccept(nil)
	bare.call(6, "tools/call", M{"name": "all"}).wantError(t, 200, CodeMissingRequiredCapability)
	if len(bare.seenRequests()) != 0 {
		t.Fatal("a server request reached a client without the capability")
	}
}

func TestLegacyBridgeLimits(t *testing.T) {
	s, lc := legacyServerFor(t, &Options{URLElicitation: elicit.URLPolicy{AllowedOrigins: []string{"https://example.com"}},
		Legacy: LegacyOptions{InMemorySessions: true, MaxRounds: 2, InputTimeout: 300 * time.Millisecond}})
	defer func() {
		if t.Failed() {
			for _, r := range lc.records() {
				t.Log(r)
			}
		}
	}()
	form := Form(RequiredCapability)
	must(t, s.AddTool(Tool{Name: "forever", Description: "Never satisfied.", Inputs: []Input{form}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return nil, AskInput(fmt.Sprintf("k%d", req.InputResponses().Len()), form.Ask("Again?", mustParse(t, `{"type":"object","properties":{}}`)))
		}))
	must(t, s.AddTool(Tool{Name: "url", Description: "Sends the user to a page.", Inputs: []Input{URL(RequiredCapability)}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if req.InputResponses().Len() > 0 {
				return textResult("consented"), nil
			}
			return nil, AskInput("go", URL(RequiredCapability).Ask("Open the page.", "https://example.com/connect"))
		}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.caps = M{"elicitation": M{"form": M{}, "url": M{}}}
	c.initialize()
	c.onRequest = elicitAccept(M{})
	e := c.call(1, "tools/call", M{"name": "forever"}).wantError(t, 200, CodeInternalError)
	if !strings.Contains(e.Message, "more than 2 rounds") || len(c.seenRequests()) != 2 {
		t.Fatalf("round limit: %s after %d requests", e.Message, len(c.seenRequests()))
	}
	// URL elicitation gets the 2025-11-25 elicitationId.
	if c.call(2, "tools/call", M{"name": "url"}).text(t) != "consented" {
		t.Fatal("url elicitation")
	}
	last := c.seenRequests()[2]
	p := decodeObj(t, last.Params)
	if p["mode"] != "url" || p["url"] != "https://example.com/connect" || len(fmt.Sprint(p["elicitationId"])) < 16 {
		t.Fatalf("URL elicitation params %v", p)
	}
	// A client that never answers: the call times out and the request is cancelled.
	c.onRequest = nil
	e = c.call(3, "tools/call", M{"name": "forever"}).wantError(t, 200, CodeInternalError)
	if !strings.Contains(e.Message, "Timed out") {
		t.Fatalf("timeout: %s", e.Message)
	}
	notes := c.seenNotes()
	if len(notes) == 0 || notes[len(notes)-1].Method != "notifications/cancelled" {
		t.Fatalf("no cancellation sent: %v", notes)
	}
}

func TestLegacyBridge20250618(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	addWizard(t, s, "wizard", StateFramework)
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.version = LegacyVersion20250618
	c.initialize()
	if c.version != LegacyVersion20250618 {
		t.Fatalf("negotiated %s", c.version)
	}
	c.onRequest = func(method string, p M) (any, *rpcError) {
		if _, ok := p["mode"]; ok {
			t.Errorf("2025-06-18 elicitation carries mode: %v", p)
		}
		return M{"action": "accept", "content": M{"v": "z"}}, nil
	}
	if got := c.call(1, "tools/call", M{"name": "wizard"}).text(t); got != "answers: z,z,z" {
		t.Fatal(got)
	}
}

// A client that accepts no event stream on its POSTs gets server requests on
// its GET stream.
func TestLegacyBridgeViaGetStream(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	addWizard(t, s, "wizard", StateFramework)
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	jsonOnly := func(h http.Header) { h.Set("Accept", "application/json") }
	// Without a GET stream the call cannot reach the client.
	if r := c.send(body(t, 1, "tools/call", M{"name": "wizard"}), jsonOnly); r.Msg.Error == nil || !strings.Contains(r.Msg.Error.Message, "cannot receive") {
		t.Fatalf("no stream: %v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, st := c.openGet(ctx)
	defer res.Body.Close()
	go func() {
		for i := 0; ; i++ {
			m, _ := st.nextMsg()
			if m.Method != "elicitation/create" {
				continue
			}
			b, _ := json.Marshal(M{"jsonrpc": "2.0", "id": m.ID, "result": M{"action": "accept", "content": M{"v": fmt.Sprint(i)}}})
			c.send(b, nil)
			if i == 2 {
				return
			}
		}
	}()
	if r := c.send(body(t, 2, "tools/call", M{"name": "wizard"}), jsonOnly); r.text(t) != "answers: 0,1,2" {
		t.Fatalf("via GET stream: %v", r)
	}
}

// Two instances sharing a session store and a keyring: a session opened on
// one is served by the other, and an answer posted to the other reaches the
// handler waiting on the first.
func TestLegacyFleetMemory(t *testing.T) {
	store := sessionstore.NewMemory(nil)
	testLegacyFleet(t, store, store)
}

func testLegacyFleet(t *testing.T, storeA, storeB sessionstore.Store) {
	key, err := seal.GenerateKey("k1")
	must(t, err)
	kr, err := seal.NewKeyring(key)
	must(t, err)
	var urls []string
	for _, st := range []sessionstore.Store{storeA, storeB} {
		s, _ := legacyServerFor(t, &Options{PageSize: 1, Protector: seal.NewManager(kr, nil), Legacy: LegacyOptions{Store: st}})
		addWizard(t, s, "wizard", StateFramework)
		addText(t, s, "other", "x")
		urls = append(urls, startHTTP(t, s).URL)
	}
	c := newLegacyClient(t, urls[0])
	c.initialize()
	// Requests of the session alternate between the instances.
	var mu sync.Mutex
	n := 0
	c.onRequest = func(method string, p M) (any, *rpcError) {
		mu.Lock()
		defer mu.Unlock()
		n++
		c.url = urls[n%2] // the answer goes to the other instance
		return M{"action": "accept", "content": M{"v": fmt.Sprintf("n%d", n)}}, nil
	}
	c.url = urls[1]
	// Pagination cursors travel too (sealed with the shared keyring).
	first := c.call(1, "tools/list", nil).result(t)
	c.url = urls[0]
	second := c.call(2, "tools/list", M{"cursor": first["nextCursor"]}).result(t)
	if second["tools"].([]any)[0].(M)["name"] != "other" {
		t.Fatalf("second page %v", second)
	}
	c.url = urls[1]
	c.call(3, "logging/setLevel", M{"level": "debug"})
	if got := c.call(4, "tools/call", M{"name": "wizard"}).text(t); got != "answers: n1,n2,n3" {
		t.Fatalf("fleet call: %s", got)
	}
	if sess, err := storeA.Get(context.Background(), c.sid); err != nil || sess.LogLevel != "debug" {
		t.Fatalf("session on A: %+v %v", sess, err)
	}
	c.url = urls[0]
	if r := c.raw(http.MethodDelete, nil); r.Status != 204 {
		t.Fatal(r)
	}
	c.url = urls[1]
	if r := c.call(5, "ping", nil); r.Status != 404 {
		t.Fatalf("deleted session still served by the other instance: %v", r)
	}
}

func TestLegacyObserverRounds(t *testing.T) {
	obs := &recordingObserver{}
	s, _ := legacyServerFor(t, &Options{Observer: obs})
	addWizard(t, s, "wizard", StateFramework)
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	c.onRequest = elicitAccept(M{"v": "x"})
	c.call(7, "tools/call", M{"name": "wizard"})
	c.call(8, "ping", nil)
	c.call(9, "logging/setLevel", M{"level": "nope"})
	got := obs.get()
	want := []string{"0 complete", "7 input_required", `"7#weft-round-1" input_required`, `"7#weft-round-2" input_required`, `"7#weft-round-3" complete`,
		"8 complete", "9 protocol_error"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("observed %v, want %v", got, want)
	}
}

type recordingObserver struct {
	mu  sync.Mutex
	log []string
}

func (o *recordingObserver) RequestStarted(ctx context.Context, req *Request) {}

func (o *recordingObserver) RequestFinished(ctx context.Context, req *Request, outcome Outcome, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, req.ID.String()+" "+outcome.String())
}

func (o *recordingObserver) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.log...)
}

// A stdio connection that sends initialize becomes a legacy session; server
// requests go to stdout and the answers come back on stdin.
func TestLegacyStdio(t *testing.T) {
	s, _ := legacyServerFor(t, nil)
	addWizard(t, s, "wizard", StateFramework)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(context.Background(), inR, outW) }()
	lines := bufio.NewReader(outR)
	write := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	read := func() M {
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return decodeObj(t, []byte(l))
	}
	// Before initialize, the connection is modern.
	write(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if m := read(); m["error"].(M)["code"] != json.Number("-32602") {
		t.Fatalf("modern before initialize: %v", m)
	}
	write(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"x","version":"1"}}}`)
	if m := read(); m["result"].(M)["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize: %v", m)
	}
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wizard"}}`)
	for i := range 3 {
		m := read()
		if m["method"] != "elicitation/create" {
			t.Fatalf("round %d: %v", i, m)
		}
		id, _ := json.Marshal(m["id"])
		write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"v":"s%d"}}}`, id, i))
	}
	m := read()
	if m["id"] != json.Number("3") || !strings.Contains(fmt.Sprint(m["result"]), "answers: s0,s1,s2") {
		t.Fatalf("stdio result: %v", m)
	}
	// A modern request on the same connection is still served as modern.
	write(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if m := read(); m["result"].(M)["resultType"] != "complete" {
		t.Fatalf("modern on a legacy connection: %v", m)
	}
	write(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if m := read(); fmt.Sprint(m["result"]) != "map[]" {
		t.Fatalf("ping: %v", m)
	}
	inW.Close()
	if err := waitFor(t, done, "ServeStdio to return"); err != nil {
		t.Fatal(err)
	}
}
