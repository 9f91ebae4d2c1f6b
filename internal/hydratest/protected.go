package hydratest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
)

// TokenFP is a short fingerprint of a token, for tests that check which
// token reached a server without logging it.
func TokenFP(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:6])
}

// ProtectedServer starts a company's MCP server that acts as its user,
// until the test ends, and returns its MCP endpoint: a Weft server
// admitting h's access tokens (introspection, audience its own URL), and
// listToken (a static token, "" for none) for lists only. Its tool whoami
// answers "sub=<the token's subject> tok=<TokenFP of the token>". observe,
// when set, is called with ("", the Authorization header) for every
// request and with (the subject, the header) for every whoami call.
func ProtectedServer(t testing.TB, h *Hydra, listToken string, observe func(principal, authorization string)) string {
	t.Helper()
	if observe == nil {
		observe = func(string, string) {}
	}
	hs := httptest.NewUnstartedServer(nil)
	upURL := "http://" + hs.Listener.Addr().String() + "/mcp"
	meta := &auth.ResourceMetadata{Resource: upURL, AuthorizationServers: []string{h.Issuer}}
	in := &auth.Introspector{Endpoint: h.AdminURL + "/admin/oauth2/introspect", Issuer: h.Issuer, CacheTTL: -1}
	hydra := in.Admission(meta)
	adm := func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		observe("", r.Header.Get("Authorization"))
		if listToken != "" && r.BearerToken == listToken {
			if r.Method == "tools/call" {
				return weft.Identity{}, meta.InvalidToken(nil, "the list token calls no tool")
			}
			return weft.Identity{Principal: "gateway-lists", Partition: "lists"}, nil
		}
		return hydra(ctx, r)
	}
	up, err := weft.NewServer(weft.Implementation{Name: "hydra-protected", Version: "1"}, &weft.Options{Admission: adm})
	if err != nil {
		t.Fatal(err)
	}
	if err := up.AddTool(weft.Tool{Name: "whoami", Description: "Returns the caller's subject."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			authz := req.Header.Get("Authorization")
			tok, _ := strings.CutPrefix(authz, "Bearer ")
			observe(req.Identity.Principal, authz)
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("sub=" + req.Identity.Principal + " tok=" + TokenFP(tok))}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	mh, err := meta.Handler()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", up)
	for _, p := range meta.WellKnownPaths() {
		mux.Handle(p, mh)
	}
	hs.Config.Handler = mux
	hs.Start()
	t.Cleanup(hs.Close)
	return upURL
}
