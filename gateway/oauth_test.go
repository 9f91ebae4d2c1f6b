package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/gateway"
)

// protectedUpstream is a Weft server whose tools need a bearer token that
// valid accepts (whoami answers it, and the keys of inputResponses it got); it answers others 401 with its protected resource
// metadata, which names the authorization server issuer.
func protectedUpstream(t testing.TB, issuer string, valid func(token, resource string) bool) string {
	t.Helper()
	up, err := weft.NewServer(weft.Implementation{Name: "protected", Version: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := up.AddTool(weft.Tool{Name: "whoami", Description: "Returns the Authorization header."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			out := "auth=" + req.Header.Get("Authorization")
			if keys := req.InputResponses().Keys(); len(keys) > 0 { // none is expected
				out += fmt.Sprintf(" inputResponses=%q", keys)
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(out)}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": base + "/mcp", "authorization_servers": []string{issuer}})
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !valid(tok, base+"/mcp") {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		up.ServeHTTP(w, r)
	}))
	hs := httptest.NewUnstartedServer(mux)
	base = "http://" + hs.Listener.Addr().String() // before the handlers run
	hs.Start()
	t.Cleanup(hs.Close)
	return base + "/mcp"
}

// TestUpstreamOAuth: the gateway reaches an OAuth-protected upstream with
// its own service credentials (client credentials with a secret from the
// environment, discovered from the upstream's 401; or a token file), and
// the caller's own token never reaches the upstream.
func TestUpstreamOAuth(t *testing.T) {
	// The authorization server: client credentials for svc, tokens bound
	// to the resource they were requested for.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	issued := map[string]string{}
	grants := 0
	var asURL string
	as := http.NewServeMux()
	as.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": asURL, "token_endpoint": asURL + "/token",
			"grant_types_supported": []string{"client_credentials"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
	})
	as.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		id, secret, _ := r.BasicAuth()
		if a := r.PostFormValue("client_assertion"); a != "" {
			// private_key_jwt: iss = sub = the client, aud = the issuer,
			// signed by the registered key.
			var c jwt.Claims
			tok, err := jwt.ParseSigned(a, []jose.SignatureAlgorithm{jose.ES256})
			if err == nil && tok.Claims(&key.PublicKey, &c) == nil && c.Issuer == "gateway-jwt" && c.Subject == "gateway-jwt" && c.Audience.Contains(asURL) &&
				r.PostFormValue("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
				id, secret = "gateway-svc", "from-env-secret"
			}
		}
		if r.PostFormValue("grant_type") != "client_credentials" || id != "gateway-svc" || secret != "from-env-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client"})
			return
		}
		mu.Lock()
		grants++
		tok := fmt.Sprintf("svc-token-%d", grants)
		issued[tok] = r.PostFormValue("resource")
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	ahs := httptest.NewUnstartedServer(as)
	asURL = "http://" + ahs.Listener.Addr().String()
	ahs.Start()
	t.Cleanup(ahs.Close)
	valid := func(tok, resource string) bool {
		mu.Lock()
		defer mu.Unlock()
		return issued[tok] == resource || tok == "file-token-1"
	}
	upURL := protectedUpstream(t, asURL, valid)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("file-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEFT_GW_OAUTH_SECRET", "from-env-secret")
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		oauth *gateway.UpstreamOAuth
		want  string
	}{
		{"client credentials", &gateway.UpstreamOAuth{ClientID: "gateway-svc", ClientSecret: "${WEFT_GW_OAUTH_SECRET}"}, "auth=Bearer svc-token-1"},
		{"private_key_jwt", &gateway.UpstreamOAuth{ClientID: "gateway-jwt", PrivateKeyFile: keyFile}, "auth=Bearer svc-token-2"},
		{"token file", &gateway.UpstreamOAuth{TokenFile: tokenFile}, "auth=Bearer file-token-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := gateway.UpstreamConfig{Name: "up", URL: upURL, Prefix: "up_", OAuth: tc.oauth}
			in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
			c := client.New(client.NewHTTPTransport(in.url, &client.HTTPOptions{BearerToken: "caller-own-token"}), nil)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, "up_whoami", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != tc.want {
				t.Errorf("the upstream saw %q, want %q", got, tc.want)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if grants != 2 || issued["svc-token-1"] != upURL || issued["svc-token-2"] != upURL {
		t.Errorf("grants %d, tokens %v: want two client credentials grants for the upstream's resource", grants, issued)
	}
}

func TestUpstreamOAuthConfig(t *testing.T) {
	tests := []struct {
		up   gateway.UpstreamConfig
		want string
	}{
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", Authorization: "passthrough", OAuth: &gateway.UpstreamOAuth{TokenFile: "/t"}}, "exclude each other"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", Headers: map[string]string{"authorization": "Bearer x"}, OAuth: &gateway.UpstreamOAuth{TokenFile: "/t"}}, "exclude each other"},
		{gateway.UpstreamConfig{Name: "a", Command: "x", OAuth: &gateway.UpstreamOAuth{TokenFile: "/t"}}, "url upstreams only"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", OAuth: &gateway.UpstreamOAuth{ClientID: "c"}}, "needs clientSecret or privateKeyFile"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", OAuth: &gateway.UpstreamOAuth{TokenFile: "/t", ClientID: "c", ClientSecret: "s"}}, "not both"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", OAuth: &gateway.UpstreamOAuth{}}, "set tokenFile"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", OAuth: &gateway.UpstreamOAuth{ClientID: "c", ClientSecret: "s", AuthMethod: "tls"}}, "authMethod"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", OAuth: &gateway.UpstreamOAuth{PerUser: &gateway.PerUserOAuth{}}}, "perUser: set clientId"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", OAuth: &gateway.UpstreamOAuth{PerUser: &gateway.PerUserOAuth{ClientID: "c", ClientMetadataURL: "https://gw/cimd"}}}, "not both"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", Inputs: []string{"form"}, OAuth: &gateway.UpstreamOAuth{PerUser: &gateway.PerUserOAuth{ClientID: "c"}}}, `must include "url"`},
		{gateway.UpstreamConfig{Name: "a", Command: "x", OAuth: &gateway.UpstreamOAuth{PerUser: &gateway.PerUserOAuth{ClientID: "c"}}}, "url upstreams only"},
		{gateway.UpstreamConfig{Name: "a", URL: "http://h/", Authorization: "passthrough", OAuth: &gateway.UpstreamOAuth{PerUser: &gateway.PerUserOAuth{ClientID: "c"}}}, "exclude each other"},
	}
	for _, tt := range tests {
		err := (&gateway.Config{Upstreams: []gateway.UpstreamConfig{tt.up}}).Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error with %q", tt.up.OAuth, err, tt.want)
		}
	}
}
