package authserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/internal/hydratest"
)

// env is a complete test setup: Hydra upstream, this authorization server,
// a protected Weft server and a CIMD client whose document the test
// serves over TLS.
type env struct {
	t        *testing.T
	hydra    *hydratest.Hydra
	as       *Server
	asURL    string
	asMux    *http.ServeMux
	resource string
	mcpURL   string
	cimd     *httptest.Server
	clientID string
	redirect string
	docs     *docServer
	// sawConsent says whether the last login showed the consent page.
	sawConsent bool
}

// docServer serves client metadata documents the test sets.
type docServer struct {
	mu    sync.Mutex
	docs  map[string]string
	delay time.Duration
}

func (d *docServer) set(path, doc string) {
	d.mu.Lock()
	d.docs[path] = doc
	d.mu.Unlock()
}

func (d *docServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	doc, ok := d.docs[r.URL.Path]
	delay := d.delay
	d.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			// A slow server whose client left sends nothing: returning here
			// would answer 200 with an empty body, and under load that
			// answer reached the fetcher (1 run in 150 of TestCIMDSSRF,
			// issue 41), which then rightly called the document invalid.
			panic(http.ErrAbortHandler)
		}
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, doc)
}

type envOpts struct {
	store     func(t *testing.T) Store
	noHydra   bool
	mutate    func(*Config)
	resources []string      // extra resources beyond the MCP server's
	instances int           // authorization server instances behind a round-robin balancer (default 1)
	leeway    time.Duration // the MCP server's JWT clock-skew leeway (default auth.DefaultLeeway)
}

// newEnv builds the setup. Hydra is started unless noHydra.
func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	e := &env{t: t}
	if !o.noHydra {
		e.hydra = hydratest.Start(t, hydratest.Options{IDTokenClaims: map[string]any{"email": "alice@example.com", "tenant": "acme"}})
	}
	e.asMux = http.NewServeMux()
	asTS := httptest.NewServer(e.asMux)
	t.Cleanup(asTS.Close)
	e.asURL = asTS.URL

	// The protected MCP server.
	mcpMux := http.NewServeMux()
	mcpTS := httptest.NewServer(mcpMux)
	t.Cleanup(mcpTS.Close)
	e.mcpURL = mcpTS.URL + "/mcp"
	e.resource = e.mcpURL

	e.docs = &docServer{docs: map[string]string{}}
	e.cimd = httptest.NewTLSServer(e.docs)
	t.Cleanup(e.cimd.Close)
	e.clientID = e.cimd.URL + "/client.json"
	e.redirect = "http://127.0.0.1:9/callback" // never dialled: the test stops at the redirect
	e.docs.set("/client.json", cimdDoc(e.clientID, e.redirect))

	var store Store
	if o.store != nil {
		store = o.store(t)
	} else {
		st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "as.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		store = st
	}
	upIssuer := "http://127.0.0.1:1"
	if e.hydra != nil {
		upIssuer = e.hydra.Issuer
		e.hydra.CreateClient(t, hydratest.Client{ID: "weft-as", Secret: "weft-as-secret-0123456789", RedirectURIs: []string{e.asURL + "/callback"}})
	}
	cfg := Config{
		Issuer:              e.asURL,
		AllowInsecureIssuer: true,
		Resources:           append([]string{e.resource}, o.resources...),
		Scopes:              []string{"mcp:read", "mcp:write"},
		DefaultScopes:       []string{"mcp:read"},
		// A generous timeout: Hydra is slow on a loaded machine under -race.
		Upstream: Upstream{Issuer: upIssuer, ClientID: "weft-as", ClientSecret: "weft-as-secret-0123456789",
			HTTPClient: &http.Client{Timeout: time.Minute}},
		Identity:  IdentityMapping{Claims: []string{"email", "tenant"}},
		Store:     store,
		SecretKey: []byte("0123456789abcdef0123456789abcdef"),
		Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		CIMD: CIMDConfig{
			AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			RootCAs:         e.cimd.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		},
	}
	if o.mutate != nil {
		o.mutate(&cfg)
	}
	if o.instances > 1 {
		// A fleet shares keys: generate the signing key once.
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		cfg.SigningKeys = []jose.JSONWebKey{{Key: k, KeyID: "k1", Algorithm: "ES256"}}
	}
	var handlers []http.Handler
	for i := 0; i < max(o.instances, 1); i++ {
		as, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if e.as == nil {
			e.as = as
		}
		handlers = append(handlers, as.Handler())
	}
	var next atomic.Int64
	e.asMux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers[int(next.Add(1))%len(handlers)].ServeHTTP(w, r)
	}))
	as := e.as

	// The Weft server, protected by auth.JWTValidator reading the JWKS.
	keys, err := auth.JWKSURL(as.JWKSURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := &auth.ResourceMetadata{Resource: e.resource, AuthorizationServers: []string{e.asURL}, ScopesSupported: []string{"mcp:read"}}
	v := &auth.JWTValidator{Issuer: e.asURL, JWKS: keys, RequiredScopes: []string{"mcp:read"}, PartitionClaim: "tenant", StrictType: true,
		DPoP: &auth.DPoPVerifier{Replay: auth.NewMemoryReplayCache(0)}, Leeway: o.leeway}
	srv, err := weft.NewServer(weft.Implementation{Name: "protected", Version: "1.0.0"}, &weft.Options{Admission: v.Admission(meta)})
	if err != nil {
		t.Fatal(err)
	}
	type who struct {
		Principal string   `json:"principal"`
		Partition string   `json:"partition"`
		Scopes    []string `json:"scopes"`
	}
	if err := weft.AddTool(srv, weft.Tool{Name: "whoami", Description: "Says who is calling."},
		func(ctx context.Context, req *weft.Request, _ struct{}) (who, error) {
			return who{req.Identity.Principal, req.Identity.Partition, req.Identity.Scopes}, nil
		}); err != nil {
		t.Fatal(err)
	}
	mcpMux.Handle("/mcp", srv)
	mh, err := meta.Handler()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range meta.WellKnownPaths() {
		mcpMux.Handle(p, mh)
	}
	return e
}

func cimdDoc(id, redirect string) string {
	b, _ := json.Marshal(map[string]any{
		"client_id": id, "client_name": "Test MCP Client", "client_uri": "https://client.example/",
		"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
	})
	return string(b)
}

// browser is a headless user agent: a cookie jar that follows redirects
// until the client's redirect URI.
type browser struct {
	c    *http.Client
	stop string
}

func newBrowser(t *testing.T, stopAt string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{stop: stopAt}
	b.c = &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), b.stop) {
			return http.ErrUseLastResponse
		}
		if len(via) > 20 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

// pkce returns a verifier and its S256 challenge.
func pkce() (string, string) {
	v := randomToken()
	sum := sha256.Sum256([]byte(v))
	return v, base64.RawURLEncoding.EncodeToString(sum[:])
}

func (e *env) authorizeURL(clientID, redirect, challenge, state string, extra url.Values) string {
	q := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {state},
		"scope": {"mcp:read offline_access"}, "resource": {e.resource},
	}
	for k, v := range extra {
		if v == nil {
			delete(q, k)
		} else {
			q[k] = v
		}
	}
	return e.asURL + "/authorize?" + q.Encode()
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`)
var formAction = regexp.MustCompile(`<form method="post" action="([^"]+)">`)

// login runs the browser part of a flow from the authorization URL to the
// client's redirect, approving the consent page if it appears, and returns
// the redirect's query, which must not be an error.
func (e *env) login(b *browser, authURL string) url.Values {
	e.t.Helper()
	q := e.flow(b, authURL)
	if q.Get("error") != "" {
		e.t.Fatalf("flow ended with error %s: %s", q.Get("error"), q.Get("error_description"))
	}
	return q
}

// flow is login that returns an error redirect's query too.
func (e *env) flow(b *browser, authURL string) url.Values {
	e.t.Helper()
	resp, err := b.c.Get(authURL)
	if err != nil {
		e.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	e.sawConsent = resp.StatusCode == http.StatusOK
	if resp.StatusCode == http.StatusOK {
		m := formAction.FindStringSubmatch(string(body))
		if m == nil {
			e.t.Fatalf("no consent form in page:\n%s", body)
		}
		form := url.Values{"action": {"approve"}}
		for _, h := range hiddenInput.FindAllStringSubmatch(string(body), -1) {
			form.Set(h[1], html.UnescapeString(h[2]))
		}
		resp, err = b.c.PostForm(html.UnescapeString(m[1]), form)
		if err != nil {
			e.t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if resp.StatusCode != http.StatusFound {
		e.t.Fatalf("flow ended with %d:\n%s", resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), b.stop) {
		e.t.Fatalf("flow redirected to %q, not the client", resp.Header.Get("Location"))
	}
	return loc.Query()
}

// token posts a token request and decodes the answer.
func (e *env) token(form url.Values, h http.Header) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.asURL+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// callTool calls whoami on the protected server with an Authorization
// header value ("Bearer x" or "DPoP x") and optional DPoP proof.
func callTool(t *testing.T, mcpURL, authz, proof string) (int, http.Header, map[string]any) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "whoami")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	return resp.StatusCode, resp.Header, msg
}

// claimOf reads a claim of a JWT without verifying it (test only).
func claimOf(t *testing.T, jwt, name string) string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[name].(string)
	return s
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
