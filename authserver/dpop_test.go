package authserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func dpopProof(t *testing.T, key *ecdsa.PrivateKey, htm, htu, token string) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]any{"htm": htm, "htu": htu, "iat": time.Now().Unix(), "jti": randomToken()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		c["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	p, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDPoPBoundTokens: a client that sends a DPoP proof to the token
// endpoint gets a DPoP-bound token (cnf.jkt) which the Weft server
// accepts only with a fresh proof of the same key; the public client's
// refresh token is bound to the key too.
func TestDPoPBoundTokens(t *testing.T) {
	e := newEnv(t, envOpts{})
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b := newBrowser(t, e.redirect)
	verifier, challenge := pkce()
	q := e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "d", nil))
	tokenURL := e.asURL + "/token"
	codeProof := dpopProof(t, key, "POST", tokenURL, "")
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier}, "client_id": {e.clientID}},
		http.Header{"Dpop": {codeProof}})
	if st != 200 || tok["token_type"] != "DPoP" {
		t.Fatalf("token: %d %v", st, tok)
	}
	at := tok["access_token"].(string)

	if st, _, msg := callTool(t, e.mcpURL, "DPoP "+at, dpopProof(t, key, "POST", e.mcpURL, at)); st != 200 {
		t.Fatalf("DPoP call: %d %v", st, msg)
	}
	proof := dpopProof(t, key, "POST", e.mcpURL, at)
	cases := []struct {
		name, authz, proof string
	}{
		{"bound token as bearer", "Bearer " + at, ""},
		{"no proof", "DPoP " + at, ""},
		{"another key", "DPoP " + at, dpopProof(t, other, "POST", e.mcpURL, at)},
		{"wrong htu", "DPoP " + at, dpopProof(t, key, "POST", e.asURL+"/mcp", at)},
		{"wrong htm", "DPoP " + at, dpopProof(t, key, "GET", e.mcpURL, at)},
		{"wrong ath", "DPoP " + at, dpopProof(t, key, "POST", e.mcpURL, at+"x")},
		{"first use of a proof", "DPoP " + at, proof},
	}
	for _, c := range cases {
		st, h, _ := callTool(t, e.mcpURL, c.authz, c.proof)
		if c.name == "first use of a proof" {
			if st != 200 {
				t.Fatalf("%s: %d", c.name, st)
			}
			continue
		}
		if st != 401 {
			t.Errorf("%s: status %d, want 401", c.name, st)
		}
		if !strings.Contains(strings.Join(h.Values("Www-Authenticate"), " "), "DPoP") {
			t.Errorf("%s: challenge %v has no DPoP scheme", c.name, h.Values("Www-Authenticate"))
		}
	}
	if st, _, _ := callTool(t, e.mcpURL, "DPoP "+at, proof); st != 401 {
		t.Errorf("replayed proof: %d, want 401", st)
	}

	// The refresh token is bound to the key: another key cannot use it,
	// and the proof of the code exchange cannot be used again.
	rt := tok["refresh_token"].(string)
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}},
		http.Header{"Dpop": {codeProof}}); st != 400 || out["error"] != "invalid_dpop_proof" {
		t.Fatalf("refresh with the code exchange's proof again: %d %v", st, out)
	}
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}},
		http.Header{"Dpop": {dpopProof(t, other, "POST", tokenURL, "")}}); st != 400 || out["error"] != "invalid_dpop_proof" {
		t.Fatalf("refresh with another key: %d %v", st, out)
	}
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}}, nil); st != 400 {
		t.Fatalf("refresh without proof: %d %v", st, out)
	}
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}},
		http.Header{"Dpop": {dpopProof(t, key, "POST", tokenURL, "")}}); st != 200 || out["token_type"] != "DPoP" {
		t.Fatalf("refresh with the key: %d %v", st, out)
	}
}

// TestTokenForAnotherResource: a token bound (RFC 8707) to one resource
// is refused by another, and a token request cannot switch resources.
func TestTokenForAnotherResource(t *testing.T) {
	const other = "https://other.example/mcp"
	e := newEnv(t, envOpts{resources: []string{other}})
	b := newBrowser(t, e.redirect)
	verifier, challenge := pkce()
	q := e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "r", url.Values{"resource": {other}}))
	form := url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier}, "client_id": {e.clientID}, "resource": {e.resource}}
	if st, out := e.token(form, nil); st != 400 || out["error"] != "invalid_target" {
		t.Fatalf("switching resource at the token endpoint: %d %v", st, out)
	}
	// That attempt used the code up; a new flow (consent remembered).
	verifier, challenge = pkce()
	q = e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "r", url.Values{"resource": {other}}))
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier}, "client_id": {e.clientID}}, nil)
	if st != 200 || claimOf(t, tok["access_token"].(string), "aud") != other {
		t.Fatalf("token: %d %v", st, tok)
	}
	st, h, _ := callTool(t, e.mcpURL, "Bearer "+tok["access_token"].(string), "")
	if st != 401 || !strings.Contains(strings.Join(h.Values("Www-Authenticate"), " "), "invalid_token") {
		t.Fatalf("token for another resource: %d %v", st, h)
	}
	// Wrong verifier and wrong client on a fresh code.
	verifier, challenge = pkce()
	q = e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "r", nil))
	bad, _ := pkce()
	if st, out := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {bad}, "client_id": {e.clientID}}, nil); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %v", st, out)
	}
	verifier, challenge = pkce()
	q = e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "r", nil))
	if st, out := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "client_id": {e.clientID}}, nil); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("missing verifier: %d %v", st, out)
	}
	_ = verifier
}

// TestDPoPTokenEndpointStoresNothing: token requests that fail their
// grant store no DPoP proof id, however many a caller sends.
func TestDPoPTokenEndpointStoresNothing(t *testing.T) {
	e := newEnv(t, envOpts{noHydra: true})
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tokenURL := e.asURL + "/token"
	for i := range 50 {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {"forged-" + randomToken()}, "code_verifier": {randomToken()}, "client_id": {e.clientID}}
		if i%2 == 1 {
			form = url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"forged-" + randomToken()}, "client_id": {e.clientID}}
		}
		if st, out := e.token(form, http.Header{"Dpop": {dpopProof(t, key, "POST", tokenURL, "")}}); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("forged grant %d: %d %v", i, st, out)
		}
	}
	var n int
	if err := e.as.store.(*SQLStore).read.QueryRow(`SELECT count(*) FROM authserver_items WHERE kind = ?`, kindDPoPJTI).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d DPoP proof ids stored for 50 refused token requests, want 0", n)
	}
}
