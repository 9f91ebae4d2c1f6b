package doccheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeServerAnswersGoSDK is the first-run acceptance test: the
// README's first server, unchanged, answers the official Go SDK's client
// (testdata/gosdkclient, its own module) on 2026-07-28 and on 2025-11-25.
func TestReadmeServerAnswersGoSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the README's server and a Go SDK client")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := extract("README.md", text)
	if err != nil {
		t.Fatal(err)
	}
	var server *block
	for i, b := range blocks {
		if b.dir.Run == "http" {
			server = &blocks[i]
			break
		}
	}
	if server == nil || len(server.dir.Calls) == 0 {
		t.Fatal("the README has no server block with a doccheck call")
	}
	goBin := goCommand(t)
	mod := t.TempDir()
	goMod := fmt.Sprintf("module doccheck.example/readme\n\ngo 1.26\n\nrequire github.com/weftmcp/weft v0.0.0\n\nreplace github.com/weftmcp/weft => %s\n", root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	for name, content := range map[string][]byte{
		"go.mod":  []byte(goMod),
		"go.sum":  sum,
		"main.go": []byte(strings.ReplaceAll(server.src, demoAddr, addr)),
	} {
		if err := os.WriteFile(filepath.Join(mod, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bins := t.TempDir()
	serverBin, clientBin := filepath.Join(bins, "readme"), filepath.Join(bins, "gosdkclient")
	goRun(t, mod, goBin, "build", "-mod=mod", "-o", serverBin, ".")
	clientDir, err := filepath.Abs(filepath.Join("testdata", "gosdkclient"))
	if err != nil {
		t.Fatal(err)
	}
	goRun(t, clientDir, goBin, "build", "-o", clientBin, ".")
	if t.Failed() {
		return
	}
	srv := exec.Command(serverBin)
	srv.Dir = t.TempDir()
	var stderr bytes.Buffer
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer stop(t, srv, &stderr)
	ctx := t.Context()
	if err := waitListening(ctx, addr); err != nil {
		t.Fatalf("the README's server never listened on %s: %v\n%s", addr, err, stderr.String())
	}
	call := server.dir.Calls[0]
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			out, err := exec.CommandContext(ctx, clientBin, "http://"+addr+"/mcp", version, call.Tool, string(call.Args)).Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("the Go SDK client failed on %s: %v\n%s\nserver log:\n%s", version, err, ee.Stderr, stderr.String())
				}
				t.Fatal(err)
			}
			var got struct {
				ProtocolVersion   string          `json:"protocolVersion"`
				Tools             []string        `json:"tools"`
				Text              string          `json:"text"`
				StructuredContent json.RawMessage `json:"structuredContent"`
				IsError           bool            `json:"isError"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("client output %q: %v", out, err)
			}
			if got.ProtocolVersion != version {
				t.Errorf("negotiated %q, want %q", got.ProtocolVersion, version)
			}
			if len(got.Tools) != 1 || got.Tools[0] != call.Tool {
				t.Errorf("tools/list = %v, want [%s]", got.Tools, call.Tool)
			}
			if got.IsError || !strings.Contains(got.Text+string(got.StructuredContent), call.Want) {
				t.Errorf("tools/call %s = %s, want %q", call.Tool, out, call.Want)
			}
		})
	}
}
