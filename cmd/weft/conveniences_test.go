package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// weftIn runs weft in dir with stdin closed and returns its combined
// output and whether it succeeded.
func weftIn(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(weftBin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestCLIConveniences: what fastmcp and Inspector CLI users expect, against
// the demo: NAME=VALUE arguments typed by the tool's schema, schemas in
// weft tools, answers for scripts (--answer, --decline, --sampling-reply,
// --no-input), a wire trace, --env for --command, servers named in an
// mcp.json, --version and shell completion.
func TestCLIConveniences(t *testing.T) {
	addr := freeAddr(t)
	data := t.TempDir()
	startServe(t, "--addr", addr, "--data", data)
	waitPort(t, addr)
	url := "http://" + addr + "/mcp"
	dir := t.TempDir()

	cases := []struct {
		name string
		args []string
		ok   bool
		want []string
	}{
		{"key=value typed by the schema", []string{"call", url, "counter.show", "start=5"}, true, []string{"Counter at 5."}},
		{"key=value of the wrong type", []string{"call", url, "counter.show", "start=five"}, false, []string{`argument start is an integer (written as JSON), not "five"`}},
		{"a word that is no argument", []string{"call", url, "counter.show", "start"}, false, []string{`"start" is not an argument NAME=VALUE`}},
		{"schemas in tools", []string{"tools", url}, true, []string{"counter.show", "    start: integer", "    orderId*: string"}},
		{"--answer fills the form", []string{"call", url, "refund.request", "orderId=A1", "--answer", "amount=12.50"}, true, []string{"Refund of 12.50 for order A1 requested."}},
		{"--answer the form refuses", []string{"call", url, "refund.request", "orderId=A1", "--answer", "amount=900"}, false, []string{"--answer amount=900: must be at most 500.00"}},
		{"--decline", []string{"call", url, "refund.request", "orderId=A1", "--decline"}, true, []string{"(declined: --decline)", "Refund cancelled."}},
		{"--no-input", []string{"call", url, "refund.request", "orderId=A1", "--no-input"}, false, []string{"--no-input is given"}},
		{"--sampling-reply", []string{"call", url, "text.headline", "text=hello", "--sampling-reply", "Hello!"}, true, []string{"Headline: Hello!"}},
		{"--trace", []string{"tools", url, "--trace"}, true, []string{`> {"jsonrpc":"2.0","id":1,"method":"server/discover"`, `< {"jsonrpc":"2.0","id":1,"result":{`}},
		{"--env for --command", []string{"tools", "--env", "WEFT_T=yes", "--command",
			"sh -c 'test \"$WEFT_T\" = yes && exec " + weftBin + " serve --stdio --data " + t.TempDir() + "'"}, true, []string{"counter.show"}},
		{"--env without --command", []string{"tools", url, "--env", "A=b"}, false, []string{"--env applies to --command"}},
		{"--version", []string{"--version"}, true, []string{"weft ", "MCP 2026-07-28, 2025-11-25, 2025-06-18"}},
		{"completion of an unknown shell", []string{"completion", "tcsh"}, false, []string{"bash, zsh and fish"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, ok := weftIn(t, dir, c.args...)
			if ok != c.ok {
				t.Fatalf("weft %q: success %v, want %v\n%s", c.args, ok, c.ok, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("weft %q: no %q in\n%s", c.args, w, out)
				}
			}
		})
	}

	t.Run("mcp.json", func(t *testing.T) {
		cfg := `{"mcpServers": {
			"demo": {"command": "` + weftBin + `", "args": ["serve", "--stdio", "--data", "` + t.TempDir() + `"]},
			"web": {"type": "http", "url": "` + url + `", "headers": {"X-Test": "1"}},
			"old": {"type": "sse", "url": "` + url + `"}}}`
		if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(t.TempDir(), "servers.json")
		if err := os.WriteFile(other, []byte(`{"servers": {"vs": {"url": "`+url+`"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			args []string
			ok   bool
			want string
		}{
			{[]string{"tools", "demo"}, true, "counter.show"},
			{[]string{"call", "web", "counter.show", "start=7"}, true, "Counter at 7."},
			{[]string{"call", "vs", "counter.show", "--config", other}, true, "Counter at 0."},
			{[]string{"tools", "nope"}, false, `.mcp.json names no server "nope" (it has: demo, old, web)`},
			{[]string{"tools", "old"}, false, "HTTP+SSE transport of 2024-11-05"},
			{[]string{"call", "demo", "report.generate", "topic=x", "--no-input"}, false, "weft task follow demo "},
		} {
			out, ok := weftIn(t, dir, c.args...)
			if ok != c.ok || !strings.Contains(out, c.want) {
				t.Errorf("weft %q: success %v (want %v), no %q in\n%s", c.args, ok, c.ok, c.want, out)
			}
		}
		if out, ok := weftIn(t, t.TempDir(), "tools", "demo"); ok || !strings.Contains(out, "nor a server named in ./.mcp.json") {
			t.Errorf("a name without an mcp.json: %s", out)
		}
	})

	t.Run("completion scripts", func(t *testing.T) {
		for _, sh := range []string{"bash", "zsh", "fish"} {
			out, ok := weftIn(t, dir, "completion", sh)
			if !ok || !strings.Contains(out, "discover") {
				t.Fatalf("completion %s: %s", sh, out)
			}
			if sh == "bash" {
				check := exec.Command("bash", "-n")
				check.Stdin = strings.NewReader(out)
				if b, err := check.CombinedOutput(); err != nil {
					t.Errorf("bash -n: %v\n%s", err, b)
				}
				// The flags come from weft COMMAND --help.
				script := out + "\nCOMP_WORDS=(weft call --ans); COMP_CWORD=2; PATH=" + filepath.Dir(weftBin) + ":$PATH; _weft; echo \"${COMPREPLY[@]}\"\n"
				b, err := exec.Command("bash", "-c", script).CombinedOutput()
				if err != nil || strings.TrimSpace(string(b)) != "--answer" {
					t.Errorf("completing --ans: %v %q", err, b)
				}
			}
		}
	})
}
