// Package hydratest starts Ory Hydra v2.3.0 for tests: a real OpenID Connect
// provider with dynamic client registration disabled, on free loopback
// ports, with an in-memory database and a clean environment, together with
// a login and consent app that signs one configured user in without a form.
//
// The binary is built once per machine by scripts/ensure-hydra.sh (which
// `make test` runs) into $WEFT_HYDRA_CACHE or ~/.cache/weft-hydra; WEFT_HYDRA
// names another binary. When it is missing a test fails in CI (env CI set)
// and is skipped elsewhere.
package hydratest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the Hydra version scripts/ensure-hydra.sh builds.
const Version = "v2.3.0"

// Binary returns the path of the Hydra binary, or fails the test in CI and
// skips it elsewhere when it has not been built.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("WEFT_HYDRA"); p != "" {
		return p
	}
	cache := os.Getenv("WEFT_HYDRA_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		cache = filepath.Join(dir, "weft-hydra")
	}
	p := filepath.Join(cache, Version, "hydra")
	if _, err := os.Stat(p); err != nil {
		msg := "Ory Hydra is not built at " + p + " (run scripts/ensure-hydra.sh)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// Options configure [Start]. The zero value signs in "alice".
type Options struct {
	// Subject is the user the login app signs in (default "alice").
	Subject string
	// IDTokenClaims are extra claims of the ID tokens Hydra issues.
	IDTokenClaims map[string]any
	// AccessTokenStrategy is "opaque" (default) or "jwt".
	AccessTokenStrategy string
	// AccessTokenLifespan is the lifetime of access tokens (default
	// Hydra's, one hour): short for tests of refresh.
	AccessTokenLifespan time.Duration
}

// Hydra is a running Hydra with its login and consent app.
type Hydra struct {
	// Issuer is the issuer identifier exactly as Hydra puts it in "iss"
	// and its discovery document.
	Issuer string
	// PublicURL and AdminURL are the base URLs of the two listeners. The
	// admin API has no authentication and listens on loopback only.
	PublicURL, AdminURL string

	app  *httptest.Server
	opts Options
	mu   sync.Mutex
	subj string
}

// freePort returns a free loopback TCP port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts Hydra and its login and consent app; both stop when the test
// ends.
func Start(t testing.TB, o Options) *Hydra {
	t.Helper()
	bin := Binary(t)
	if o.Subject == "" {
		o.Subject = "alice"
	}
	if o.AccessTokenStrategy == "" {
		o.AccessTokenStrategy = "opaque"
	}
	h := &Hydra{opts: o, subj: o.Subject}
	h.app = httptest.NewServer(http.HandlerFunc(h.serveApp))
	t.Cleanup(h.app.Close)

	pub, adm := freePort(t), freePort(t)
	h.PublicURL = "http://127.0.0.1:" + strconv.Itoa(pub)
	h.AdminURL = "http://127.0.0.1:" + strconv.Itoa(adm)
	h.Issuer = h.PublicURL
	dir := t.TempDir()
	conf := fmt.Sprintf(`dsn: memory
serve:
  public: {host: 127.0.0.1, port: %d}
  admin: {host: 127.0.0.1, port: %d}
urls:
  self: {issuer: %q}
  login: %q
  consent: %q
secrets:
  system: ["weft-hydratest-system-secret-0123456789"]
oidc:
  dynamic_client_registration: {enabled: false}
oauth2:
  pkce: {enforced: true}
strategies:
  access_token: %s
log:
  level: warn
`, pub, adm, h.Issuer, h.app.URL+"/login", h.app.URL+"/consent", o.AccessTokenStrategy)
	if o.AccessTokenLifespan > 0 {
		conf += fmt.Sprintf("ttl:\n  access_token: %s\n", o.AccessTokenLifespan)
	}
	cfg := filepath.Join(dir, "hydra.yml")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "hydra.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out", "-c", cfg)
	// Hydra reads every environment variable named like a config key.
	cmd.Env = []string{"HOME=" + dir}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start hydra: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("hydra log:\n%s", tail(b, 4000))
		}
	})
	deadline := time.Now().Add(90 * time.Second) // a loaded CI machine
	for {
		select {
		case <-done:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("hydra exited during start:\n%s", tail(b, 4000))
		default:
		}
		resp, err := http.Get(h.PublicURL + "/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("hydra did not become ready within 90s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Hydra reports ready before it has generated its ID token signing
	// keys (RSA-4096, seconds on a loaded machine), and answers discovery
	// with an error meanwhile: wait for a key set with keys.
	for {
		resp, err := http.Get(h.PublicURL + "/.well-known/jwks.json")
		if err == nil {
			var set struct {
				Keys []json.RawMessage `json:"keys"`
			}
			derr := json.NewDecoder(resp.Body).Decode(&set)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && derr == nil && len(set.Keys) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("hydra published no signing keys within 90s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The admin listener starts with the public one, but check it too.
	if _, err := h.admin(context.Background(), http.MethodGet, "/health/ready", nil); err != nil {
		t.Fatalf("hydra admin: %v", err)
	}
	// Hydra creates the access-token signing key set lazily, as RSA-4096,
	// at the first token request: seconds of CPU on a loaded machine,
	// inside that request. Create it now, as a quick ES256 key.
	if _, err := h.admin(context.Background(), http.MethodPost, "/admin/keys/hydra.jwt.access-token",
		map[string]any{"alg": "ES256", "use": "sig", "kid": "hydratest-at"}); err != nil {
		t.Logf("hydra: pre-creating the access-token key set: %v", err)
	}
	return h
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// SetSubject changes the user the login app signs in from now on.
func (h *Hydra) SetSubject(s string) {
	h.mu.Lock()
	h.subj = s
	h.mu.Unlock()
}

// Client is an OAuth client created through the admin API.
type Client struct {
	ID, Secret   string
	RedirectURIs []string
	// Scope is space-separated (default "openid offline_access profile email").
	Scope string
	// Audience lists the audiences the client may request.
	Audience []string
	// TokenEndpointAuthMethod defaults to client_secret_basic with a
	// secret, else none.
	TokenEndpointAuthMethod string
}

// CreateClient creates a client (authorization code and refresh token
// grants) through the admin API.
func (h *Hydra) CreateClient(t testing.TB, c Client) {
	t.Helper()
	if c.Scope == "" {
		c.Scope = "openid offline_access profile email"
	}
	method := c.TokenEndpointAuthMethod
	if method == "" {
		method = "none"
		if c.Secret != "" {
			method = "client_secret_basic"
		}
	}
	body := map[string]any{
		"client_id":                  c.ID,
		"redirect_uris":              c.RedirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"scope":                      c.Scope,
		"token_endpoint_auth_method": method,
	}
	if c.Secret != "" {
		body["client_secret"] = c.Secret
	}
	if len(c.Audience) > 0 {
		body["audience"] = c.Audience
	}
	if _, err := h.admin(context.Background(), http.MethodPost, "/admin/clients", body); err != nil {
		t.Fatalf("create hydra client: %v", err)
	}
}

// admin calls the admin API and returns the decoded JSON answer.
func (h *Hydra) admin(ctx context.Context, method, path string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.AdminURL+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, raw)
	}
	out := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return out, nil
}

// serveApp is the login and consent app: it accepts every login as the
// configured subject and every consent with the requested scopes and
// audiences, then sends the browser back to Hydra.
func (h *Hydra) serveApp(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var (
		out map[string]any
		err error
	)
	switch r.URL.Path {
	case "/login":
		ch := url.QueryEscape(r.URL.Query().Get("login_challenge"))
		h.mu.Lock()
		subj := h.subj
		h.mu.Unlock()
		out, err = h.admin(ctx, http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+ch,
			map[string]any{"subject": subj, "remember": false})
	case "/consent":
		ch := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
		var req map[string]any
		req, err = h.admin(ctx, http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+ch, nil)
		if err == nil {
			accept := map[string]any{
				"grant_scope":                 req["requested_scope"],
				"grant_access_token_audience": req["requested_access_token_audience"],
				"remember":                    false,
			}
			if len(h.opts.IDTokenClaims) > 0 {
				accept["session"] = map[string]any{"id_token": h.opts.IDTokenClaims}
			}
			out, err = h.admin(ctx, http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+ch, accept)
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	to, _ := out["redirect_to"].(string)
	if !strings.HasPrefix(to, h.PublicURL) {
		http.Error(w, "hydra gave no redirect_to", http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, to, http.StatusFound)
}

// RevokeConsent revokes every consent of subject, and with them the access
// and refresh tokens issued on it, through the admin API.
func (h *Hydra) RevokeConsent(t testing.TB, subject string) {
	t.Helper()
	if _, err := h.admin(context.Background(), http.MethodDelete,
		"/admin/oauth2/auth/sessions/consent?all=true&subject="+url.QueryEscape(subject), nil); err != nil {
		t.Fatalf("revoke hydra consent: %v", err)
	}
}
