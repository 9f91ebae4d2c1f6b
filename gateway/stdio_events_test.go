package gateway_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/weftmcp/weft/internal/sdkclients"
)

// TestStdioClientHearsUpstreamChanges: a 2025-11-25 client (the official Go
// SDK's and the TypeScript SDK v2's) reaches `weft gateway --stdio`, which
// fronts weft-conformance -stdio spoken to in either era; when the upstream
// changes a resource the client subscribed to, its tools or its prompts,
// the client's handlers fire, and after unsubscribe no update arrives.
func TestStdioClientHearsUpstreamChanges(t *testing.T) {
	weft := weftBin(t)
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
			dir := t.TempDir()
			cfg := filepath.Join(dir, "gateway.yaml")
			doc := "upstreams:\n  - name: conformance\n    command: " + fixture + "\n    args: [-stdio]\n    prefix: c_\n    protocol: " + protocol + "\n"
			if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			gw := func(data string) []string {
				return []string{weft, "gateway", "--stdio", "--config", cfg, "--data", filepath.Join(dir, data)}
			}
			t.Run("go-sdk", func(t *testing.T) {
				sdkclients.GoSDK(t, names, gw("go")...).Check(t, names)
			})
			t.Run("typescript-sdk-v2", func(t *testing.T) {
				sdkclients.TypeScript(t, names, gw("ts")...).Check(t, names)
			})
		})
	}
}
