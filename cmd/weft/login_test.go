package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
)

// loginAS is an authorization server for the CLI test: a login page that
// sets a session cookie, a consent step that needs it, PKCE and resource
// checks at the token endpoint, dynamic registration and refresh tokens.
type loginAS struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	codes     map[string]codeGrant
	tokens    map[string]string // access token -> resource
	refresh   map[string]string // refresh token -> resource
	authorize int               // authorization requests
	refreshed int               // refresh_token grants
	registers int               // dynamic registrations
}

type codeGrant struct{ challenge, redirect, resource string }

func newLoginAS(t *testing.T) *loginAS {
	a := &loginAS{t: t, codes: map[string]codeGrant{}, tokens: map[string]string{}, refresh: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": a.srv.URL, "authorization_endpoint": a.srv.URL + "/authorize", "token_endpoint": a.srv.URL + "/token",
			"registration_endpoint": a.srv.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"scopes_supported": []string{"mcp", "offline_access"}, "authorization_response_iss_parameter_supported": true,
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.registers++
		a.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": "cli-client", "token_endpoint_auth_method": "none"})
	})
	// The login page sets the session cookie; consent needs it.
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.authorize++
		a.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "as_session", Value: "alice", Path: "/"})
		http.Redirect(w, r, "/consent?"+r.URL.RawQuery, http.StatusFound)
	})
	mux.HandleFunc("GET /consent", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("as_session"); err != nil || c.Value != "alice" {
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "cli-client" || !strings.Contains(q.Get("scope"), "offline_access") {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		code := fmt.Sprintf("code-%d", time.Now().UnixNano())
		a.mu.Lock()
		a.codes[code] = codeGrant{q.Get("code_challenge"), q.Get("redirect_uri"), q.Get("resource")}
		a.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {a.srv.URL}}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		var resource string
		switch r.PostFormValue("grant_type") {
		case "authorization_code":
			g, ok := a.codes[r.PostFormValue("code")]
			delete(a.codes, r.PostFormValue("code"))
			sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || r.PostFormValue("redirect_uri") != g.redirect || r.PostFormValue("resource") != g.resource {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]any{"error": "invalid_grant"})
				return
			}
			resource = g.resource
		case "refresh_token":
			res, ok := a.refresh[r.PostFormValue("refresh_token")]
			delete(a.refresh, r.PostFormValue("refresh_token"))
			if !ok || r.PostFormValue("resource") != res {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]any{"error": "invalid_grant"})
				return
			}
			a.refreshed++
			resource = res
		default:
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		n := time.Now().UnixNano()
		at, rt := fmt.Sprintf("at-%d", n), fmt.Sprintf("rt-%d", n)
		a.tokens[at], a.refresh[rt] = resource, resource
		// A short lifetime: the next run refreshes before using it.
		writeJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 10, "refresh_token": rt, "scope": "mcp offline_access"})
	})
	a.srv = httptest.NewUnstartedServer(mux)
	a.srv.Start() // after a.srv is set: the handlers read a.srv.URL
	t.Cleanup(a.srv.Close)
	return a
}

func (a *loginAS) valid(token, resource string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tokens[token] == resource
}

func (a *loginAS) counts() (authorize, refreshed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.authorize, a.refreshed
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// protectedServer is a Weft server behind bearer tokens of as, with its
// protected resource metadata.
func protectedServer(t *testing.T, as *loginAS) string {
	type noArgs struct{}
	s, err := weft.NewServer(weft.Implementation{Name: "protected", Version: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := weft.AddTool(s, weft.Tool{Name: "whoami", Description: "Says hello."},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("hello, authorized user")}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{as.srv.URL}, "scopes_supported": []string{"mcp"}})
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !as.valid(tok, base+"/mcp") {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp", scope="mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		s.ServeHTTP(w, r)
	}))
	hs := httptest.NewUnstartedServer(mux)
	base = "http://" + hs.Listener.Addr().String() // before the handlers run
	hs.Start()
	t.Cleanup(hs.Close)
	return base + "/mcp"
}

// TestCallLogin: weft call --login against a protected server authorizes
// in the "browser" (the test follows the printed URL with a cookie jar,
// as a browser would, through the login page to the CLI's loopback
// redirect), caches the tokens in the user's configuration directory
// with mode 0600, uses and refreshes them on the next call without
// --login, and weft logout forgets them.
func TestCallLogin(t *testing.T) {
	as := newLoginAS(t)
	mcpURL := protectedServer(t, as)
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "PATH="+t.TempDir())
	weft := func(args ...string) *exec.Cmd {
		cmd := exec.Command(weftBin, args...)
		cmd.Env = env
		return cmd
	}

	// Without a cached token and without --login: a clear refusal.
	out, err := weft("call", mcpURL, "whoami").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs authorization (HTTP 401)") || !strings.Contains(string(out), "--login") {
		t.Fatalf("call without a token: err %v, output:\n%s\nwant a refusal naming --login", err, out)
	}

	// --login: follow the printed URL like a browser.
	cmd, authURL, stdout := startLogin(t, env, "call", mcpURL, "whoami", "--login")
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Authorized") {
		t.Fatalf("the loopback redirect answered %s: %s", resp.Status, page)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("weft call --login: %v\nstdout:\n%s", err, stdout)
	}
	if !strings.Contains(stdout.String(), "hello, authorized user") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	file := filepath.Join(home, "config", "weft", "tokens.json")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}

	// The next call uses the cache; nobody is asked to authorize again.
	out, err = weft("call", mcpURL, "whoami").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello, authorized user") {
		t.Fatalf("call with the cached token: %v\n%s", err, out)
	}
	if authorize, refreshed := as.counts(); authorize != 1 || refreshed != 0 {
		t.Errorf("authorizations %d, refreshes %d; want 1 and 0", authorize, refreshed)
	}

	// Time passes: the cached token has expired. The next call refreshes
	// it (once), still without asking.
	var cache map[string]map[string]map[string]any
	data, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(data, &cache) != nil || cache["tokens"][mcpURL] == nil {
		t.Fatalf("token file: %v\n%s", err, data)
	}
	cache["tokens"][mcpURL]["expiry"] = time.Now().Add(-time.Minute).Format(time.RFC3339Nano)
	data, _ = json.Marshal(cache)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = weft("call", mcpURL, "whoami").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello, authorized user") {
		t.Fatalf("call with the cached token: %v\n%s", err, out)
	}
	if authorize, refreshed := as.counts(); authorize != 1 || refreshed != 1 {
		t.Errorf("authorizations %d, refreshes %d; want 1 and 1", authorize, refreshed)
	}

	// logout forgets the server's tokens.
	if out, err := weft("logout", mcpURL).CombinedOutput(); err != nil {
		t.Fatalf("logout: %v\n%s", err, out)
	}
	data, _ = os.ReadFile(file)
	if strings.Contains(string(data), mcpURL) {
		t.Errorf("the token file still holds the server after logout:\n%s", data)
	}
	out, err = weft("call", mcpURL, "whoami").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--login") {
		t.Fatalf("call after logout: err %v, output:\n%s", err, out)
	}
}

// TestNoLoginNoContact: without --login and without a cached token the CLI
// contacts nothing but the MCP server, and reports its 401 and 403 as what
// they are with the next step, even when the metadata names an
// authorization server that is down (or a placeholder host).
func TestNoLoginNoContact(t *testing.T) {
	var mu sync.Mutex
	var metadata int
	status := http.StatusUnauthorized
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			mu.Lock()
			metadata++
			mu.Unlock()
			writeJSON(w, map[string]any{"resource": "http://" + r.Host + "/mcp", "authorization_servers": []string{"https://auth.example.com"}})
			return
		}
		mu.Lock()
		st := status
		mu.Unlock()
		if st == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource/mcp"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="admin"`)
		}
		http.Error(w, "no", st)
	}))
	defer srv.Close()
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"))
	for _, c := range []struct {
		status int
		args   []string
		want   string
	}{
		{http.StatusUnauthorized, []string{"tools", srv.URL + "/mcp"}, "needs authorization (HTTP 401): run the command again with --login, or give a token with --bearer-file"},
		{http.StatusUnauthorized, []string{"call", srv.URL + "/mcp", "echo"}, "needs authorization (HTTP 401)"},
		{http.StatusForbidden, []string{"tools", srv.URL + "/mcp", "--bearer", "t"}, `refused this token (HTTP 403): it needs scope "admin"`},
	} {
		mu.Lock()
		status = c.status
		mu.Unlock()
		cmd := exec.Command(weftBin, c.args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("weft %v: err %v, output:\n%s\nwant %q", c.args, err, out, c.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if metadata != 0 {
		t.Errorf("the CLI fetched the authorization metadata %d times without --login", metadata)
	}
}

// TestLoginClientID: --client-id signs in as a client registered for weft
// beforehand: no dynamic registration; the flags apply to --login only.
func TestLoginClientID(t *testing.T) {
	as := newLoginAS(t)
	mcpURL := protectedServer(t, as)
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "PATH="+t.TempDir())
	cmd, authURL, stdout := startLogin(t, env, "call", mcpURL, "whoami", "--login", "--client-id", "cli-client")
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar, Timeout: 10 * time.Second}).Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := cmd.Wait(); err != nil || !strings.Contains(stdout.String(), "hello, authorized user") {
		t.Fatalf("weft call --login --client-id: %v\n%s", err, stdout)
	}
	as.mu.Lock()
	regs := as.registers
	as.mu.Unlock()
	if regs != 0 {
		t.Errorf("%d dynamic registrations with --client-id, want none", regs)
	}
	out, err := exec.Command(weftBin, "tools", mcpURL, "--client-id", "x").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "apply to --login") {
		t.Errorf("--client-id without --login: %v %s", err, out)
	}
}

// startLogin starts weft with args (a command with --login) in env and
// returns it, with its standard output, once it has printed the
// authorization URL (a line holding "/authorize?").
func startLogin(t *testing.T, env []string, args ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(weftBin, args...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := &strings.Builder{}
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	var rest strings.Builder
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "http") && strings.Contains(line, "/authorize?") {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return cmd, line, stdout
		}
		rest.WriteString(line + "\n")
	}
	t.Fatalf("no authorization URL printed; stderr:\n%s", &rest)
	return nil, "", nil
}
