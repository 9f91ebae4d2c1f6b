package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// TestGatewayCommand: `weft gateway` fronts `weft serve --stdio` (spoken
// to as a 2025-11-25 server) over HTTP; a 2026-07-28 client completes the
// demo's form elicitation through it, under the configured rename.
func TestGatewayCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	// The upstream prints a banner on stdout first, as many servers do:
	// stdoutNoise log accepts it (without it the gateway would not start).
	doc := "upstreams:\n" +
		"  - name: demo\n" +
		"    command: sh\n" +
		"    args: [-c, 'echo \"demo starting\"; exec \"$0\" serve --stdio --data ./upstream-data', " + strconv.Quote(weftBin) + "]\n" +
		"    stdoutNoise: log\n" +
		"    dir: .\n" +
		"    protocol: \"2025-11-25\"\n" +
		"    prefix: demo.\n" +
		"    rename: {catalog.continue: approve_catalog}\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("stdio", func(t *testing.T) { gatewayOverStdio(t, cfg, filepath.Join(dir, "gw-stdio")) })
	addr := freeAddr(t)
	cmd := exec.Command(weftBin, "gateway", "--config", cfg, "--addr", addr, "--data", filepath.Join(dir, "gw"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("weft gateway exited with %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("weft gateway did not stop on SIGINT")
		}
	})
	waitPort(t, addr)
	c := client.New(client.NewHTTPTransport("http://"+addr+"/mcp", nil), &client.Options{Handlers: client.Handlers{
		Elicit: func(context.Context, exactjson.Value) (exactjson.Value, error) {
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", exactjson.Object())), nil
		}}})

	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	joined := " " + strings.Join(names, " ") + " "
	if !strings.Contains(joined, " approve_catalog ") || !strings.Contains(joined, " demo.refund.request ") || strings.Contains(joined, " catalog.continue ") {
		t.Fatalf("tools: %v", names)
	}
	res, err := c.CallTool(ctx, "approve_catalog", nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if got := res.Text(); got != "Catalog access approved; continuing." {
		t.Fatalf("result %q", got)
	}
}

// TestGatewayCommandToolSearch: a configuration's toolSearch puts the
// aggregated catalog of two upstreams behind search_tools with one
// upstream's prefix listed; the other's tools are found by search and
// called by name.
func TestGatewayCommandToolSearch(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	upstream := func(name string) string {
		return "  - name: " + name + "\n    command: " + strconv.Quote(weftBin) + "\n    args: [serve, --stdio, --data, ./" + name + "-data]\n" +
			"    dir: .\n    prefix: " + name + ".\n"
	}
	doc := "upstreams:\n" + upstream("a") + upstream("b") + "toolSearch:\n  listed: [a.*]\n  maxResults: 3\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c := startGatewayCmd(t, cfg, filepath.Join(dir, "gw"), &out)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var names []string
	for _, tl := range tools {
		if tl.Name != "search_tools" && !strings.HasPrefix(tl.Name, "a.") {
			t.Errorf("tools/list shows %s", tl.Name)
		}
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "search_tools") || !slices.Contains(names, "a.refund.request") {
		t.Fatalf("tools: %v", names)
	}
	res, err := c.CallTool(ctx, "search_tools", map[string]any{"query": "b.refund.request"})
	if err != nil {
		t.Fatal(err)
	}
	found, _ := res.StructuredContent.Get("tools")
	first, _ := found.Index(0).Get("name")
	if s, _ := first.AsString(); s != "b.refund.request" || len(found.Elements()) > 3 {
		t.Fatalf("search_tools found %v", found)
	}
}

// startGatewayCmd runs `weft gateway --config cfg` on a free port until the
// test ends and returns a client of it; its stderr goes to out.
func startGatewayCmd(t *testing.T, cfg, data string, out *bytes.Buffer) *client.Client {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(weftBin, "gateway", "--config", cfg, "--addr", addr, "--data", data)
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("weft gateway did not stop on SIGINT")
		}
	})
	waitPort(t, addr)
	c := client.New(client.NewHTTPTransport("http://"+addr+"/mcp", nil), nil)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGatewayCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"upstreams":[{"name":"x","command":"/nonexistent/upstream"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	noise := filepath.Join(dir, "noise.json")
	if err := os.WriteFile(noise, []byte(`{"upstreams":[{"name":"x","url":"http://127.0.0.1:1/mcp","stdoutNoise":"log"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "typo.json")
	if err := os.WriteFile(typo, []byte(`{"upstreams":[{"name":"x","comand":"weft"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gateway"}, "--config is required"},
		{[]string{"gateway", "--config", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"gateway", "--config", typo}, `unknown field "comand"`},
		{[]string{"gateway", "--config", noise}, "stdoutNoise apply to command upstreams only"},
		{[]string{"gateway", "--config", bad, "--data", dir}, `upstream "x": cannot start`},
		{[]string{"gateway", "extra"}, "takes no arguments"},
	} {
		out, err := exec.Command(weftBin, tc.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("weft %v: %v\n%s\nwant %q", tc.args, err, out, tc.want)
		}
	}
	out, err := exec.Command(weftBin, "gateway", "--help").CombinedOutput()
	for _, w := range []string{"usage: weft gateway --config FILE", "--addr ADDRESS", "--postgres URL", "--keyring FILE", "--stdio"} {
		if err != nil || !strings.Contains(string(out), w) {
			t.Errorf("weft gateway --help: %v, lacks %q:\n%s", err, w, out)
		}
	}
}

// gatewayOverStdio: `weft gateway --stdio` serves a 2026-07-28 client on
// its stdin and stdout; the demo's elicitation completes over MRTR.
func gatewayOverStdio(t *testing.T, cfg, data string) {
	tr, err := client.CommandTransport(exec.Command(weftBin, "gateway", "--stdio", "--config", cfg, "--data", data), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(tr, &client.Options{Handlers: client.Handlers{
		Elicit: func(context.Context, exactjson.Value) (exactjson.Value, error) {
			return exactjson.Object(exactjson.Field("action", exactjson.String("decline"))), nil
		}}})

	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "approve_catalog", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(); got != "Catalog access was declined; nothing was changed." {
		t.Fatalf("result %q", got)
	}
}

// TestGatewayCommandSQLite: by default `weft gateway` keeps its state in
// SQLite in the data directory, so a 2025-11-25 client's session outlives
// a restart of the gateway (the in-process store forgot it: 404).
func TestGatewayCommandSQLite(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	doc := "upstreams:\n  - name: demo\n    command: " + weftBin + "\n    args: [serve, --stdio, --data, ./upstream-data]\n    dir: .\n    prefix: demo.\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	data := filepath.Join(dir, "gw")
	start := func() (stop func()) {
		cmd := exec.Command(weftBin, "gateway", "--config", cfg, "--addr", addr, "--data", data)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitPort(t, addr)
		return func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("weft gateway exited with %v\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("weft gateway did not stop on SIGINT")
			}
		}
	}
	post := func(session, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	stop := start()
	resp, body := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %q %s", resp.StatusCode, session, body)
	}
	if resp, body := post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	stop()
	stop = start()
	defer stop()
	resp, body = post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "demo.") {
		t.Fatalf("tools/list in the session after a restart: %d %s", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(data, "gateway.db")); err != nil {
		t.Fatalf("no SQLite store: %v", err)
	}
}
