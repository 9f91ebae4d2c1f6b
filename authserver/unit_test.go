package authserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func TestCacheTTL(t *testing.T) {
	for _, c := range []struct {
		cc   string
		want time.Duration
	}{
		{"", DefaultCIMDCacheTTL},
		{"max-age=600", 10 * time.Minute},
		{"public, max-age=5", MinCIMDCacheTTL},
		{"max-age=31536000", MaxCIMDCacheTTL},
		{"no-store", MinCIMDCacheTTL},
		{"max-age=abc", DefaultCIMDCacheTTL},
	} {
		if got := cacheTTL(c.cc); got != c.want {
			t.Errorf("cacheTTL(%q) = %s, want %s", c.cc, got, c.want)
		}
	}
}

// codeFor issues a code for req directly (the browser part is covered by
// the Hydra tests).
func codeFor(t *testing.T, e *env, req authRequest) string {
	t.Helper()
	rec := httptest.NewRecorder()
	e.as.finish(rec, httptest.NewRequest("GET", "/", nil), req)
	loc, _ := url.Parse(rec.Header().Get("Location"))
	if loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("no code: %v", rec.Header())
	}
	return loc.Query().Get("code")
}

// TestDPoPNonceAndJKT: with RequireDPoPNonce the token endpoint answers a
// proof without nonce with use_dpop_nonce and a DPoP-Nonce, and accepts
// the retry carrying it; a code bound with dpop_jkt needs that key.
func TestDPoPNonceAndJKT(t *testing.T) {
	e := newEnv(t, envOpts{noHydra: true, mutate: func(c *Config) { c.RequireDPoPNonce = true }})
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwk := jose.JSONWebKey{Key: key.Public()}
	tp, _ := jwk.Thumbprint(crypto.SHA256)
	jkt := base64.RawURLEncoding.EncodeToString(tp)
	verifier, challenge := pkce()
	code := codeFor(t, e, authRequest{ClientID: e.clientID, RedirectURI: e.redirect, Challenge: challenge, Resource: e.resource,
		Scopes: []string{"mcp:read"}, Subject: "alice", Family: randomToken(), DPoPJKT: jkt})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "client_id": {e.clientID}}
	tokenURL := e.asURL + "/token"

	st, out := e.token(form, http.Header{"Dpop": {dpopProof(t, key, "POST", tokenURL, "")}})
	if st != 400 || out["error"] != "use_dpop_nonce" {
		t.Fatalf("proof without nonce: %d %v", st, out)
	}
	nonce := e.as.dpop.Nonce()
	if st, out := e.token(form, http.Header{"Dpop": {dpopProofNonce(t, other, tokenURL, nonce)}}); st != 400 || out["error"] != "invalid_dpop_proof" {
		t.Fatalf("another key than dpop_jkt: %d %v", st, out)
	}
	// The refused attempt used the code up: a fresh one.
	verifier, challenge = pkce()
	code = codeFor(t, e, authRequest{ClientID: e.clientID, RedirectURI: e.redirect, Challenge: challenge, Resource: e.resource,
		Scopes: []string{"mcp:read"}, Subject: "alice", Family: randomToken(), DPoPJKT: jkt})
	form = url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "client_id": {e.clientID}}
	if st, out := e.token(form, http.Header{"Dpop": {dpopProofNonce(t, key, tokenURL, nonce)}}); st != 200 || out["token_type"] != "DPoP" {
		t.Fatalf("bound code with its key and nonce: %d %v", st, out)
	}
}

func dpopProofNonce(t *testing.T, key *ecdsa.PrivateKey, htu, nonce string) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	payload := `{"htm":"POST","htu":"` + htu + `","iat":` + itoa(time.Now().Unix()) + `,"jti":"` + randomToken() + `","nonce":"` + nonce + `"}`
	sig, err := s.Sign([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	out, err := sig.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
