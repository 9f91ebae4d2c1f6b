package oauth

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func TestParseWWWAuthenticate(t *testing.T) {
	tests := []struct {
		in   string
		want []Challenge
		err  bool
	}{
		{`Bearer`, []Challenge{{Scheme: "Bearer", Params: map[string]string{}}}, false},
		{`Bearer realm="x", scope="a b"`, []Challenge{{Scheme: "Bearer", Params: map[string]string{"realm": "x", "scope": "a b"}}}, false},
		{`Bearer error=invalid_token, resource_metadata="https://r/.well-known/oauth-protected-resource"`,
			[]Challenge{{Scheme: "Bearer", Params: map[string]string{"error": "invalid_token", "resource_metadata": "https://r/.well-known/oauth-protected-resource"}}}, false},
		{`DPoP error="use_dpop_nonce", Bearer scope="x"`, []Challenge{
			{Scheme: "DPoP", Params: map[string]string{"error": "use_dpop_nonce"}},
			{Scheme: "Bearer", Params: map[string]string{"scope": "x"}}}, false},
		{`Basic abc==, Bearer`, []Challenge{{Scheme: "Basic", Params: map[string]string{}, Token68: "abc=="}, {Scheme: "Bearer", Params: map[string]string{}}}, false},
		{`Bearer desc="a \"quoted\" word"`, []Challenge{{Scheme: "Bearer", Params: map[string]string{"desc": `a "quoted" word`}}}, false},
		{`Bearer SCOPE = "x"`, []Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "x"}}}, false},
		{`Bearer scope="x`, nil, true},
		{`Bearer scope="x", scope="y"`, nil, true},
		{`Bearer scope=`, []Challenge{{Scheme: "Bearer", Params: map[string]string{}, Token68: "scope="}}, false},
		{`Bearer x="y", z=`, nil, true},
		{`"Bearer"`, nil, true},
		{`Bearer a="b" c="d"`, nil, true},
	}
	for _, tt := range tests {
		got, err := ParseWWWAuthenticate(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("%q: error %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if !tt.err && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestWellKnownOrder(t *testing.T) {
	prm, _ := ResourceMetadataURLs("https://example.com/public/mcp?x=1")
	if want := []string{"https://example.com/.well-known/oauth-protected-resource/public/mcp", "https://example.com/.well-known/oauth-protected-resource"}; !slices.Equal(prm, want) {
		t.Errorf("PRM URLs %v, want %v", prm, want)
	}
	as, _ := ServerMetadataURLs("https://auth.example.com/tenant1")
	if want := []string{"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
		"https://auth.example.com/.well-known/openid-configuration/tenant1",
		"https://auth.example.com/tenant1/.well-known/openid-configuration"}; !slices.Equal(as, want) {
		t.Errorf("AS URLs %v, want %v", as, want)
	}
	as, _ = ServerMetadataURLs("https://auth.example.com")
	if want := []string{"https://auth.example.com/.well-known/oauth-authorization-server", "https://auth.example.com/.well-known/openid-configuration"}; !slices.Equal(as, want) {
		t.Errorf("AS URLs %v, want %v", as, want)
	}
}

// TestDiscoveryOrder: the client tries the locations in the
// specification's order and stops at the first document; a document
// whose issuer or resource is another's is refused.
func TestDiscoveryOrder(t *testing.T) {
	var seen []string
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path)
		switch r.URL.Path {
		case "/tenant1/.well-known/openid-configuration":
			writeJSON(w, 200, map[string]any{"issuer": base + "/tenant1", "token_endpoint": base + "/t"})
		case "/.well-known/oauth-protected-resource":
			writeJSON(w, 200, map[string]any{"resource": base, "authorization_servers": []string{base + "/tenant1"}})
		case "/.well-known/openid-configuration/evil":
			writeJSON(w, 200, map[string]any{"issuer": "https://attacker.example.com"})
		default:
			http.NotFound(w, r)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base = srv.URL
	ctx := context.Background()

	prm, err := DiscoverResource(ctx, srv.Client(), base+"/mcp", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}; !slices.Equal(seen, want) || prm.Resource != base {
		t.Errorf("PRM: requested %v, got %+v; want %v", seen, prm, want)
	}
	seen = nil
	if _, err := DiscoverServer(ctx, srv.Client(), base+"/tenant1"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"}; !slices.Equal(seen, want) {
		t.Errorf("AS metadata requested %v, want %v", seen, want)
	}
	if _, err := DiscoverServer(ctx, srv.Client(), base+"/evil"); !errors.Is(err, ErrMetadata) {
		t.Errorf("mismatched issuer: %v, want ErrMetadata", err)
	}
	// A resource_metadata URL is used as given, and a resource that is
	// not the server refused.
	if _, err := DiscoverResource(ctx, srv.Client(), "http://other.example/mcp", base+"/.well-known/oauth-protected-resource"); !errors.Is(err, ErrMetadata) {
		t.Errorf("foreign resource: %v, want ErrMetadata", err)
	}
}

func TestResourceMatches(t *testing.T) {
	tests := []struct {
		resource, server string
		want             bool
	}{
		{"https://a.example/mcp", "https://a.example/mcp", true},
		{"https://a.example", "https://a.example/mcp", true},
		{"https://A.example/", "https://a.example/mcp", true},
		{"https://a.example/m", "https://a.example/mcp", false},
		{"https://evil.example/mcp", "https://a.example/mcp", false},
		{"http://a.example/mcp", "https://a.example/mcp", false},
		{"https://a.example/mcp/deeper", "https://a.example/mcp", false},
	}
	for _, tt := range tests {
		if got := ResourceMatches(tt.resource, tt.server); got != tt.want {
			t.Errorf("ResourceMatches(%q, %q) = %v", tt.resource, tt.server, got)
		}
	}
}

// TestCheckAuthorizationResponse: RFC 9207 issuer validation by exact
// string comparison, before state and error.
func TestCheckAuthorizationResponse(t *testing.T) {
	adv := &ServerMetadata{Issuer: "https://as.example", AuthorizationResponseIssParameterSupported: true}
	plain := &ServerMetadata{Issuer: "https://as.example"}
	tests := []struct {
		name string
		vals url.Values
		asm  *ServerMetadata
		want error
	}{
		{"match", url.Values{"iss": {"https://as.example"}, "state": {"s"}, "code": {"c"}}, adv, nil},
		{"absent, not advertised", url.Values{"state": {"s"}, "code": {"c"}}, plain, nil},
		{"absent, advertised", url.Values{"state": {"s"}, "code": {"c"}}, adv, ErrIssuerMismatch},
		{"wrong", url.Values{"iss": {"https://evil.example"}, "state": {"s"}, "code": {"c"}}, adv, ErrIssuerMismatch},
		{"wrong, not advertised", url.Values{"iss": {"https://evil.example"}, "state": {"s"}, "code": {"c"}}, plain, ErrIssuerMismatch},
		{"trailing slash", url.Values{"iss": {"https://as.example/"}, "state": {"s"}, "code": {"c"}}, adv, ErrIssuerMismatch},
		{"error with a wrong iss is not acted on", url.Values{"iss": {"https://evil.example"}, "state": {"s"}, "error": {"access_denied"}}, adv, ErrIssuerMismatch},
		{"state", url.Values{"iss": {"https://as.example"}, "state": {"x"}, "code": {"c"}}, adv, ErrState},
	}
	for _, tt := range tests {
		err := CheckAuthorizationResponse(tt.vals, tt.asm, "s")
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	var oe *OAuthError
	if err := CheckAuthorizationResponse(url.Values{"state": {"s"}, "error": {"access_denied"}}, plain, "s"); !errors.As(err, &oe) || oe.Code != "access_denied" {
		t.Errorf("error response: %v", err)
	}
}

// TestCodeFlow: 401 → discovery → registration → authorization with
// PKCE S256, the resource and the challenge's scope → token → retry.
func TestCodeFlow(t *testing.T) {
	as := newTestAS(t)
	rs := newTestRS(t, as, func(string) []string { return []string{"mcp:read"} })
	tr := NewTransport(nil, codeConfig())
	if resp := post(t, tr, rs.url(), `{"method":"tools/list"}`); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	_, auth, tok, regs := as.snapshot()
	if len(auth) != 1 || len(tok) != 1 || regs != 1 {
		t.Fatalf("authorizations %d, token requests %d, registrations %d; want 1 each", len(auth), len(tok), regs)
	}
	q := auth[0]
	if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || q.Get("resource") != rs.url() || q.Get("scope") != "mcp:read" || q.Get("client_id") != "client-1" {
		t.Errorf("authorization request %v", q)
	}
	if sum := sha256.Sum256([]byte(tok[0].Get("code_verifier"))); base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") || tok[0].Get("resource") != rs.url() {
		t.Errorf("token request %v does not match the challenge", tok[0])
	}
	// The next request reuses the token: no new authorization.
	post(t, tr, rs.url(), `{"method":"tools/list"}`)
	if _, auth, _, _ := as.snapshot(); len(auth) != 1 {
		t.Errorf("authorizations %d after a second request, want 1", len(auth))
	}
}

// TestRefusals: the flow stops before the token request when the
// authorization server is unsafe to use.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(as *testAS, rs *testRS)
		want  error
	}{
		{"iss mismatch", func(as *testAS, rs *testRS) { as.issParam = "wrong" }, ErrIssuerMismatch},
		{"iss missing though advertised", func(as *testAS, rs *testRS) {
			as.issParam = "omit"
			as.meta = func(m map[string]any) { m["authorization_response_iss_parameter_supported"] = true }
		}, ErrIssuerMismatch},
		{"no PKCE S256", func(as *testAS, rs *testRS) {
			as.meta = func(m map[string]any) { delete(m, "code_challenge_methods_supported") }
		}, ErrUnsupported},
		{"metadata issuer mismatch", func(as *testAS, rs *testRS) {
			as.meta = func(m map[string]any) { m["issuer"] = "https://attacker.example.com" }
		}, ErrMetadata},
		{"resource mismatch", func(as *testAS, rs *testRS) {
			rs.prm = func(string) map[string]any {
				return map[string]any{"resource": "https://evil.example.com/mcp", "authorization_servers": []string{as.srv.URL}}
			}
		}, ErrMetadata},
		{"no way to register", func(as *testAS, rs *testRS) {
			as.meta = func(m map[string]any) { delete(m, "registration_endpoint") }
		}, ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newTestAS(t)
			rs := newTestRS(t, as, func(string) []string { return nil })
			tt.setup(as, rs)
			req, _ := http.NewRequest(http.MethodPost, rs.url(), strings.NewReader(`{}`))
			_, err := NewTransport(nil, codeConfig()).RoundTrip(req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if _, _, tok, _ := as.snapshot(); len(tok) != 0 {
				t.Errorf("%d token requests were made", len(tok))
			}
		})
	}
}

// TestStepUp: a 403 insufficient_scope is answered by authorizing again
// with the union of the scopes asked before and those challenged; a
// server that keeps refusing gets a bounded number of attempts.
func TestStepUp(t *testing.T) {
	as := newTestAS(t)
	rs := newTestRS(t, as, func(body string) []string {
		if strings.Contains(body, "tools/call") {
			return []string{"mcp:write"}
		}
		return []string{"mcp:read"}
	})
	tr := NewTransport(nil, codeConfig())
	post(t, tr, rs.url(), `{"method":"tools/list"}`)
	if resp := post(t, tr, rs.url(), `{"method":"tools/call"}`); resp.StatusCode != 200 {
		t.Fatalf("status %d after step-up", resp.StatusCode)
	}
	_, auth, _, regs := as.snapshot()
	if len(auth) != 2 || auth[1].Get("scope") != "mcp:read mcp:write" || regs != 1 {
		t.Fatalf("authorizations %v (registrations %d); want the second with the union mcp:read mcp:write and one registration", auth, regs)
	}

	// Limit: a scope the server never grants.
	as2 := newTestAS(t)
	rs2 := newTestRS(t, as2, func(string) []string { return []string{"mcp:admin"} })
	cfg := codeConfig()
	inner := cfg.Authorize
	cfg.Authorize = func(ctx context.Context, u string) (url.Values, error) {
		// Ask for the scope but let the server grant only mcp:basic.
		pu, _ := url.Parse(u)
		q := pu.Query()
		q.Set("scope", "mcp:basic")
		pu.RawQuery = q.Encode()
		return inner(ctx, pu.String())
	}
	resp := post(t, NewTransport(nil, cfg), rs2.url(), `{"method":"tools/list"}`)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d, want the 403 after the step-ups", resp.StatusCode)
	}
	if _, auth, _, _ := as2.snapshot(); len(auth) != 1+DefaultMaxStepUps {
		t.Errorf("%d authorizations, want %d (the first and %d step-ups)", len(auth), 1+DefaultMaxStepUps, DefaultMaxStepUps)
	}
}

// TestRefresh: an expired token is refreshed (with the resource) before
// the request; a 401 on a token with a refresh token tries the refresh
// first.
func TestRefresh(t *testing.T) {
	as := newTestAS(t)
	as.expiresIn = 60
	rs := newTestRS(t, as, func(string) []string { return nil })
	now := time.Now()
	cfg := codeConfig()
	cfg.Now = func() time.Time { return now }
	store := &MemoryStore{}
	cfg.Store = store
	tr := NewTransport(nil, cfg)
	post(t, tr, rs.url(), `{}`)
	now = now.Add(2 * time.Minute) // expired
	if resp := post(t, tr, rs.url(), `{}`); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	_, auth, tok, _ := as.snapshot()
	if len(auth) != 1 || len(tok) != 2 || tok[1].Get("grant_type") != GrantRefreshToken || tok[1].Get("resource") != rs.url() || tok[1].Get("refresh_token") != "rt-1" {
		t.Fatalf("authorizations %d, token requests %v; want a refresh with the resource", len(auth), tok)
	}
	saved, _ := store.Token(context.Background(), rs.url())
	if saved == nil || saved.AccessToken != "at-2" || saved.RefreshToken != "rt-2" {
		t.Errorf("stored token %+v, want the refreshed one", saved)
	}
}

// TestClientCredentials: the client's own grant with client_secret_basic,
// the resource and the challenge's scope.
func TestClientCredentials(t *testing.T) {
	as := newTestAS(t)
	as.meta = func(m map[string]any) { m["token_endpoint_auth_methods_supported"] = []string{AuthClientSecretBasic} }
	rs := newTestRS(t, as, func(string) []string { return []string{"svc"} })
	tr := NewTransport(nil, Config{Grant: GrantClientCredentials, ClientID: "svc", ClientSecret: "s3cret"})
	if resp := post(t, tr, rs.url(), `{}`); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	_, auth, tok, regs := as.snapshot()
	if len(auth) != 0 || regs != 0 || len(tok) != 1 || tok[0].Get("scope") != "svc" || tok[0].Get("resource") != rs.url() {
		t.Errorf("authorizations %d, registrations %d, token requests %v", len(auth), regs, tok)
	}
}

// TestDPoPProof: a proof is a dpop+jwt signed by the embedded public key
// with htm, htu (no query), a fresh jti, ath and the server's nonce.
func TestDPoPProof(t *testing.T) {
	k, err := NewDPoPKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	k.setNonce("https://rs.example/mcp", "n-1")
	var jtis []string
	for range 2 {
		proof, err := k.Proof("POST", "https://rs.example/mcp?x=1#f", "token-1")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.ParseSigned(proof, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			t.Fatal(err)
		}
		h := tok.Headers[0]
		if h.ExtraHeaders["typ"] != "dpop+jwt" || h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() {
			t.Fatalf("header %+v", h)
		}
		var c map[string]any
		if err := tok.Claims(h.JSONWebKey.Key, &c); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte("token-1"))
		if c["htm"] != "POST" || c["htu"] != "https://rs.example/mcp" || c["nonce"] != "n-1" || c["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
			t.Errorf("claims %v", c)
		}
		tp, _ := h.JSONWebKey.Thumbprint(crypto.SHA256)
		if base64.RawURLEncoding.EncodeToString(tp) != k.Thumbprint() {
			t.Errorf("thumbprint mismatch")
		}
		jtis = append(jtis, c["jti"].(string))
	}
	if jtis[0] == jtis[1] {
		t.Error("two proofs share a jti")
	}
}

// TestFileStore: the file is written with mode 0600 and read back.
func TestFileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "tokens.json")
	s := NewFileStore(path)
	ctx := context.Background()
	want := &Token{AccessToken: "a", TokenType: "Bearer", RefreshToken: "r", Issuer: "https://as", Resource: "https://rs/mcp", Expiry: time.Unix(1e9, 0).UTC()}
	if err := s.SaveToken(ctx, "https://rs/mcp", want); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRegistration(ctx, "https://as", &Registration{Issuer: "https://as", ClientID: "c"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat: %v, mode %v", err, fi.Mode())
	}
	got, err := NewFileStore(path).Token(ctx, "https://rs/mcp")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if r, _ := s.Registration(ctx, "https://as"); r == nil || r.ClientID != "c" {
		t.Errorf("registration %+v", r)
	}
	if err := s.DeleteToken(ctx, "https://rs/mcp"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Token(ctx, "https://rs/mcp"); got != nil {
		t.Errorf("token after delete: %+v", got)
	}
}

// TestNoInteractionNoContact: a client that cannot ask the user (no
// Authorize) and holds no token gets ErrInteractionRequired on a 401
// without contacting the authorization server (the metadata may name hosts
// the user never chose); given a token with a refresh token, it refreshes.
func TestNoInteractionNoContact(t *testing.T) {
	as := newTestAS(t)
	rs := newTestRS(t, as, func(string) []string { return []string{"mcp:read"} })
	req, _ := http.NewRequest(http.MethodPost, rs.url(), strings.NewReader(`{"method":"tools/list"}`))
	_, err := NewTransport(nil, Config{}).RoundTrip(req)
	if !errors.Is(err, ErrInteractionRequired) {
		t.Fatalf("err %v, want ErrInteractionRequired", err)
	}
	if paths, _, _, _ := as.snapshot(); len(paths) != 0 {
		t.Fatalf("the authorization server was contacted: %v", paths)
	}

	// Signed in once (interactively), a later non-interactive client
	// uses the stored token without asking.
	store := &MemoryStore{}
	cfg := codeConfig()
	cfg.Store = store
	if resp := post(t, NewTransport(nil, cfg), rs.url(), `{"method":"tools/list"}`); resp.StatusCode != 200 {
		t.Fatalf("interactive: %d", resp.StatusCode)
	}
	if resp := post(t, NewTransport(nil, Config{Store: store}), rs.url(), `{"method":"tools/list"}`); resp.StatusCode != 200 {
		t.Fatalf("with the stored token: %d", resp.StatusCode)
	}
}
