package authserver

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftmcp/weft/internal/nodetest"
)

// TestTypeScriptClient: the TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0) registers by metadata document and
// completes the flow with its OAuth client provider (the test plays the
// user's browser), then calls the protected tool.
func TestTypeScriptClient(t *testing.T) {
	node := nodetest.Node(t)
	dir := nodetest.Install(t, filepath.Join("testdata", "tsclient"))
	e := newEnv(t, envOpts{})
	cmd := exec.Command(node, "oauth.mjs", e.mcpURL, e.clientID, e.redirect)
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
	var result string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "AUTH "):
			q := e.login(newBrowser(t, e.redirect), strings.TrimPrefix(line, "AUTH "))
			_, _ = io.WriteString(stdin, q.Encode()+"\n")
		case strings.HasPrefix(line, "RESULT "):
			result = strings.TrimPrefix(line, "RESULT ")
		}
	}
	if result == "" {
		_ = cmd.Wait()
		t.Fatalf("the TypeScript client did not finish:\n%s", stderr.String())
	}
	var got struct {
		Result struct {
			StructuredContent struct {
				Principal string `json:"principal"`
			} `json:"structuredContent"`
		} `json:"result"`
		TokenType  string `json:"tokenType"`
		HasRefresh bool   `json:"hasRefresh"`
	}
	if err := json.Unmarshal([]byte(result), &got); err != nil {
		t.Fatal(err)
	}
	if got.Result.StructuredContent.Principal != "alice" {
		t.Fatalf("result %s", result)
	}
}
