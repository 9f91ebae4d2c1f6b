package weft

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/stateplain"
	"github.com/weftmcp/weft/seal"
)

// elicitCaps declares form elicitation ({} means form only).
var elicitCaps = M{"elicitation": M{}}

// invalidState is the one response to every request-state failure, for the
// retry id 99 all failure cases use.
const invalidState = `{"jsonrpc":"2.0","id":99,"error":{"code":-32602,"message":"Invalid request state"}}`

// testClock is an injectable clock (Options.Now).
type testClock struct{ ms atomic.Int64 }

func newClock() *testClock {
	c := &testClock{}
	c.ms.Store(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC).UnixMilli())
	return c
}

func (c *testClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

func fixedKey(t testing.TB, id string, fill byte) seal.Key {
	t.Helper()
	k, err := seal.NewKey(id, bytes.Repeat([]byte{fill}, 32))
	must(t, err)
	return k
}

func managerFor(t testing.TB, keys ...seal.Key) *seal.Manager {
	t.Helper()
	r, err := seal.NewKeyring(keys[0], keys[1:]...)
	must(t, err)
	return seal.NewManager(r, nil)
}

// originalState is the framework state the flow tools seal. Its numbers come
// back canonical: 1.50 as 1.5, 100 as 1E+2, 0.0 as 0.
const originalState = `{"phase":"approve","amount":1.50,"count":100,"zero":0.0,"exact":"1.50","big":123456789012345678901234567890,"list":[1.10,{"k":2.000}]}`

// seen is what a handler observed on a call.
type seen struct {
	tool      string
	id        ID
	fw        exactjson.Value
	hasFw     bool
	app       string
	hasApp    bool
	round     int
	responses InputResponses
}

// stateFixture is a server with one tool of every state mode.
type stateFixture struct {
	s     *Server
	lc    *logCapture
	clock *testClock
	mgr   *seal.Manager
	h     http.Handler // what the test server serves (the server, or a mux)
	url   string

	mu   sync.Mutex
	seen []seen
}

func (f *stateFixture) record(tool string, req *Request) {
	fw, hasFw, _ := FrameworkState[exactjson.Value](req)
	app, hasApp := req.ApplicationState()
	f.mu.Lock()
	f.seen = append(f.seen, seen{tool: tool, id: req.ID, fw: fw, hasFw: hasFw, app: app, hasApp: hasApp, round: req.Round(), responses: req.InputResponses()})
	f.mu.Unlock()
}

func (f *stateFixture) last(t testing.TB) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		t.Fatal("no handler ran")
	}
	return f.seen[len(f.seen)-1]
}

func (f *stateFixture) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

var approveSchema = exactjson.Object(
	exactjson.Field("type", exactjson.String("object")),
	exactjson.Field("properties", exactjson.Object(exactjson.Field("ok", exactjson.Object(exactjson.Field("type", exactjson.String("boolean")))))))

// newStateFixture builds the fixture. Unless opts sets them, the clock is a
// testClock and the protector a manager with a fixed key.
func newStateFixture(t testing.TB, opts *Options) *stateFixture {
	t.Helper()
	f := &stateFixture{clock: newClock()}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = f.clock.now
	}
	switch o.Protector.(type) {
	case nil:
		f.mgr = managerFor(t, fixedKey(t, "test-1", 0x01))
		o.Protector = f.mgr
	case useEphemeral:
		o.Protector = nil // the server's development default
	}
	if m, ok := o.Protector.(*seal.Manager); ok {
		f.mgr = m
	}
	f.s, f.lc = newServer(t, &o)
	form := Form(ConditionalCapability)
	orig := mustParse(t, originalState)
	flow := func(name string) {
		must(t, s(f).AddTool(Tool{Name: name, Description: "Asks for approval with sealed state.", Inputs: []Input{form}, StateMode: StateFramework},
			func(ctx context.Context, req *Request) (*CallToolResult, error) {
				f.record(name, req)
				if _, ok, _ := FrameworkState[exactjson.Value](req); ok {
					return textResult("approved"), nil
				}
				return nil, AskInput("approve", form.Ask("Approve?", approveSchema)).WithFrameworkState(orig)
			}))
	}
	flow("flow")
	flow("flow2")
	// multi asks again until the "next" response says done; it carries its
	// step in the state. sleepMs in the content advances the test clock (a
	// slow handler).
	must(t, f.s.AddTool(Tool{Name: "multi", Description: "Asks round after round.", Inputs: []Input{form}, StateMode: StateFramework},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			f.record("multi", req)
			step := int64(0)
			if st, ok, _ := FrameworkState[exactjson.Value](req); ok {
				v, _ := st.Get("step")
				n, _ := v.AsNumber()
				step, _ = n.Int64()
			}
			if r, ok := req.InputResponses().Get("next"); ok {
				c, _ := r.Get("content")
				if ms, ok := c.Get("sleepMs"); ok {
					n, _ := ms.AsNumber()
					d, _ := n.Int64()
					f.clock.advance(time.Duration(d) * time.Millisecond)
				}
				if done, _ := c.Get("done"); done.Kind() == exactjson.KindBool {
					if b, _ := done.AsBool(); b {
						return textResult(fmt.Sprintf("finished at round %d step %d", req.Round(), step)), nil
					}
				}
			}
			return nil, AskInput("next", form.Ask("Continue?", approveSchema)).
				WithFrameworkState(exactjson.Object(exactjson.Field("step", exactjson.Int(step+1))))
		}))
	// app returns the application state given in its "token" argument.
	must(t, f.s.AddTool(Tool{Name: "app", Description: "Application-protected state.", Inputs: []Input{form}, StateMode: StateApplication},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			f.record("app", req)
			if s, ok := req.ApplicationState(); ok {
				return textResult("resumed " + s), nil
			}
			tv, _ := req.Arguments().Get("token")
			tok, _ := tv.AsString()
			ir := new(InputRequired)
			if req.Arguments().Has("ask") {
				ir.Ask("approve", form.Ask("Approve?", approveSchema))
			}
			return nil, ir.WithApplicationState(tok)
		}))
	must(t, f.s.AddTool(Tool{Name: "none", Description: "No state.", Inputs: []Input{form}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			f.record("none", req)
			if req.InputResponses().Has("approve") {
				return textResult("approved without state"), nil
			}
			return nil, AskInput("approve", form.Ask("Approve?", approveSchema))
		}))
	// sized seals a string of arguments.n bytes.
	must(t, f.s.AddTool(Tool{Name: "sized", Description: "Seals state of a given size.", Inputs: []Input{form}, StateMode: StateFramework},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			f.record("sized", req)
			if _, ok, _ := FrameworkState[exactjson.Value](req); ok {
				return textResult("resumed"), nil
			}
			nv, _ := req.Arguments().Get("n")
			num, _ := nv.AsNumber()
			n, _ := num.Int64()
			return nil, AskInput("approve", form.Ask("Approve?", approveSchema)).
				WithFrameworkState(exactjson.String(strings.Repeat("s", int(n))))
		}))
	must(t, f.s.AddPrompt(Prompt{Name: "flow", Inputs: []Input{form}, StateMode: StateFramework},
		func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
			f.record("prompt", req)
			if _, ok, _ := FrameworkState[exactjson.Value](req); ok {
				return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent("approved")}}}, nil
			}
			return nil, AskInput("approve", form.Ask("Approve?", approveSchema)).WithFrameworkState(orig)
		}))
	f.h = f.s
	return f
}

// useEphemeral asks newStateFixture for the server's default protector.
type useEphemeral struct{ seal.Protector }

// s is a tiny accessor so that the closures above read naturally.
func s(f *stateFixture) *Server { return f.s }

// serveHTTP starts a loopback server for the fixture's handler.
func (f *stateFixture) serveHTTP(t testing.TB) {
	f.url = startHTTP(t, f.h).URL
}

// call sends tools/call of tool with args (nil: none) and extra params, over
// HTTP when the fixture has a URL, else in process.
func (f *stateFixture) call(t testing.TB, path string, id any, tool string, args any, extra M, mods ...func(http.Header)) resp {
	t.Helper()
	p := toolCall(elicitCaps, tool, nil)
	if args != nil {
		p["arguments"] = args
	}
	for k, v := range extra {
		p[k] = v
	}
	return f.send(t, path, id, "tools/call", p, mods...)
}

func (f *stateFixture) send(t testing.TB, path string, id any, method string, p M, mods ...func(http.Header)) resp {
	t.Helper()
	b := body(t, id, method, p)
	h := stdHeaders(b)
	for _, m := range mods {
		m(h)
	}
	if f.url != "" {
		return post(t, f.url+path, b, h)
	}
	return serveRec(t, f.h, path, b, h)
}

// retry sends the retry of tool carrying token and an accepted approval.
func (f *stateFixture) retry(t testing.TB, path string, id any, tool string, args any, token any, mods ...func(http.Header)) resp {
	t.Helper()
	return f.call(t, path, id, tool, args, M{"requestState": token,
		"inputResponses": M{"approve": M{"action": "accept", "content": M{"ok": true}}}}, mods...)
}

// tokenOf asserts an input_required result and returns its requestState.
func tokenOf(t testing.TB, r resp) string {
	t.Helper()
	res := r.result(t)
	if res["resultType"] != "input_required" || r.Status != 200 {
		t.Fatalf("want input_required, got %v", r)
	}
	tok, ok := res["requestState"].(string)
	if !ok {
		t.Fatalf("no requestState in %s", r.Body)
	}
	return tok
}

func TestFrameworkStateRoundTrip(t *testing.T) {
	f := newStateFixture(t, nil)
	f.serveHTTP(t)
	r := f.call(t, "/mcp", 1, "flow", nil, nil)
	tok := tokenOf(t, r)
	res := r.result(t)
	if !strings.HasPrefix(tok, seal.TokenPrefix) {
		t.Errorf("token %q lacks the %q prefix", tok, seal.TokenPrefix)
	}
	env, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, seal.TokenPrefix))
	must(t, err)
	for _, leak := range []string{"approve", "1.5", "phase", "round"} {
		if bytes.Contains(env, []byte(leak)) {
			t.Errorf("the sealed envelope shows its plaintext (%q)", leak)
		}
	}
	// The input_required result: serverInfo, no cache hints, the request.
	if _, ok := res["ttlMs"]; ok {
		t.Errorf("input_required carries ttlMs: %s", r.Body)
	}
	if res["_meta"].(M)[metaServerInfo] == nil {
		t.Errorf("input_required lacks serverInfo: %s", r.Body)
	}
	ir := res["inputRequests"].(M)["approve"].(M)
	if ir["method"] != "elicitation/create" || ir["params"].(M)["mode"] != "form" || ir["params"].(M)["message"] != "Approve?" {
		t.Errorf("inputRequests = %v", res["inputRequests"])
	}
	if got := f.last(t); got.hasFw || got.round != 0 {
		t.Errorf("a first call sees state: %+v", got)
	}

	r = f.retry(t, "/mcp", 2, "flow", nil, tok)
	if r.Status != 200 || r.text(t) != "approved" {
		t.Fatalf("retry: %v", r)
	}
	got := f.last(t)
	if !got.hasFw || got.hasApp || got.round != 1 {
		t.Fatalf("retry saw %+v", got)
	}
	orig := mustParse(t, originalState)
	if !exactjson.Equal(got.fw, orig) {
		t.Errorf("state %s, want the sealed %s", got.fw, orig)
	}
	for _, c := range []struct{ path, want string }{{"amount", "1.5"}, {"count", "1E+2"}, {"zero", "0"}} {
		v, _ := got.fw.Get(c.path)
		n, _ := v.AsNumber()
		if n.String() != c.want {
			t.Errorf("%s comes back as %s, want canonical %s", c.path, n.String(), c.want)
		}
	}
	if v, _ := got.fw.Get("exact"); v.String() != `"1.50"` {
		t.Errorf("a string stays exact: %s", v)
	}
	if resp, ok := got.responses.Get("approve"); !ok || resp.String() != `{"action":"accept","content":{"ok":true}}` {
		t.Errorf("input response %s", resp)
	}
	// The state is not single-use (replay protection is the application's).
	if r := f.retry(t, "/mcp", 3, "flow", nil, tok); r.Status != 200 || r.text(t) != "approved" {
		t.Errorf("second retry: %v", r)
	}
}

// TestStateBitFlips flips every bit of the sealed envelope; every variant
// must be rejected with the same bytes, and no handler may see state.
func TestStateBitFlips(t *testing.T) {
	f := newStateFixture(t, nil)
	tok := tokenOf(t, f.call(t, "/mcp", 1, "flow", nil, nil))
	if r := f.retry(t, "/mcp", 99, "flow", nil, tok); r.Status != 200 {
		t.Fatalf("control retry: %v", r)
	}
	env, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, seal.TokenPrefix))
	must(t, err)
	before := f.calls()
	for i := range env {
		for bit := range 8 {
			flipped := bytes.Clone(env)
			flipped[i] ^= 1 << bit
			r := f.retry(t, "/mcp", 99, "flow", nil, seal.TokenPrefix+base64.RawURLEncoding.EncodeToString(flipped))
			if r.Status != 400 || string(r.Body) != invalidState {
				t.Fatalf("byte %d bit %d: HTTP %d %s", i, bit, r.Status, r.Body)
			}
		}
	}
	if n := f.calls() - before; n != 0 {
		t.Errorf("handlers ran %d times on tampered state", n)
	}
}

// TestStateBindingNoOracle replays valid state into every other context.
// Each must fail with the very same status and bytes (and no handler runs),
// while a matching control succeeds.
func TestStateBindingNoOracle(t *testing.T) {
	partitions := func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
		return Identity{Principal: r.BearerToken, Partition: "tenant-" + r.BearerToken}, nil
	}
	f := newStateFixture(t, &Options{Admission: partitions})
	mux := http.NewServeMux()
	mux.Handle("/a", f.s)
	mux.Handle("/b", f.s)
	mux.Handle("/mcp", f.s)
	f.h = mux
	f.serveHTTP(t)
	alice := setHeader("Authorization", "Bearer alice")
	bob := setHeader("Authorization", "Bearer bob")
	args := json.RawMessage(`{"x":1,"y":"a"}`)

	tokFlow := tokenOf(t, f.call(t, "/mcp", 1, "flow", nil, nil, alice))
	tokArgs := tokenOf(t, f.call(t, "/mcp", 1, "flow", args, nil, alice))
	tokA := tokenOf(t, f.call(t, "/a", 1, "flow", nil, nil, alice))
	tokSameID := tokenOf(t, f.call(t, "/mcp", 99, "flow", nil, nil, alice))
	tok100 := tokenOf(t, f.call(t, "/mcp", 100, "flow", nil, nil, alice))
	tokPrompt := tokenOf(t, f.send(t, "/mcp", 1, "prompts/get", paramsCaps(elicitCaps, M{"name": "flow"}), alice))
	tokExpiring := tokenOf(t, f.call(t, "/mcp", 1, "flow", nil, nil, alice))
	crafted := func(version string, p seal.Protector) string {
		return f.craft(t, p, "/mcp", version, "tenant-alice", toolCall(elicitCaps, "flow", nil), mustParse(t, originalState))
	}
	other := seal.NewManager(mustRing(t, fixedKey(t, "test-1", 0x02)), nil) // the same key id, other bytes

	// Controls: the matching context succeeds (so the failures below are
	// due to the one thing that differs).
	for _, c := range []struct {
		name  string
		path  string
		id    any
		tool  string
		args  any
		tok   string
		mods  []func(http.Header)
		extra M
	}{
		{name: "same everything", path: "/mcp", id: 99, tool: "flow", tok: tokFlow},
		{name: "arguments respelled and reordered", path: "/mcp", id: 99, tool: "flow", args: json.RawMessage(`{"y":"a","x":1.0}`), tok: tokArgs},
		{name: "other endpoint's own state", path: "/a", id: 99, tool: "flow", tok: tokA},
		{name: "string id equal in text to the emitter's integer id", path: "/mcp", id: "99", tool: "flow", tok: tokSameID},
		{name: "crafted with the served version", path: "/mcp", id: 99, tool: "flow", tok: crafted(ProtocolVersion, f.mgr)},
		{name: "transient _meta added", path: "/mcp", id: 99, tool: "flow", tok: tokFlow, extra: M{"progressToken": "p", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
	} {
		p := toolCall(elicitCaps, c.tool, nil)
		if c.args != nil {
			p["arguments"] = c.args
		}
		p = withMeta(p, c.extra)
		p["requestState"] = c.tok
		p["inputResponses"] = M{"approve": M{"action": "accept", "content": M{"ok": true}}}
		r := f.send(t, c.path, c.id, "tools/call", p, append([]func(http.Header){alice}, c.mods...)...)
		if r.Status != 200 || r.text(t) != "approved" {
			t.Errorf("control %q: %v", c.name, r)
		}
	}

	before := f.calls()
	failures := map[string]resp{
		"another tool":              f.retry(t, "/mcp", 99, "flow2", nil, tokFlow, alice),
		"other arguments":           f.retry(t, "/mcp", 99, "flow", json.RawMessage(`{"x":2,"y":"a"}`), tokArgs, alice),
		"arguments added":           f.retry(t, "/mcp", 99, "flow", json.RawMessage(`{"x":1}`), tokFlow, alice),
		"another partition":         f.retry(t, "/mcp", 99, "flow", nil, tokFlow, bob),
		"no identity":               f.retry(t, "/mcp", 99, "flow", nil, tokFlow),
		"another protocol version":  f.retry(t, "/mcp", 99, "flow", nil, crafted("2025-11-25", f.mgr), alice),
		"another endpoint":          f.retry(t, "/b", 99, "flow", nil, tokA, alice),
		"another endpoint reversed": f.retry(t, "/a", 99, "flow", nil, tokFlow, alice),
		"same id as the emitter":    f.retry(t, "/mcp", 99, "flow", nil, tokSameID, alice),
		"another method":            f.retry(t, "/mcp", 99, "flow", nil, tokPrompt, alice),
		"same key id, other bytes":  f.retry(t, "/mcp", 99, "flow", nil, crafted(ProtocolVersion, other), alice),
		"garbage":                   f.retry(t, "/mcp", 99, "flow", nil, "not-a-token", alice),
		"empty":                     f.retry(t, "/mcp", 99, "flow", nil, "", alice),
		"prefix only":               f.retry(t, "/mcp", 99, "flow", nil, seal.TokenPrefix, alice),
		"truncated":                 f.retry(t, "/mcp", 99, "flow", nil, tokFlow[:len(tokFlow)-3], alice),
		"padded":                    f.retry(t, "/mcp", 99, "flow", nil, tokFlow+"==", alice),
		"other prefix":              f.retry(t, "/mcp", 99, "flow", nil, "weft2."+strings.TrimPrefix(tokFlow, seal.TokenPrefix), alice),
		"not a string":              f.retry(t, "/mcp", 99, "flow", nil, 5, alice),
		"null":                      f.retry(t, "/mcp", 99, "flow", nil, nil, alice),
		"application string":        f.retry(t, "/mcp", 99, "flow", nil, "opaque-app-state", alice),
		"to a tool without state":   f.retry(t, "/mcp", 99, "none", nil, tokFlow, alice),
		"too large":                 f.retry(t, "/mcp", 99, "flow", nil, seal.TokenPrefix+strings.Repeat("A", defaultStateMaxEncodedBytes), alice),
	}
	// Expiry last, since it applies to every token above.
	f.clock.advance(defaultStateLifetime - time.Millisecond)
	if r := f.retry(t, "/mcp", 99, "flow", nil, tokExpiring, alice); r.Status != 200 {
		t.Errorf("state one millisecond before expiry: %v", r)
	}
	f.clock.advance(time.Millisecond)
	failures["expired"] = f.retry(t, "/mcp", 99, "flow", nil, tokExpiring, alice)
	// The same id as an emitter whose integer id canonicalizes to 1E+2.
	p := toolCall(elicitCaps, "flow", nil)
	p["requestState"] = tok100
	p["inputResponses"] = M{"approve": M{"action": "accept", "content": M{"ok": true}}}
	same100 := f.send(t, "/mcp", 100, "tools/call", p, alice)
	if same100.Status != 400 || string(same100.Body) != strings.Replace(invalidState, "99", "100", 1) {
		t.Errorf("retry with the emitter's id 100: %v", same100)
	}
	for name, r := range failures {
		if r.Status != 400 || string(r.Body) != invalidState {
			t.Errorf("%s: HTTP %d %s, want 400 %s", name, r.Status, r.Body, invalidState)
		}
	}
	if n := f.calls() - before; n != 1 { // only the before-expiry control ran
		t.Errorf("handlers ran %d times, want 1", n)
	}
}

// craft seals state the way the server does, for a retry with params p
// (without inputResponses and requestState) under the given binding parts.
func (f *stateFixture) craft(t testing.TB, p seal.Protector, endpoint, version, partition string, params M, state exactjson.Value) string {
	t.Helper()
	pv, err := exactjson.ParseString(mustJSON(params), exactjson.Limits{})
	must(t, err)
	bind, err := stateBinding(endpoint, version, "tools/call", partition, pv)
	must(t, err)
	now := f.clock.now()
	plain, err := stateplain.Encode(&stateMeta{IssuedAt: now.UnixMilli(), ExpiresAt: now.Add(defaultStateLifetime).UnixMilli(),
		Round: 1, RequestID: exactjson.Int(1), Keys: []stateKey{{Name: "approve", Method: "elicitation/create"}}}, state)
	must(t, err)
	tok, err := p.Seal(context.Background(), bind, plain)
	must(t, err)
	return tok
}

func mustRing(t testing.TB, keys ...seal.Key) *seal.Keyring {
	t.Helper()
	r, err := seal.NewKeyring(keys[0], keys[1:]...)
	must(t, err)
	return r
}

// TestStateRounds: with Rounds 2, a retry carrying round 2 may complete, but
// asking again fails during sealing: -32603, HTTP 200, no state.
func TestStateRounds(t *testing.T) {
	f := newStateFixture(t, &Options{State: StateLimits{Rounds: 2}})
	f.serveHTTP(t)
	next := func(id any, tok string, content M) resp {
		return f.call(t, "/mcp", id, "multi", nil, M{"requestState": tok, "inputResponses": M{"next": M{"action": "accept", "content": content}}})
	}
	tok1 := tokenOf(t, f.call(t, "/mcp", 1, "multi", nil, nil))
	tok2 := tokenOf(t, next(2, tok1, M{"done": false}))
	if got := f.last(t); got.round != 1 {
		t.Errorf("round %d, want 1", got.round)
	}
	if r := next(3, tok2, M{"done": true}); r.Status != 200 || r.text(t) != "finished at round 2 step 2" {
		t.Errorf("the final allowed round must complete: %v", r)
	}
	before := f.calls()
	r := next(4, tok2, M{"done": false})
	wantSealFailure(t, r, 4)
	if f.calls() != before+1 {
		t.Errorf("the handler must have run (its side effects are not rolled back)")
	}
	if f.lc.count(slog.LevelError, "round limit") != 1 {
		t.Errorf("the seal failure was not logged: %v", f.lc.records())
	}
}

func wantSealFailure(t testing.TB, r resp, id int) {
	t.Helper()
	want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32603,"message":"Internal error"}}`, id)
	if r.Status != 200 || string(r.Body) != want {
		t.Errorf("want HTTP 200 %s, got %v", want, r)
	}
}

// TestStateLifetimeExhaustedAtReseal: state valid when opened expires while
// the handler runs; asking again then fails like an exhausted round.
func TestStateLifetimeExhaustedAtReseal(t *testing.T) {
	f := newStateFixture(t, &Options{State: StateLimits{Lifetime: time.Minute}})
	next := func(id any, tok string, content M) resp {
		return f.call(t, "/mcp", id, "multi", nil, M{"requestState": tok, "inputResponses": M{"next": M{"action": "accept", "content": content}}})
	}
	tok1 := tokenOf(t, f.call(t, "/mcp", 1, "multi", nil, nil))
	f.clock.advance(30 * time.Second)
	tok2 := tokenOf(t, next(2, tok1, M{"done": false}))
	// Re-emission keeps the original expiry: tok2 expires a minute after
	// tok1 was issued, not after it was itself issued.
	f.clock.advance(30*time.Second - time.Millisecond)
	wantSealFailure(t, next(3, tok2, M{"done": false, "sleepMs": 2}), 3)
	if f.lc.count(slog.LevelError, "lifetime is exhausted") != 1 {
		t.Errorf("not logged: %v", f.lc.records())
	}
	// Opened after expiry it is a -32602 before the handler runs.
	before := f.calls()
	r := next(99, tok2, M{"done": true})
	if r.Status != 400 || string(r.Body) != invalidState || f.calls() != before {
		t.Errorf("expired state: %v", r)
	}
}

func TestApplicationState(t *testing.T) {
	f := newStateFixture(t, nil)
	f.serveHTTP(t)
	weird := "  weft1.opaque/+=é\u2028\"quoted\"\t "
	for _, tok := range []string{weird, "x", strings.Repeat("é", maxApplicationStateBytes/2)} {
		r := f.call(t, "/mcp", 1, "app", M{"token": tok, "ask": true}, nil)
		if got := tokenOf(t, r); got != tok {
			t.Fatalf("requestState %q, want it untouched %q", got, tok)
		}
		r = f.call(t, "/mcp", 2, "app", M{"token": tok, "ask": true}, M{"requestState": tok, "inputResponses": M{"approve": M{"action": "decline"}}})
		if r.Status != 200 || r.text(t) != "resumed "+tok {
			t.Errorf("retry: %v", r)
		}
		if got := f.last(t); !got.hasApp || got.app != tok || got.hasFw || got.round != 0 {
			t.Errorf("handler saw %+v", got)
		}
	}
	// State only, no input requests: allowed.
	if got := tokenOf(t, f.call(t, "/mcp", 1, "app", M{"token": "handoff"}, nil)); got != "handoff" {
		t.Errorf("state-only result: %q", got)
	}
	// The handler may not emit empty or oversized state.
	for _, bad := range []string{"", strings.Repeat("a", maxApplicationStateBytes+1)} {
		r := f.call(t, "/mcp", 1, "app", M{"token": bad, "ask": true}, nil)
		r.wantError(t, 500, CodeInternalError)
		if strings.Contains(string(r.Body), "requestState") {
			t.Errorf("state leaked: %s", r.Body)
		}
	}
	// The client may not send empty or oversized state.
	before := f.calls()
	for _, bad := range []any{"", strings.Repeat("a", maxApplicationStateBytes+1), 7} {
		r := f.call(t, "/mcp", 99, "app", M{"token": "x"}, M{"requestState": bad})
		if r.Status != 400 || string(r.Body) != invalidState {
			t.Errorf("state %.20v: %v", bad, r)
		}
	}
	if f.calls() != before {
		t.Errorf("the handler ran on rejected state")
	}
}

func TestStateSentToToolWithoutState(t *testing.T) {
	f := newStateFixture(t, nil)
	f.serveHTTP(t)
	r := f.call(t, "/mcp", 1, "none", nil, nil)
	if res := r.result(t); res["resultType"] != "input_required" || res["requestState"] != nil {
		t.Fatalf("a stateless input_required: %s", r.Body)
	}
	before := f.calls()
	for _, st := range []any{"anything", "", tokenOf(t, f.call(t, "/mcp", 1, "flow", nil, nil))} {
		if r := f.retry(t, "/mcp", 99, "none", nil, st); r.Status != 400 || string(r.Body) != invalidState {
			t.Errorf("state %q: %v", st, r)
		}
	}
	if f.calls() != before+1 { // only the flow call above
		t.Errorf("the stateless handler ran on a retry with state")
	}
	if r := f.call(t, "/mcp", 2, "none", nil, M{"inputResponses": M{"approve": M{"action": "cancel"}}}); r.text(t) != "approved without state" {
		t.Errorf("stateless retry: %v", r)
	}
}

// TestStateAcrossServers: servers sharing the keyring open each other's
// state; a key with the same id but other bytes does not.
func TestStateAcrossServers(t *testing.T) {
	ring := mustRing(t, fixedKey(t, "fleet-2026-08", 0x11))
	clock := newClock() // one clock for the fleet
	a := newStateFixture(t, &Options{Now: clock.now, Protector: seal.NewManager(ring, nil)})
	b := newStateFixture(t, &Options{Now: clock.now, Protector: seal.NewManager(ring, nil)})
	c := newStateFixture(t, &Options{Now: clock.now, Protector: seal.NewManager(mustRing(t, fixedKey(t, "fleet-2026-08", 0x12)), nil)})
	for _, f := range []*stateFixture{a, b, c} {
		f.serveHTTP(t)
	}
	tokA := tokenOf(t, a.call(t, "/mcp", 1, "flow", nil, nil))
	tokB := tokenOf(t, b.call(t, "/mcp", 1, "flow", nil, nil))
	if r := b.retry(t, "/mcp", 2, "flow", nil, tokA); r.Status != 200 || r.text(t) != "approved" {
		t.Errorf("B opening A's state: %v", r)
	}
	if got := b.last(t); !exactjson.Equal(got.fw, mustParse(t, originalState)) {
		t.Errorf("B saw %s", got.fw)
	}
	if r := a.retry(t, "/mcp", 2, "flow", nil, tokB); r.Status != 200 {
		t.Errorf("A opening B's state: %v", r)
	}
	for _, tok := range []string{tokA, tokB} {
		if r := c.retry(t, "/mcp", 99, "flow", nil, tok); r.Status != 400 || string(r.Body) != invalidState {
			t.Errorf("a different key with the same id opened the state: %v", r)
		}
	}
	if fa, fb, fc := a.mgr.Keyring().Fingerprint(), b.mgr.Keyring().Fingerprint(), c.mgr.Keyring().Fingerprint(); !fa.Equal(fb) || fa.Equal(fc) {
		t.Errorf("fingerprints: %v %v %v", fa, fb, fc)
	}
}

// TestStateKeyRotationConcurrent rotates the active key while round trips
// run; under -race. Every round trip completes, old tokens keep opening
// while their key stays for verification, and stop once it is removed.
func TestStateKeyRotationConcurrent(t *testing.T) {
	f := newStateFixture(t, &Options{Protector: managerFor(t, fixedKey(t, "k0", 0x20))})
	old := tokenOf(t, f.call(t, "/mcp", 1, "flow", nil, nil))
	const workers, trips, rotations = 4, 15, 12
	var wg sync.WaitGroup
	errs := make(chan string, workers*trips*2+rotations)
	for w := range workers {
		wg.Go(func() {
			for i := range trips {
				r := f.call(t, "/mcp", w*1000+i, "flow", nil, nil)
				if r.Status != 200 {
					errs <- fmt.Sprintf("emit: %v", r)
					continue
				}
				tok, _ := r.result(t)["requestState"].(string)
				for _, tk := range []string{tok, old} {
					if r := f.retry(t, "/mcp", 99, "flow", nil, tk); r.Status != 200 {
						errs <- fmt.Sprintf("retry: %v", r)
					}
				}
			}
		})
	}
	wg.Go(func() {
		for i := 1; i <= rotations; i++ {
			k, err := seal.GenerateKey(fmt.Sprintf("k%d", i))
			if err == nil {
				err = f.mgr.Rotate(k)
			}
			if err != nil {
				errs <- err.Error()
			}
		}
	})
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if id := f.mgr.Keyring().ActiveID(); id != fmt.Sprintf("k%d", rotations) {
		t.Errorf("active key %s", id)
	}
	if r := f.retry(t, "/mcp", 99, "flow", nil, old); r.Status != 200 {
		t.Errorf("k0 state after rotations: %v", r)
	}
	removed, err := f.mgr.Remove("k0")
	if err != nil || !removed {
		t.Fatalf("Remove: %v %v", removed, err)
	}
	if r := f.retry(t, "/mcp", 99, "flow", nil, old); r.Status != 400 || string(r.Body) != invalidState {
		t.Errorf("state of a removed key: %v", r)
	}
}

func TestEphemeralProtectorWarnsOnce(t *testing.T) {
	lc := newLogCapture()
	f := newStateFixture(t, &Options{Protector: useEphemeral{}, Logger: lc.logger()})
	const warning = "DEVELOPMENT ONLY"
	if r := f.call(t, "/mcp", 1, "none", nil, nil); r.Status != 200 || lc.count(slog.LevelWarn, warning) != 0 {
		t.Fatalf("a stateless call: %v, %d warnings", r, lc.count(slog.LevelWarn, warning))
	}
	var wg sync.WaitGroup
	toks := make(chan string, 8)
	for i := range 8 {
		wg.Go(func() { toks <- tokenOf(t, f.call(t, "/mcp", i+1, "flow", nil, nil)) })
	}
	wg.Wait()
	close(toks)
	for tok := range toks {
		if r := f.retry(t, "/mcp", 99, "flow", nil, tok); r.Status != 200 {
			t.Errorf("ephemeral round trip: %v", r)
		}
		if !strings.HasPrefix(tok, seal.TokenPrefix) {
			t.Errorf("token %q", tok)
		}
	}
	if n := lc.count(slog.LevelWarn, warning); n != 1 {
		t.Errorf("%d ephemeral-key warnings, want exactly 1", n)
	}
	if m, ok := f.s.protector.(*seal.Manager); !ok || !m.IsEphemeral() {
		t.Errorf("protector %v is not the ephemeral manager", f.s.protector)
	}
}

// TestStateSizeLimits: state over MaxDecodedBytes fails at sealing (-32603,
// HTTP 200, nothing emitted) and, if crafted, at opening (-32602).
func TestStateSizeLimits(t *testing.T) {
	f := newStateFixture(t, &Options{State: StateLimits{MaxDecodedBytes: 1024, MaxEncodedBytes: 4096}})
	if r := f.call(t, "/mcp", 1, "sized", M{"n": 100}, nil); r.Status != 200 {
		t.Fatalf("small state: %v", r)
	}
	wantSealFailure(t, f.call(t, "/mcp", 2, "sized", M{"n": 1200}, nil), 2)
	if f.lc.count(slog.LevelError, "MaxDecodedBytes") != 1 {
		t.Errorf("not logged: %v", f.lc.records())
	}
	// A token whose plaintext is too large is refused when opened, even
	// though it authenticates (the key is the server's own).
	retryParams := func() M { return toolCall(elicitCaps, "flow", nil) }
	small := f.craft(t, f.mgr, "/mcp", ProtocolVersion, "", retryParams(), exactjson.String("s"))
	large := f.craft(t, f.mgr, "/mcp", ProtocolVersion, "", retryParams(), exactjson.String(strings.Repeat("s", 1100)))
	if r := f.retry(t, "/mcp", 99, "flow", nil, small); r.Status != 200 {
		t.Errorf("crafted small state: %v", r)
	}
	before := f.calls()
	if r := f.retry(t, "/mcp", 99, "flow", nil, large); r.Status != 400 || string(r.Body) != invalidState {
		t.Errorf("crafted large state: %v", r)
	}
	if f.calls() != before {
		t.Errorf("the handler ran")
	}
}
