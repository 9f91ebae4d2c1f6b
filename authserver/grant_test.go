package authserver

import (
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// TestGrantOutlivesFirstRefreshTTL: a grant refreshed regularly lives as
// long as its newest refresh token, not RefreshTokenTTL after its first
// code.
func TestGrantOutlivesFirstRefreshTTL(t *testing.T) {
	var clk atomic.Int64
	clk.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clk.Load()) }
	e := newEnv(t, envOpts{noHydra: true, mutate: func(c *Config) { c.Now = now }})
	e.as.store.(*SQLStore).now = now
	verifier, challenge := pkce()
	req := authRequest{ClientID: e.clientID, RedirectURI: e.redirect, Challenge: challenge, Resource: e.resource,
		Scopes: []string{"mcp:read"}, Offline: true, Subject: "alice", Family: randomToken()}
	rec := httptest.NewRecorder()
	e.as.finish(rec, httptest.NewRequest("GET", "/", nil), req)
	loc, _ := url.Parse(rec.Header().Get("Location"))
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier}, "client_id": {e.clientID}}, nil)
	if st != 200 {
		t.Fatalf("token: %d %v", st, tok)
	}
	rt := tok["refresh_token"].(string)
	for i := 0; i < 3; i++ {
		clk.Add(int64(20 * 24 * time.Hour))
		st, tok = e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}}, nil)
		if st != 200 {
			t.Fatalf("refresh %d, %d days after the code: %d %v", i+1, (i+1)*20, st, tok)
		}
		rt = tok["refresh_token"].(string)
	}
}

// TestPendingPurged: abandoned authorization requests do not pile up: the
// expired ones are purged as new ones arrive.
func TestPendingPurged(t *testing.T) {
	var clk atomic.Int64
	clk.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clk.Load()) }
	e := newEnv(t, envOpts{noHydra: true, mutate: func(c *Config) { c.Now, c.AuthorizeRate = now, -1 }})
	st := e.as.store.(*SQLStore)
	st.now = now
	count := func() int {
		var n int
		if err := st.read.QueryRow(`SELECT count(*) FROM authserver_items WHERE kind = 'pending'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	_, challenge := pkce()
	for round := 0; round < 3; round++ {
		for i := 0; i < purgeEvery; i++ {
			get(t, e.authorizeURL(e.clientID, e.redirect, challenge, "s", nil)) // abandoned
		}
		clk.Add(int64(DefaultLoginTTL + time.Minute))
	}
	if n := count(); n > purgeEvery {
		t.Fatalf("%d pending requests kept after %d abandoned ones expired", n, 3*purgeEvery)
	}
}

// TestUserinfoClaims: with UseUserinfo the upstream's userinfo answer
// (same subject) is merged under the ID token's claims before mapping.
func TestUserinfoClaims(t *testing.T) {
	e := newEnv(t, envOpts{mutate: func(c *Config) {
		c.Upstream.UseUserinfo = true
		c.Identity.SubjectClaim = "sub"
	}})
	verifier, challenge := pkce()
	q := e.login(newBrowser(t, e.redirect), e.authorizeURL(e.clientID, e.redirect, challenge, "u", nil))
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier}, "client_id": {e.clientID}}, nil)
	if st != 200 || claimOf(t, tok["access_token"].(string), "email") != "alice@example.com" {
		t.Fatalf("token: %d %v", st, tok)
	}
}
