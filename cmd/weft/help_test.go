package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestHelp: every command and subcommand answers -h, -help and --help (in
// any position) with its synopsis and its flags on stdout, and exit status
// 0, from the real binary.
func TestHelp(t *testing.T) {
	adminFlags := []string{"--admin URL", "--token-file FILE"}
	withID := append([]string{"--id ID"}, adminFlags...)
	tests := []struct {
		args  []string // the command line, without the help flag
		want  []string // the synopsis, then every flag with its metavar
		flags bool     // the command has flags (a "flags:" section)
	}{
		{nil, []string{"weft serve", "weft keys generate", "weft admin keys status|stage", "weft discover|tools|prompts|resources|templates TARGET", "weft call TARGET TOOL", "weft listen TARGET", "weft task get|follow|cancel TARGET ID"}, false},
		{[]string{"serve"}, []string{"usage: weft serve", "--addr ADDRESS", "--data DIR", "--keyring FILE", "--stdio", "--postgres URL", "--schema NAME",
			"--task-lease DURATION", "--tokens FILE", "--authorization-server URL", "--admin ADDRESS", "--admin-token-file FILE", "(default 127.0.0.1:8080)"}, true},
		{[]string{"keys"}, []string{"weft keys generate --id ID --keyring FILE", "weft keys fingerprint --keyring FILE"}, false},
		{[]string{"keys", "generate"}, []string{"usage: weft keys generate", "--id ID", "--keyring FILE"}, true},
		{[]string{"keys", "fingerprint"}, []string{"usage: weft keys fingerprint", "--keyring FILE"}, true},
		{[]string{"admin"}, []string{"weft admin keys status", "weft admin keys stage", "weft admin keys activate", "weft admin keys rotate", "weft admin keys remove"}, false},
		{[]string{"admin", "keys"}, []string{"weft admin keys status", "weft admin keys remove --id ID"}, false},
		{[]string{"admin", "keys", "status"}, append([]string{"usage: weft admin keys status"}, adminFlags...), true},
		{[]string{"admin", "keys", "stage"}, append([]string{"usage: weft admin keys stage"}, withID...), true},
		{[]string{"admin", "keys", "activate"}, append([]string{"usage: weft admin keys activate"}, withID...), true},
		{[]string{"admin", "keys", "rotate"}, append([]string{"usage: weft admin keys rotate"}, withID...), true},
		{[]string{"admin", "keys", "remove"}, append([]string{"usage: weft admin keys remove"}, withID...), true},
		{[]string{"tools"}, []string{"usage: weft tools TARGET", "--command COMMAND", "--header NAME: VALUE", "--bearer-file FILE", "--json", "--login"}, true},
		{[]string{"logout"}, []string{"usage: weft logout URL", "weft logout --all", "--all"}, true},
		{[]string{"call"}, []string{"usage: weft call TARGET TOOL [NAME=VALUE]... [--args JSON]", "--args JSON", "(default {})", "--command COMMAND"}, true},
		{[]string{"call", "http://127.0.0.1:1/mcp", "echo"}, []string{"usage: weft call TARGET TOOL", "--args JSON"}, true},
		{[]string{"call", "http://127.0.0.1:1/mcp", "echo", "--args", "{}"}, []string{"usage: weft call TARGET TOOL", "--args JSON"}, true},
		{[]string{"discover"}, []string{"usage: weft discover TARGET", "--json"}, true},
		{[]string{"prompts"}, []string{"usage: weft prompts TARGET"}, true},
		{[]string{"resources"}, []string{"usage: weft resources TARGET"}, true},
		{[]string{"templates"}, []string{"usage: weft templates TARGET"}, true},
		{[]string{"prompt"}, []string{"usage: weft prompt TARGET NAME", "--arg NAME=VALUE"}, true},
		{[]string{"read"}, []string{"usage: weft read TARGET URI"}, true},
		{[]string{"complete"}, []string{"usage: weft complete TARGET --prompt NAME ARGUMENT VALUE", "--resource URI-TEMPLATE"}, true},
		{[]string{"listen"}, []string{"usage: weft listen TARGET", "--tools", "--uri URI", "--task ID", "--count N"}, true},
	}
	for _, tt := range tests {
		for _, h := range []string{"-h", "-help", "--help"} {
			args := append(append([]string(nil), tt.args...), h)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				checkHelp(t, args, tt.want, tt.flags)
			})
		}
		// weft help CMD... is the same.
		if len(tt.args) > 0 {
			args := append([]string{"help"}, tt.args...)
			t.Run(strings.Join(args, " "), func(t *testing.T) { checkHelp(t, args, tt.want, tt.flags) })
		}
	}
	// The status command has no --id.
	out, _ := exec.Command(weftBin, "admin", "keys", "status", "--help").Output()
	if strings.Contains(string(out), "--id") {
		t.Errorf("weft admin keys status --help lists --id:\n%s", out)
	}
}

func checkHelp(t *testing.T, args, want []string, flags bool) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(weftBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("weft %s: %v (want exit status 0)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, &stdout, &stderr)
	}
	if stderr.Len() != 0 {
		t.Errorf("help wrote to stderr:\n%s", &stderr)
	}
	for _, w := range want {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("help lacks %q:\n%s", w, &stdout)
		}
	}
	if got := strings.Contains(stdout.String(), "\nflags:\n"); got != flags {
		t.Errorf("flags section present = %v, want %v:\n%s", got, flags, &stdout)
	}
	if strings.Contains(stdout.String(), "flag provided but not defined") || strings.Contains(stdout.String(), "weft:") {
		t.Errorf("help reads like an error:\n%s", &stdout)
	}
}

// TestUsageErrors: a wrong command line exits with status 1 and says what
// is wrong, with the synopsis, on stderr (nothing on stdout).
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{nil, []string{"usage:"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{[]string{"help", "frobnicate"}, []string{`unknown command "frobnicate"`}},
		{[]string{"serve", "--bogus"}, []string{"flag provided but not defined: -bogus", "usage: weft serve", "weft serve --help"}},
		{[]string{"serve", "extra"}, []string{"serve takes no arguments"}},
		{[]string{"keys"}, []string{"keys needs a command", "weft keys generate"}},
		{[]string{"keys", "rename"}, []string{`unknown keys command "rename"`}},
		{[]string{"keys", "generate", "--keyring", "k.json"}, []string{"--id is required", "usage: weft keys generate"}},
		{[]string{"keys", "fingerprint"}, []string{"--keyring is required"}},
		{[]string{"keys", "fingerprint", "--id", "x", "--keyring", "k.json"}, []string{"flag provided but not defined: -id"}},
		{[]string{"admin"}, []string{"usage:"}},
		{[]string{"admin", "keys", "export"}, []string{`unknown admin keys command "export"`}},
		{[]string{"admin", "keys", "status"}, []string{"--admin and --token-file are required", "usage: weft admin keys status"}},
		{[]string{"admin", "keys", "stage", "--admin", "http://127.0.0.1:1", "--token-file", "t"}, []string{"stage needs --id"}},
		{[]string{"admin", "keys", "status", "--id", "k1"}, []string{"flag provided but not defined: -id"}},
		{[]string{"tools"}, []string{"the server's URL is missing", "usage: weft tools TARGET"}},
		{[]string{"call", "http://127.0.0.1:1/mcp"}, []string{"call needs a tool name after the server", "usage: weft call TARGET TOOL"}},
		{[]string{"read", "http://127.0.0.1:1/mcp"}, []string{"read needs the resource's URI after the server", "usage: weft read TARGET URI"}},
		{[]string{"task"}, []string{"task needs get, follow or cancel", "usage: weft task get TARGET ID"}},
		{[]string{"call", "http://127.0.0.1:1/mcp", "echo", "--args"}, []string{"flag needs an argument: -args"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(weftBin, tt.args...)
			cmd.Dir = t.TempDir()
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("weft %s: %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), err, &stdout, &stderr)
			}
			if stdout.Len() != 0 {
				t.Errorf("a usage error wrote to stdout:\n%s", &stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, &stderr)
				}
			}
		})
	}
}
