package authserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/weftmcp/weft/auth"
)

// TestIDJAG: the identity assertion grant of MCP ext-auth
// (enterprise-managed authorization) issues a token for the assertion's
// user, resource and client, once, and refuses every assertion that is not
// exactly that.
func TestIDJAG(t *testing.T) {
	const idp = "https://idp.example.com"
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	evil, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	e := newEnv(t, envOpts{noHydra: true, mutate: func(c *Config) {
		c.Clients = []Client{{ID: "enterprise-client", Secret: "s3cret-s3cret-s3cret", RedirectURIs: []string{"https://client.example/cb"}},
			{ID: "public-client", RedirectURIs: []string{"https://client.example/cb"}}}
		c.IDJAG = []TrustedIdP{{Issuer: idp, JWKS: auth.StaticKeys{{Key: key.Public(), KeyID: "idp1", Algorithm: "ES256"}}, Claims: []string{"tenant"}}}
	}})
	sign := func(k *ecdsa.PrivateKey, typ string, claims map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", "idp1"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := jwt.Signed(s).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	now := time.Now()
	base := func() map[string]any {
		return map[string]any{"iss": idp, "sub": "U123", "aud": e.asURL, "resource": e.resource, "client_id": "enterprise-client",
			"jti": randomToken(), "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "scope": "mcp:read", "tenant": "acme"}
	}
	basic := http.Header{"Authorization": {"Basic " + basicAuth("enterprise-client", "s3cret-s3cret-s3cret")}}
	grant := func(assertion string, h http.Header) (int, map[string]any) {
		return e.token(url.Values{"grant_type": {grantJWTBearer}, "assertion": {assertion}}, h)
	}
	good := sign(key, "oauth-id-jag+jwt", base())
	st, tok := grant(good, basic)
	if st != 200 || tok["refresh_token"] != nil {
		t.Fatalf("grant: %d %v", st, tok)
	}
	st, _, msg := callTool(t, e.mcpURL, "Bearer "+tok["access_token"].(string), "")
	if st != 200 {
		t.Fatalf("tool: %d %v", st, msg)
	}
	sc := msg["result"].(map[string]any)["structuredContent"].(map[string]any)
	// Qualified by the IdP (its default prefix: issuer + "|").
	if sc["principal"] != idp+"|U123" || sc["partition"] != e.asURL+"|"+idp+"|acme" {
		t.Errorf("identity %v", sc)
	}
	with := func(k, v string) string {
		c := base()
		c[k] = v
		return sign(key, "oauth-id-jag+jwt", c)
	}
	expired := base()
	expired["iat"], expired["exp"] = now.Add(-time.Hour).Unix(), now.Add(-50*time.Minute).Unix()
	long := base()
	long["exp"] = now.Add(time.Hour).Unix()
	early := base()
	early["nbf"] = now.Add(3 * time.Minute).Unix()
	unscoped := func() string {
		c := base()
		delete(c, "scope")
		return sign(key, "oauth-id-jag+jwt", c)
	}
	public := base()
	public["client_id"] = "public-client"
	publicAuth := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	cases := []struct {
		name, assertion string
		h               http.Header
		status          int
		err             string
	}{
		{"replay", good, basic, 400, "invalid_grant"},
		{"wrong typ", sign(key, "JWT", base()), basic, 400, "invalid_grant"},
		{"untrusted key", sign(evil, "oauth-id-jag+jwt", base()), basic, 400, "invalid_grant"},
		{"untrusted issuer", with("iss", "https://evil.example"), basic, 400, "invalid_grant"},
		{"aud of another server", with("aud", "https://other-as.example"), basic, 400, "invalid_grant"},
		{"another client", with("client_id", "other-client"), basic, 400, "invalid_grant"},
		{"another resource", with("resource", "https://evil.example/mcp"), basic, 400, "invalid_target"},
		{"expired", sign(key, "oauth-id-jag+jwt", expired), basic, 400, "invalid_grant"},
		{"too long-lived", sign(key, "oauth-id-jag+jwt", long), basic, 400, "invalid_grant"},
		{"unknown scope", with("scope", "admin"), basic, 400, "invalid_scope"},
		{"no client authentication", sign(key, "oauth-id-jag+jwt", base()), nil, 401, "invalid_client"},
		{"not yet valid (nbf)", sign(key, "oauth-id-jag+jwt", early), basic, 400, "invalid_grant"},
		{"public client", sign(key, "oauth-id-jag+jwt", public), publicAuth, 401, "invalid_client"},
	}
	for _, c := range cases {
		h := c.h
		if h == nil {
			h = http.Header{}
		}
		form := url.Values{"grant_type": {grantJWTBearer}, "assertion": {c.assertion}}
		if c.name == "public client" {
			form.Set("client_id", "public-client")
		}
		if st, out := e.token(form, h); st != c.status || out["error"] != c.err {
			t.Errorf("%s: %d %v, want %d %s", c.name, st, out, c.status, c.err)
		}
	}

	// Scopes come from the assertion; one without scope grants the
	// defaults, and the client cannot pick others.
	for _, c := range []struct {
		name, assertion, scope string
		status                 int
		want                   string
	}{
		{"asserted", with("scope", "mcp:read mcp:write"), "", 200, "mcp:read mcp:write"},
		{"narrowed", with("scope", "mcp:read mcp:write"), "mcp:write", 200, "mcp:write"},
		{"widened", with("scope", "mcp:read"), "mcp:read mcp:write", 400, "invalid_scope"},
		{"none asserted: the defaults", unscoped(), "", 200, "mcp:read"},
		{"none asserted, client asks for more", unscoped(), "admin mcp:write", 400, "invalid_scope"},
		{"none asserted, client asks for another configured scope", unscoped(), "mcp:write", 400, "invalid_scope"},
	} {
		form := url.Values{"grant_type": {grantJWTBearer}, "assertion": {c.assertion}}
		if c.scope != "" {
			form.Set("scope", c.scope)
		}
		st, out := e.token(form, basic)
		got, _ := out["scope"].(string)
		if st == 200 && got != c.want || st != 200 && out["error"] != c.want || st != c.status {
			t.Errorf("%s: %d %v, want %d %s", c.name, st, out, c.status, c.want)
		}
	}
}

// TestIDJAGProviders: two trusted IdPs asserting the same sub and tenant
// give two identities, each different from the upstream provider's user
// of that name; an upstream user whose subject spells an IdP's identity is
// refused; prefixes that could collide are a configuration error.
func TestIDJAGProviders(t *testing.T) {
	const idpA, idpB = "https://idp-a.example.com", "https://idp-b.example.com"
	keyA, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyB, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	e := newEnv(t, envOpts{mutate: func(c *Config) {
		c.Clients = []Client{{ID: "enterprise-client", Secret: "s3cret-s3cret-s3cret", RedirectURIs: []string{"https://client.example/cb"}}}
		c.IDJAG = []TrustedIdP{
			{Issuer: idpA, JWKS: auth.StaticKeys{{Key: keyA.Public(), KeyID: "a", Algorithm: "ES256"}}, Claims: []string{"tenant"}},
			{Issuer: idpB, JWKS: auth.StaticKeys{{Key: keyB.Public(), KeyID: "b", Algorithm: "ES256"}}, Claims: []string{"tenant"}, SubjectPrefix: "idp-b:"},
		}
	}})
	basic := http.Header{"Authorization": {"Basic " + basicAuth("enterprise-client", "s3cret-s3cret-s3cret")}}
	identity := func(iss string, key *ecdsa.PrivateKey, kid string) map[string]any {
		t.Helper()
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("oauth-id-jag+jwt").WithHeader("kid", kid))
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		a, err := jwt.Signed(s).Claims(map[string]any{"iss": iss, "sub": "alice", "aud": e.asURL, "resource": e.resource, "client_id": "enterprise-client",
			"jti": randomToken(), "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "scope": "mcp:read", "tenant": "acme"}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		st, tok := e.token(url.Values{"grant_type": {grantJWTBearer}, "assertion": {a}}, basic)
		if st != 200 {
			t.Fatalf("%s: %d %v", iss, st, tok)
		}
		st, _, msg := callTool(t, e.mcpURL, "Bearer "+tok["access_token"].(string), "")
		if st != 200 {
			t.Fatalf("%s: tool: %d %v", iss, st, msg)
		}
		return msg["result"].(map[string]any)["structuredContent"].(map[string]any)
	}
	a, b := identity(idpA, keyA, "a"), identity(idpB, keyB, "b")

	// The upstream provider's user "alice" of tenant acme (Hydra).
	verifier, challenge := pkce()
	q := e.login(newBrowser(t, e.redirect), e.authorizeURL(e.clientID, e.redirect, challenge, "st-1", nil))
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
		"client_id": {e.clientID}, "redirect_uri": {e.redirect}}, nil)
	if st != 200 {
		t.Fatalf("upstream user's token: %d %v", st, tok)
	}
	st, _, msg := callTool(t, e.mcpURL, "Bearer "+tok["access_token"].(string), "")
	if st != 200 {
		t.Fatalf("upstream user's tool call: %d %v", st, msg)
	}
	home := msg["result"].(map[string]any)["structuredContent"].(map[string]any)

	seen := map[string]string{}
	for name, id := range map[string]map[string]any{"idp A": a, "idp B": b, "upstream": home} {
		for _, k := range []string{"principal", "partition"} {
			v, _ := id[k].(string)
			if other, dup := seen[k+"="+v]; dup {
				t.Errorf("%s and %s share %s %q", name, other, k, v)
			}
			seen[k+"="+v] = name
		}
	}
	if a["principal"] != idpA+"|alice" || b["principal"] != "idp-b:alice" || home["principal"] != "alice" {
		t.Errorf("principals %v, %v, %v", a["principal"], b["principal"], home["principal"])
	}
	if b["partition"] != e.asURL+"|idp-b:acme" {
		t.Errorf("idp B's partition %v", b["partition"])
	}

	// An upstream user whose subject spells idp B's alice is refused.
	e.hydra.SetSubject("idp-b:alice")
	_, challenge = pkce()
	if q := e.flow(newBrowser(t, e.redirect), e.authorizeURL(e.clientID, e.redirect, challenge, "st-2", nil)); q.Get("error") != "access_denied" {
		t.Errorf("upstream user idp-b:alice: redirect %v, want access_denied", q)
	}

	// Overlapping prefixes are refused at New.
	for _, list := range [][]TrustedIdP{
		{{Issuer: idpA, JWKS: auth.StaticKeys{}, SubjectPrefix: "corp"}, {Issuer: idpB, JWKS: auth.StaticKeys{}, SubjectPrefix: "corp:b"}},
		{{Issuer: idpA, JWKS: auth.StaticKeys{}}, {Issuer: idpA, JWKS: auth.StaticKeys{}, SubjectPrefix: "x"}},
	} {
		if _, err := newIDJAG(list); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", list, err)
		}
	}
}

func basicAuth(id, secret string) string {
	r, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	return r.Header.Get("Authorization")[len("Basic "):]
}
