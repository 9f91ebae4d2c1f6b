package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/hydratest"
)

// TestServeBehindAuthServer: `weft serve --auth-upstream` puts the demo
// behind its own authorization server in front of Hydra: a client
// registering by metadata document signs in, consents and lists the
// demo's tools with its token; without one it is sent to the server's
// metadata.
func TestServeBehindAuthServer(t *testing.T) {
	hydra := hydratest.Start(t, hydratest.Options{})
	addr := freeAddr(t)
	base := "http://" + addr
	hydra.CreateClient(t, hydratest.Client{ID: "weft-demo", Secret: "demo-secret-0123456789", RedirectURIs: []string{base + "/callback"}})
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("demo-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const redirect = "http://127.0.0.1:9/cb"
	var docURL string
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "CLI test", "redirect_uris": []string{redirect}})
	}))
	defer docs.Close()
	docURL = docs.URL + "/client.json"
	startServe(t, "--addr", addr, "--data", filepath.Join(dir, "data"), "--auth-upstream", hydra.Issuer,
		"--auth-client-id", "weft-demo", "--auth-client-secret-file", secret, "--auth-dev")
	waitPort(t, addr)

	list := func(token string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, _ := list("")
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), base+"/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("no token: %d %v", resp.StatusCode, resp.Header)
	}
	mr, err := http.Get(base + "/.well-known/oauth-authorization-server")
	if err != nil || mr.StatusCode != 200 {
		t.Fatalf("metadata: %v %v", mr, err)
	}
	mr.Body.Close()

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), redirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	v := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("v", 40)))
	sum := sha256.Sum256([]byte(v))
	q := url.Values{"response_type": {"code"}, "client_id": {docURL}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {base + "/mcp"},
		"scope": {"mcp offline_access"}}
	resp, err = c.Get(base + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := url.Values{"action": {"approve"}}
	for _, m := range regexp.MustCompile(`type="hidden" name="([a-z]+)" value="([^"]*)"`).FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if resp.StatusCode != 200 || form.Get("csrf") == "" {
		t.Fatalf("consent page: %d %s", resp.StatusCode, page)
	}
	resp, err = c.PostForm(base+"/consent", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc == nil || loc.Query().Get("code") == "" || loc.Query().Get("iss") != base {
		t.Fatalf("redirect %v", resp.Header.Get("Location"))
	}
	tr, err := http.PostForm(base+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"code_verifier": {v}, "client_id": {docURL}, "redirect_uri": {redirect}})
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	_ = json.NewDecoder(tr.Body).Decode(&tok)
	tr.Body.Close()
	at, _ := tok["access_token"].(string)
	if at == "" {
		t.Fatalf("token: %d %v", tr.StatusCode, tok)
	}
	resp, body := list(at)
	if resp.StatusCode != 200 || !strings.Contains(body, "catalog.continue") {
		t.Fatalf("tools/list with the token: %d %s", resp.StatusCode, body)
	}

	// A token of the server without the scope the challenge asks for (a
	// refresh narrowed to offline_access alone) is refused: 403 naming it.
	rt, _ := tok["refresh_token"].(string)
	tr, err = http.PostForm(base+"/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {docURL}, "scope": {"offline_access"}})
	if err != nil {
		t.Fatal(err)
	}
	tok = nil
	_ = json.NewDecoder(tr.Body).Decode(&tok)
	tr.Body.Close()
	bare, _ := tok["access_token"].(string)
	if bare == "" || tok["scope"] != nil && tok["scope"] != "" {
		t.Fatalf("narrowed refresh: %d %v", tr.StatusCode, tok)
	}
	resp, body = list(bare)
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusForbidden || !strings.Contains(ch, "insufficient_scope") || !strings.Contains(ch, `scope="mcp"`) {
		t.Errorf("tools/list with a token without scope: %d %q %s", resp.StatusCode, ch, body)
	}
}

// TestLoginToOwnAuthServer: the two commands and nothing else. `weft serve
// --auth-upstream` in front of Ory Hydra (dynamic registration off there)
// and `weft call --login` against it: the CLI registers itself with the
// demo's authorization server, the user signs in at Hydra and consents
// (a headless browser following the printed URL), the call succeeds, and
// the cached token works on the next call without --login. Then the same
// with dynamic registration off and the CLI registered by a metadata
// document (--client-metadata-url) whose loopback redirect URI has no port:
// the CLI's listener port, whatever it is, is accepted (RFC 8252 §7.3).
func TestLoginToOwnAuthServer(t *testing.T) {
	hydra := hydratest.Start(t, hydratest.Options{})
	var docURL string
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "weft CLI (test)",
			"redirect_uris": []string{"http://127.0.0.1/callback"}, "token_endpoint_auth_method": "none",
			"grant_types": []string{"authorization_code", "refresh_token"}})
	}))
	defer docs.Close()
	docURL = docs.URL + "/weft-cli.json"
	for _, c := range []struct {
		name     string
		serve    []string
		login    []string
		clientID func(string) bool
	}{
		{"dynamic registration", nil, nil, func(id string) bool { return strings.HasPrefix(id, "dyn_") }},
		{"metadata document", []string{"--auth-no-dynamic-registration"}, []string{"--client-metadata-url", docURL}, func(id string) bool { return id == docURL }},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := freeAddr(t)
			base := "http://" + addr
			hydra.CreateClient(t, hydratest.Client{ID: "weft-demo-" + addr, Secret: "demo-secret-0123456789", RedirectURIs: []string{base + "/callback"}})
			dir := t.TempDir()
			secret := filepath.Join(dir, "secret")
			if err := os.WriteFile(secret, []byte("demo-secret-0123456789\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			startServe(t, append([]string{"--addr", addr, "--data", filepath.Join(dir, "data"), "--auth-upstream", hydra.Issuer,
				"--auth-client-id", "weft-demo-" + addr, "--auth-client-secret-file", secret, "--auth-dev"}, c.serve...)...)
			waitPort(t, addr)
			loginOwnServer(t, base, c.login, c.clientID)
		})
	}
}

// loginOwnServer runs weft call --login against the demo at base, plays
// the browser, and checks the cached token on a second call.
func loginOwnServer(t *testing.T, base string, loginArgs []string, clientID func(string) bool) {
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "PATH="+t.TempDir())
	cmd, authURL, stdout := startLogin(t, env, append([]string{"call", base + "/mcp", "counter.show", "start=3", "--login"}, loginArgs...)...)
	if q, _ := url.Parse(authURL); !clientID(q.Query().Get("client_id")) || !strings.Contains(q.Query().Get("scope"), "offline_access") {
		t.Errorf("authorization request %s: unexpected client, or no offline_access", authURL)
	}

	// The browser: Hydra signs the user in, Weft's consent page is
	// approved, and the redirect lands on the CLI's loopback listener.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("consent page: %s\n%s", resp.Status, page)
	}
	form := url.Values{"action": {"approve"}}
	for _, m := range regexp.MustCompile(`type="hidden" name="([a-z]+)" value="([^"]*)"`).FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if form.Get("csrf") == "" {
		t.Fatalf("no consent form:\n%s", page)
	}
	resp, err = browser.PostForm(base+"/consent", form)
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Authorized") {
		t.Fatalf("the CLI's loopback redirect answered %s: %s", resp.Status, page)
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(stdout.String(), "Counter at 3.") {
		t.Fatalf("weft call --login: %v\nstdout:\n%s", err, stdout)
	}

	// The next call uses the cached token: no --login, no browser.
	again := exec.Command(weftBin, "call", base+"/mcp", "counter.show", "start=4")
	again.Env = env
	if out, err := again.CombinedOutput(); err != nil || !strings.Contains(string(out), "Counter at 4.") {
		t.Fatalf("call with the cached token: %v\n%s", err, out)
	}
	// Without the cache the server's 401 is reported, not a sign-in.
	fresh := exec.Command(weftBin, "tools", base+"/mcp")
	fresh.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	if out, err := fresh.CombinedOutput(); err == nil || !strings.Contains(string(out), "needs authorization (HTTP 401)") {
		t.Fatalf("tools without a token: %v\n%s", err, out)
	}
}
