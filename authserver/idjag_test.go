package authserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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
		c.Clients = []Client{{ID: "enterprise-client", Secret: "s3cret-s3cret-s3cret", RedirectURIs: []string{"https://client.example/cb"}}}
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
	if sc["principal"] != "U123" || sc["partition"] != e.asURL+"|acme" {
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
	}
	for _, c := range cases {
		h := c.h
		if h == nil {
			h = http.Header{}
		}
		if st, out := grant(c.assertion, h); st != c.status || out["error"] != c.err {
			t.Errorf("%s: %d %v, want %d %s", c.name, st, out, c.status, c.err)
		}
	}
}

func basicAuth(id, secret string) string {
	r, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	return r.Header.Get("Authorization")[len("Basic "):]
}
