package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftmcp/weft/internal/demo"
	"github.com/weftmcp/weft/internal/nodetest"
)

// TestTypeScriptClientCatalog drives catalog.continue on a running demo with
// the TypeScript SDK v2 client (@modelcontextprotocol/client): it resolves
// the elicitation through its handler and retries with the echoed state.
func TestTypeScriptClientCatalog(t *testing.T) {
	out := runTSClient(t, "catalog.mjs")
	var got struct {
		Asked  []string `json:"asked"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		ToolCount int `json:"toolCount"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if len(got.Asked) != 1 || got.Asked[0] != "Approve catalog access?" {
		t.Fatalf("elicitations asked: %v", got.Asked)
	}
	if len(got.Result.Content) != 1 || got.Result.Content[0].Text != "Catalog access approved; continuing." {
		t.Fatalf("result: %s", out)
	}
	if got.ToolCount < 5 {
		t.Fatalf("tools listed: %d", got.ToolCount)
	}
}

// TestTypeScriptClientApp reads the demo's MCP App with the TypeScript SDK v2
// client declaring the UI extension: the tool points at the ui:// resource,
// which is listed and served with the app media type and its metadata.
func TestTypeScriptClientApp(t *testing.T) {
	out := runTSClient(t, "app.mjs")
	var got struct {
		ToolURI           string          `json:"toolUri"`
		Listed            bool            `json:"listed"`
		MimeType          string          `json:"mimeType"`
		StartsWithDoctype bool            `json:"startsWithDoctype"`
		Meta              json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if got.ToolURI != demo.CounterAppURI || !got.Listed || got.MimeType != "text/html;profile=mcp-app" || !got.StartsWithDoctype {
		t.Fatalf("app as seen by the TypeScript client: %s", out)
	}
	if !strings.Contains(string(got.Meta), `"ui"`) {
		t.Fatalf("no _meta.ui on the contents: %s", got.Meta)
	}
}

// runTSClient starts a demo server and runs a script of testdata/tsclient
// against it with Node, returning its standard output.
func runTSClient(t *testing.T, script string) []byte {
	t.Helper()
	node := nodetest.Node(t)
	dir := nodetest.Install(t, filepath.Join("testdata", "tsclient"))
	addr := freeAddr(t)
	startServe(t, "--addr", addr, "--data", t.TempDir())
	waitPort(t, addr)
	cmd := exec.Command(node, script, "http://"+addr+"/mcp")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	return out
}
