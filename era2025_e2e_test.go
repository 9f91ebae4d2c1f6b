package weft

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/seal"
)

// End-to-end tests with the official TypeScript SDK v1 client (npm
// @modelcontextprotocol/sdk@1) against the conformance fixture server: a
// multi-round handler driven through real elicitation requests, and a
// session moved between two server processes that share PostgreSQL.
//
// The SDK is installed once into the user cache (WEFT_TS_SDK_DIR overrides
// the directory). Without npm or node the test skips, unless CI is set.

func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not available: %v", name, err)
	}
	return p
}

var tsSDKOnce sync.Once

// tsSDK installs the TypeScript SDK v1 and the client script, returning the
// script's path.
func tsSDK(t *testing.T) string {
	t.Helper()
	npm := requireTool(t, "npm")
	requireTool(t, "node")
	dir := os.Getenv("WEFT_TS_SDK_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir = filepath.Join(cache, "weft-e2e", "ts-sdk-v1")
	}
	var installErr error
	tsSDKOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			installErr = err
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"weft-e2e","private":true,"type":"module"}`), 0o644); err != nil {
			installErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "@modelcontextprotocol/sdk@1")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = fmt.Errorf("npm install @modelcontextprotocol/sdk@1: %v\n%s", err, out)
		}
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "legacy_e2e", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "weft-legacy-e2e-client.mjs")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// buildFixtureServer builds cmd/weft-conformance.
func buildFixtureServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "weft-conformance")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/weft-conformance")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startFixture starts one fixture server process and waits for its port.
func startFixture(t *testing.T, bin string, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, append([]string{"-addr", addr}, args...)...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server %s log:\n%s", addr, logs.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatalf("fixture server on %s did not start: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// e2eResult is what the client script reports.
type e2eResult struct {
	SessionID       string   `json:"sessionId"`
	ProtocolVersion string   `json:"protocolVersion"`
	Server          M        `json:"server"`
	Tools           []string `json:"tools"`
	Elicitations    []string `json:"elicitations"`
	MultiRound      string   `json:"multiRound"`
	Elicitation     string   `json:"elicitation"`
	Logs            []any    `json:"logs"`
	NotFoundCode    any      `json:"notFoundCode"`
}

func runClient(t *testing.T, script, url string) e2eResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, url)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client failed: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var r e2eResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		t.Fatalf("client output %q: %v (stderr %s)", stdout.String(), err, stderr.String())
	}
	return r
}

func checkE2E(t *testing.T, r e2eResult) {
	t.Helper()
	if r.ProtocolVersion != "2025-11-25" || len(r.SessionID) != 43 || r.Server["name"] != "weft-conformance" {
		t.Fatalf("handshake: %+v", r)
	}
	if len(r.Tools) < 20 || r.Tools[0] != "test_simple_text" {
		t.Fatalf("tools (all pages): %v", r.Tools)
	}
	seen := map[string]bool{}
	for _, n := range r.Tools {
		if seen[n] {
			t.Fatalf("tool %s listed twice across pages", n)
		}
		seen[n] = true
	}
	if r.MultiRound != "Both rounds completed." {
		t.Fatalf("multi-round result %q", r.MultiRound)
	}
	want := []string{"Step 1: your name?", "Step 2: confirm.", "Who are you?"}
	if strings.Join(r.Elicitations, "|") != strings.Join(want, "|") {
		t.Fatalf("elicitations %q, want %q", r.Elicitations, want)
	}
	if !strings.Contains(r.Elicitation, "action=accept") || !strings.Contains(r.Elicitation, "octocat") {
		t.Fatalf("elicitation result %q", r.Elicitation)
	}
	if len(r.Logs) != 3 {
		t.Fatalf("logs %v", r.Logs)
	}
	if fmt.Sprint(r.NotFoundCode) != "-32002" {
		t.Fatalf("resource-not-found code %v, want -32002", r.NotFoundCode)
	}
}

func TestLegacyE2ETypeScriptSDK(t *testing.T) {
	script := tsSDK(t)
	bin := buildFixtureServer(t)

	t.Run("one process", func(t *testing.T) {
		url := startFixture(t, bin, "-page-size", "5")
		checkE2E(t, runClient(t, script, url))
	})

	t.Run("two processes sharing PostgreSQL", func(t *testing.T) {
		dsn := testpg.Reachable(t)
		schema := testpg.FreshSchema(t, dsn, "weft_legacy_test")
		key, err := seal.GenerateKey("e2e")
		must(t, err)
		kr, err := seal.NewKeyring(key)
		must(t, err)
		keyring := filepath.Join(t.TempDir(), "keyring.json")
		must(t, seal.WriteKeyringFile(keyring, kr))
		args := []string{"-page-size", "5", "-sessions", dsn, "-sessions-schema", schema, "-keyring", keyring}
		a := startFixture(t, bin, args...)
		b := startFixture(t, bin, args...)
		p := newMoveProxy(t, a, b)
		ts := httptest.NewServer(p)
		defer ts.Close()
		r := runClient(t, script, ts.URL+"/mcp")
		checkE2E(t, r)
		p.checkMoved(t)
	})
}

// moveProxy spreads one client's requests over two backends: requests
// alternate, and the client's answers to server requests always go to the
// backend that is not running the call waiting for them.
type moveProxy struct {
	backends [2]*httputil.ReverseProxy
	mu       sync.Mutex
	next     int
	call     int
	hops     []string
}

func newMoveProxy(t *testing.T, a, b string) *moveProxy {
	p := &moveProxy{}
	for i, raw := range []string{a, b} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
		rp.FlushInterval = -1
		p.backends[i] = rp
	}
	return p
}

func (p *moveProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	var msg struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(b, &msg)
	p.mu.Lock()
	var i int
	kind := r.Method + " " + msg.Method
	if r.Method == http.MethodPost && msg.Method == "" && (msg.Result != nil || msg.Error != nil) {
		i = 1 - p.call
		kind = "POST answer"
	} else {
		i = p.next
		p.next = 1 - p.next
	}
	if msg.Method == "tools/call" {
		p.call = i
	}
	session := r.Header.Get("Mcp-Session-Id") != ""
	p.hops = append(p.hops, fmt.Sprintf("%s session=%v -> %d", kind, session, i))
	p.mu.Unlock()
	p.backends[i].ServeHTTP(w, r)
}

// checkMoved asserts that the session was served by both processes and that
// answers crossed from one process to the other.
func (p *moveProxy) checkMoved(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	used := map[string]bool{}
	answers := 0
	for _, h := range p.hops {
		if strings.Contains(h, "session=true") {
			used[h[len(h)-1:]] = true
		}
		if strings.HasPrefix(h, "POST answer") {
			answers++
		}
	}
	if !used["0"] || !used["1"] || answers != 3 {
		t.Fatalf("the session did not move between the processes (%d answers):\n%s", answers, strings.Join(p.hops, "\n"))
	}
	t.Logf("hops:\n%s", strings.Join(p.hops, "\n"))
}
