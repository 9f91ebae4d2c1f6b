package authserver

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestEndToEndHydra runs the whole flow against a real Ory Hydra with
// dynamic registration disabled: a CIMD client signs the user in through
// Hydra, consents, gets tokens, calls a tool on a Weft server protected by
// auth.JWTValidator, refreshes (rotation), and a reused refresh token
// revokes the family; a replayed code is refused and revokes its grant.
func TestEndToEndHydra(t *testing.T) {
	e := newEnv(t, envOpts{})
	b := newBrowser(t, e.redirect)
	verifier, challenge := pkce()
	q := e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "st-1", nil))
	if q.Get("state") != "st-1" || q.Get("iss") != e.asURL || q.Get("code") == "" {
		t.Fatalf("redirect query %v: want state, iss (RFC 9207) and code", q)
	}
	code := q.Get("code")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {e.clientID}, "redirect_uri": {e.redirect}, "resource": {e.resource}}
	st, tok := e.token(form, nil)
	if st != 200 || tok["token_type"] != "Bearer" || tok["refresh_token"] == nil {
		t.Fatalf("token: %d %v", st, tok)
	}
	at := tok["access_token"].(string)
	if strings.Contains(at, "ory_") {
		t.Fatal("the upstream token was handed to the client")
	}

	// The tool call with the token: identity mapped from Hydra's user.
	st, _, msg := callTool(t, e.mcpURL, "Bearer "+at, "")
	if st != 200 {
		t.Fatalf("tool call: %d %v", st, msg)
	}
	sc := msg["result"].(map[string]any)["structuredContent"].(map[string]any)
	if sc["principal"] != "alice" || sc["partition"] != e.asURL+"|acme" {
		t.Errorf("identity %v", sc)
	}
	// Without a token: the challenge names the resource metadata.
	if st, h, _ := callTool(t, e.mcpURL, "", ""); st != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("no token: %d %v", st, h)
	}

	// Code replay: refused, and the grant issued from it is revoked.
	st, out := e.token(form, nil)
	if st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("code replay: %d %v", st, out)
	}
	st, out = e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {e.clientID}}, nil)
	if st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("refresh after code replay: %d %v (the family should be revoked)", st, out)
	}

	// A second flow: consent is remembered (no page), then refresh
	// rotation and reuse detection.
	verifier, challenge = pkce()
	q = e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "st-2", nil))
	st, tok = e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
		"client_id": {e.clientID}, "redirect_uri": {e.redirect}}, nil)
	if st != 200 {
		t.Fatalf("second token: %d %v", st, tok)
	}
	rt1 := tok["refresh_token"].(string)
	st, tok2 := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt1}, "client_id": {e.clientID}}, nil)
	if st != 200 || tok2["refresh_token"] == rt1 {
		t.Fatalf("refresh: %d %v", st, tok2)
	}
	rt2 := tok2["refresh_token"].(string)
	if st, _, msg := callTool(t, e.mcpURL, "Bearer "+tok2["access_token"].(string), ""); st != 200 {
		t.Fatalf("tool call with refreshed token: %d %v", st, msg)
	}
	// Reuse of the rotated token revokes the family: rt2 dies too.
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt1}, "client_id": {e.clientID}}, nil); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("refresh reuse: %d %v", st, out)
	}
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt2}, "client_id": {e.clientID}}, nil); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("refresh after reuse: %d %v (the family should be revoked)", st, out)
	}

	// Revocation (RFC 7009) of a fresh grant's refresh token.
	verifier, challenge = pkce()
	q = e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "st-3", nil))
	_, tok = e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier}, "client_id": {e.clientID}}, nil)
	rt := tok["refresh_token"].(string)
	req, _ := http.NewRequest(http.MethodPost, e.asURL+"/revoke", strings.NewReader(url.Values{"token": {rt}, "client_id": {e.clientID}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	resp.Body.Close()
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}}, nil); st != 400 {
		t.Fatalf("refresh after revocation: %d %v", st, out)
	}

	// Revoking the consent revokes the grants under it and brings the
	// consent page back.
	verifier, challenge = pkce()
	q = e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "st-4", nil))
	if e.sawConsent {
		t.Error("a remembered consent was asked again")
	}
	_, tok4 := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier}, "client_id": {e.clientID}}, nil)
	if up, _, err := e.as.UpstreamTokens(t.Context(), claimOf(t, tok4["access_token"].(string), "gid")); err != nil || !strings.HasPrefix(up, "ory_at_") {
		t.Errorf("upstream access token of a live grant: %q %v", up, err)
	}
	if err := e.as.RevokeConsent(t.Context(), "alice", e.clientID); err != nil {
		t.Fatal(err)
	}
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok4["refresh_token"].(string)}, "client_id": {e.clientID}}, nil); st != 400 {
		t.Fatalf("refresh after consent revocation: %d %v", st, out)
	}
	_, challenge = pkce()
	e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "st-5", nil))
	if !e.sawConsent {
		t.Error("no consent page after the consent was revoked")
	}

	// The upstream tokens stay server-side, encrypted, for the server's
	// own use.
	gid := claimOf(t, tok["access_token"].(string), "gid")
	if _, _, err := e.as.UpstreamTokens(t.Context(), gid); err == nil {
		t.Error("upstream tokens of a revoked grant are still available")
	}
}

// TestLoopbackRedirectAnyPort: a native client's metadata document lists
// its loopback redirect URI without a port (or with another one), and signs
// in through Hydra with whatever port its listener got (RFC 8252 §7.3);
// the token request must repeat the port the authorization request used.
// A non-loopback redirect URI on another port is still refused.
func TestLoopbackRedirectAnyPort(t *testing.T) {
	e := newEnv(t, envOpts{})
	for i, c := range []struct{ registered, used string }{
		{"http://127.0.0.1/callback", "http://127.0.0.1:54321/callback"},
		{"http://127.0.0.1:8080/callback", "http://127.0.0.1:40001/callback"},
		{"http://[::1]/cb", "http://[::1]:61000/cb"},
	} {
		id := e.cimd.URL + "/native-" + strconv.Itoa(i) + ".json"
		e.docs.set(id[len(e.cimd.URL):], cimdDoc(id, c.registered))
		b := newBrowser(t, c.used)
		verifier, challenge := pkce()
		q := e.login(b, e.authorizeURL(id, c.used, challenge, "st", nil))
		form := url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
			"client_id": {id}, "redirect_uri": {c.registered}}
		if st, out := e.token(form, nil); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("%s: token request naming the registered URI, not the one used: %d %v", c.used, st, out)
		}
		verifier, challenge = pkce()
		q = e.login(b, e.authorizeURL(id, c.used, challenge, "st", nil))
		form = url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
			"client_id": {id}, "redirect_uri": {c.used}}
		if st, tok := e.token(form, nil); st != 200 || tok["access_token"] == nil {
			t.Fatalf("%s registered as %s: token %d %v", c.used, c.registered, st, tok)
		}
	}

	// A non-loopback redirect URI still matches exactly: no other port.
	id := e.cimd.URL + "/web.json"
	e.docs.set("/web.json", cimdDoc(id, "https://app.example/cb"))
	_, challenge := pkce()
	if resp, body := get(t, e.authorizeURL(id, "https://app.example:8443/cb", challenge, "st", nil)); resp.StatusCode != 400 || !strings.Contains(body, "not registered") {
		t.Errorf("https redirect on another port: %d %s", resp.StatusCode, body)
	}
}
