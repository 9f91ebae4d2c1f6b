package auth

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft"
)

// rpc sends one 2026-07-28 request and returns the status, the
// WWW-Authenticate header and the decoded message.
func rpc(t *testing.T, url, method, name, params, token string) (int, string, map[string]any) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var msg map[string]any
	_ = json.Unmarshal(raw, &msg)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), msg
}

func listed(msg map[string]any, member, key string) []string {
	var out []string
	res, _ := msg["result"].(map[string]any)
	items, _ := res[member].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)[key].(string))
	}
	return out
}

// TestDeclaredScopes: scopes declared on tool, prompt, resource and
// template registrations are enforced by JWTValidator without a ScopeFunc
// (one challenge naming every scope the operation needs), and lists hide
// what the caller's scopes do not allow.
func TestDeclaredScopes(t *testing.T) {
	f := newFixture(t)
	f.v.Now = nil
	f.v.RequiredScopes = []string{"mcp:read"}
	srv, err := weft.NewServer(weft.Implementation{Name: "scoped", Version: "1"}, &weft.Options{Admission: f.v.Admission(f.meta)})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(ctx context.Context, req *weft.Request, _ struct{}) (struct{}, error) { return struct{}{}, nil }
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(weft.AddTool(srv, weft.Tool{Name: "read", Description: "Reads."}, ok))
	must(weft.AddTool(srv, weft.Tool{Name: "delete", Description: "Deletes.", Scopes: []string{"files:write", "files:delete"}}, ok))
	must(srv.AddPrompt(weft.Prompt{Name: "secret", Description: "A secret prompt.", Scopes: []string{"prompts:secret"}},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			return &weft.GetPromptResult{Messages: []weft.PromptMessage{{Role: "user", Content: weft.TextContent("s")}}}, nil
		}))
	read := func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
		return &weft.ReadResourceResult{Contents: []weft.ResourceContents{{URI: req.Name, Text: "x"}}}, nil
	}
	must(srv.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "file:///payroll", Name: "payroll"}, Scopes: []string{"hr:read"}}, read))
	must(srv.AddResourceTemplate(weft.ResourceTemplate{URITemplate: "hr:///{id}", Name: "hr", Scopes: []string{"hr:read"}}, read))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	now := time.Now()
	token := func(scope string) string {
		return sign(t, f.ec, with(claimsAt(now), "scope", scope), signOpts{})
	}
	basic := token("mcp:read")
	all := token("mcp:read files:write files:delete prompts:secret hr:read")

	st, challenge, _ := rpc(t, ts.URL, "tools/call", "delete", `"name":"delete","arguments":{},`, basic)
	if st != 403 || !strings.Contains(challenge, `scope="mcp:read files:write files:delete"`) {
		t.Errorf("delete without scopes: %d %s", st, challenge)
	}
	if st, _, msg := rpc(t, ts.URL, "tools/call", "delete", `"name":"delete","arguments":{},`, all); st != 200 {
		t.Errorf("delete with scopes: %d %v", st, msg)
	}
	if st, _, _ := rpc(t, ts.URL, "tools/call", "read", `"name":"read","arguments":{},`, basic); st != 200 {
		t.Errorf("read: %d", st)
	}
	if st, challenge, _ := rpc(t, ts.URL, "prompts/get", "secret", `"name":"secret",`, basic); st != 403 || !strings.Contains(challenge, "prompts:secret") {
		t.Errorf("prompt: %d %s", st, challenge)
	}
	for _, uri := range []string{"file:///payroll", "hr:///42"} {
		if st, challenge, _ := rpc(t, ts.URL, "resources/read", uri, `"uri":"`+uri+`",`, basic); st != 403 || !strings.Contains(challenge, "hr:read") {
			t.Errorf("read %s: %d %s", uri, st, challenge)
		}
		if st, _, msg := rpc(t, ts.URL, "resources/read", uri, `"uri":"`+uri+`",`, all); st != 200 {
			t.Errorf("read %s with scope: %d %v", uri, st, msg)
		}
	}

	lists := []struct{ method, member, key, hidden string }{
		{"tools/list", "tools", "name", "delete"},
		{"prompts/list", "prompts", "name", "secret"},
		{"resources/list", "resources", "uri", "file:///payroll"},
		{"resources/templates/list", "resourceTemplates", "uriTemplate", "hr:///{id}"},
	}
	for _, l := range lists {
		_, _, msg := rpc(t, ts.URL, l.method, "", "", basic)
		if got := listed(msg, l.member, l.key); slices.Contains(got, l.hidden) {
			t.Errorf("%s with basic scopes lists %v", l.method, got)
		}
		_, _, msg = rpc(t, ts.URL, l.method, "", "", all)
		if got := listed(msg, l.member, l.key); !slices.Contains(got, l.hidden) {
			t.Errorf("%s with all scopes lists %v", l.method, got)
		}
		if cs := msg["result"].(map[string]any)["cacheScope"]; cs != "private" {
			t.Errorf("%s cacheScope %v", l.method, cs)
		}
	}
}
