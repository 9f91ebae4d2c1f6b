package main

import (
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/internal/syncbuf"
)

// heavyPackages are what weft-demo must not link: they serve options the
// demo does not have (OpenAPI documents, PostgreSQL, OpenTelemetry's SDK,
// Prometheus) and made up most of a cold build of `weft` (docs/benchmarks.md,
// "First run").
var heavyPackages = []string{
	"github.com/pb33f/",
	"github.com/jackc/pgx",
	"go.opentelemetry.io/otel/sdk",
	"github.com/prometheus/",
	"google.golang.org/protobuf",
	"github.com/weftmcp/weft/openapi",
	"github.com/weftmcp/weft/gateway",
}

// TestLinksOnlyWhatTheDemoUses: the packages weft-demo builds leave out
// every heavy package of the weft tool; the embedded SQLite driver, which
// the demo uses, is in.
func TestLinksOnlyWhatTheDemoUses(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, p := range deps {
		for _, h := range heavyPackages {
			if strings.HasPrefix(p, h) {
				t.Errorf("weft-demo links %s (%s...): keep it out of the demo's build", p, h)
			}
		}
	}
	if !slices.Contains(deps, "modernc.org/sqlite") {
		t.Errorf("weft-demo does not link modernc.org/sqlite: its durable tasks need it")
	}
}

// TestServesTheDemo runs weft-demo over HTTP in a fresh data directory,
// lists its tools and calls one with the Go client, then stops it; a
// second start reuses the keyring it created.
func TestServesTheDemo(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	for round := range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr syncbuf.Buffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"--addr", addr, "--data", data}, strings.NewReader(""), &stdout, &stderr)
		}()
		c := client.New(client.NewHTTPTransport("http://"+addr+"/mcp", nil), nil)
		var tools []client.Tool
		deadline := time.Now().Add(30 * time.Second)
		for {
			lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
			tools, err = c.ListTools(lctx)
			lcancel()
			if err == nil || time.Now().After(deadline) {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("weft-demo stopped: %v\n%s", err, stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
		if err != nil {
			t.Fatalf("tools/list: %v\n%s", err, stderr.String())
		}
		names := make([]string, len(tools))
		for i, tl := range tools {
			names[i] = tl.Name
		}
		for _, want := range []string{"catalog.continue", "refund.request", "cart.checkout", "report.generate"} {
			if !slices.Contains(names, want) {
				t.Errorf("round %d: tools %v lack %s", round, names, want)
			}
		}
		if got := callCounter(ctx, t, c); got != "Counter at 3." {
			t.Errorf("round %d: counter.show answered %q", round, got)
		}
		_ = c.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("round %d: weft-demo: %v\n%s", round, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "url:       http://"+addr+"/mcp") {
			t.Errorf("round %d: start-up message lacks the URL:\n%s", round, stdout.String())
		}
		created := strings.Contains(stderr.String(), "created a development keyring")
		if created != (round == 0) {
			t.Errorf("round %d: keyring created = %v, want %v:\n%s", round, created, round == 0, stderr.String())
		}
	}
}

// callCounter calls the demo's counter.show from 3 and returns its text.
func callCounter(ctx context.Context, t *testing.T, c *client.Client) string {
	t.Helper()
	res, err := c.CallTool(ctx, "counter.show", map[string]any{"start": 3})
	if err != nil {
		t.Fatalf("counter.show: %v", err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("counter.show: %+v", res)
	}
	return res.Content[0].Text
}

// TestStdio serves the demo over stdin/stdout to the Go client.
func TestStdio(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--stdio", "--data", t.TempDir()}, inR, outW, io.Discard)
		outW.Close()
	}()
	c := client.New(client.NewStdioTransport(outR, inW, nil), nil)
	if got := callCounter(ctx, t, c); got != "Counter at 3." {
		t.Fatalf("counter.show over stdio answered %q", got)
	}
	inW.Close()
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Errorf("weft-demo --stdio: %v", err)
	}
}

// TestRefusesAnExposedAddress: without authentication, a non-loopback
// address is refused with the way out named.
func TestRefusesAnExposedAddress(t *testing.T) {
	err := run(context.Background(), []string{"--addr", "0.0.0.0:0", "--data", t.TempDir()}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--allow-unauthenticated") || !strings.Contains(err.Error(), "weft serve --tokens") {
		t.Fatalf("want a refusal naming --allow-unauthenticated and weft serve --tokens, got %v", err)
	}
}
