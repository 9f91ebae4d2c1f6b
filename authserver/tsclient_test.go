package authserver

import (
	"bufio"
	"encoding/json"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/nodetest"
)

// TestTypeScriptClient: the TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0) registers by metadata document and
// completes the flow with its OAuth client provider (the test plays the
// user's browser), then calls the protected tool. It asks for
// offline_access (listed in scopes_supported), so it gets a refresh token,
// and once its access token has expired it refreshes without asking the
// user again.
func TestTypeScriptClient(t *testing.T) {
	node := nodetest.Node(t)
	dir := nodetest.Install(t, filepath.Join("testdata", "tsclient"))
	e := newEnv(t, envOpts{leeway: time.Millisecond, mutate: func(c *Config) { c.AccessTokenTTL = 2 * time.Second }})
	cmd := exec.Command(node, "oauth.mjs", e.mcpURL, e.clientID, e.redirect, "refresh")
	cmd.Dir = dir
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var result, refreshed string
	auths := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "AUTH "):
			auths++
			if auths > 1 {
				t.Fatalf("the client asked the user to authorize again instead of refreshing: %s", line)
			}
			authURL, _ := url.Parse(strings.TrimPrefix(line, "AUTH "))
			if sc := authURL.Query().Get("scope"); !strings.Contains(sc, "offline_access") {
				t.Errorf("the client asked for scope %q: want offline_access, which scopes_supported lists", sc)
			}
			q := e.login(newBrowser(t, e.redirect), authURL.String())
			_, _ = io.WriteString(stdin, q.Encode()+"\n")
		case strings.HasPrefix(line, "RESULT "):
			result = strings.TrimPrefix(line, "RESULT ")
		case strings.HasPrefix(line, "REFRESHED "):
			refreshed = strings.TrimPrefix(line, "REFRESHED ")
		}
	}
	if result == "" || refreshed == "" {
		_ = cmd.Wait()
		t.Fatalf("the TypeScript client did not finish (result %q, after expiry %q):\n%s", result, refreshed, stderr.String())
	}
	type call struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Principal string `json:"principal"`
			} `json:"structuredContent"`
		} `json:"result"`
		TokenType  string `json:"tokenType"`
		HasRefresh bool   `json:"hasRefresh"`
		Changed    bool   `json:"changed"`
	}
	var first, second call
	if err := json.Unmarshal([]byte(result), &first); err != nil {
		t.Fatal(err)
	}
	if first.Result.StructuredContent.Principal != "alice" || !first.HasRefresh {
		t.Fatalf("first call %s: want alice, with a refresh token", result)
	}
	if err := json.Unmarshal([]byte(refreshed), &second); err != nil {
		t.Fatal(err)
	}
	if second.Result.StructuredContent.Principal != "alice" || !second.Changed {
		t.Fatalf("call after expiry %s: want alice with a refreshed access token", refreshed)
	}
}
