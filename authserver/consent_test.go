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

// TestRefreshRefusedKeepsToken: a refresh refused for what it asks (wider
// scopes, another resource) leaves the refresh token usable by its
// holder, and revokes nothing.
func TestRefreshRefusedKeepsToken(t *testing.T) {
	e := newEnv(t, envOpts{resources: []string{"https://other.example/mcp"}})
	verifier, challenge := pkce()
	q := e.login(newBrowser(t, e.redirect), e.authorizeURL(e.clientID, e.redirect, challenge, "st", nil))
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
		"client_id": {e.clientID}, "redirect_uri": {e.redirect}, "resource": {e.resource}}, nil)
	if st != 200 || tok["refresh_token"] == nil {
		t.Fatalf("token: %d %v", st, tok)
	}
	rt := tok["refresh_token"].(string)
	refresh := func(extra url.Values) (int, map[string]any) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}}
		for k, v := range extra {
			form[k] = v
		}
		return e.token(form, nil)
	}
	for _, c := range []struct {
		name  string
		extra url.Values
		want  string
	}{
		{"wider scopes", url.Values{"scope": {"mcp:read mcp:write"}}, "invalid_scope"},
		{"another resource", url.Values{"resource": {"https://other.example/mcp"}}, "invalid_target"},
	} {
		if st, out := refresh(c.extra); st != 400 || out["error"] != c.want {
			t.Errorf("%s: %d %v, want 400 %s", c.name, st, out, c.want)
		}
	}
	st, out := refresh(nil)
	if st != 200 || out["refresh_token"] == nil || out["refresh_token"] == rt {
		t.Fatalf("the holder's refresh after refused ones: %d %v", st, out)
	}
	// The old token is now used: its reuse still revokes the family.
	if st, out := refresh(nil); st != 400 || out["error"] != "invalid_grant" {
		t.Errorf("reuse: %d %v", st, out)
	}
	rt = out["refresh_token"].(string)
	if st, out := refresh(nil); st != 400 || out["error"] != "invalid_grant" {
		t.Errorf("the family's newest token after a reuse: %d %v, want revoked", st, out)
	}
}
