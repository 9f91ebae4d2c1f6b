package auth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/weftmcp/weft/auth"
)

// An Introspector asks the authorization server about each opaque token
// (RFC 7662) and caches the answer briefly. Here a stand-in authorization
// server on loopback knows one token.
func ExampleIntrospector() {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, secret, ok := r.BasicAuth(); !ok || id != "mcp-server" || secret != "s3cret" {
			http.Error(w, "unauthorized client", http.StatusUnauthorized)
			return
		}
		answer := map[string]any{"active": false}
		if r.PostFormValue("token") == "opaque-token-1" {
			answer = map[string]any{"active": true, "iss": "https://auth.example.com", "sub": "alice",
				"aud": "https://mcp.example.com/mcp", "exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp:read mcp:write"}
		}
		_ = json.NewEncoder(w).Encode(answer)
	}))
	defer as.Close()

	v := &auth.Introspector{
		Endpoint:     as.URL, // https in production; http only on loopback
		ClientID:     "mcp-server",
		ClientSecret: "s3cret",
		Issuer:       "https://auth.example.com",
		Audience:     "https://mcp.example.com/mcp",
	}
	claims, err := v.Introspect(context.Background(), "opaque-token-1")
	fmt.Println(claims.Subject, claims.Scopes, err)
	_, err = v.Introspect(context.Background(), "revoked-token")
	fmt.Println(err)
	// Output:
	// alice [mcp:read mcp:write] <nil>
	// auth: token is not active
}
