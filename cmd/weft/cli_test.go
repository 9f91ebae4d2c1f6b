package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// weftBin is the weft binary built once for the CLI tests.
var weftBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weft-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	weftBin = filepath.Join(dir, "weft")
	if out, err := exec.Command("go", "build", "-o", weftBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building weft: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitPort(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// startServe runs `weft serve` as a subprocess and stops it at cleanup.
func startServe(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(weftBin, append([]string{"serve"}, args...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
}

func runWeft(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(weftBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("weft %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// expectPrompt reads the program's output until it shows want, and returns
// what it read.
func expectPrompt(t *testing.T, r *bufio.Reader, want string) string {
	t.Helper()
	var seen strings.Builder
	for !strings.Contains(seen.String(), want) {
		b, err := r.ReadByte()
		if err != nil {
			t.Fatalf("waiting for %q, saw %q: %v", want, seen.String(), err)
		}
		seen.WriteByte(b)
	}
	return seen.String()
}

// TestServeAndCallInTerminal starts the demo like a user does and completes
// catalog.continue and refund.request with weft call, typing answers into
// its prompts.
func TestServeAndCallInTerminal(t *testing.T) {
	addr := freeAddr(t)
	startServe(t, "--addr", addr, "--data", t.TempDir())
	waitPort(t, addr)
	url := "http://" + addr + "/mcp"
	if out := runWeft(t, "tools", url); !strings.Contains(out, "catalog.continue") || !strings.Contains(out, "refund.request") {
		t.Fatalf("weft tools: %s", out)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		answers [][2]string // prompt to wait for, answer to type
		want    string
		fails   bool // weft call exits non-zero (with want in its output)
	}{
		{"catalog", []string{"call", url, "catalog.continue"},
			[][2]string{{"[a]ccept, [d]ecline or [c]ancel?", "a"}}, "Catalog access approved; continuing.", false},
		{"catalog-decline", []string{"call", url, "catalog.continue"},
			[][2]string{{"[a]ccept, [d]ecline or [c]ancel?", "d"}}, "Catalog access was declined", false},
		{"refund", []string{"call", url, "refund.request", "--args", `{"orderId":"A-7"}`},
			[][2]string{{"[a]ccept", "a"}, {"Refund amount", "lots"}, {"enter a number", "3.50"}}, "Refund of 3.50 for order A-7 requested.", false},
		// Sampling (the user answers as the model) and roots in one round.
		{"headline", []string{"call", url, "text.headline", "--args", `{"text":"The sea rose by a metre."}`},
			[][2]string{{"Your reply as the model", "Tides turn"}},
			"  system: You write short, factual headlines. Answer with the headline only.\n  user: Write a headline for:\n\n    The sea rose by a metre.\n  (at most 40 tokens)\n" +
				"Your reply as the model (empty to decline): Headline: Tides turn\n(written by weft-cli (typed by the user))\nYour workspace: file://", false},
		{"headline-declined", []string{"call", url, "text.headline", "--args", `{"text":"x"}`},
			[][2]string{{"Your reply as the model", ""}}, "you declined to answer the sampling request", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(weftBin, tc.args...)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(stdout)
			var transcript strings.Builder
			for _, a := range tc.answers {
				transcript.WriteString(expectPrompt(t, r, a[0]))
				fmt.Fprintln(stdin, a[1])
			}
			rest, _ := io.ReadAll(r)
			transcript.Write(rest)
			if err := cmd.Wait(); (err != nil) != tc.fails {
				t.Fatalf("weft call: exit error %v (want failure: %v)\n%s", err, tc.fails, rest)
			}
			if !strings.Contains(transcript.String(), tc.want) {
				t.Fatalf("output %q does not contain %q", transcript.String(), tc.want)
			}
		})
	}
	// Errors are one sentence and a non-zero exit.
	out, err := exec.Command(weftBin, "call", url, "no.such.tool").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the server refused the request: Unknown tool") {
		t.Fatalf("unknown tool: %v %s", err, out)
	}
}

// TestRotationRunbook follows docs/key-rotation.md with the CLI across two
// running demo servers sharing a keyring file: state sealed by one before the
// rotation opens on the other after it, and fingerprints match at each step.
func TestRotationRunbook(t *testing.T) {
	dir := t.TempDir()
	keyring := filepath.Join(dir, "keyring.json")
	runWeft(t, "keys", "generate", "--id", "k1", "--keyring", keyring)
	type server struct{ url, admin, token string }
	var servers []server
	for i := range 2 {
		addr, adminAddr := freeAddr(t), freeAddr(t)
		token := filepath.Join(dir, fmt.Sprintf("admin-%d.token", i))
		startServe(t, "--addr", addr, "--data", filepath.Join(dir, fmt.Sprint(i)), "--keyring", keyring,
			"--admin", adminAddr, "--admin-token-file", token)
		waitPort(t, addr)
		waitPort(t, adminAddr)
		servers = append(servers, server{"http://" + addr + "/mcp", "http://" + adminAddr, token})
	}
	admin := func(s server, args ...string) string {
		return runWeft(t, append([]string{"admin", "keys"}, append(args, "--admin", s.admin, "--token-file", s.token)...)...)
	}
	fingerprint := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if f, ok := strings.CutPrefix(l, "fingerprint  "); ok {
				return f
			}
		}
		t.Fatalf("no fingerprint in %q", out)
		return ""
	}
	same := func(step string, outs ...string) {
		t.Helper()
		if fingerprint(outs[0]) != fingerprint(outs[1]) {
			t.Fatalf("%s: fingerprints differ:\n%s\n%s", step, outs[0], outs[1])
		}
	}
	same("start", admin(servers[0], "status"), admin(servers[1], "status"))

	// Seal state on server 0 under k1. (One client per server: its request
	// ids increase, and a retry must not reuse the emitting request's id.)
	ctx := context.Background()
	caps := exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))
	c0 := client.New(client.NewHTTPTransport(servers[0].url, nil), &client.Options{Capabilities: caps})
	defer c0.Close()
	c1 := client.New(client.NewHTTPTransport(servers[1].url, nil), &client.Options{Capabilities: caps})
	defer c1.Close()
	// c1 sends two requests first (the era probe, whose answer the first
	// Discover returns, then a second server/discover), so that its
	// retry's id differs from the emitting request's on c0 (the probe,
	// then the call).
	for range 2 {
		if _, err := c1.Discover(ctx); err != nil {
			t.Fatal(err)
		}
	}
	first := call(t, ctx, c0, exactjson.Object(exactjson.Field("name", exactjson.String("catalog.continue"))))
	state, _ := first.Get("requestState")

	// The runbook: generate, stage everywhere, compare, activate everywhere, compare.
	runWeft(t, "keys", "generate", "--id", "k2", "--keyring", keyring)
	same("staged", admin(servers[0], "stage", "--id", "k2"), admin(servers[1], "stage", "--id", "k2"))
	a0, a1 := admin(servers[0], "activate", "--id", "k2"), admin(servers[1], "activate", "--id", "k2")
	same("activated", a0, a1)
	if !strings.Contains(a0, "active       k2") {
		t.Fatalf("k2 not active: %s", a0)
	}

	retry := exactjson.Object(exactjson.Field("name", exactjson.String("catalog.continue")),
		exactjson.Field("requestState", state),
		exactjson.Field("inputResponses", exactjson.Object(exactjson.Field("approval", exactjson.Object(exactjson.Field("action", exactjson.String("accept")))))))
	// State sealed before the rotation on server 0 opens on server 1 after it.
	done := call(t, ctx, c1, retry)
	if rt, _ := done.Get("resultType"); !exactjson.Equal(rt, exactjson.String("complete")) {
		t.Fatalf("retry after rotation: %s", done)
	}
	// New state is sealed under k2 and opens on the other server.
	second := call(t, ctx, c1, exactjson.Object(exactjson.Field("name", exactjson.String("catalog.continue"))))
	st2, _ := second.Get("requestState")
	if s2, _ := st2.AsString(); !strings.Contains(s2, "weft1.") {
		t.Fatalf("state %q", s2)
	}

	// After the lifetime has passed: remove k1 everywhere and compare.
	same("removed", admin(servers[0], "remove", "--id", "k1"), admin(servers[1], "remove", "--id", "k1"))
	// State sealed under the removed key no longer opens.
	c := c0
	if _, err := c.Call(ctx, "tools/call", retry); err == nil || !strings.Contains(err.Error(), "Invalid request state") {
		t.Fatalf("state under a removed key: %v", err)
	}
	retry2 := retry.With("requestState", st2)
	if _, err := c.Discover(ctx); err != nil { // move past the emitting request's id
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, "tools/call", retry2); err != nil {
		t.Fatalf("state under k2 on server 0: %v", err)
	}
}

func call(t *testing.T, ctx context.Context, c *client.Client, params exactjson.Value) exactjson.Value {
	t.Helper()
	res, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
