package weft

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
)

// statelessHeaders are the headers of a 2025-era request to a server that
// gave the client no session.
func statelessHeaders(version string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		h.Set("MCP-Protocol-Version", version)
	}
	return h
}

// statelessFleet is two instances of a default server (both eras, no
// session store) sharing a keyring, as behind a round-robin balancer.
func statelessFleet(t *testing.T) [2]string {
	t.Helper()
	key, err := seal.GenerateKey("k1")
	must(t, err)
	kr, err := seal.NewKeyring(key)
	must(t, err)
	var urls [2]string
	for i := range urls {
		s, lc := newServer(t, &Options{PageSize: 1, Protector: seal.NewManager(kr, nil)})
		t.Cleanup(func() {
			if t.Failed() {
				for _, r := range lc.records() {
					t.Logf("instance %d: %v", i, r)
				}
			}
		})
		addText(t, s, "hello", "hi")
		addText(t, s, "bye", "see you")
		must(t, s.AddTool(Tool{Name: "confirm", Description: "Needs a form.", Inputs: []Input{Form(RequiredCapability)}},
			func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("confirmed"), nil }))
		// A conditional form: the handler sees no capability, and one
		// that asks all the same is refused naming the setting too.
		maybe := Form(ConditionalCapability)
		must(t, s.AddTool(Tool{Name: "maybe", Description: "Asks when it can.", Inputs: []Input{maybe}},
			func(ctx context.Context, req *Request) (*CallToolResult, error) {
				if req.ClientCapabilities.Has("elicitation") {
					t.Error("a stateless request claims the client's elicitation capability")
				}
				if req.Arguments().Has("ask") {
					return nil, AskInput("ok", maybe.Ask("Sure?", exactjson.Object(exactjson.Field("type", exactjson.String("object")), exactjson.Field("properties", exactjson.Object()))))
				}
				return textResult("did without"), nil
			}))
		urls[i] = startHTTP(t, s).URL
	}
	return urls
}

func TestLegacyStatelessByDefault(t *testing.T) {
	fleet := statelessFleet(t)
	init := body(t, 1, "initialize", M{"protocolVersion": "2025-11-25", "capabilities": M{"elicitation": M{}},
		"clientInfo": M{"name": "x", "version": "1"}})
	r := post(t, fleet[0], init, statelessHeaders(""))
	res := r.result(t)
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Fatalf("a server without a session store opened session %q", sid)
	}
	if res["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize negotiated %v", res["protocolVersion"])
	}
	caps, _ := res["capabilities"].(M)
	if !jsonEqual(t, []byte(mustJSON(caps)), []byte(`{"tools":{}}`)) {
		t.Fatalf("stateless capabilities %s: no listChanged, subscribe or logging without a session", mustJSON(caps))
	}
	if r := post(t, fleet[1], body(t, nil, "notifications/initialized", nil), statelessHeaders("2025-11-25")); r.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %v", r)
	}

	// Every later request goes to either instance, as a round-robin
	// balancer sends it.
	cases := []struct {
		name     string
		instance int
		version  string
		req      []byte
		sid      string
		check    func(t *testing.T, r resp)
	}{
		{name: "ping", instance: 1, version: "2025-11-25", req: body(t, 2, "ping", nil), check: func(t *testing.T, r resp) {
			if r.Status != 200 || mustJSON(r.result(t)) != "{}" {
				t.Fatalf("ping: %v", r)
			}
		}},
		{name: "call", instance: 0, version: "2025-11-25", req: body(t, 3, "tools/call", M{"name": "hello"}), check: func(t *testing.T, r resp) {
			res := r.result(t)
			if _, ok := res["resultType"]; ok || r.text(t) != "hi" {
				t.Fatalf("a 2025-era call answered %v", r)
			}
		}},
		{name: "2025-06-18 call", instance: 1, version: "2025-06-18", req: body(t, 4, "tools/call", M{"name": "bye"}), check: func(t *testing.T, r resp) {
			if r.text(t) != "see you" {
				t.Fatalf("a 2025-06-18 call answered %v", r)
			}
		}},
		{name: "call needing input names the setting", instance: 0, version: "2025-11-25", req: body(t, 5, "tools/call", M{"name": "confirm"}),
			check: func(t *testing.T, r resp) {
				e := r.wantError(t, 200, CodeMissingRequiredCapability)
				if !strings.Contains(e.Message, "LegacyOptions.Store") || !strings.Contains(string(e.Data), "elicitation") {
					t.Fatalf("the error does not say what the call needs and what enables it: %q %s", e.Message, e.Data)
				}
			}},
		{name: "conditional input done without", instance: 1, version: "2025-11-25", req: body(t, 12, "tools/call", M{"name": "maybe"}),
			check: func(t *testing.T, r resp) {
				if r.text(t) != "did without" {
					t.Fatalf("a conditional tool answered %v", r)
				}
			}},
		{name: "conditional input asked all the same", instance: 0, version: "2025-11-25",
			req: body(t, 13, "tools/call", M{"name": "maybe", "arguments": M{"ask": true}}), check: func(t *testing.T, r resp) {
				e := r.wantError(t, 200, CodeMissingRequiredCapability)
				if !strings.Contains(e.Message, "LegacyOptions.Store") {
					t.Fatalf("the error does not name the setting: %q", e.Message)
				}
			}},
		{name: "logging/setLevel has no session to keep its level", instance: 1, version: "2025-11-25",
			req: body(t, 6, "logging/setLevel", M{"level": "info"}), check: func(t *testing.T, r resp) { r.wantError(t, 200, CodeMethodNotFound) }},
		{name: "unsupported revision", instance: 0, version: "2025-03-26", req: body(t, 7, "tools/list", nil), check: func(t *testing.T, r resp) {
			r.wantError(t, 400, CodeInvalidRequest)
		}},
		{name: "no revision stays modern", instance: 0, req: body(t, 8, "tools/list", nil), check: func(t *testing.T, r resp) {
			r.wantError(t, 400, CodeInvalidParams)
		}},
		{name: "a session id is unknown", instance: 1, version: "2025-11-25", sid: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			req: body(t, 9, "tools/list", nil), check: func(t *testing.T, r resp) {
				if r.Status != 404 {
					t.Fatalf("a request with a session id the server never gave: %v", r)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := statelessHeaders(c.version)
			if c.sid != "" {
				h.Set("Mcp-Session-Id", c.sid)
			}
			c.check(t, post(t, fleet[c.instance], c.req, h))
		})
	}

	// Paging across instances: a cursor sealed by one opens on the other.
	first := post(t, fleet[0], body(t, 10, "tools/list", nil), statelessHeaders("2025-11-25")).result(t)
	cursor, _ := first["nextCursor"].(string)
	if cursor == "" {
		t.Fatalf("no cursor with PageSize 1: %v", first)
	}
	second := post(t, fleet[1], body(t, 11, "tools/list", M{"cursor": cursor}), statelessHeaders("2025-11-25")).result(t)
	if tools, _ := second["tools"].([]any); len(tools) != 1 {
		t.Fatalf("the second page on the other instance: %v", second)
	}

	// GET and DELETE with a session id: there are no sessions.
	for _, verb := range []string{http.MethodGet, http.MethodDelete} {
		req, err := http.NewRequest(verb, fleet[0], nil)
		must(t, err)
		req.Header = statelessHeaders("2025-11-25")
		req.Header.Set("Mcp-Session-Id", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		if r := do(t, req); r.Status != 404 {
			t.Errorf("%s with a session id: %v", verb, r)
		}
	}
}
