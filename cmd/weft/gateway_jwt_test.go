package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/weftmcp/weft/client"
)

// TestGatewayJWTCallers: `weft gateway` with an auth.jwt section admits
// the company's JWT access tokens (signature against a JWKS file, issuer,
// audience = the gateway's resource, lifetime), serves the protected
// resource metadata naming the issuer, answers 401 without a valid token,
// takes the caller from the email claim and the scopes from roles, and
// applies a policy rule on a token claim (groups) to lists and calls.
func TestGatewayJWTCallers(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: "k1", Algorithm: "ES256", Use: "sig"}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}})
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	const issuer = "https://login.example.com"
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	cfg := filepath.Join(dir, "gateway.yaml")
	audit := filepath.Join(dir, "audit.log")
	doc := "auth:\n  jwt: {issuer: " + issuer + ", jwksFile: " + strconv.Quote(jwksFile) + "}\n  requiredScopes: [mcp]\n  partitionClaim: tenant\n" +
		"  principalClaim: email\n  scopesClaim: roles\naudit: {file: " + strconv.Quote(audit) + "}\n" +
		"upstreams:\n  - name: demo\n    command: " + strconv.Quote(weftBin) + "\n    args: [serve, --stdio, --data, ./demo-data]\n    dir: .\n    prefix: demo.\n" +
		"policy:\n  - {items: [demo.refund.*], claims: {groups: [finance]}}\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	startGatewayProcess(t, nil, "--config", cfg, "--addr", addr, "--data", filepath.Join(dir, "gw"))
	waitPort(t, addr)

	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	token := func(sub, aud string, groups []string, exp time.Duration) string {
		now := time.Now()
		tok, err := jwt.Signed(sig).Claims(map[string]any{"iss": issuer, "aud": aud, "sub": "id-" + sub, "email": sub + "@example.com",
			"tenant": "acme", "groups": groups, "roles": []string{"mcp"}, "iat": now.Unix(), "exp": now.Add(exp).Unix()}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	alice := token("alice", resource, []string{"finance", "eng"}, time.Hour)
	bob := token("bob", resource, []string{"eng"}, time.Hour)

	if resp := rawMCP(t, resource, "", "tools/list", ""); resp.StatusCode != 401 ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), "/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	for name, tok := range map[string]string{
		"expired":        token("alice", resource, nil, -time.Hour),
		"other audience": token("alice", "https://other.example.com/mcp", nil, time.Hour),
		"not a JWT":      "opaque-token",
	} {
		if resp := rawMCP(t, resource, tok, "tools/list", ""); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
			t.Errorf("%s token: %d %q", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	res, err := http.Get("http://" + addr + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	prm, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(prm, &meta); err != nil || meta.Resource != resource || !slices.Equal(meta.AuthorizationServers, []string{issuer}) {
		t.Fatalf("protected resource metadata: %s", prm)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := func(tok string) []string {
		c := client.New(client.NewHTTPTransport(resource, &client.HTTPOptions{BearerToken: tok}), nil)
		defer c.Close()
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if n := names(alice); !slices.Contains(n, "demo.refund.request") || !slices.Contains(n, "demo.counter.show") {
		t.Fatalf("alice's tools: %v", n)
	}
	if n := names(bob); slices.Contains(n, "demo.refund.request") || !slices.Contains(n, "demo.counter.show") {
		t.Fatalf("bob's tools: %v", n)
	}
	c := client.New(client.NewHTTPTransport(resource, &client.HTTPOptions{BearerToken: bob}), nil)
	defer c.Close()
	if _, err := c.CallTool(ctx, "demo.refund.request", map[string]any{"amount": 5}); err == nil || !strings.Contains(err.Error(), "Unknown tool") {
		t.Fatalf("bob's refund.request: %v", err)
	}
	if res, err := c.CallTool(ctx, "demo.counter.show", map[string]any{"start": 7}); err != nil || !strings.Contains(res.Text(), "7") {
		t.Fatalf("bob's counter.show: %v %v", res, err)
	}
	b, err := os.ReadFile(audit)
	if err != nil || !strings.Contains(string(b), `"principal":"bob@example.com","partition":"https://login.example.com|acme"`) {
		t.Fatalf("audit (principal from email, partition from tenant): %v\n%s", err, b)
	}
}
