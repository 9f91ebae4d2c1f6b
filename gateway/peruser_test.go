package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/gateway/usertoken"
	"github.com/weftmcp/weft/internal/hydratest"
	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/seal"
)

// seen is what an upstream records of the calls of its tools.
type seen struct {
	mu    sync.Mutex
	calls []string // principal of each tools/call
	auths []string // every Authorization header it received
}

func (s *seen) add(principal, authz string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if principal != "" {
		s.calls = append(s.calls, principal)
	}
	s.auths = append(s.auths, authz)
}

func (s *seen) snapshot() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...), append([]string(nil), s.auths...)
}

func fp(tok string) string { return hydratest.TokenFP(tok) }

// hydraUpstream is a Weft server protected by bearer tokens of Hydra
// (hydratest.ProtectedServer); listToken lets the gateway read its lists.
// rec sees every Authorization header and the principal of every call.
func hydraUpstream(t *testing.T, h *hydratest.Hydra, listToken string, rec *seen) string {
	t.Helper()
	return hydratest.ProtectedServer(t, h, listToken, rec.add)
}

// callerAdmission identifies the gateway's callers by fixed tokens.
func callerAdmission(tokens map[string]string) weft.Admission {
	return func(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		if who, ok := tokens[r.BearerToken]; ok {
			return weft.Identity{Principal: who, Partition: "gw|" + who}, nil
		}
		return weft.Identity{}, nil // anonymous
	}
}

// gwAuth is how a test gateway identifies its callers (adm) and the
// person in a browser at its authorization pages (ua.SignIn or
// ua.BrowserUser); meta, when set, is served as the protected resource
// metadata of its MCP endpoint.
type gwAuth struct {
	adm  weft.Admission
	ua   gateway.UserAuthorization
	meta *auth.ResourceMetadata
}

// testUserHeader names the browser's user for testBrowserUser.
const testUserHeader = "X-Test-User"

// fixedCallers identifies callers by fixed tokens and the browser's user
// by a header its test browser sends (the application's own session, for
// tests about other things than the sign-in).
func fixedCallers(tokens map[string]string) func(base string) gwAuth {
	return func(string) gwAuth {
		return gwAuth{adm: callerAdmission(tokens), ua: gateway.UserAuthorization{
			BrowserUser: func(w http.ResponseWriter, r *http.Request) (weft.Identity, bool) {
				who := r.Header.Get(testUserHeader)
				if who == "" {
					http.Error(w, "sign in first", http.StatusUnauthorized)
					return weft.Identity{}, false
				}
				return weft.Identity{Principal: who, Partition: "gw|" + who}, true
			}}}
	}
}

// hydraCallers identifies callers by fixed tokens or by tokens of Hydra
// for the gateway's MCP endpoint (introspected), both as Principal = the
// user, Partition "gw|" + the user; the browser's user signs in at Hydra
// (OAuthSignIn, client "weft-gateway-signin", which the test creates with
// signInClient).
func hydraCallers(h *hydratest.Hydra, tokens map[string]string) func(base string) gwAuth {
	return func(base string) gwAuth {
		meta := &auth.ResourceMetadata{Resource: base + "/mcp", AuthorizationServers: []string{h.Issuer}}
		in := &auth.Introspector{Endpoint: h.AdminURL + "/admin/oauth2/introspect", Issuer: h.Issuer, CacheTTL: -1}
		hydra := in.Admission(meta)
		fixed := callerAdmission(tokens)
		adm := func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			if _, ok := tokens[r.BearerToken]; ok || r.BearerToken == "" {
				return fixed(ctx, r)
			}
			id, err := hydra(ctx, r)
			if err != nil {
				return weft.Identity{}, err
			}
			return weft.Identity{Principal: id.Principal, Partition: "gw|" + id.Principal}, nil
		}
		return gwAuth{adm: adm, meta: meta, ua: gateway.UserAuthorization{SignIn: &gateway.OAuthSignIn{
			Resource: base + "/mcp", ClientID: "weft-gateway-signin", ClientSecret: "weft-gateway-signin-secret-0123456789",
			AuthorizationParams: map[string]string{"audience": base + "/mcp"}}}}
	}
}

// signInClient creates the gateways' sign-in client at Hydra.
func signInClient(t *testing.T, h *hydratest.Hydra, gws ...*instance) {
	t.Helper()
	c := hydratest.Client{ID: "weft-gateway-signin", Secret: "weft-gateway-signin-secret-0123456789"}
	for _, gw := range gws {
		c.RedirectURIs = append(c.RedirectURIs, gw.url+"/oauth/signin")
		c.Audience = append(c.Audience, gw.url+"/mcp")
	}
	h.CreateClient(t, c)
}

// startPerUserGateway runs a gateway instance with per-user authorization,
// its pages under /oauth, identifying callers and browsers as setup says.
func startPerUserGateway(t *testing.T, cfg *gateway.Config, prot seal.Protector, store usertoken.Store, setup func(base string) gwAuth) *instance {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	ga := setup(base)
	srv, err := weft.NewServer(weft.Implementation{Name: "gateway-peruser", Version: "1"}, &weft.Options{Protector: prot, Admission: ga.adm,
		Legacy: weft.LegacyOptions{InMemorySessions: true}, URLElicitation: elicit.URLPolicy{AllowedOrigins: []string{"https://example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ua := ga.ua
	ua.BaseURL, ua.Protector, ua.Store = base+"/oauth", prot, store
	gw, err := gateway.New(ctx, srv, cfg, &gateway.Options{UserAuthorization: &ua})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/oauth/", gw.AuthorizationHandler())
	mux.Handle("/", srv)
	if ga.meta != nil {
		mh, err := ga.meta.Handler()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ga.meta.WellKnownPaths() {
			mux.Handle(p, mh)
		}
	}
	hs.Config.Handler = mux
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		if err := gw.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &instance{gw: gw, srv: srv, url: base}
}

// newBrowser returns a browser: cookies, and redirects followed as far as
// a sign-in at the gateway followed by an authorization at the upstream
// go. A non-empty who is sent as testUserHeader (fixedCallers).
func newBrowser(who string) *http.Client {
	jar, _ := cookiejar.New(nil)
	var rt http.RoundTripper = http.DefaultTransport
	if who != "" {
		rt = userHeader{who: who, base: rt}
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: rt, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
		if len(via) >= 30 {
			return errors.New("stopped after 30 redirects")
		}
		return nil
	}}
}

// userHeader sends testUserHeader with every request.
type userHeader struct {
	who  string
	base http.RoundTripper
}

func (u userHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(testUserHeader, u.who)
	return u.base.RoundTrip(r)
}

// userAgent is one user: their MCP client's token at the gateway, and a
// browser that follows the URL the gateway sends them to (Hydra's login
// and consent app signs them in).
type userAgent struct {
	name, token string
	h           *hydratest.Hydra
	hydraMu     *sync.Mutex // Hydra's app signs in one configured subject
	asked       int         // URL requests received
	mu          sync.Mutex
}

// elicit answers the gateway's URL request: the browser opens the URL
// and follows the redirects through Hydra back to the gateway's
// callback, which must answer 200.
func (ua *userAgent) elicit(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
	ua.mu.Lock()
	ua.asked++
	ua.mu.Unlock()
	mode, _ := params.Get("mode")
	if s, _ := mode.AsString(); s != "url" {
		return exactjson.Value{}, fmt.Errorf("asked %s, want a URL request", s)
	}
	u, _ := params.Get("url")
	link, _ := u.AsString()
	ua.hydraMu.Lock()
	defer ua.hydraMu.Unlock()
	ua.h.SetSubject(ua.name)
	b := newBrowser("")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	resp, err := b.Do(req)
	if err != nil {
		return exactjson.Value{}, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(resp.Request.URL.Path, "/oauth/callback") {
		return exactjson.Value{}, fmt.Errorf("the browser ended at %s with %s", resp.Request.URL, resp.Status)
	}
	return exactjson.Object(exactjson.Field("action", exactjson.String("accept"))), nil
}

func (ua *userAgent) timesAsked() int {
	ua.mu.Lock()
	defer ua.mu.Unlock()
	return ua.asked
}

// call calls up_whoami as the user on the gateway at gwURL.
func (ua *userAgent) call(t *testing.T, gwURL string) string {
	t.Helper()
	c := client.New(client.NewHTTPTransport(gwURL+"/mcp", &client.HTTPOptions{BearerToken: ua.token}), &client.Options{Handlers: client.Handlers{Elicit: ua.elicit}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "up_whoami", nil)
	if err != nil {
		t.Fatalf("%s: %v", ua.name, err)
	}
	return res.Text()
}

// TestPerUserAuthorization is the acceptance test of per-user upstream
// authorization: a Weft server protected by tokens of a real Ory Hydra,
// behind two gateway instances sharing PostgreSQL; two users, interleaved,
// each asked once with a URL request whose page the test's browser follows
// through Hydra; every upstream call carries only its caller's own token;
// a token obtained through instance 1 serves instance 2; expiring tokens
// are refreshed, and a revoked one is dropped and the user asked again.
func TestPerUserAuthorization(t *testing.T) {
	const ttl = 4 * time.Second
	h := hydratest.Start(t, hydratest.Options{AccessTokenLifespan: ttl})
	rec := &seen{}
	listToken := "list-" + fp(t.Name()+time.Now().String())
	upURL := hydraUpstream(t, h, listToken, rec)
	tokenFile := filepath.Join(t.TempDir(), "list-token")
	if err := os.WriteFile(tokenFile, []byte(listToken), 0o600); err != nil {
		t.Fatal(err)
	}

	table := testpg.Name("gw_user_tokens")
	stores := make([]usertoken.Store, 2)
	for i := range stores {
		db := testpg.Open(t)
		st, err := usertoken.OpenPostgres(context.Background(), db, table)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = st
	}
	t.Cleanup(func() {
		db := testpg.Open(t)
		if _, err := db.Exec("DROP TABLE IF EXISTS " + table); err != nil {
			t.Errorf("drop %s: %v", table, err)
		}
	})
	prot := testKeyring(t)
	callers := map[string]string{"alice-gw-token": "alice", "bob-gw-token": "bob"}
	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: upURL, Prefix: "up_", OAuth: &gateway.UpstreamOAuth{
		TokenFile: tokenFile,
		PerUser: &gateway.PerUserOAuth{ClientID: "weft-gateway", ClientSecret: "${WEFT_TEST_PERUSER_SECRET}",
			AuthorizationParams: map[string]string{"audience": upURL}},
	}}}}
	t.Setenv("WEFT_TEST_PERUSER_SECRET", "weft-gateway-secret-0123456789")
	gws := []*instance{
		startPerUserGateway(t, cfg, prot, stores[0], hydraCallers(h, callers)),
		startPerUserGateway(t, cfg, prot, stores[1], hydraCallers(h, callers)),
	}
	signInClient(t, h, gws...)
	h.CreateClient(t, hydratest.Client{ID: "weft-gateway", Secret: "weft-gateway-secret-0123456789",
		RedirectURIs: []string{gws[0].url + "/oauth/callback", gws[1].url + "/oauth/callback"}, Audience: []string{upURL}})

	var hydraMu sync.Mutex
	alice := &userAgent{name: "alice", token: "alice-gw-token", h: h, hydraMu: &hydraMu}
	bob := &userAgent{name: "bob", token: "bob-gw-token", h: h, hydraMu: &hydraMu}
	check := func(ua *userAgent, gw int, wantAsked int) string {
		t.Helper()
		got := ua.call(t, gws[gw].url)
		if !strings.HasPrefix(got, "sub="+ua.name+" ") {
			t.Fatalf("%s on instance %d: the upstream saw %q", ua.name, gw+1, got)
		}
		if n := ua.timesAsked(); n != wantAsked {
			t.Fatalf("%s on instance %d: asked to authorize %d times, want %d", ua.name, gw+1, n, wantAsked)
		}
		return got
	}

	// Interleaved first calls: each user is asked once, on their instance.
	a1 := check(alice, 0, 1)
	b1 := check(bob, 1, 1)
	// Each one's token serves the other instance (PostgreSQL): not asked
	// again. (The token itself may have been refreshed meanwhile on a slow
	// machine: its lifetime is short for the refresh below.)
	check(alice, 1, 1)
	check(bob, 0, 1)
	// Concurrent calls of both users on both instances: each carries its
	// caller's own token (refreshed at most once, under the store's lock,
	// when the calls cross its half-life).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ua := []*userAgent{alice, bob}[i%2]
			c := client.New(client.NewHTTPTransport(gws[i/2%2].url+"/mcp", &client.HTTPOptions{BearerToken: ua.token}), nil)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, "up_whoami", nil)
			if err != nil {
				t.Errorf("%s: %v", ua.name, err)
				return
			}
			if got := res.Text(); !strings.HasPrefix(got, "sub="+ua.name+" ") {
				t.Errorf("%s: the upstream saw %q", ua.name, got)
			}
		}()
	}
	wg.Wait()

	// Refresh: past half the token's lifetime the gateway refreshes it
	// (once, whichever instance) before using it.
	time.Sleep(ttl/2 + 200*time.Millisecond)
	a2 := check(alice, 1, 1)
	if a2 == a1 {
		t.Errorf("alice's expiring token was not refreshed: %q", a2)
	}
	check(alice, 0, 1)

	// Revocation: the upstream refuses bob's token (401); the gateway drops
	// it and asks bob again, then his retry goes through.
	h.RevokeConsent(t, "bob")
	b3 := check(bob, 0, 2)
	if b3 == b1 {
		t.Errorf("bob's revoked token was used again: %q", b3)
	}

	// An anonymous caller cannot use the upstream.
	c := client.New(client.NewHTTPTransport(gws[0].url+"/mcp", nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.CallTool(ctx, "up_whoami", nil)
	var re *client.RPCError
	if !errors.As(err, &re) || re.Code != gateway.CodeUserAuthorization || !strings.Contains(re.Message, "anonymous") {
		t.Errorf("anonymous call: %v, want error %d naming the anonymous caller", err, gateway.CodeUserAuthorization)
	}

	// The upstream's tools ran only for alice and bob, and never saw a
	// caller's own gateway token.
	calls, auths := rec.snapshot()
	for _, p := range calls {
		if p != "alice" && p != "bob" {
			t.Errorf("a tool ran for %q", p)
		}
	}
	for _, a := range auths {
		for tok := range callers {
			if strings.Contains(a, tok) {
				t.Errorf("the upstream received the caller's own token %q", tok)
			}
		}
	}
}
