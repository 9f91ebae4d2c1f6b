package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/wefttest"
)

type whoOut struct {
	Principal string   `json:"principal"`
	Partition string   `json:"partition"`
	Scopes    []string `json:"scopes"`
}

// newProtectedServer builds a weft server with a "whoami" and a "delete"
// tool behind admission, logging to logs.
func newProtectedServer(t *testing.T, admission weft.Admission, logs *logBuffer) *weft.Server {
	t.Helper()
	srv, err := weft.NewServer(weft.Implementation{Name: "protected", Version: "1.0.0"},
		&weft.Options{Admission: admission, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	who := func(ctx context.Context, req *weft.Request, _ struct{}) (whoOut, error) {
		return whoOut{req.Identity.Principal, req.Identity.Partition, req.Identity.Scopes}, nil
	}
	if err := weft.AddTool(srv, weft.Tool{Name: "whoami", Description: "Says who is calling."}, who); err != nil {
		t.Fatal(err)
	}
	if err := weft.AddTool(srv, weft.Tool{Name: "delete", Description: "Deletes."}, who); err != nil {
		t.Fatal(err)
	}
	return srv
}

// mcpPost sends one 2026-07-28 tools/call over real HTTP.
func mcpPost(t *testing.T, c *http.Client, url, tool, token string) (*http.Response, map[string]any) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var msg map[string]any
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("response is not JSON (%d): %s", resp.StatusCode, raw)
	}
	return resp, msg
}

func TestEndToEndJWT(t *testing.T) {
	logs := &logBuffer{}
	prev := slog.Default()
	slog.SetDefault(logs.logger())
	t.Cleanup(func() { slog.SetDefault(prev) })

	f := newFixture(t)
	// The MCP server's URL is only known once it listens: route through a
	// mux whose handler is set afterwards.
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	resource := ts.URL + "/mcp"
	meta := &ResourceMetadata{
		Resource:             resource,
		AuthorizationServers: []string{testIssuer},
		ScopesSupported:      []string{"mcp:read"},
		ResourceName:         "e2e",
	}
	src, err := JWKSURL(f.jwks.URL, &JWKSOptions{Client: f.jwks.Client(), RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	v := &JWTValidator{
		Issuer:         testIssuer,
		JWKS:           src,
		RequiredScopes: []string{"mcp:read"},
		PartitionClaim: "tenant",
		ScopeFunc: func(method string, r *weft.AdmissionRequest) []string {
			if method == "tools/call" {
				return []string{"tools:call"}
			}
			return nil
		},
		Logger: logs.logger(),
	}
	if err := v.CheckConfig(nil); err == nil {
		t.Fatal("CheckConfig without Audience or metadata should fail")
	}
	if err := v.CheckConfig(meta); err != nil {
		t.Fatalf("CheckConfig(meta): %v", err)
	}
	srv := newProtectedServer(t, v.Admission(meta), logs)
	mh, err := meta.Handler()
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/mcp", srv)
	for _, p := range meta.WellKnownPaths() {
		mux.Handle(p, mh)
	}
	hc := ts.Client()
	now := time.Now()
	claims := with(claimsAt(now), "aud", resource, "scope", "mcp:read tools:call")
	var tokens []string
	tok := func(k *testKey, c map[string]any) string {
		s := sign(t, k, c, signOpts{})
		tokens = append(tokens, s)
		return s
	}

	// 1. No token: 401 with a challenge pointing at the metadata.
	resp, msg := mcpPost(t, hc, resource, "whoami", "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: status %d %v", resp.StatusCode, msg)
	}
	challenge := resp.Header.Get("WWW-Authenticate")
	wantMetaURL := ts.URL + "/.well-known/oauth-protected-resource/mcp"
	if challenge != `Bearer resource_metadata="`+wantMetaURL+`", scope="mcp:read tools:call"` {
		t.Errorf("challenge = %s", challenge)
	}
	// 2. The client follows resource_metadata and finds the authorization
	// server; the root well-known path serves the same document.
	for _, u := range []string{wantMetaURL, ts.URL + "/.well-known/oauth-protected-resource"} {
		mresp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		err = json.NewDecoder(mresp.Body).Decode(&doc)
		mresp.Body.Close()
		if err != nil || mresp.StatusCode != 200 || doc["resource"] != resource ||
			doc["authorization_servers"].([]any)[0] != testIssuer {
			t.Errorf("GET %s: %d %v %v", u, mresp.StatusCode, doc, err)
		}
	}
	// 3. A valid token (each key type) is admitted with its identity.
	for _, k := range []*testKey{f.rsa, f.ec, f.ed} {
		resp, msg = mcpPost(t, hc, resource, "whoami", tok(k, claims))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d %v", k.alg, resp.StatusCode, msg)
		}
		sc := msg["result"].(map[string]any)["structuredContent"].(map[string]any)
		if sc["principal"] != "alice" || sc["partition"] != testIssuer+"|acme" {
			t.Errorf("%s: identity %v", k.alg, sc)
		}
	}
	// 4. Per-operation scope: 403 naming every scope the operation needs.
	resp, msg = mcpPost(t, hc, resource, "delete", tok(f.rsa, with(claims, "scope", "mcp:read")))
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("delete: status %d %v", resp.StatusCode, msg)
	}
	if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer error="insufficient_scope", scope="mcp:read tools:call", resource_metadata="`+wantMetaURL+`", error_description="The access token lacks scopes this operation requires"` {
		t.Errorf("403 challenge = %s", got)
	}
	// 5. Invalid tokens: 401 invalid_token.
	bad := map[string]string{
		"expired":        tok(f.rsa, with(claims, "exp", now.Add(-time.Hour).Unix(), "iat", now.Add(-2*time.Hour).Unix(), "nbf", nil)),
		"wrong audience": tok(f.rsa, with(claims, "aud", "https://elsewhere.example.com/mcp")),
		"wrong issuer":   tok(f.ec, with(claims, "iss", "https://evil.example.com")),
		"foreign key":    tok(newECKey(t, "ec-1"), claims),
	}
	for name, b := range bad {
		resp, msg = mcpPost(t, hc, resource, "whoami", b)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s: status %d, challenge %q", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		raw, _ := json.Marshal(msg)
		assertNoSecret(t, name+" response body", string(raw), b)
		assertNoSecret(t, name+" challenge", resp.Header.Get("WWW-Authenticate"), b)
	}

	// The same server through wefttest's in-memory client.
	c := wefttest.NewClient(t, srv, &wefttest.Options{Endpoint: "/mcp", Header: http.Header{"Authorization": {"Bearer " + tok(f.ed, claims)}}})
	res, err := c.CallTool(context.Background(), "whoami", map[string]any{})
	if err != nil || !strings.Contains(res.Text(), `"principal":"alice"`) {
		t.Errorf("wefttest call: %v %v", res, err)
	}
	c = wefttest.NewClient(t, srv, &wefttest.Options{Header: http.Header{"Authorization": {"Bearer " + bad["expired"]}}})
	_, err = c.CallTool(context.Background(), "whoami", map[string]any{})
	var rpcErr *client.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.HTTPStatus != 401 || !strings.Contains(rpcErr.Header.Get("WWW-Authenticate"), "expired") {
		t.Errorf("wefttest expired: %v", err)
	}
	assertNoSecret(t, "wefttest error", err.Error(), bad["expired"])

	// The rejections were logged, without any token.
	out := logs.String()
	if !strings.Contains(out, "access token rejected") || !strings.Contains(out, "lacks scopes") {
		t.Errorf("expected rejection logs, got:\n%s", out)
	}
	assertNoSecret(t, "logs", out, tokens...)
}

func TestEndToEndStaticTokens(t *testing.T) {
	logs := &logBuffer{}
	st, err := LoadStaticTokens(writeFile(t, tokensJSON, 0o600))
	if err != nil {
		t.Fatal(err)
	}
	meta := validMeta()
	srv := newProtectedServer(t, st.Admission(meta), logs)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	resp, msg := mcpPost(t, ts.Client(), ts.URL+"/mcp", "whoami", "")
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer resource_metadata="`+meta.MetadataURL()+`"`) {
		t.Errorf("no token: %d %q %v", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), msg)
	}
	wrong := "wrong-0123456789abcdef"
	resp, msg = mcpPost(t, ts.Client(), ts.URL+"/mcp", "whoami", wrong)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("wrong token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	raw, _ := json.Marshal(msg)
	assertNoSecret(t, "response", string(raw), wrong)

	resp, msg = mcpPost(t, ts.Client(), ts.URL+"/mcp", "whoami", aliceToken)
	if resp.StatusCode != 200 {
		t.Fatalf("alice: %d %v", resp.StatusCode, msg)
	}
	sc := msg["result"].(map[string]any)["structuredContent"].(map[string]any)
	if sc["principal"] != "alice" || sc["partition"] != "tenant-a" {
		t.Errorf("identity = %v", sc)
	}
	// Lower-case scheme word is accepted too.
	c := wefttest.NewClient(t, srv, &wefttest.Options{Header: http.Header{"Authorization": {"bearer " + bobToken}}})
	res, err := c.CallTool(context.Background(), "whoami", map[string]any{})
	if err != nil || !strings.Contains(res.Text(), `"principal":"bob"`) {
		t.Errorf("bob: %v %v", res, err)
	}
	assertNoSecret(t, "logs", logs.String(), aliceToken, bobToken, wrong)
	if bytes.Contains([]byte(logs.String()), []byte(aliceToken)) {
		t.Error("token logged")
	}
}
