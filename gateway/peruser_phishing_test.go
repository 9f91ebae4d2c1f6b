package gateway_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/gateway/usertoken"
	"github.com/weftmcp/weft/internal/hydratest"
)

// openAs opens link in browser b as the user who signs in at Hydra, and
// returns where the browser ended, its status and page.
func openAs(t *testing.T, h *hydratest.Hydra, hydraMu *sync.Mutex, b *http.Client, who, link string) (string, int, string) {
	t.Helper()
	hydraMu.Lock()
	defer hydraMu.Unlock()
	h.SetSubject(who)
	resp, err := b.Get(link)
	if err != nil {
		t.Fatalf("%s opening %s: %v", who, link, err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.Request.URL.Path, resp.StatusCode, string(page)
}

// TestPerUserLinkBoundToCaller is the phishing attack of the 2026-07-28
// elicitation page against per-user authorization, with two real callers
// and a real upstream authorization server (Ory Hydra, which is also the
// gateway's own sign-in): bob forwards the link he was asked to open to
// alice, who is signed in at the upstream. Alice's browser signs in at the
// gateway as alice, so the link, made for bob, is refused: alice's
// upstream account is never bound to bob, and bob's calls never act as
// alice. Bob's own browser then uses his link once; it cannot be used
// again, by him or by anyone.
func TestPerUserLinkBoundToCaller(t *testing.T) {
	h := hydratest.Start(t, hydratest.Options{})
	rec := &seen{}
	listToken := "list-" + fp(t.Name()+time.Now().String())
	upURL := hydraUpstream(t, h, listToken, rec)
	tokenFile := filepath.Join(t.TempDir(), "list-token")
	if err := os.WriteFile(tokenFile, []byte(listToken), 0o600); err != nil {
		t.Fatal(err)
	}
	callers := map[string]string{"alice-gw-token": "alice", "bob-gw-token": "bob"}
	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: upURL, Prefix: "up_", OAuth: &gateway.UpstreamOAuth{
		TokenFile: tokenFile,
		PerUser: &gateway.PerUserOAuth{ClientID: "weft-gateway", ClientSecret: "weft-gateway-secret-0123456789",
			AuthorizationParams: map[string]string{"audience": upURL}},
	}}}}
	gw := startPerUserGateway(t, cfg, testKeyring(t), usertoken.NewMemory(0), hydraCallers(h, callers))
	signInClient(t, h, gw)
	h.CreateClient(t, hydratest.Client{ID: "weft-gateway", Secret: "weft-gateway-secret-0123456789",
		RedirectURIs: []string{gw.url + "/oauth/callback"}, Audience: []string{upURL}})

	var hydraMu sync.Mutex
	aliceBrowser, bobBrowser := newBrowser(""), newBrowser("")
	round := 0
	var links []string
	elicitBob := func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
		round++
		u, _ := p.Get("url")
		link, _ := u.AsString()
		links = append(links, link)
		switch round {
		case 1:
			// Bob forwards his link to alice ("authorize the tracker"); her
			// browser signs in at the gateway as alice and is refused. The
			// refusal signs the browser out (a shared browser can sign in
			// as its other user): opened again, it signs in anew, as alice,
			// and is refused again.
			for range 2 {
				path, status, page := openAs(t, h, &hydraMu, aliceBrowser, "alice", link)
				if status != http.StatusForbidden || !strings.Contains(path, "/oauth/start/") || !strings.Contains(page, "made for another user") || !strings.Contains(page, "open it again") {
					t.Errorf("alice opening bob's link ended at %s with %d: %.300s; want the start page's 403", path, status, page)
				}
			}
		case 2:
			// Bob opens his own new link: he signs in as bob, authorizes at
			// the upstream as bob.
			path, status, page := openAs(t, h, &hydraMu, bobBrowser, "bob", link)
			if status != http.StatusOK || !strings.HasSuffix(path, "/oauth/callback") {
				t.Errorf("bob opening his link ended at %s with %d: %.300s", path, status, page)
			}
			// Used once: neither bob again nor alice can use it.
			if path, status, page := openAs(t, h, &hydraMu, bobBrowser, "bob", link); status != http.StatusBadRequest || !strings.Contains(page, "already used") {
				t.Errorf("bob reopening his used link ended at %s with %d: %.300s; want 400 already used", path, status, page)
			}
			if path, status, _ := openAs(t, h, &hydraMu, aliceBrowser, "alice", link); status != http.StatusForbidden {
				t.Errorf("alice opening bob's used link ended at %s with %d, want 403", path, status)
			}
		default:
			return exactjson.Object(exactjson.Field("action", exactjson.String("cancel"))), nil
		}
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept"))), nil
	}
	c := client.New(client.NewHTTPTransport(gw.url+"/mcp", &client.HTTPOptions{BearerToken: "bob-gw-token"}), &client.Options{Handlers: client.Handlers{Elicit: elicitBob}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "up_whoami", nil)
	if err != nil {
		t.Fatalf("bob: %v (asked %d times)", err, round)
	}
	if got := res.Text(); !strings.HasPrefix(got, "sub=bob ") {
		t.Fatalf("bob's call acted as %q, want bob", got)
	}
	if round != 2 || len(links) != 2 || links[0] == links[1] {
		t.Errorf("bob was asked %d times with links %q, want twice with two links", round, links)
	}

	// Alice's own call: she was never authorized by bob's link, so she is
	// asked, and acts as herself.
	alice := &userAgent{name: "alice", token: "alice-gw-token", h: h, hydraMu: &hydraMu}
	if got := alice.call(t, gw.url); !strings.HasPrefix(got, "sub=alice ") {
		t.Errorf("alice's call acted as %q", got)
	}
	if n := alice.timesAsked(); n != 1 {
		t.Errorf("alice was asked %d times, want once", n)
	}
	calls, _ := rec.snapshot()
	if strings.Join(calls, ",") != "bob,alice" {
		t.Errorf("the upstream's tool ran for %q, want bob then alice", calls)
	}

	// A browser that is not signed in is sent to sign in first; a sign-in
	// callback not started in the browser is refused.
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(links[0])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, h.PublicURL) {
		t.Errorf("a fresh browser at a start page got %s to %q, want a redirect to sign in at %s", resp.Status, loc, h.PublicURL)
	}
	resp, err = http.Get(gw.url + "/oauth/signin?state=x&code=y")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a forged sign-in callback: %s, want 400", resp.Status)
	}
}
