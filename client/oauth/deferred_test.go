package oauth

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"testing"
)

// TestBeginFinish: a flow begun by one Authorizer is finished by another
// (another instance of a fleet) from the Pending alone: PKCE S256, the
// resource indicator, AuthorizationParams on the authorization request,
// offline_access where offered; a forged state is refused; RefreshToken
// refreshes without a store.
func TestBeginFinish(t *testing.T) {
	as := newTestAS(t)
	as.meta = func(m map[string]any) { m["scopes_supported"] = []string{"offline_access", "read"} }
	rs := newTestRS(t, as, func(string) []string { return nil })
	cfg := Config{ClientID: "gw", RedirectURL: "https://gw.example.com/callback", OfflineAccess: true,
		AuthorizationParams: url.Values{"audience": {"https://api.example.com"}, "state": {"overridden"}}}
	ctx := context.Background()
	authURL, p, err := NewAuthorizer(rs.url(), cfg).Begin(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	q := u.Query()
	if q.Get("audience") != "https://api.example.com" || q.Get("state") != p.State || q.Get("resource") != rs.url() ||
		q.Get("code_challenge_method") != "S256" || !slices.Contains(p.Scopes, "offline_access") || p.Verifier == "" {
		t.Fatalf("authorization request %v, pending %+v", q, p)
	}
	vals, err := followRedirect(ctx, authURL)
	if err != nil {
		t.Fatal(err)
	}
	other := NewAuthorizer(rs.url(), cfg)
	forged := *p
	forged.State = "forged"
	if _, err := other.Finish(ctx, &forged, vals); !errors.Is(err, ErrState) {
		t.Fatalf("finish with another state: %v, want ErrState", err)
	}
	tok, err := other.Finish(ctx, p, vals)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.Resource != rs.url() {
		t.Fatalf("token %+v", tok)
	}
	nt, err := other.RefreshToken(ctx, tok)
	if err != nil || nt.AccessToken == tok.AccessToken || nt.AccessToken == "" {
		t.Fatalf("refresh: %+v, %v", nt, err)
	}
	if _, err := other.Exchange(ctx, nil, "subject", ""); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("exchange at a server without the grant: %v, want ErrUnsupported", err)
	}
	if ok, err := other.SupportsTokenExchange(ctx, nil); ok || err != nil {
		t.Fatalf("SupportsTokenExchange = %v, %v", ok, err)
	}
}
