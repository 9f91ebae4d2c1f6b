package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
)

// httpUpstream is a Weft server on loopback HTTP speaking both eras.
func httpUpstream(t *testing.T) (*weft.Server, string) {
	t.Helper()
	up, err := weft.NewServer(weft.Implementation{Name: "upstream", Version: "1"}, &weft.Options{Legacy: weft.LegacyOptions{InMemorySessions: true}})
	if err != nil {
		t.Fatal(err)
	}
	form := weft.Form(weft.ConditionalCapability)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(up.AddTool(weft.Tool{Name: "approve", Description: "Asks for a name, then approves.", Inputs: []weft.Input{form}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			if _, ok, _ := weft.FrameworkState[exactjson.Value](req); !ok {
				return nil, weft.AskInput("who", form.Ask("Who approves?", exactjson.Object(
					exactjson.Field("type", exactjson.String("object")),
					exactjson.Field("properties", exactjson.Object(exactjson.Field("name", exactjson.Object(exactjson.Field("type", exactjson.String("string"))))))))).
					WithFrameworkState(exactjson.Object(exactjson.Field("step", exactjson.Int(1))))
			}
			r, _ := req.InputResponses().Get("who")
			c, _ := r.Get("content")
			n, _ := c.Get("name")
			s, _ := n.AsString()
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("approved by " + s)}}, nil
		}))
	must(up.AddTool(weft.Tool{Name: "whoami", Description: "Returns the Authorization header."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("auth=" + req.Header.Get("Authorization"))}}, nil
		}))
	must(up.AddTool(weft.Tool{Name: "count", Description: "Reports progress, then answers."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				_ = req.Progress(float64(i), 3, "step")
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("counted")},
				StructuredContent: exactjson.Object(exactjson.Field("n", exactjson.Int(3)))}, nil
		}))
	hs := httptest.NewServer(up)
	t.Cleanup(hs.Close)
	return up, hs.URL
}

func nameAnswer(name string) func(context.Context, exactjson.Value) (exactjson.Value, error) {
	return acceptForm(exactjson.Object(exactjson.Field("name", exactjson.String(name))))
}

func TestHTTPUpstreams(t *testing.T) {
	for _, protocol := range []string{gateway.Version20251125, gateway.Version20260728, ""} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			_, url := httpUpstream(t)
			up := gateway.UpstreamConfig{Name: "up", URL: url, Protocol: protocol, Prefix: "up_",
				Exclude: []string{"count"}}
			if protocol != gateway.Version20251125 {
				up.Authorization = "passthrough"
				up.Exclude = nil
			} else {
				// The configured header replaces the client's.
				t.Setenv("WEFT_GW_TEST_TOKEN", "from-env")
				up.Headers = map[string]string{"Authorization": "Bearer ${WEFT_GW_TEST_TOKEN}"}
			}
			in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
			var mu sync.Mutex
			var progress []float64
			c := client.New(client.NewHTTPTransport(in.url, &client.HTTPOptions{BearerToken: "tok-1"}), &client.Options{
				Handlers: client.Handlers{Elicit: nameAnswer("ada")},
				OnProgress: func(p, _ float64, _ string) {
					mu.Lock()
					progress = append(progress, p)
					mu.Unlock()
				}})

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
			slices.Sort(names)
			want := []string{"up_approve", "up_count", "up_whoami"}
			if protocol == gateway.Version20251125 {
				want = []string{"up_approve", "up_whoami"}
			}
			if !slices.Equal(names, want) {
				t.Fatalf("tools %v, want %v", names, want)
			}
			res, err := c.CallTool(ctx, "up_approve", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != "approved by ada" {
				t.Fatalf("approve: %q", got)
			}
			res, err = c.CallTool(ctx, "up_whoami", nil)
			if err != nil {
				t.Fatal(err)
			}
			wantAuth := "auth=Bearer from-env"
			if up.Authorization == "passthrough" {
				wantAuth = "auth=Bearer tok-1"
			}
			if got := res.Text(); got != wantAuth {
				t.Fatalf("whoami: %q, want %q", got, wantAuth)
			}
			if protocol == gateway.Version20251125 {
				return
			}
			res, err = c.CallTool(ctx, "up_count", nil)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Text() != "counted" || res.StructuredContent.String() != `{"n":3}` || !slices.Equal(progress, []float64{1, 2, 3}) {
				t.Fatalf("count: %q %s, progress %v", res.Text(), res.StructuredContent, progress)
			}
		})
	}
}

// An upstream's list changes reach the gateway's clients: a 2026-07-28
// upstream's through its subscriptions/listen stream, a 2025 session's
// through its GET stream.
//
// A 2025 session whose GET stream fails to open (HTTP 503 the first time)
// gets it on a later try.
func TestListChangedRefresh(t *testing.T) {
	for _, protocol := range []string{gateway.Version20260728, gateway.Version20251125} {
		t.Run("protocol="+protocol, func(t *testing.T) { testListChangedRefresh(t, protocol, false) })
	}
	t.Run("protocol=2025-11-25,first GET 503", func(t *testing.T) { testListChangedRefresh(t, gateway.Version20251125, true) })
}

func testListChangedRefresh(t *testing.T, protocol string, firstGETFails bool) {
	upSrv, url := httpUpstream(t)
	var gets atomic.Int32
	if firstGETFails {
		url = serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && gets.Add(1) == 1 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			upSrv.ServeHTTP(w, r)
		}))
	}
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: url, Prefix: "up_", Protocol: protocol}}}, testKeyring(t), nil)
	c := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := c.Listen(ctx, client.ListenFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if firstGETFails {
		waitFor(t, "the GET stream asked for again", func() bool { return gets.Load() >= 2 })
	}
	if err := upSrv.AddTool(weft.Tool{Name: "late", Description: "Added later."},
		func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("late")}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-sub.Notifications():
		if n.Method != "notifications/tools/list_changed" {
			t.Fatalf("notification %s", n.Method)
		}
	case <-ctx.Done():
		t.Fatal("no tools/list_changed from the gateway")
	}
	res, err := c.CallTool(ctx, "up_late", nil)
	if err != nil || res.Text() != "late" {
		t.Fatalf("up_late: %v %v", res, err)
	}
	upSrv.RemoveTool("whoami")
	waitFor(t, "up_whoami to go", func() bool {
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(tools, func(tl client.Tool) bool { return strings.HasSuffix(tl.Name, "whoami") })
	})
}

// serveHTTP serves h on loopback until the test ends.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// A 2025 HTTP upstream that restarts forgets its sessions: the next call
// gets 404 (as the spec asks), or 400 with the TypeScript SDK's "Bad
// Request: No valid session ID provided" (issue 27: the gateway then failed
// every call with -31050 until it restarted), and the gateway opens a new
// session and sends it again.
func TestLegacyHTTPSessionExpired(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusBadRequest} {
		t.Run(strconv.Itoa(status), func(t *testing.T) { legacyHTTPSessionExpired(t, status) })
	}
}

// tsSessions answers a request naming a session h did not open with HTTP
// 400 and the error the TypeScript SDK's servers send.
func tsSessions(h http.Handler) http.Handler {
	var mu sync.Mutex
	opened := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			mu.Lock()
			ok := opened[sid]
			mu.Unlock()
			if !ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
				return
			}
		}
		h.ServeHTTP(sessionRecorder{w, func(sid string) { mu.Lock(); opened[sid] = true; mu.Unlock() }}, r)
	})
}

// sessionRecorder reports the session ids its handler hands out.
type sessionRecorder struct {
	http.ResponseWriter
	opened func(string)
}

func (s sessionRecorder) WriteHeader(code int) {
	if sid := s.Header().Get("Mcp-Session-Id"); sid != "" {
		s.opened(sid)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s sessionRecorder) Write(b []byte) (int, error) {
	if sid := s.Header().Get("Mcp-Session-Id"); sid != "" {
		s.opened(sid)
	}
	return s.ResponseWriter.Write(b)
}

func (s sessionRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func legacyHTTPSessionExpired(t *testing.T, status int) {
	newUpstream := func() http.Handler {
		up, err := weft.NewServer(weft.Implementation{Name: "upstream", Version: "1"}, &weft.Options{Legacy: weft.LegacyOptions{InMemorySessions: true}})
		if err != nil {
			t.Fatal(err)
		}
		if err := up.AddTool(weft.Tool{Name: "ping", Description: "Answers pong."},
			func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("pong")}}, nil
			}); err != nil {
			t.Fatal(err)
		}
		if status == http.StatusBadRequest {
			return tsSessions(up)
		}
		return up
	}
	hs := httptest.NewServer(newUpstream())
	addr := hs.Listener.Addr().String()
	// No idle connections kept: one the restart closed could otherwise be
	// reused before the gateway's HTTP client noticed (within
	// milliseconds, as fast as this test restarts), failing the call with
	// EOF, which says nothing of whether the upstream ran it.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	in := startGatewayHTTP(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: hs.URL, Protocol: gateway.Version20251125}}}, testKeyring(t), nil, nil, nil, hc)
	c := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := c.CallTool(ctx, "ping", nil); err != nil || res.Text() != "pong" {
		t.Fatalf("before the restart: %v %v", res, err)
	}
	hs.CloseClientConnections() // the session's GET stream too
	hs.Close()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	hs2 := &httptest.Server{Listener: l, Config: &http.Server{Handler: newUpstream()}}
	hs2.Start()
	defer func() {
		_ = in.gw.Close() // first: its GET stream would hold hs2.Close
		hs2.Close()
	}()
	if res, err := c.CallTool(ctx, "ping", nil); err != nil || res.Text() != "pong" {
		t.Fatalf("after the restart: %v %v", res, err)
	}
}

// Resource updates of an upstream reach the gateway's subscribers: a
// 2026-07-28 upstream's through the listen stream, a 2025 stdio upstream's
// after resources/subscribe.
func TestResourceUpdatesRelayed(t *testing.T) {
	upSrv, url := httpUpstream(t)
	addTextResource(t, upSrv, "test://status")
	fake, _ := fakeUpstream(t, "fake")
	// With prefixes: the gateway subscribes upstream to the upstreams'
	// URIs and relays the updates under the exposed ones.
	fake.Prefix = "fk_"
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: url, Prefix: "up_"}, fake}}, testKeyring(t), nil)
	c := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fsub := subscribe(ctx, t, c, "fake://fk/status")
	expectUpdate(t, fsub, "fake://fk/status", "the 2025 upstream's")
	sub := subscribe(ctx, t, c, "test://up/status")
	// The gateway's listen stream to the upstream was acknowledged before
	// it served: one update is enough.
	upSrv.NotifyResourceUpdated("test://status")
	expectUpdate(t, sub, "test://up/status", "the 2026-07-28 upstream's")
}

// addTextResource registers on srv a resource at uri reading "ok".
func addTextResource(t *testing.T, srv *weft.Server, uri string) {
	t.Helper()
	if err := srv.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: uri, Name: uri}},
		func(context.Context, *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(uri, "text/plain", "ok")}}, nil
		}); err != nil {
		t.Fatal(err)
	}
}

// subscribe opens a listen stream of c for the updates of uri, closed when
// the test ends.
func subscribe(ctx context.Context, t *testing.T, c *client.Client, uri string) *client.Subscription {
	t.Helper()
	sub, err := c.Listen(ctx, client.ListenFilter{ResourceSubscriptions: []string{uri}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// expectUpdate waits up to ten seconds for the next notification of sub,
// which must be an update of uri.
func expectUpdate(t *testing.T, sub *client.Subscription, uri, what string) {
	t.Helper()
	select {
	case n := <-sub.Notifications():
		if n.Method != "notifications/resources/updated" || !strings.Contains(n.Params.String(), strconv.Quote(uri)) {
			t.Fatalf("%s: notification %s %s", what, n.Method, n.Params)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no update of %s through the gateway", what, uri)
	}
}
