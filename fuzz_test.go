package weft

import (
	"context"
	"strings"
	"testing"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
)

// FuzzOpenState feeds arbitrary requestState strings to the framework-state
// opener: it must never panic and never accept a token it did not seal.
func FuzzOpenState(f *testing.F) {
	k, err := seal.NewKey("fuzz", []byte(strings.Repeat("k", 32)))
	if err != nil {
		f.Fatal(err)
	}
	kr, err := seal.NewKeyring(k)
	if err != nil {
		f.Fatal(err)
	}
	s, err := NewServer(Implementation{Name: "fuzz"}, &Options{Protector: seal.NewManager(kr, nil)})
	if err != nil {
		f.Fatal(err)
	}
	op := &operation{kind: KindTool, name: "t", stateMode: StateFramework}
	params := exactjson.Object(exactjson.Field("name", exactjson.String("t")))
	emitter := &Request{Method: "tools/call", ID: IntID(1), ProtocolVersion: ProtocolVersion, Name: "t", Params: params, Endpoint: "/mcp", srv: s}
	valid, e := s.sealState(context.Background(), emitter, new(InputRequired).WithFrameworkState(exactjson.String("s")))
	if e != nil {
		f.Fatal(e)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add(valid + "-TAMPERED")
	f.Add("weft1.")
	f.Add("")
	f.Add("weft1.AQRmdXp6AAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, token string) {
		req := &Request{Method: "tools/call", ID: IntID(2), ProtocolVersion: ProtocolVersion, Name: "t", Endpoint: "/mcp", srv: s,
			Params: params.With("requestState", exactjson.String(token))}
		err := s.openState(context.Background(), req, op)
		// Fuzz workers run this setup in their own processes, so the seed
		// token of another process is as genuine as ours: an accepted token
		// must carry exactly the state that was sealed.
		if st, ok, _ := FrameworkState[exactjson.Value](req); err == nil && (!ok || !exactjson.Equal(st, exactjson.String("s"))) {
			t.Fatalf("opened a token that was never sealed: %q", token)
		}
		if err != nil && (err.Code != CodeInvalidParams || err.Message != msgInvalidState) {
			t.Fatalf("state failure must be the one fixed -32602, got %d %q", err.Code, err.Message)
		}
	})
}

// FuzzInputResponse feeds arbitrary JSON to the input-response checker: it
// must never panic, and accepted elicitation content holds only the union.
func FuzzInputResponse(f *testing.F) {
	if err := fuzzForm.Err(); err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"action":"accept","content":{"name":"a","n":3.50,"b":true,"tags":["x"]}}`,
		`{"action":"decline"}`,
		`{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m","stopReason":"endTurn"}`,
		`{"roots":[{"uri":"file:///r","name":"R"}]}`,
		`12345`, `null`, `{"action":"accept","content":{"x":{"nested":1}}}`,
	} {
		f.Add([]byte(seed), "")
		f.Add([]byte(seed), "elicitation/create")
		f.Add([]byte(seed), "sampling/createMessage")
		f.Add([]byte(seed), "roots/list")
	}
	f.Fuzz(func(t *testing.T, data []byte, method string) {
		v, err := exactjson.Parse(data, exactjson.Limits{})
		if err != nil {
			return
		}
		if checkInputResponse(v, method) != nil {
			return
		}
		// What the server accepts, the handler's readers read.
		switch method {
		case "sampling/createMessage":
			r, err := parseSamplingResult(v)
			if err != nil {
				t.Fatalf("accepted %s, parseSamplingResult: %v", data, err)
			}
			_ = r.Text()
		case "roots/list":
			if _, err := parseRoots(v); err != nil {
				t.Fatalf("accepted %s, parseRoots: %v", data, err)
			}
		}
		if method == "elicitation/create" {
			req := &Request{retry: &retryState{inputResponses: InputResponses{exactjson.Object(exactjson.Field("k", v))}}}
			if _, _, ok, err := Form(RequiredCapability).Answer(req, "k"); !ok || err != nil {
				t.Fatalf("accepted %s, Form.Answer: %v %v", data, ok, err)
			}
			// A typed form validates and decodes whatever was accepted,
			// or reports why not; it never panics.
			if _, outcome, ok, err := fuzzForm.Answer(req, "k"); !ok || (err == nil && outcome == 0) {
				t.Fatalf("accepted %s, FormOf.Answer: %v %v %v", data, outcome, ok, err)
			}
			c, _ := v.Get("content")
			for _, fv := range c.All() {
				switch fv.Kind() {
				case exactjson.KindString, exactjson.KindNumber, exactjson.KindBool:
				case exactjson.KindArray:
					for e := range fv.Values() {
						if e.Kind() != exactjson.KindString {
							t.Fatalf("accepted a non-string array element in %s", data)
						}
					}
				default:
					t.Fatalf("accepted content outside the union: %s", data)
				}
			}
		}
	})
}

// fuzzForm is a typed form with one field of each kind.
var fuzzForm = FormOf[struct {
	S string           `json:"s,omitempty"`
	N exactjson.Number `json:"n,omitempty"`
	I int64            `json:"i,omitempty"`
	B bool             `json:"b,omitempty"`
	E string           `json:"e,omitempty"`
	M []string         `json:"m,omitempty"`
}](RequiredCapability, elicit.EnumField("e", "x", "y"), elicit.MultiSelectField("m", "x", "y"))
