package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/sessionstore"
)

// The weft command, built on first use: `weft serve --stdio` is the
// upstream of most tests.
var (
	weftOnce sync.Once
	weftDir  string
	weftPath string
	weftErr  error
)

// weftBinDir is the temporary directory of the test's binaries.
func weftBinDir(t testing.TB) string {
	t.Helper()
	weftBin(t)
	return weftDir
}

func weftBin(t testing.TB) string {
	t.Helper()
	weftOnce.Do(func() {
		if weftDir, weftErr = os.MkdirTemp("", "weft-gateway"); weftErr != nil {
			return
		}
		weftPath = filepath.Join(weftDir, "weft")
		if out, err := exec.Command("go", "build", "-o", weftPath, "../cmd/weft").CombinedOutput(); err != nil {
			weftErr = fmt.Errorf("building weft: %v\n%s", err, out)
		}
	})
	if weftErr != nil {
		t.Fatal(weftErr)
	}
	return weftPath
}

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		os.Exit(runFake(os.Stdin, os.Stdout))
	}
	if os.Getenv(tasksEnv) != "" {
		os.Exit(runTasksStdio())
	}
	if os.Getenv(kitEnv) != "" {
		os.Exit(runKitStdio())
	}
	code := m.Run()
	if weftDir != "" {
		os.RemoveAll(weftDir)
	}
	os.Exit(code)
}

// demoUpstream fronts `weft serve --stdio` (its own data directory).
func demoUpstream(t *testing.T, protocol string) gateway.UpstreamConfig {
	t.Helper()
	return gateway.UpstreamConfig{Name: "demo", Command: weftBin(t), Args: []string{"serve", "--stdio", "--data", t.TempDir()},
		Protocol: protocol, Prefix: "demo."}
}

// testKeyring is shared by the instances of one test (a fleet shares its
// keyring).
func testKeyring(t testing.TB) seal.Protector {
	t.Helper()
	k, err := seal.GenerateKey("test")
	if err != nil {
		t.Fatal(err)
	}
	kr, err := seal.NewKeyring(k)
	if err != nil {
		t.Fatal(err)
	}
	return seal.NewManager(kr, nil)
}

type instance struct {
	gw  *gateway.Gateway
	srv *weft.Server
	url string
}

// startGateway runs one gateway instance over real loopback HTTP.
func startGateway(t *testing.T, cfg *gateway.Config, prot seal.Protector, store sessionstore.Store) *instance {
	t.Helper()
	return startGatewayAdmitting(t, cfg, prot, store, nil)
}

// startGatewayAdmitting is startGateway with the server's admission.
func startGatewayAdmitting(t *testing.T, cfg *gateway.Config, prot seal.Protector, store sessionstore.Store, adm weft.Admission) *instance {
	t.Helper()
	return startGatewayLogging(t, cfg, prot, store, adm, nil)
}

// startGatewayLogging is startGatewayAdmitting logging to log (nil: to
// stderr with -v, else nowhere).
func startGatewayLogging(t *testing.T, cfg *gateway.Config, prot seal.Protector, store sessionstore.Store, adm weft.Admission, log *slog.Logger) *instance {
	t.Helper()
	return startGatewayHTTP(t, cfg, prot, store, adm, log, nil)
}

// startGatewayHTTP is startGatewayLogging reaching URL upstreams with hc
// (nil: the gateway's default client).
func startGatewayHTTP(t *testing.T, cfg *gateway.Config, prot seal.Protector, store sessionstore.Store, adm weft.Admission, log *slog.Logger, hc *http.Client) *instance {
	t.Helper()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
		if testing.Verbose() {
			log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	srv, err := weft.NewServer(weft.Implementation{Name: "gateway-test", Version: "1"}, &weft.Options{Protector: prot, Logger: log,
		Legacy: weft.LegacyOptions{InMemorySessions: true}, Admission: adm, URLElicitation: elicit.URLPolicy{AllowedOrigins: []string{"https://example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := gateway.New(ctx, srv, cfg, &gateway.Options{Store: store, Logger: log, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		if err := gw.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &instance{gw: gw, srv: srv, url: hs.URL}
}

func acceptForm(content exactjson.Value) func(context.Context, exactjson.Value) (exactjson.Value, error) {
	return func(context.Context, exactjson.Value) (exactjson.Value, error) {
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", content)), nil
	}
}

func TestLegacyUpstreamFormElicitation(t *testing.T) {
	for _, protocol := range []string{gateway.Version20251125, gateway.Version20250618, ""} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{demoUpstream(t, protocol)}}
			in := startGateway(t, cfg, testKeyring(t), nil)
			asked := 0
			c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{Handlers: client.Handlers{
				Elicit: func(ctx context.Context, p exactjson.Value) (exactjson.Value, error) {
					asked++
					if m, _ := p.Get("message"); !strings.Contains(m.String(), "Approve catalog access") {
						t.Errorf("elicitation params %s", p)
					}
					return acceptForm(exactjson.Object())(ctx, p)
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
			if !strings.Contains(strings.Join(names, " "), "demo.catalog.continue") {
				t.Fatalf("tools %v lack demo.catalog.continue", names)
			}
			res, err := c.CallTool(ctx, "demo.catalog.continue", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != "Catalog access approved; continuing." || asked != 1 {
				t.Fatalf("result %q after %d elicitations", got, asked)
			}
			// The parked call ends just after handing its outcome to the
			// retry, so the count may drop a little after the client has
			// its result.
			waitFor(t, "no parked calls", func() bool { return in.gw.Parked() == 0 })
		})
	}
}

// A 2025-11-25 client in front of the gateway, in front of a 2025-11-25
// upstream: the server's legacy bridge turns the gateway's input_required
// into elicitation/create requests on the client's session, and the answers
// reach the upstream call parked by the gateway.
func TestLegacyClientThroughGateway(t *testing.T) {
	up, _ := fakeUpstream(t, "fake")
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var asked []string
	lc, err := gateway.DialLegacy(ctx, in.url, func(method string, p exactjson.Value) exactjson.Value {
		m, _ := p.Get("message")
		s, _ := m.AsString()
		asked = append(asked, method+":"+s)
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
			exactjson.Field("content", exactjson.Object(exactjson.Field("answer", exactjson.String("old-"+s)))))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	res, err := lc.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("ask")),
		exactjson.Field("arguments", exactjson.Object())))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.String(); !strings.Contains(got, `\"old-first\" \"old-second\"`) ||
		strings.Join(asked, ",") != "elicitation/create:first,elicitation/create:second" {
		t.Fatalf("result %s after %v", got, asked)
	}
	waitFor(t, "no parked calls", func() bool { return in.gw.Parked() == 0 })
}

// Close removes what the gateway registered; a failed New leaves nothing
// registered either.
func TestCloseUnregisters(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "gw", Version: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good, _ := fakeUpstream(t, "fake")
	_, err = gateway.New(ctx, srv, &gateway.Config{Upstreams: []gateway.UpstreamConfig{good,
		{Name: "bad", Command: "/nonexistent/upstream"}}}, nil)

	if err == nil {
		t.Fatal("New succeeded with a missing command")
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c := client.New(client.NewHTTPTransport(hs.URL, nil), nil)
	defer c.Close()
	// A server without tools has no tools capability: tools/list is -32601.
	noTools := func(what string) {
		t.Helper()
		tools, err := c.ListTools(ctx)
		if rpcCode(err) != client.CodeMethodNotFound && (err != nil || len(tools) != 0) {
			t.Fatalf("%s: %d tools, %v", what, len(tools), err)
		}
	}
	noTools("after a failed New")
	gw, err := gateway.New(ctx, srv, &gateway.Config{Upstreams: []gateway.UpstreamConfig{good}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tools, err := c.ListTools(ctx); err != nil || len(tools) != 10 {
		t.Fatalf("%d tools, %v", len(tools), err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	noTools("after Close")
}

// Prompts (with completions), resources and resource templates of the
// upstream are served through the gateway, in both eras.
func TestPromptsResourcesCompletions(t *testing.T) {
	for _, protocol := range []string{gateway.Version20251125, gateway.Version20260728} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{demoUpstream(t, protocol)}}, testKeyring(t), nil)
			c := client.New(client.NewHTTPTransport(in.url, nil), nil)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p, err := c.GetPrompt(ctx, "demo.summarize", map[string]string{"text": "MCP", "tone": "formal"})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Text(); !strings.Contains(got, "formal tone") || !strings.Contains(got, "MCP") {
				t.Fatalf("prompt: %q", got)
			}
			comp, err := c.Complete(ctx, client.PromptRef("demo.summarize"), "tone", "f", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(comp.Values, ","); got != "formal,friendly" {
				t.Fatalf("completion: %q", got)
			}
			// The prefix "demo." puts the upstream's weft://demo/... URIs
			// at weft://demo/demo/... (resourcePrefix "demo").
			r, err := c.ReadResource(ctx, "weft://demo/demo/readme")
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Contents) != 1 || r.Contents[0].URI != "weft://demo/demo/readme" || r.Contents[0].Text == "" {
				t.Fatalf("readme: %+v", r.Contents)
			}
			r, err = c.ReadResource(ctx, "weft://demo/demo/orders/42")
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Contents) != 1 || !strings.Contains(r.Contents[0].Text, `"id":"42"`) {
				t.Fatalf("order: %+v", r.Contents)
			}
			for _, uri := range []string{"weft://demo/nothing", "weft://demo/readme", "weft://demo/orders/42"} {
				if _, err := c.ReadResource(ctx, uri); err == nil {
					t.Fatalf("reading %s (unknown, or the upstream's own URI) succeeded", uri)
				}
			}
			tpls, err := c.ListResourceTemplates(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tp := range tpls {
				got = append(got, str(tp, "uriTemplate"))
			}
			if len(got) == 0 || !strings.HasPrefix(got[0], "weft://demo/demo/") {
				t.Fatalf("templates %v, want them under weft://demo/demo/", got)
			}
		})
	}
}
