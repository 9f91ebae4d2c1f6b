package auth

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/weftmcp/weft"
)

// fixture is a validator whose keys are served by a loopback JWKS server.
type fixture struct {
	rsa, ec, ed *testKey
	jwks        *jwksServer
	source      *RemoteJWKS
	clock       *clock
	v           *JWTValidator
	meta        *ResourceMetadata
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		rsa:   newRSAKey(t, "rsa-1"),
		ec:    newECKey(t, "ec-1"),
		ed:    newEdKey(t, "ed-1"),
		clock: newClock(),
	}
	f.jwks = newJWKSServer(t, f.rsa, f.ec, f.ed)
	src, err := JWKSURL(f.jwks.URL+"/jwks.json", &JWKSOptions{Client: f.jwks.Client(), RefreshInterval: time.Hour, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.source = src
	f.meta = &ResourceMetadata{
		Resource:             testResource,
		AuthorizationServers: []string{testIssuer},
		ScopesSupported:      []string{"mcp:read"},
	}
	f.v = &JWTValidator{
		Issuer:   testIssuer,
		Audience: testResource,
		JWKS:     src,
		Now:      f.clock.Now,
	}
	return f
}

func (f *fixture) claims() map[string]any { return claimsAt(f.clock.Now()) }

func TestValidateAcceptsRealTokens(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, k := range []*testKey{f.rsa, f.ec, f.ed} {
		t.Run(string(k.alg), func(t *testing.T) {
			tok := sign(t, k, f.claims(), signOpts{})
			c, err := f.v.Validate(ctx, tok)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if c.Subject != "alice" || c.Issuer != testIssuer || c.ClientID != "client-1" || c.ID != "t-1" {
				t.Errorf("claims = %+v", c)
			}
			if got := strings.Join(c.Scopes, " "); got != "mcp:read mcp:write" {
				t.Errorf("scopes = %q", got)
			}
			if !c.HasScope("mcp:write") || c.HasScope("admin") {
				t.Errorf("HasScope wrong")
			}
			if !c.Expiry.Equal(f.clock.Now().Add(5 * time.Minute)) {
				t.Errorf("expiry = %v", c.Expiry)
			}
		})
	}
	if n := f.jwks.fetches.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times for three tokens, want 1 (cached)", n)
	}
}

func TestValidateRejections(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := f.clock.Now()
	other := newRSAKey(t, "rsa-1") // same kid, different key
	noKid := ""
	ecKid := "ec-1"

	tampered := func() string {
		tok := sign(t, f.rsa, f.claims(), signOpts{})
		parts := strings.Split(tok, ".")
		parts[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + testIssuer + `","sub":"mallory","aud":"` + testResource + `","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`))
		return strings.Join(parts, ".")
	}()
	// An HS256 token keyed with the RSA public key's bytes: the classic
	// algorithm-confusion attack.
	hsConfusion := func() string {
		pub := f.rsa.pub.Key.(*rsa.PublicKey)
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pub.N.Bytes()}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "rsa-1"))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := signer.Sign([]byte(`{"iss":"` + testIssuer + `","sub":"mallory","aud":"` + testResource + `","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := obj.CompactSerialize()
		return s
	}()
	payload := `{"iss":"` + testIssuer + `","sub":"mallory","aud":"` + testResource + `","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`

	cases := []struct {
		name  string
		token string
		want  error
	}{
		{"empty", "", ErrNoToken},
		{"garbage", "not-a-jwt", ErrMalformedToken},
		{"jwe", "a.b.c.d.e", ErrMalformedToken},
		{"expired", sign(t, f.rsa, with(f.claims(), "exp", now.Add(-2*time.Minute).Unix(), "iat", now.Add(-10*time.Minute).Unix(), "nbf", nil), signOpts{}), ErrExpired},
		{"expired beyond leeway only", sign(t, f.rsa, with(f.claims(), "exp", now.Add(-61*time.Second).Unix(), "iat", now.Add(-10*time.Minute).Unix(), "nbf", nil), signOpts{}), ErrExpired},
		{"not yet valid (nbf)", sign(t, f.rsa, with(f.claims(), "nbf", now.Add(2*time.Minute).Unix()), signOpts{}), ErrNotYetValid},
		{"issued in the future (iat)", sign(t, f.rsa, with(f.claims(), "iat", now.Add(2*time.Minute).Unix(), "nbf", nil), signOpts{}), ErrNotYetValid},
		{"wrong issuer", sign(t, f.rsa, with(f.claims(), "iss", "https://evil.example.com"), signOpts{}), ErrIssuer},
		{"no issuer", sign(t, f.rsa, with(f.claims(), "iss", nil), signOpts{}), ErrIssuer},
		{"issuer with trailing slash", sign(t, f.rsa, with(f.claims(), "iss", testIssuer+"/"), signOpts{}), ErrIssuer},
		{"wrong audience", sign(t, f.rsa, with(f.claims(), "aud", "https://other.example.com/mcp"), signOpts{}), ErrAudience},
		{"audience array without us", sign(t, f.rsa, with(f.claims(), "aud", []string{"https://a.example.com", "https://b.example.com"}), signOpts{}), ErrAudience},
		{"audience prefix", sign(t, f.rsa, with(f.claims(), "aud", testResource+"/extra"), signOpts{}), ErrAudience},
		{"no audience", sign(t, f.rsa, with(f.claims(), "aud", nil), signOpts{}), ErrAudience},
		{"missing exp", sign(t, f.rsa, with(f.claims(), "exp", nil), signOpts{}), ErrClaims},
		{"string exp", sign(t, f.rsa, with(f.claims(), "exp", "tomorrow"), signOpts{}), ErrClaims},
		{"sender-constrained (cnf)", sign(t, f.rsa, with(f.claims(), "cnf", map[string]string{"jkt": "abc"}), signOpts{}), ErrClaims},
		{"missing sub", sign(t, f.rsa, with(f.claims(), "sub", nil), signOpts{}), ErrClaims},
		{"numeric sub", sign(t, f.rsa, with(f.claims(), "sub", 42), signOpts{}), ErrClaims},
		{"alg none", rawToken(`{"alg":"none","typ":"JWT"}`, payload, ""), ErrAlgorithm},
		{"alg none with signature", rawToken(`{"alg":"none"}`, payload, "c2ln"), ErrAlgorithm},
		{"alg NONE", rawToken(`{"alg":"NONE"}`, payload, ""), ErrAlgorithm},
		{"no alg", rawToken(`{"typ":"JWT"}`, payload, "c2ln"), ErrMalformedToken},
		{"HS256 with the RSA key as secret", hsConfusion, ErrAlgorithm},
		{"RS256 token naming an EC key", sign(t, f.rsa, f.claims(), signOpts{kid: &ecKid}), ErrAlgorithm},
		{"ES256 header on an RSA key", sign(t, f.ec, f.claims(), signOpts{kid: ptr("rsa-1")}), ErrAlgorithm},
		{"alg not allowed (PS256)", sign(t, f.rsa, f.claims(), signOpts{alg: jose.PS256}), ErrAlgorithm},
		{"tampered payload", tampered, ErrSignature},
		{"signed by another key with a known kid", sign(t, other, f.claims(), signOpts{}), ErrSignature},
		{"signed by another key without kid", sign(t, other, f.claims(), signOpts{kid: &noKid}), ErrSignature},
		{"unknown kid", sign(t, f.rsa, f.claims(), signOpts{kid: ptr("nope")}), ErrUnknownKey},
		{"id token typ", sign(t, f.rsa, f.claims(), signOpts{typ: "id_token+jwt"}), ErrTokenType},
		{"dpop typ", sign(t, f.rsa, f.claims(), signOpts{typ: "dpop+jwt"}), ErrTokenType},
		{"crit header", sign(t, f.rsa, f.claims(), signOpts{extra: map[jose.HeaderKey]any{"crit": []string{"exp"}, "exp": 1}}), ErrMalformedToken},
		{"cty header", sign(t, f.rsa, f.claims(), signOpts{extra: map[jose.HeaderKey]any{"cty": "JWT"}}), ErrMalformedToken},
		{"too long", strings.Repeat("a", MaxTokenBytes+1), ErrMalformedToken},
		{"padded base64", sign(t, f.rsa, f.claims(), signOpts{}) + "=", ErrMalformedToken},
		{"payload not an object", sign(t, f.rsa, []int{1, 2}, signOpts{}), ErrClaims},
		{"missing partition claim", "", nil}, // filled below
	}
	pv := *f.v
	pv.PartitionClaim = "org"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := f.v
			if tc.name == "missing partition claim" {
				v = &pv
				tc.token = sign(t, f.rsa, f.claims(), signOpts{})
				tc.want = ErrClaims
			}
			c, err := v.Validate(ctx, tc.token)
			if err == nil {
				t.Fatalf("Validate accepted the token: %+v", c)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.token != "" {
				assertNoSecret(t, "error", err.Error(), tc.token)
			}
		})
	}
}

func TestValidateAcceptsVariants(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := f.clock.Now()
	cases := []struct {
		name   string
		token  string
		scopes string
	}{
		{"audience array", sign(t, f.rsa, with(f.claims(), "aud", []string{"https://other.example.com", testResource}), signOpts{}), "mcp:read mcp:write"},
		{"audience with upper-case host", sign(t, f.rsa, with(f.claims(), "aud", "HTTPS://MCP.EXAMPLE.COM/mcp"), signOpts{}), "mcp:read mcp:write"},
		{"typ JWT", sign(t, f.ec, f.claims(), signOpts{typ: "JWT"}), "mcp:read mcp:write"},
		{"typ application/at+jwt", sign(t, f.ec, f.claims(), signOpts{typ: "application/at+jwt"}), "mcp:read mcp:write"},
		{"no typ", sign(t, f.ed, f.claims(), signOpts{typ: "-"}), "mcp:read mcp:write"},
		{"no kid", sign(t, f.ec, f.claims(), signOpts{kid: ptr("")}), "mcp:read mcp:write"},
		{"expired within leeway", sign(t, f.rsa, with(f.claims(), "exp", now.Add(-30*time.Second).Unix(), "nbf", nil, "iat", now.Add(-time.Hour).Unix()), signOpts{}), "mcp:read mcp:write"},
		{"nbf within leeway", sign(t, f.rsa, with(f.claims(), "nbf", now.Add(30*time.Second).Unix()), signOpts{}), "mcp:read mcp:write"},
		{"fractional dates", sign(t, f.rsa, with(f.claims(), "exp", float64(now.Add(time.Minute).Unix())+0.5), signOpts{}), "mcp:read mcp:write"},
		{"scp array", sign(t, f.rsa, with(f.claims(), "scope", nil, "scp", []string{"a", "b", "a"}), signOpts{}), "a b"},
		{"scp string", sign(t, f.rsa, with(f.claims(), "scope", nil, "scp", "x  y"), signOpts{}), "x y"},
		{"no scopes", sign(t, f.rsa, with(f.claims(), "scope", nil), signOpts{}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := f.v.Validate(ctx, tc.token)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := strings.Join(c.Scopes, " "); got != tc.scopes {
				t.Errorf("scopes = %q, want %q", got, tc.scopes)
			}
		})
	}
}

func TestStrictType(t *testing.T) {
	f := newFixture(t)
	v := *f.v
	v.StrictType = true
	ctx := context.Background()
	if _, err := v.Validate(ctx, sign(t, f.rsa, f.claims(), signOpts{})); err != nil {
		t.Errorf("at+jwt refused: %v", err)
	}
	for _, typ := range []string{"JWT", "-"} {
		_, err := v.Validate(ctx, sign(t, f.rsa, f.claims(), signOpts{typ: typ}))
		if !errors.Is(err, ErrTokenType) {
			t.Errorf("typ %q: err = %v, want ErrTokenType", typ, err)
		}
	}
}

func TestHMACOnlyWhenConfigured(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	keys := StaticKeys{{Key: secret, KeyID: "hs", Algorithm: "HS256"}}
	now := time.Unix(1_800_000_000, 0)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "hs"))
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := signer.Sign([]byte(`{"iss":"` + testIssuer + `","sub":"svc","aud":"` + testResource + `","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`))
	tok, _ := obj.CompactSerialize()

	v := &JWTValidator{Issuer: testIssuer, Audience: testResource, JWKS: keys, Now: func() time.Time { return now }}
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, ErrAlgorithm) {
		t.Errorf("HS256 by default: err = %v, want ErrAlgorithm", err)
	}
	v.Algorithms = []string{"HS256"}
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Errorf("HS256 configured: %v", err)
	}
	// An HMAC key shorter than the hash is refused.
	short := StaticKeys{{Key: []byte("short"), KeyID: "hs"}}
	v.JWKS = short
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, ErrAlgorithm) {
		t.Errorf("short HMAC key: err = %v, want ErrAlgorithm", err)
	}
}

func TestKeyRotation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.v.Validate(ctx, sign(t, f.rsa, f.claims(), signOpts{})); err != nil {
		t.Fatal(err)
	}
	if n := f.jwks.fetches.Load(); n != 1 {
		t.Fatalf("fetches = %d, want 1", n)
	}
	// The authorization server rotates to a new key.
	next := newRSAKey(t, "rsa-2")
	f.jwks.setKeys(next, f.ec)
	tok := sign(t, next, f.claims(), signOpts{})

	// Right after a fetch, an unknown kid does not trigger another one
	// (rate limit): the token is refused.
	if _, err := f.v.Validate(ctx, tok); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("err = %v, want ErrUnknownKey while refresh is rate limited", err)
	}
	if n := f.jwks.fetches.Load(); n != 1 {
		t.Fatalf("fetches = %d, want still 1", n)
	}
	// Later, the unknown kid refreshes the set once and the new key works.
	f.clock.Advance(DefaultJWKSMinRefreshInterval + time.Second)
	c, err := f.v.Validate(ctx, tok)
	if err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if c.Subject != "alice" {
		t.Errorf("subject = %q", c.Subject)
	}
	if n := f.jwks.fetches.Load(); n != 2 {
		t.Fatalf("fetches = %d, want 2", n)
	}
	// The retired key is gone; many tokens with made-up kids cause no
	// further fetches within the interval.
	if _, err := f.v.Validate(ctx, sign(t, f.rsa, f.claims(), signOpts{})); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("retired key: err = %v, want ErrUnknownKey", err)
	}
	for i := 0; i < 20; i++ {
		_, _ = f.v.Validate(ctx, sign(t, f.ec, f.claims(), signOpts{kid: ptr("made-up-" + itoa(int64(i)))}))
	}
	if n := f.jwks.fetches.Load(); n != 2 {
		t.Errorf("fetches = %d after unknown kids, want 2 (rate limited)", n)
	}
}

func TestConfigErrors(t *testing.T) {
	keys := StaticKeys{newECKey(t, "k").pub}
	cases := []struct {
		name string
		v    JWTValidator
		want string
	}{
		{"no issuer", JWTValidator{Audience: testResource, JWKS: keys}, "Issuer is required"},
		{"no audience", JWTValidator{Issuer: testIssuer, JWKS: keys}, "Audience is required"},
		{"no keys", JWTValidator{Issuer: testIssuer, Audience: testResource}, "JWKS is required"},
		{"alg none", JWTValidator{Issuer: testIssuer, Audience: testResource, JWKS: keys, Algorithms: []string{"none"}}, `"none"`},
		{"unknown alg", JWTValidator{Issuer: testIssuer, Audience: testResource, JWKS: keys, Algorithms: []string{"XS1"}}, "not a supported"},
		{"negative leeway", JWTValidator{Issuer: testIssuer, Audience: testResource, JWKS: keys, Leeway: -1}, "negative"},
		{"huge leeway", JWTValidator{Issuer: testIssuer, Audience: testResource, JWKS: keys, Leeway: time.Hour}, "exceeds"},
		{"bad scope", JWTValidator{Issuer: testIssuer, Audience: testResource, JWKS: keys, RequiredScopes: []string{"a b"}}, "not a valid scope"},
		{"pipe in issuer", JWTValidator{Issuer: "https://a|b", Audience: testResource, JWKS: keys}, "'|'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.v.CheckConfig(nil)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckConfig = %v, want ErrConfig mentioning %q", err, tc.want)
			}
			// Admission fails closed.
			_, aerr := tc.v.Admission(nil)(context.Background(), &weft.AdmissionRequest{Method: "tools/list", BearerToken: "x"})
			var ae *weft.AdmissionError
			if !errors.As(aerr, &ae) || ae.Status != http.StatusInternalServerError {
				t.Fatalf("Admission with bad config = %v, want a 500 AdmissionError", aerr)
			}
		})
	}
}

func TestAdmissionJWT(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.v.RequiredScopes = []string{"mcp:read"}
	f.v.PartitionClaim = "tenant"
	f.v.ScopeFunc = func(method string, r *weft.AdmissionRequest) []string {
		if method == "tools/call" {
			return []string{"files:write", "files:delete", "mcp:read"}
		}
		return nil
	}
	f.v.ScopeImplies = func(granted, needed string) bool {
		return granted == "files:*" && strings.HasPrefix(needed, "files:")
	}
	admit := f.v.Admission(f.meta)
	metaURL := "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

	t.Run("missing token", func(t *testing.T) {
		_, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/list", Transport: "http", Header: http.Header{}})
		ae := asAdmission(t, err, 401)
		want := `Bearer resource_metadata="` + metaURL + `", scope="mcp:read"`
		if ae.Challenge != want {
			t.Errorf("challenge = %s\nwant        %s", ae.Challenge, want)
		}
	})
	t.Run("missing token for an operation needing more", func(t *testing.T) {
		_, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/call", Transport: "http", Header: http.Header{}})
		ae := asAdmission(t, err, 401)
		if !strings.Contains(ae.Challenge, `scope="mcp:read files:write files:delete"`) {
			t.Errorf("challenge = %s", ae.Challenge)
		}
	})
	t.Run("valid", func(t *testing.T) {
		tok := sign(t, f.rsa, f.claims(), signOpts{})
		id, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/list", BearerToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		if id.Principal != "alice" || id.Partition != testIssuer+"|acme" || strings.Join(id.Scopes, " ") != "mcp:read mcp:write" {
			t.Errorf("identity = %+v", id)
		}
		c, ok := ClaimsOf(id)
		if !ok || c.Subject != "alice" || string(c.Raw["tenant"]) != `"acme"` {
			t.Errorf("ClaimsOf = %+v, %v", c, ok)
		}
	})
	t.Run("invalid token", func(t *testing.T) {
		tok := sign(t, f.rsa, with(f.claims(), "exp", f.clock.Now().Add(-time.Hour).Unix(), "iat", f.clock.Now().Add(-2*time.Hour).Unix(), "nbf", nil), signOpts{})
		_, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/list", BearerToken: tok})
		ae := asAdmission(t, err, 401)
		want := `Bearer resource_metadata="` + metaURL + `", scope="mcp:read", error="invalid_token", error_description="The access token expired"`
		if ae.Challenge != want {
			t.Errorf("challenge = %s\nwant        %s", ae.Challenge, want)
		}
		assertNoSecret(t, "admission error", ae.Error()+ae.Message+ae.Challenge, tok)
	})
	t.Run("insufficient scope lists all needed scopes", func(t *testing.T) {
		tok := sign(t, f.rsa, with(f.claims(), "scope", "mcp:read files:write"), signOpts{})
		_, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/call", BearerToken: tok})
		ae := asAdmission(t, err, 403)
		want := `Bearer error="insufficient_scope", scope="mcp:read files:write files:delete", resource_metadata="` + metaURL + `", error_description="The access token lacks scopes this operation requires"`
		if ae.Challenge != want {
			t.Errorf("challenge = %s\nwant        %s", ae.Challenge, want)
		}
	})
	t.Run("required scope missing", func(t *testing.T) {
		tok := sign(t, f.rsa, with(f.claims(), "scope", "other"), signOpts{})
		_, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/list", BearerToken: tok})
		ae := asAdmission(t, err, 403)
		if !strings.Contains(ae.Challenge, `scope="mcp:read"`) {
			t.Errorf("challenge = %s", ae.Challenge)
		}
	})
	t.Run("scope hierarchy", func(t *testing.T) {
		tok := sign(t, f.rsa, with(f.claims(), "scope", "mcp:read files:*"), signOpts{})
		if _, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/call", BearerToken: tok}); err != nil {
			t.Errorf("files:* should imply files:write and files:delete: %v", err)
		}
	})
	t.Run("missing partition claim", func(t *testing.T) {
		tok := sign(t, f.rsa, with(f.claims(), "tenant", nil), signOpts{})
		_, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/list", BearerToken: tok})
		asAdmission(t, err, 401)
	})
	t.Run("ScopeFunc returning an invalid scope fails closed", func(t *testing.T) {
		v := *f.v
		v.ScopeFunc = func(string, *weft.AdmissionRequest) []string { return []string{"two words"} }
		_, err := v.Admission(f.meta)(ctx, &weft.AdmissionRequest{Method: "tools/list", BearerToken: sign(t, f.rsa, f.claims(), signOpts{})})
		asAdmission(t, err, 500)
	})
	t.Run("key source down", func(t *testing.T) {
		g := newFixture(t)
		g.jwks.setStatus(http.StatusInternalServerError)
		_, err := g.v.Admission(g.meta)(ctx, &weft.AdmissionRequest{Method: "tools/list", BearerToken: sign(t, g.rsa, g.claims(), signOpts{})})
		ae := asAdmission(t, err, 503)
		if ae.Challenge != "" || ae.Header.Get("Retry-After") == "" {
			t.Errorf("503 = %+v", ae)
		}
	})
}

func TestAudienceDefaultsToResource(t *testing.T) {
	f := newFixture(t)
	f.v.Audience = ""
	admit := f.v.Admission(f.meta)
	if _, err := admit(context.Background(), &weft.AdmissionRequest{Method: "tools/list", BearerToken: sign(t, f.ec, f.claims(), signOpts{})}); err != nil {
		t.Fatal(err)
	}
	_, err := admit(context.Background(), &weft.AdmissionRequest{Method: "tools/list", BearerToken: sign(t, f.ec, with(f.claims(), "aud", "https://x.example.com"), signOpts{})})
	asAdmission(t, err, 401)
}

func asAdmission(t *testing.T, err error, status int) *weft.AdmissionError {
	t.Helper()
	var ae *weft.AdmissionError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *weft.AdmissionError", err)
	}
	if ae.Status != status {
		t.Fatalf("status = %d, want %d (%+v)", ae.Status, status, ae)
	}
	return ae
}

func ptr[T any](v T) *T { return &v }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestTokenWithoutKidTriesBoundedKeys(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	signer := newECKey(t, "")
	var keys StaticKeys
	for i := 0; i < maxKeysWithoutKid; i++ {
		keys = append(keys, newECKey(t, "k"+itoa(int64(i))).pub)
	}
	keys[len(keys)-1] = jose.JSONWebKey{Key: signer.pub.Key, KeyID: "last"}
	v := &JWTValidator{Issuer: testIssuer, Audience: testResource, JWKS: keys, Now: func() time.Time { return now }}
	tok := sign(t, signer, claimsAt(now), signOpts{kid: ptr("")})
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatalf("%d keys: %v", len(keys), err)
	}
	v.JWKS = append(keys, newECKey(t, "one-too-many").pub)
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("%d keys: err = %v, want ErrUnknownKey", len(keys)+1, err)
	}
}

// TestClaimMapping: PrincipalClaim and ScopesClaim take the principal and
// the scopes from other claims (an identity provider's email and roles),
// for admission's identity and scope checks; a token without the
// principal claim, or with a scopes claim that is no string or array of
// strings, is invalid.
func TestClaimMapping(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.v.PrincipalClaim = "email"
	f.v.ScopesClaim = "roles"
	f.v.RequiredScopes = []string{"mcp"}
	admit := f.v.Admission(f.meta)
	tests := []struct {
		name      string
		claims    map[string]any
		status    int // 0: admitted
		principal string
		scopes    []string
	}{
		{"array of roles", with(f.claims(), "email", "ada@example.com", "roles", []string{"mcp", "admin"}, "scope", "other"), 0, "ada@example.com", []string{"mcp", "admin"}},
		{"space-separated roles", with(f.claims(), "email", "ada@example.com", "roles", "mcp admin"), 0, "ada@example.com", []string{"mcp", "admin"}},
		{"scope claim ignored", with(f.claims(), "email", "ada@example.com", "scope", "mcp"), 403, "", nil},
		{"no email", with(f.claims(), "roles", []string{"mcp"}), 401, "", nil},
		{"roles not strings", with(f.claims(), "email", "ada@example.com", "roles", []int{1}), 401, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := sign(t, f.ec, tc.claims, signOpts{})
			id, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/list", Transport: "http", BearerToken: tok, Header: http.Header{}})
			if tc.status != 0 {
				asAdmission(t, err, tc.status)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Principal != tc.principal || !slices.Equal(id.Scopes, tc.scopes) {
				t.Fatalf("identity %+v, want principal %q scopes %v", id, tc.principal, tc.scopes)
			}
		})
	}
}
