package weft

import (
	"context"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// TestEmptyInputRequestKey: "" is a JSON member name like any other, and the
// 2026-07-28 schema's InputRequests and InputResponses maps allow every
// name: a handler may ask under the key "", and the retry's answer under ""
// reaches it, over framework state too.
func TestEmptyInputRequestKey(t *testing.T) {
	f := newStateFixture(t, nil)
	form := Form(ConditionalCapability)
	var got []bool
	must(t, f.s.AddTool(Tool{Name: "blank", Description: "Asks under the empty key.", Inputs: []Input{form}, StateMode: StateFramework},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if a, ok := req.InputResponses().Get(""); ok {
				action, _ := a.Get("action")
				s, _ := action.AsString()
				got = append(got, true)
				return textResult("answered " + s), nil
			}
			got = append(got, false)
			return nil, AskInput("", form.Ask("Approve?", approveSchema)).WithFrameworkState(exactjson.String("s"))
		}))
	r := f.call(t, "/mcp", 1, "blank", nil, nil)
	tok := tokenOf(t, r)
	reqs, _ := r.result(t)["inputRequests"].(M)
	if _, ok := reqs[""]; !ok || len(reqs) != 1 {
		t.Fatalf("inputRequests %v, want the key \"\"", reqs)
	}
	r = f.call(t, "/mcp", 2, "blank", nil, M{"requestState": tok, "inputResponses": M{"": M{"action": "accept"}}})
	if r.text(t) != "answered accept" {
		t.Fatalf("retry: %v", r)
	}
}

// TestInputRequestDeclaration: every emitted request names the declaration
// it was built from, failed ones included.
func TestInputRequestDeclaration(t *testing.T) {
	form, url, sampling, roots := Form(ConditionalCapability), URL(RequiredCapability), Sampling(ConditionalCapability), Roots(ConditionalCapability)
	typed := FormOf[struct {
		Name string `json:"name"`
	}](ConditionalCapability)
	for _, c := range []struct {
		name string
		r    InputRequest
		want Input
	}{
		{"form", form.Ask("Approve?", approveSchema), form},
		{"form that failed", form.Ask("", approveSchema), form},
		{"typed form", typed.Ask("Name?"), typed},
		{"url", url.Ask("Sign in.", "https://example.com/a"), url},
		{"sampling", sampling.Ask(SamplingRequest{Messages: []SamplingMessage{{Role: RoleUser, Content: TextContent("Hi")}}, MaxTokens: 5}), sampling},
		{"roots", roots.Ask(), roots},
		{"relayed", Proxy{}.Relay(form, mustParse(t, `{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}`)), form},
	} {
		if got := c.r.Declaration(); got != c.want {
			t.Errorf("%s: Declaration() = %v, want %v", c.name, got, c.want)
		}
	}
	if (InputRequest{}).Declaration() != nil {
		t.Error("the zero InputRequest names a declaration")
	}
	if d := form.Ask("Approve?", approveSchema).Declaration(); d.Requirement() != ConditionalCapability || d.Method() != "elicitation/create" {
		t.Errorf("declaration %v", d)
	}
}
