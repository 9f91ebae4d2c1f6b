package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNonLoopbackNeedsAuthentication: serve, gateway and openapi refuse a
// non-loopback --addr without authentication, naming the flag that allows
// it; with --allow-unauthenticated (or, for serve, --tokens) they go on.
func TestNonLoopbackNeedsAuthentication(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	addr := "0.0.0.0:" + port
	missing := dir + "/missing"
	// The gateway reads its config first (its auth section authenticates):
	// one whose upstream command is missing.
	gwConfig := dir + "/gateway.json"
	gwAuthed := dir + "/gateway-auth.json"
	tokens := dir + "/tokens.json"
	for f, doc := range map[string]string{
		gwConfig: `{"upstreams":[{"name":"x","command":"` + missing + `"}]}`,
		gwAuthed: `{"auth":{"tokensFile":"` + tokens + `","resource":"https://mcp.example.com/mcp"},"upstreams":[{"name":"x","command":"` + missing + `"}]}`,
		tokens:   `{"tokens":[{"token":"tok-0123456789abcdef","principal":"p","partition":"p"}]}`,
	} {
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
	}{
		{"serve", []string{"serve", "--addr", addr, "--data", dir}},
		{"serve --openapi", []string{"serve", "--openapi", missing, "--addr", addr}},
		{"gateway", []string{"gateway", "--config", gwConfig, "--addr", addr, "--data", dir + "/gw"}},
		{"openapi", []string{"openapi", "--spec", missing, "--addr", addr}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(weftBin, tt.args...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--allow-unauthenticated") || !strings.Contains(string(out), "not a loopback address") {
				t.Fatalf("weft %s: want a refusal naming --allow-unauthenticated, got %v:\n%s", strings.Join(tt.args, " "), err, out)
			}
			if tt.name == "serve" {
				return // serving is checked below
			}
			// Allowed, the command goes on (to the missing file).
			out, err = exec.Command(weftBin, append(tt.args, "--allow-unauthenticated")...).CombinedOutput()
			if err == nil || strings.Contains(string(out), "loopback") || !strings.Contains(string(out), "missing") {
				t.Fatalf("weft %s --allow-unauthenticated: want the missing file reported, got %v:\n%s", strings.Join(tt.args, " "), err, out)
			}
		})
	}
	t.Run("gateway with an auth section", func(t *testing.T) {
		out, err := exec.Command(weftBin, "gateway", "--config", gwAuthed, "--addr", addr, "--data", dir+"/gw").CombinedOutput()
		if err == nil || strings.Contains(string(out), "loopback") || !strings.Contains(string(out), "missing") {
			t.Fatalf("weft gateway with auth: want the missing command reported, got %v:\n%s", err, out)
		}
	})
	t.Run("gateway with an auth section but no resource", func(t *testing.T) {
		noResource := dir + "/gateway-nores.json"
		if err := os.WriteFile(noResource, []byte(`{"auth":{"tokensFile":"`+tokens+`"},"upstreams":[{"name":"x","command":"`+missing+`"}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(weftBin, "gateway", "--config", noResource, "--addr", addr, "--data", dir+"/gw").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "auth.resource is required") {
			t.Fatalf("weft gateway with auth, no resource: %v:\n%s", err, out)
		}
	})
	t.Run("serve allowed", func(t *testing.T) {
		startServe(t, "--addr", addr, "--data", t.TempDir(), "--allow-unauthenticated")
		waitPort(t, "127.0.0.1:"+port)
	})
}
