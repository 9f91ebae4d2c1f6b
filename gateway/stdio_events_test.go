package gateway_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/weftmcp/weft/internal/sdkclients"
)

// gatewayStdio writes a `weft gateway` configuration of one stdio upstream
// (command and args, tools under prefix) and returns the command line of
// the gateway serving it on stdio.
func gatewayStdio(t *testing.T, prefix, protocol, command string, args ...string) []string {
	t.Helper()
	dir := t.TempDir()
	doc := "upstreams:\n  - name: up\n    command: " + strconv.Quote(command) + "\n    args: ["
	for i, a := range args {
		if i > 0 {
			doc += ", "
		}
		doc += strconv.Quote(a)
	}
	doc += "]\n    prefix: " + prefix + "\n"
	if protocol != "" {
		doc += "    protocol: " + protocol + "\n"
	}
	cfg := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{weftBin(t), "gateway", "--stdio", "--config", cfg, "--data", filepath.Join(dir, "data")}
}

// TestStdioClientHearsUpstreamChanges: a 2025-11-25 client (the official Go
// SDK's and the TypeScript SDK v2's) reaches `weft gateway --stdio`, which
// fronts weft-conformance -stdio spoken to in either era; when the upstream
// changes a resource the client subscribed to, its tools or its prompts,
// the client's handlers fire, and after unsubscribe no update arrives.
func TestStdioClientHearsUpstreamChanges(t *testing.T) {
	fixture := filepath.Join(weftBinDir(t), "weft-conformance")
	if out, err := exec.Command("go", "build", "-o", fixture, "../cmd/weft-conformance").CombinedOutput(); err != nil {
		t.Fatalf("building weft-conformance: %v\n%s", err, out)
	}
	names := sdkclients.Names{
		Resource:     "test://c/watched-resource", // the upstream's test://watched-resource under the prefix
		Update:       "c_test_update_watched_resource",
		ToolChange:   "c_test_trigger_tool_change",
		PromptChange: "c_test_trigger_prompt_change",
	}
	for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("upstream="+protocol, func(t *testing.T) {
			t.Run("go-sdk", func(t *testing.T) {
				sdkclients.GoSDK(t, names, gatewayStdio(t, "c_", protocol, fixture, "-stdio")...).Check(t, names)
			})
			t.Run("typescript-sdk-v2", func(t *testing.T) {
				sdkclients.TypeScript(t, names, gatewayStdio(t, "c_", protocol, fixture, "-stdio")...).Check(t, names)
			})
		})
	}
}

// TestStdioClientHearsServerEverything: the same through `weft gateway
// --stdio` in front of a third-party server, server-everything over stdio,
// whose toggle-subscriber-updates tool makes it announce an update of each
// resource its client (the gateway) subscribed to every five seconds. The
// Go SDK client subscribes to two of them through the gateway, hears both,
// unsubscribes from one and hears only the other from then on.
func TestStdioClientHearsServerEverything(t *testing.T) {
	node, entry := npmServer(t, "@modelcontextprotocol/server-everything", "dist/index.js")
	names := sdkclients.Names{
		Resource: "demo://e/resource/static/document/architecture.md",
		Keep:     "demo://e/resource/static/document/features.md",
		Update:   "e_toggle-subscriber-updates",
	}
	sdkclients.GoSDK(t, names, gatewayStdio(t, "e_", "", node, entry, "stdio")...).Check(t, names)
}
