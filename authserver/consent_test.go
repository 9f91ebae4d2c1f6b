package authserver

import (
	"net/url"
	"testing"
)

// TestConsentCoversRefresh: a consent remembered for access without
// refresh tokens does not cover a later request for offline_access: the
// consent page is shown again (naming refresh tokens), and once approved
// it is remembered too.
func TestConsentCoversRefresh(t *testing.T) {
	e := newEnv(t, envOpts{})
	b := newBrowser(t, e.redirect)
	for i, step := range []struct {
		scope       string
		wantConsent bool
		wantRefresh bool
	}{
		{"mcp:read", true, false},
		{"mcp:read", false, false},
		{"mcp:read offline_access", true, true},
		{"mcp:read offline_access", false, true},
		{"mcp:read", false, false},
	} {
		verifier, challenge := pkce()
		q := e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "st", url.Values{"scope": {step.scope}}))
		if e.sawConsent != step.wantConsent {
			t.Errorf("step %d (%s): consent page shown %v, want %v", i+1, step.scope, e.sawConsent, step.wantConsent)
		}
		st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
			"client_id": {e.clientID}, "redirect_uri": {e.redirect}}, nil)
		if st != 200 {
			t.Fatalf("step %d: token: %d %v", i+1, st, tok)
		}
		if _, got := tok["refresh_token"]; got != step.wantRefresh {
			t.Errorf("step %d (%s): refresh token issued %v, want %v", i+1, step.scope, got, step.wantRefresh)
		}
	}
}
