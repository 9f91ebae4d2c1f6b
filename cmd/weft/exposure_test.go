package main

import (
	"net"
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
	tests := []struct {
		name string
		args []string
	}{
		{"serve", []string{"serve", "--addr", addr, "--data", dir}},
		{"serve --openapi", []string{"serve", "--openapi", missing, "--addr", addr}},
		{"gateway", []string{"gateway", "--config", missing, "--addr", addr}},
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
	t.Run("serve allowed", func(t *testing.T) {
		startServe(t, "--addr", addr, "--data", t.TempDir(), "--allow-unauthenticated")
		waitPort(t, "127.0.0.1:"+port)
	})
}
