package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// TestGatewayNoisyNeighbours: `weft gateway` keys each shared capacity by
// the authenticated caller, so two callers on one host (or behind one
// proxy) are two tenants. Without authentication they are one: the
// anonymous half of each check shows the second client refused, which is
// what every authenticated caller suffered before the gateway
// authenticated anyone. Capacities: listen streams, calls of a 2025-era
// upstream parked waiting for their client's input, the processes of a
// 2025-era stdio upstream, and 2025-11-25 sessions.
func TestGatewayNoisyNeighbours(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"tokens":[
		{"token":"alice-token-0123456789","principal":"alice","partition":"alice","scopes":["mcp"]},
		{"token":"bob-token-0123456789","principal":"bob","partition":"bob","scopes":["mcp"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "gateway.yaml")
	doc := "upstreams:\n  - name: demo\n    command: " + strconv.Quote(weftBin) + "\n    args: [serve, --stdio, --data, ./demo-data]\n" +
		"    dir: .\n    protocol: \"2025-11-25\"\n    prefix: demo.\n    maxParkedCalls: 4\n    maxParkedPerCaller: 2\n" +
		// Two processes, each kept by one waiting call: one per caller.
		"  - name: solo\n    command: " + strconv.Quote(weftBin) + "\n    args: [serve, --stdio, --data, ./solo-data]\n" +
		"    dir: .\n    protocol: \"2025-11-25\"\n    prefix: solo.\n    maxProcesses: 2\n    oneCallPerProcess: true\n    callTimeout: 2s\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(extra ...string) string {
		addr := freeAddr(t)
		startGatewayProcess(t, nil, append([]string{"--config", cfg, "--addr", addr, "--data", filepath.Join(dir, "gw-"+addr)}, extra...)...)
		waitPort(t, addr)
		return "http://" + addr + "/mcp"
	}
	authed, anon := start("--tokens", tokens), start()
	caller := func(url, token string) *client.Client {
		c := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{BearerToken: token}),
			&client.Options{Capabilities: exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))})
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// fill opens listen streams as c until one is refused, and returns how
	// many it opened.
	fill := func(c *client.Client) int {
		for n := range 100 {
			lctx, stop := context.WithCancel(ctx)
			t.Cleanup(stop)
			if _, err := c.Listen(lctx, client.ListenFilter{ToolsListChanged: true}); err != nil {
				if !strings.Contains(err.Error(), "Too many open subscriptions of this caller") {
					t.Fatalf("listen %d: %v", n+1, err)
				}
				return n
			}
		}
		t.Fatal("100 listen streams of one caller were all accepted")
		return 0
	}
	var parkOn func(c *client.Client, tool string) error
	// park calls demo.catalog.continue, which asks for a form, as c and
	// leaves it waiting; it returns the refusal, if any.
	park := func(c *client.Client) error { return parkOn(c, "demo.catalog.continue") }
	parkOn = func(c *client.Client, tool string) error {
		res, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String(tool))))
		if err != nil {
			return err
		}
		if rt, _ := res.Get("resultType"); rt.String() != `"input_required"` {
			t.Fatalf("%s answered %s", tool, res)
		}
		return nil
	}

	t.Run("listen streams", func(t *testing.T) {
		if n := fill(caller(authed, "alice-token-0123456789")); n == 0 {
			t.Fatal("alice opened no stream")
		}
		if _, err := caller(authed, "bob-token-0123456789").Listen(ctx, client.ListenFilter{ToolsListChanged: true}); err != nil {
			t.Fatalf("bob, on alice's host, was refused: %v", err)
		}
		fill(caller(anon, ""))
		if _, err := caller(anon, "").Listen(ctx, client.ListenFilter{ToolsListChanged: true}); err == nil {
			t.Fatal("a second anonymous client on the host got a stream: the check above would pass without identities")
		}
	})
	t.Run("parked calls", func(t *testing.T) {
		alice, bob := caller(authed, "alice-token-0123456789"), caller(authed, "bob-token-0123456789")
		for i := range 2 {
			if err := park(alice); err != nil {
				t.Fatalf("alice's park %d: %v", i+1, err)
			}
		}
		if err := park(alice); err == nil || !strings.Contains(err.Error(), "Too many of your calls") {
			t.Fatalf("alice's third park: %v", err)
		}
		if err := park(bob); err != nil {
			t.Fatalf("bob, on alice's host, could not park: %v", err)
		}
		a, b := caller(anon, ""), caller(anon, "")
		for range 2 {
			if err := park(a); err != nil {
				t.Fatal(err)
			}
		}
		if err := park(b); err == nil {
			t.Fatal("a second anonymous client on the host parked a call: the check above would pass without identities")
		}
	})
	t.Run("processes", func(t *testing.T) {
		alice, bob := caller(authed, "alice-token-0123456789"), caller(authed, "bob-token-0123456789")
		if err := parkOn(alice, "solo.catalog.continue"); err != nil {
			t.Fatalf("alice's first call: %v", err)
		}
		// Her second call waits for a process of her share (she keeps one
		// of two) in vain.
		if err := parkOn(alice, "solo.catalog.continue"); err == nil {
			t.Fatal("alice's second call got a process beyond her share")
		}
		if err := parkOn(bob, "solo.catalog.continue"); err != nil {
			t.Fatalf("bob, on alice's host, got no process: %v", err)
		}
		a, b := caller(anon, ""), caller(anon, "")
		if err := parkOn(a, "solo.catalog.continue"); err != nil {
			t.Fatal(err)
		}
		if err := parkOn(b, "solo.catalog.continue"); err == nil {
			t.Fatal("a second anonymous client on the host got a process: the check above would pass without identities")
		}
	})
	t.Run("2025 sessions", func(t *testing.T) {
		// initialize opens a 2025-11-25 session as token; it reports
		// whether the gateway opened one.
		initialize := func(url, token string) bool {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"noise","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK && resp.Header.Get("Mcp-Session-Id") != ""
		}
		fillSessions := func(url, token string) int {
			for n := range 1000 {
				if !initialize(url, token) {
					return n
				}
			}
			t.Fatal("1,000 sessions of one caller were all opened")
			return 0
		}
		if n := fillSessions(authed, "alice-token-0123456789"); n == 0 {
			t.Fatal("alice opened no session")
		}
		if !initialize(authed, "bob-token-0123456789") {
			t.Fatal("bob, on alice's host, could open no session")
		}
		fillSessions(anon, "")
		if initialize(anon, "") {
			t.Fatal("another anonymous client on the host opened a session: the check above would pass without identities")
		}
	})
}
