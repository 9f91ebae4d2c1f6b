package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/hydratest"
	"github.com/weftmcp/weft/internal/nodetest"
	"github.com/weftmcp/weft/internal/partners"
	"github.com/weftmcp/weft/internal/sdkclients"
	"github.com/weftmcp/weft/internal/syncbuf"
	"github.com/weftmcp/weft/internal/testpg"
)

// tokenLog records, per subject, the fingerprints of the tokens a
// Hydra-protected upstream's whoami was called with.
type tokenLog struct {
	mu  sync.Mutex
	fps map[string][]string
}

// observe is a hydratest.ProtectedServer observer.
func (l *tokenLog) observe(sub, authz string) {
	if sub == "" {
		return
	}
	tok := hydratest.TokenFP(strings.TrimPrefix(authz, "Bearer "))
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.fps[sub], tok) {
		l.fps[sub] = append(l.fps[sub], tok)
	}
}

func (l *tokenLog) of(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.fps[sub])
}

// balancer spreads requests over the backends in turn, streaming.
func balancer(t *testing.T, l net.Listener, backends ...string) {
	t.Helper()
	var proxies []*httputil.ReverseProxy
	for _, b := range backends {
		u, _ := url.Parse("http://" + b)
		p := httputil.NewSingleHostReverseProxy(u)
		p.FlushInterval = -1
		proxies = append(proxies, p)
	}
	var next atomic.Uint64
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[next.Add(1)%uint64(len(proxies))].ServeHTTP(w, r)
	})}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
}

// startGatewayProcess runs `weft gateway` with args until the test ends.
func startGatewayProcess(t *testing.T, env []string, args ...string) *syncbuf.Buffer {
	t.Helper()
	cmd := exec.Command(weftBin, append([]string{"gateway"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil && !t.Failed() {
				t.Errorf("weft gateway exited with %v\n%s", err, out)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("weft gateway did not stop on SIGINT")
		}
		if t.Failed() {
			t.Logf("weft gateway %v:\n%s", args, out)
		}
	})
	return out
}

var consentField = regexp.MustCompile(`type="hidden" name="([a-z]+)" value="([^"]*)"`)

// browse is a person's browser at the gateway's authorization server:
// it opens link and follows every redirect (Hydra's login and consent
// app signs in whoever h's subject is), approving the consent page of
// the gateway's authorization server at issuer, until a page that is no
// redirect, or a redirect to stop (returned unfollowed).
func browse(t *testing.T, b *http.Client, issuer, link, stop string) *http.Response {
	t.Helper()
	c := *b
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if stop != "" && strings.HasPrefix(r.URL.String(), stop) {
			return http.ErrUseLastResponse
		}
		if len(via) > 30 {
			return fmt.Errorf("more than 30 redirects")
		}
		return nil
	}
	resp, err := c.Get(link)
	for range 3 {
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(page)))
		form := url.Values{"action": {"approve"}}
		for _, m := range consentField.FindAllStringSubmatch(string(page), -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		if resp.StatusCode != http.StatusOK || form.Get("csrf") == "" {
			return resp
		}
		resp, err = c.PostForm(issuer+"/consent", form)
	}
	t.Fatalf("consent asked again and again")
	return nil
}

// signInCIMD signs the user h's subject names in at the gateway's
// authorization server (issuer) for resource, as a client registered by a
// metadata document at docURL would, and returns the access token and its
// scope.
func signInCIMD(t *testing.T, issuer, resource, docURL, redirect, scope string) (string, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	v := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("v", 40)))
	sum := sha256.Sum256([]byte(v))
	q := url.Values{"response_type": {"code"}, "client_id": {docURL}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {resource}, "scope": {scope}}
	resp := browse(t, &http.Client{Jar: jar, Timeout: 30 * time.Second}, issuer, issuer+"/authorize?"+q.Encode(), redirect)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc == nil || loc.Query().Get("code") == "" {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("sign-in ended at %d %v: %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	tr, err := http.PostForm(issuer+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"code_verifier": {v}, "client_id": {docURL}, "redirect_uri": {redirect}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	if err := json.NewDecoder(tr.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", tr.StatusCode, err)
	}
	return tok.AccessToken, tok.Scope
}

// rawMCP posts a 2026-07-28 request of method (a tools/call of name when
// set) with token, and returns the response, its body read.
func rawMCP(t *testing.T, endpoint, token, method, name string) *http.Response {
	t.Helper()
	params := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	if name != "" {
		params = `{"name":` + strconv.Quote(name) + `,"arguments":{},` + params[1:]
	}
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp
}

// goSDKSession is the official Go SDK client (internal/sdkclients/gosdkhttp)
// driven command by command.
type goSDKSession struct {
	t     *testing.T
	in    io.WriteCloser
	out   *bufio.Scanner
	onURL func(link string) bool
}

func startGoSDK(t *testing.T, bin, mcpURL, token string, onURL func(string) bool) *goSDKSession {
	t.Helper()
	cmd := exec.Command(bin, "-url", mcpURL, "-token", token)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("gosdkhttp stderr:\n%s", stderr.String())
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	s := &goSDKSession{t: t, in: in, out: sc, onURL: onURL}
	if m := s.read(); m["connected"] == nil {
		t.Fatalf("the Go SDK client did not connect: %v", m)
	}
	return s
}

func (s *goSDKSession) read() map[string]any {
	s.t.Helper()
	if !s.out.Scan() {
		s.t.Fatalf("the Go SDK client stopped: %v", s.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(s.out.Bytes(), &m); err != nil {
		s.t.Fatalf("the Go SDK client wrote %q", s.out.Text())
	}
	return m
}

// do sends a command and returns its answer, playing the browser for each
// URL interaction the server asks for on the way.
func (s *goSDKSession) do(cmd map[string]any) map[string]any {
	s.t.Helper()
	b, _ := json.Marshal(cmd)
	fmt.Fprintf(s.in, "%s\n", b)
	for {
		m := s.read()
		link, ok := m["url"].(string)
		if !ok {
			return m
		}
		op := "decline"
		if s.onURL(link) {
			op = "accept"
		}
		fmt.Fprintf(s.in, `{"op":%q}`+"\n", op)
	}
}

func (s *goSDKSession) tools() []string {
	s.t.Helper()
	m := s.do(map[string]any{"op": "list"})
	var names []string
	for _, n := range m["tools"].([]any) {
		names = append(names, n.(string))
	}
	return names
}

// TestGatewayForCompany is the acceptance test of `weft gateway` deployed
// for a company: Ory Hydra is the company's identity provider (dynamic
// registration off); two gateway instances share one PostgreSQL and one
// keyring behind a round-robin balancer; the gateway's own authorization
// server signs users in at Hydra. Alice signs in with the TypeScript SDK v2
// client's OAuth provider, Bob's token drives the official Go SDK client.
// Each reaches the company's tracker (a Weft server protected by Hydra's
// tokens, per-user upstream authorization) with their own account, and a
// shared stdio upstream (npm server-everything). Bob is not granted the
// admin scope, so ev_get-env, which the policy gives that scope, is absent
// from his list and refused (403 insufficient_scope); his quota of ev_echo
// runs out across both instances without touching Alice's; the audit log
// records both.
func TestGatewayForCompany(t *testing.T) {
	dsn := testpg.Reachable(t)
	h := hydratest.Start(t, hydratest.Options{})
	everything := partners.Everything(t)
	goSDK := sdkclients.GoSDKHTTP(t)
	node := nodetest.Node(t)
	tsDir := nodetest.Install(t, filepath.Join("testdata", "tsclient"))
	dir := t.TempDir()

	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + bl.Addr().String()
	resource := base + "/mcp"

	tokens := &tokenLog{fps: map[string][]string{}}
	listToken := "lists-" + hydratest.TokenFP(t.Name()+time.Now().String())
	trackerURL := hydratest.ProtectedServer(t, h, listToken, tokens.observe)
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	listFile := write("tracker-lists", listToken)
	h.CreateClient(t, hydratest.Client{ID: "weft-gateway", Secret: "gateway-secret-0123456789", RedirectURIs: []string{base + "/callback"}})
	h.CreateClient(t, hydratest.Client{ID: "weft-gateway-tracker", Secret: "tracker-secret-0123456789",
		RedirectURIs: []string{base + "/oauth/callback"}, Audience: []string{trackerURL}})
	audit := filepath.Join(dir, "audit.log")
	args, _ := json.Marshal(everything[1:])
	cfg := write("gateway.yaml", fmt.Sprintf(`auth:
  resource: %s
  authorizationServer:
    provider: {issuer: %s, clientId: weft-gateway, clientSecret: "${GATEWAY_IDP_SECRET}"}
    scopes: [mcp, admin]
    restrictedScopes: {admin: {sub: [alice]}}
    development: true
    dynamicRegistration: true
    keysFile: %s
upstreams:
  - name: everything
    command: %s
    args: %s
    prefix: ev_
  - name: tracker
    url: %s
    prefix: up_
    protocol: "2026-07-28"
    oauth:
      tokenFile: %s
      perUser:
        clientId: weft-gateway-tracker
        clientSecret: tracker-secret-0123456789
        authorizationParams: {audience: %q}
policy:
  - {upstream: everything, items: [ev_get-env], scopes: [admin]}
limits:
  - {name: echoes, items: [ev_echo], calls: 3, per: 1h}
audit: {file: %s}
`, resource, h.Issuer, filepath.Join(dir, "as-keys.json"), everything[0], args, trackerURL, listFile, trackerURL, audit))

	schema := testpg.FreshSchema(t, dsn, "gwco")
	keyring := filepath.Join(dir, "keyring.json")
	env := []string{"GATEWAY_IDP_SECRET=gateway-secret-0123456789"}
	var addrs []string
	for i := range 2 {
		addr := freeAddr(t)
		startGatewayProcess(t, env, "--config", cfg, "--addr", addr, "--data", filepath.Join(dir, fmt.Sprintf("gw%d", i)),
			"--keyring", keyring, "--postgres", dsn, "--schema", schema)
		waitPort(t, addr) // the first creates the keyring and the server's keys the second reads
		addrs = append(addrs, addr)
	}
	balancer(t, bl, addrs...)

	// Without a token: 401 pointing at the gateway's metadata, which names
	// its own authorization server.
	resp := rawMCP(t, resource, "", "tools/list", "")
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), base+"/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	// Clients register by metadata document.
	const redirect = "http://127.0.0.1:9/cb"
	var docURL string
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "Test MCP Client", "redirect_uris": []string{redirect},
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	}))
	defer docs.Close()
	docURL = docs.URL + "/client.json"

	// The browser of whoever is signed in at Hydra follows the gateway's
	// per-user start links: a sign-in at the gateway's pages, then the
	// tracker's authorization, ending on the gateway's callback page.
	var hydraMu sync.Mutex
	asked := map[string]int{}
	urlAnswer := func(who string) func(string) bool {
		return func(link string) bool {
			hydraMu.Lock()
			asked[who]++
			defer hydraMu.Unlock()
			h.SetSubject(who)
			jar, _ := cookiejar.New(nil)
			resp := browse(t, &http.Client{Jar: jar, Timeout: 30 * time.Second}, base, link, "")
			if resp.StatusCode != http.StatusOK || !strings.HasSuffix(resp.Request.URL.Path, "/oauth/callback") {
				body, _ := io.ReadAll(resp.Body)
				t.Errorf("%s's browser ended at %s with %s: %s", who, resp.Request.URL, resp.Status, body)
				return false
			}
			return true
		}
	}

	// Alice: the TypeScript SDK v2 client signs in with its OAuth provider
	// (the test plays her browser) and calls through the gateway; ev_get-env
	// needs the admin scope, which the SDK asks for when refused (step-up).
	hydraMu.Lock()
	h.SetSubject("alice")
	calls, _ := json.Marshal([]map[string]any{
		{"name": "ev_get-env"},
		{"name": "ev_echo", "arguments": map[string]any{"message": "a1"}},
		{"name": "ev_echo", "arguments": map[string]any{"message": "a2"}},
	})
	// The SDK takes only https metadata documents: it registers itself.
	ts := exec.Command(node, "gateway.mjs", resource, "-", redirect, string(calls))
	ts.Dir = tsDir
	tsIn, _ := ts.StdinPipe()
	tsOut, _ := ts.StdoutPipe()
	var tsErr strings.Builder
	ts.Stderr = &tsErr
	if err := ts.Start(); err != nil {
		t.Fatal(err)
	}
	var aliceTools [][]string
	var aliceCalls []map[string]any
	auths := 0
	sc := bufio.NewScanner(tsOut)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "AUTH "):
			auths++
			jar, _ := cookiejar.New(nil)
			resp := browse(t, &http.Client{Jar: jar, Timeout: 30 * time.Second}, base, strings.TrimPrefix(line, "AUTH "), redirect)
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if loc == nil || loc.Query().Get("code") == "" {
				t.Fatalf("alice's sign-in ended at %d %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			fmt.Fprintln(tsIn, loc.RawQuery)
		case strings.HasPrefix(line, "TOOLS "):
			var names []string
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "TOOLS ")), &names)
			aliceTools = append(aliceTools, names)
		case strings.HasPrefix(line, "CALL "):
			var m map[string]any
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "CALL ")), &m)
			aliceCalls = append(aliceCalls, m)
		}
	}
	if err := ts.Wait(); err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, tsErr.String())
	}
	hydraMu.Unlock()
	// She signed in with the scope the challenge named (mcp): ev_get-env
	// was hidden; her call of it stepped up to admin (a second sign-in),
	// which she is granted, and then it shows.
	if len(aliceTools) != 2 || slices.Contains(aliceTools[0], "ev_get-env") || !slices.Contains(aliceTools[0], "ev_echo") ||
		!slices.Contains(aliceTools[0], "up_whoami") || !slices.Contains(aliceTools[1], "ev_get-env") || auths != 2 {
		t.Fatalf("alice's tools: %v after %d sign-ins", aliceTools, auths)
	}
	if len(aliceCalls) != 3 {
		t.Fatalf("alice's calls: %v", aliceCalls)
	}
	for _, c := range aliceCalls {
		if c["error"] != nil {
			t.Fatalf("alice's call %v failed", c)
		}
	}

	// Bob: signed in by metadata document too, asking for admin, which he
	// is not granted; his token drives the official Go SDK client.
	hydraMu.Lock()
	h.SetSubject("bob")
	bobToken, bobScope := signInCIMD(t, base, resource, docURL, redirect, "mcp admin")
	h.SetSubject("alice")
	aliceToken, _ := signInCIMD(t, base, resource, docURL, redirect, "mcp admin")
	hydraMu.Unlock()
	if strings.Contains(bobScope, "admin") {
		t.Fatalf("bob was granted %q", bobScope)
	}
	bob := startGoSDK(t, goSDK, resource, bobToken, urlAnswer("bob"))
	if n := bob.tools(); slices.Contains(n, "ev_get-env") || !slices.Contains(n, "ev_echo") || !slices.Contains(n, "up_whoami") {
		t.Fatalf("bob's tools: %v", n)
	}
	if m := bob.do(map[string]any{"op": "call", "name": "ev_get-env"}); m["error"] == nil {
		t.Fatalf("bob called ev_get-env: %v", m)
	}
	// The refusal is the insufficient_scope challenge naming the scope.
	resp = rawMCP(t, resource, bobToken, "tools/call", "ev_get-env")
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 403 || !strings.Contains(ch, "insufficient_scope") || !strings.Contains(ch, "admin") {
		t.Fatalf("bob's ev_get-env over HTTP: %d %q", resp.StatusCode, ch)
	}

	// Each reaches the tracker as themselves, with their own token.
	whoami := func(s *goSDKSession, who string) {
		t.Helper()
		m := s.do(map[string]any{"op": "call", "name": "up_whoami"})
		if txt, _ := m["text"].(string); !strings.HasPrefix(txt, "sub="+who+" ") {
			t.Fatalf("%s's whoami: %v", who, m)
		}
	}
	whoami(bob, "bob")
	alice := startGoSDK(t, goSDK, resource, aliceToken, urlAnswer("alice"))
	whoami(alice, "alice")
	whoami(bob, "bob") // again, without asking: his token is kept (in PostgreSQL)
	whoami(alice, "alice")
	hydraMu.Lock()
	if asked["alice"] != 1 || asked["bob"] != 1 {
		t.Fatalf("users asked to authorize the tracker %v times, want once each (the second call's token comes from PostgreSQL, on either instance)", asked)
	}
	hydraMu.Unlock()
	a, b := tokens.of("alice"), tokens.of("bob")
	if len(a) == 0 || len(b) == 0 || slices.ContainsFunc(a, func(fp string) bool { return slices.Contains(b, fp) }) {
		t.Fatalf("tracker tokens: alice %v, bob %v", a, b)
	}

	// Bob's quota of ev_echo runs out, on whichever instance; Alice has
	// one call left of hers.
	for i := range 3 {
		if m := bob.do(map[string]any{"op": "call", "name": "ev_echo", "args": map[string]any{"message": "b"}}); m["error"] != nil {
			t.Fatalf("bob's echo %d: %v", i+1, m)
		}
	}
	if m := bob.do(map[string]any{"op": "call", "name": "ev_echo", "args": map[string]any{"message": "b"}}); m["error"] == nil {
		t.Fatalf("bob's fourth echo: %v", m)
	}
	if m := alice.do(map[string]any{"op": "call", "name": "ev_echo", "args": map[string]any{"message": "a3"}}); m["error"] != nil {
		t.Fatalf("alice's third echo: %v", m)
	}
	if m := alice.do(map[string]any{"op": "call", "name": "ev_echo", "args": map[string]any{"message": "a4"}}); m["error"] == nil {
		t.Fatalf("alice's fourth echo: %v", m)
	}

	// The audit log (both instances append to it) has every call of both.
	raw, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct{ principal, name, outcome, refusedBy string }
	count := map[rec]int{}
	principals := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		p, _ := m["principal"].(string)
		rb, _ := m["refusedBy"].(string)
		if p != "" {
			principals[p] = true
		}
		count[rec{p, m["name"].(string), m["outcome"].(string), rb}]++
	}
	if len(principals) != 2 || !principals["alice"] || !principals["bob"] {
		t.Fatalf("audit principals %v, want alice and bob", principals)
	}
	// The calls of ev_get-env refused for want of admin (Alice's before her
	// step-up, Bob's twice) are there too, refused at admission.
	if n := count[rec{"", "ev_get-env", "refused", "admission"}]; n < 3 {
		t.Fatalf("audit: %d refusals of ev_get-env at admission:\n%s", n, raw)
	}
	if n := count[rec{"alice", "ev_get-env", "complete", ""}]; n != 1 {
		t.Fatalf("audit: alice's ev_get-env %d times:\n%s", n, raw)
	}
	var echoesDone, echoesRefused, whoamis int
	for r, n := range count {
		switch {
		case r.name == "ev_echo" && r.outcome == "complete":
			echoesDone += n
		case r.name == "ev_echo" && r.refusedBy == "quota:echoes":
			echoesRefused += n
		case r.name == "up_whoami" && r.outcome == "complete":
			whoamis += n
		}
	}
	if echoesDone != 6 || echoesRefused != 2 || whoamis < 4 {
		t.Fatalf("audit: %d echoes, %d refused, %d whoami:\n%s", echoesDone, echoesRefused, whoamis, raw)
	}
}
