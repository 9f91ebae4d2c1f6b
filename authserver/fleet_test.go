package authserver

import (
	"context"
	"net/url"
	"testing"

	"github.com/weftmcp/weft/internal/testpg"
)

func pgStore(t *testing.T) Store {
	db := testpg.Open(t)
	table := testpg.Name("authserver")
	st, err := OpenPostgres(context.Background(), db, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec(`DROP TABLE IF EXISTS ` + table) })
	return st
}

// TestFleetPostgres runs the flow through two instances sharing one
// PostgreSQL store behind a round-robin balancer: every step (authorize,
// callback, consent, token, refresh) lands on the other instance than the
// one before, so each finishes what the other began.
func TestFleetPostgres(t *testing.T) {
	e := newEnv(t, envOpts{store: pgStore, instances: 2})
	b := newBrowser(t, e.redirect)
	verifier, challenge := pkce()
	q := e.login(b, e.authorizeURL(e.clientID, e.redirect, challenge, "fleet", nil))
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
		"client_id": {e.clientID}, "redirect_uri": {e.redirect}}, nil)
	if st != 200 {
		t.Fatalf("token: %d %v", st, tok)
	}
	if st, _, msg := callTool(t, e.mcpURL, "Bearer "+tok["access_token"].(string), ""); st != 200 {
		t.Fatalf("tool: %d %v", st, msg)
	}
	rt := tok["refresh_token"].(string)
	st, tok2 := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}}, nil)
	if st != 200 {
		t.Fatalf("refresh on the other instance: %d %v", st, tok2)
	}
	// Reuse detected by the other instance, revoking the family there.
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {e.clientID}}, nil); st != 400 {
		t.Fatalf("reuse: %d %v", st, out)
	}
	if st, out := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2["refresh_token"].(string)}, "client_id": {e.clientID}}, nil); st != 400 {
		t.Fatalf("after reuse: %d %v", st, out)
	}
}
