package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// wireLog records the HTTP requests a client sends.
type wireLog struct {
	mu   sync.Mutex
	reqs []string // "METHOD mcp-method session=... version=..."
}

func (l *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, fmt.Sprintf("%s %s session=%t version=%s", r.Method, r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Session-Id") != "", r.Header.Get("MCP-Protocol-Version")))
	l.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (l *wireLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

// TestLegacyEra: against a Weft server that serves only 2025-11-25, an
// unpinned client falls back from 2026-07-28 (-32022) to the 2025 era:
// initialize, notifications/initialized, the session on every later
// request, the server's elicitation (a server-to-client request on the
// call's stream) answered through the Elicit handler with the schema's
// defaults filled in, and DELETE of the session on Close.
func TestLegacyEra(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "legacy-only", Version: "1"},
		&weft.Options{Logger: quietLogger(), Legacy: weft.LegacyOptions{InMemorySessions: true, Only: true}})
	if err != nil {
		t.Fatal(err)
	}
	form := weft.Form(weft.ConditionalCapability)
	type noArgs struct{}
	schema := exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(
			exactjson.Field("name", exactjson.Object(exactjson.Field("type", exactjson.String("string")))),
			exactjson.Field("greeting", exactjson.Object(exactjson.Field("type", exactjson.String("string")), exactjson.Field("default", exactjson.String("Hello")))))),
		exactjson.Field("required", exactjson.Array(exactjson.String("name"))))
	if err := weft.AddTool(srv, weft.Tool{Name: "greet", Description: "Asks for a name.", Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			content, outcome, ok, err := form.Answer(req, "who")
			if !ok || err != nil || outcome != weft.Accepted {
				return nil, weft.AskInput("who", form.Ask("Who are you?", schema))
			}
			name, _ := content.Get("name")
			greeting, _ := content.Get("greeting")
			n, _ := name.AsString()
			g, _ := greeting.AsString()
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(g + ", " + n)}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	log := &wireLog{}
	var asked exactjson.Value
	c := New(NewHTTPTransport(hs.URL, &HTTPOptions{Client: &http.Client{Transport: log}}), &Options{
		Handlers: Handlers{Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
			asked = params
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
				exactjson.Field("content", exactjson.Object(exactjson.Field("name", exactjson.String("Ada"))))), nil
		}},
	})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "greet", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(); got != "Hello, Ada" {
		t.Errorf("result %q, want the handler's name and the schema's default greeting", got)
	}
	if str(asked, "message") != "Who are you?" {
		t.Errorf("the handler was asked %s", enc(asked))
	}
	if v := c.ProtocolVersion(); v != LegacyProtocolVersion {
		t.Errorf("negotiated %q", v)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	lines := log.lines()
	text := strings.Join(lines, "\n")
	// First the era probe, refused; then the handshake without a
	// session; then everything in the session at 2025-11-25.
	want := []string{
		"POST server/discover session=false version=2026-07-28",
		"POST initialize session=false version=",
		"POST  session=true version=2025-11-25", // notifications/initialized
	}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Fatalf("request %d: want %q; requests:\n%s", i, w, text)
		}
	}
	for _, must := range []string{"GET  session=true version=2025-11-25", "POST tools/call session=true version=2025-11-25", "DELETE  session=true"} {
		if !strings.Contains(text, must) {
			t.Errorf("no %q among the requests:\n%s", must, text)
		}
	}
}

// TestSSEResume: a response stream that ends before the response is
// resumed with a GET carrying Last-Event-ID after the server's retry
// time, and the response read there.
func TestSSEResume(t *testing.T) {
	var mu sync.Mutex
	var lastEventID string
	var closedAt, resumedAt time.Time
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		if r.Method == http.MethodPost {
			fmt.Fprint(w, "id: ev-1\nretry: 200\ndata: \n\n")
			fl.Flush()
			mu.Lock()
			closedAt = time.Now()
			mu.Unlock()
			return // the stream ends without the response
		}
		mu.Lock()
		lastEventID, resumedAt = r.Header.Get("Last-Event-ID"), time.Now()
		mu.Unlock()
		fmt.Fprint(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n")
		fl.Flush()
	}))
	t.Cleanup(hs.Close)
	tr := NewHTTPTransport(hs.URL, nil)
	resp, err := tr.Do(context.Background(), &Request{ID: 1, Method: "tools/call", Params: exactjson.Object()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil || !strings.Contains(enc(resp.Result), "resumed") {
		t.Fatalf("response %+v", resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if lastEventID != "ev-1" {
		t.Errorf("Last-Event-ID %q, want ev-1", lastEventID)
	}
	if d := resumedAt.Sub(closedAt); d < 150*time.Millisecond {
		t.Errorf("resumed %v after the stream ended, before the 200 ms retry time", d)
	}
}

// TestDiscoverFallsBackStateless: Discover against a server that serves
// only the 2025 revisions, statelessly (no session store): the client
// falls back from 2026-07-28 and reports what initialize said, then lists
// and calls without a session.
func TestDiscoverFallsBackStateless(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "legacy-stateless", Version: "2"},
		&weft.Options{Logger: quietLogger(), Legacy: weft.LegacyOptions{Only: true}, Instructions: "Say hi."})
	if err != nil {
		t.Fatal(err)
	}
	if err := weft.AddTool(srv, weft.Tool{Name: "hi", Description: "Says hi."},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("hi")}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c := New(NewHTTPTransport(hs.URL, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := c.Discover(ctx)
	if err != nil {
		t.Fatalf("Discover against a 2025-only server: %v", err)
	}
	if len(d.SupportedVersions) != 1 || d.SupportedVersions[0] != "2025-11-25" || d.Instructions != "Say hi." || str(d.ServerInfo, "name") != "legacy-stateless" {
		t.Errorf("Discover = %+v, want what initialize answered", d)
	}
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) != 1 {
		t.Fatalf("ListTools: %v %v", tools, err)
	}
	res, err := c.CallTool(ctx, "hi", nil)
	if err != nil || res.Text() != "hi" {
		t.Fatalf("CallTool: %v %v", res, err)
	}
}
