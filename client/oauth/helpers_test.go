package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// testAS is an authorization server on loopback: metadata, dynamic
// registration, an authorization endpoint that approves at once (with
// iss), and a token endpoint checking PKCE and the resource indicator.
type testAS struct {
	srv *httptest.Server
	// metadata overrides (applied to the served document)
	meta func(m map[string]any)
	// issParam: "correct", "wrong", "omit"
	issParam  string
	expiresIn int

	mu        sync.Mutex
	paths     []string // every path requested, in order
	authReqs  []url.Values
	tokenReqs []url.Values
	regs      int
	codes     map[string]url.Values
	issued    map[string][]string // access token -> scopes
	refresh   map[string][]string
}

func newTestAS(t *testing.T) *testAS {
	a := &testAS{issParam: "correct", codes: map[string]url.Values{}, issued: map[string][]string{}, refresh: map[string][]string{}}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.Start() // after a.srv is set: the handlers read a.srv.URL
	t.Cleanup(a.srv.Close)
	return a
}

func (a *testAS) metadata() map[string]any {
	m := map[string]any{
		"issuer": a.srv.URL, "authorization_endpoint": a.srv.URL + "/authorize", "token_endpoint": a.srv.URL + "/token",
		"registration_endpoint": a.srv.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
		"response_types_supported": []string{"code"},
	}
	if a.meta != nil {
		a.meta(m)
	}
	return m
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *testAS) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.paths = append(a.paths, r.URL.Path)
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSON(w, 200, a.metadata())
	case "/register":
		a.regs++
		writeJSON(w, 201, map[string]any{"client_id": fmt.Sprintf("client-%d", a.regs)})
	case "/authorize":
		q := r.URL.Query()
		a.authReqs = append(a.authReqs, q)
		code := fmt.Sprintf("code-%d", len(a.authReqs))
		a.codes[code] = q
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {code}, "state": {q.Get("state")}}
		switch a.issParam {
		case "correct":
			v.Set("iss", a.srv.URL)
		case "wrong":
			v.Set("iss", "https://evil.example.com")
		}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	case "/token":
		_ = r.ParseForm()
		f := r.PostForm
		a.tokenReqs = append(a.tokenReqs, f)
		var scopes []string
		switch f.Get("grant_type") {
		case GrantAuthorizationCode:
			q, ok := a.codes[f.Get("code")]
			delete(a.codes, f.Get("code"))
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") || f.Get("resource") != q.Get("resource") {
				writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "PKCE or resource mismatch"})
				return
			}
			scopes = strings.Fields(q.Get("scope"))
		case GrantRefreshToken:
			s, ok := a.refresh[f.Get("refresh_token")]
			delete(a.refresh, f.Get("refresh_token"))
			if !ok {
				writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
			scopes = s
		case GrantClientCredentials:
			if id, secret, ok := r.BasicAuth(); !ok || id != "svc" || secret != "s3cret" {
				writeJSON(w, 401, map[string]any{"error": "invalid_client"})
				return
			}
			scopes = strings.Fields(f.Get("scope"))
		default:
			writeJSON(w, 400, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		n := len(a.tokenReqs)
		at, rt := fmt.Sprintf("at-%d", n), fmt.Sprintf("rt-%d", n)
		a.issued[at], a.refresh[rt] = scopes, scopes
		resp := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt}
		if a.expiresIn > 0 {
			resp["expires_in"] = a.expiresIn
		}
		writeJSON(w, 200, resp)
	default:
		http.NotFound(w, r)
	}
}

func (a *testAS) scopesOf(token string) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.issued[token]
	return s, ok
}

func (a *testAS) snapshot() (paths []string, auth []url.Values, tok []url.Values, regs int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.paths), slices.Clone(a.authReqs), slices.Clone(a.tokenReqs), a.regs
}

// testRS is an MCP endpoint (/mcp) protected by tokens of as: each
// request needs the scopes need returns for its body; a missing token
// gets 401 with resource_metadata and scope, a token lacking scopes 403
// insufficient_scope.
type testRS struct {
	srv      *httptest.Server
	as       *testAS
	need     func(body string) []string
	prm      func(base string) map[string]any
	forbids  int
	requests int
	mu       sync.Mutex
}

func newTestRS(t *testing.T, as *testAS, need func(body string) []string) *testRS {
	rs := &testRS{as: as, need: need}
	rs.srv = httptest.NewUnstartedServer(http.HandlerFunc(rs.serve))
	rs.srv.Start() // after rs.srv is set: the handlers read rs.srv.URL
	t.Cleanup(rs.srv.Close)
	return rs
}

func (rs *testRS) url() string { return rs.srv.URL + "/mcp" }

func (rs *testRS) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
		m := map[string]any{"resource": rs.url(), "authorization_servers": []string{rs.as.srv.URL}}
		if rs.prm != nil {
			m = rs.prm(rs.srv.URL)
		}
		writeJSON(w, 200, m)
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	var body strings.Builder
	_, _ = fmt.Fprint(&body, readAll(r))
	rs.mu.Lock()
	rs.requests++
	rs.mu.Unlock()
	need := rs.need(body.String())
	prmURL := rs.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	granted, known := rs.as.scopesOf(tok)
	if !ok || !known {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s", scope="%s"`, prmURL, strings.Join(need, " ")))
		writeJSON(w, 401, map[string]any{"error": "invalid_token"})
		return
	}
	for _, s := range need {
		if !slices.Contains(granted, s) {
			rs.mu.Lock()
			rs.forbids++
			rs.mu.Unlock()
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"`, strings.Join(need, " "), prmURL))
			writeJSON(w, 403, map[string]any{"error": "insufficient_scope"})
			return
		}
	}
	writeJSON(w, 200, map[string]any{"ok": true, "body": body.String()})
}

func readAll(r *http.Request) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// followRedirect is a Config.Authorize that approves like a browser
// would against testAS: it reads the redirect's parameters.
func followRedirect(ctx context.Context, authURL string) (url.Values, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	return loc.Query(), nil
}

func codeConfig() Config {
	return Config{RedirectURL: "http://127.0.0.1:1/callback", Authorize: followRedirect}
}

// post sends body to u through the transport.
func post(t *testing.T, tr http.RoundTripper, u, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}
