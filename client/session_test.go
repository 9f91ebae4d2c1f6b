package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/syncbuf"
)

// restartable serves the current server of a 2025-era upstream that can
// be restarted (a new server, which knows none of the old sessions). With
// tsShape, a request naming a session the current server did not open is
// answered as the TypeScript SDK's servers answer it: HTTP 400 "Bad
// Request: No valid session ID provided" (else the server's own 404).
type restartable struct {
	mu      sync.Mutex
	h       http.Handler
	opened  map[string]bool
	tsShape bool
}

func (s *restartable) restart(h http.Handler) {
	s.mu.Lock()
	s.h, s.opened = h, map[string]bool{}
	s.mu.Unlock()
}

func (s *restartable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h, known := s.h, s.opened[r.Header.Get("Mcp-Session-Id")]
	s.mu.Unlock()
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && !known && s.tsShape {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
		return
	}
	h.ServeHTTP(sessionRecorder{w, func(sid string) {
		s.mu.Lock()
		s.opened[sid] = true
		s.mu.Unlock()
	}}, r)
}

// sessionRecorder reports the session ids its handler hands out (streams
// pass through unbuffered).
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

func pingServer(t *testing.T) http.Handler {
	t.Helper()
	srv, err := weft.NewServer(weft.Implementation{Name: "legacy", Version: "1"},
		&weft.Options{Logger: quietLogger(), Legacy: weft.LegacyOptions{Only: true, InMemorySessions: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddTool(weft.Tool{Name: "ping", Description: "Answers pong."},
		func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("pong")}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestLegacySessionExpired: a 2025-era server that restarted no longer
// knows the session; whether it answers 404 (as the specification asks)
// or 400 "No valid session ID" (as the TypeScript SDK's servers do), the
// client initializes a new session, says so in its log, and sends the
// request again.
func TestLegacySessionExpired(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tsShape bool
	}{{"404", false}, {"400 TypeScript SDK", true}} {
		t.Run(tc.name, func(t *testing.T) {
			up := &restartable{tsShape: tc.tsShape}
			up.restart(pingServer(t))
			hs := httptest.NewServer(up)
			t.Cleanup(hs.Close)
			var logs syncbuf.Buffer
			c := New(NewHTTPTransport(hs.URL, nil), &Options{ProtocolVersion: LegacyProtocolVersion,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})

			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for round := range 2 {
				res, err := c.CallTool(ctx, "ping", nil)
				if err != nil || res.Text() != "pong" {
					t.Fatalf("call %d: %v, %v", round, res, err)
				}
				up.restart(pingServer(t))
			}
			if !strings.Contains(logs.String(), "no longer knows the session") {
				t.Errorf("the re-initialization is not logged; log:\n%s", logs.String())
			}
		})
	}
}

// bodyLog records the POST bodies a client sends, with their headers.
type bodyLog struct {
	mu    sync.Mutex
	posts []string // "session=... version=... body"
}

func (l *bodyLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		l.mu.Lock()
		l.posts = append(l.posts, fmt.Sprintf("session=%t version=%s %s", r.Header.Get("Mcp-Session-Id") != "", r.Header.Get("MCP-Protocol-Version"), b))
		l.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (l *bodyLog) find(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.posts {
		if strings.Contains(p, s) {
			return p
		}
	}
	return ""
}

// TestLegacyCancelNotifies: closing the stream of a request does not
// cancel it in the 2025 era, so a request whose context ends is cancelled
// with notifications/cancelled naming it, posted in its session.
func TestLegacyCancelNotifies(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "legacy", Version: "1"},
		&weft.Options{Logger: quietLogger(), Legacy: weft.LegacyOptions{Only: true, InMemorySessions: true}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	if err := srv.AddTool(weft.Tool{Name: "wait", Description: "Waits until cancelled."},
		func(ctx context.Context, _ *weft.Request) (*weft.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	log := &bodyLog{}
	c := New(NewHTTPTransport(hs.URL, &HTTPOptions{Client: &http.Client{Transport: log}}), &Options{ProtocolVersion: LegacyProtocolVersion})
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "wait", nil)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the tool did not start")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v, want context.Canceled", err)
	}
	call := log.find(`"method":"tools/call"`)
	i := strings.Index(call, `"id":`)
	if i < 0 {
		t.Fatalf("no tools/call posted: %q", call)
	}
	id := strings.TrimLeft(call[i+len(`"id":`):], " ")
	id = id[:strings.IndexAny(id, ",}")]
	want := fmt.Sprintf(`"requestId":%s`, id)
	deadline := time.Now().Add(10 * time.Second)
	for log.find(want) == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := log.find(want)
	if !strings.Contains(got, `"method":"notifications/cancelled"`) || !strings.HasPrefix(got, "session=true version=2025-11-25 ") {
		t.Fatalf("no notifications/cancelled of request %s in the session; posted %q", id, got)
	}
}

// TestSessionStream: the session's GET stream delivers the server's
// notifications and requests outside any request (answers posted); one
// that ends (without event ids) is reopened, Opened reporting each
// opening; the server forgetting the session ends it for good, Ended
// saying so with ErrSessionExpired.
func TestSessionStream(t *testing.T) {
	var gets atomic.Int32
	var mu sync.Mutex
	var getHeaders []string
	answered := make(chan string, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			b, _ := io.ReadAll(r.Body)
			if strings.Contains(string(b), `"method":"initialize"`) {
				w.Header().Set("Mcp-Session-Id", "s1")
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
				return
			}
			if strings.Contains(string(b), `"id":"r1"`) {
				answered <- string(b)
			}
			w.WriteHeader(http.StatusAccepted)
		case http.MethodGet:
			n := gets.Add(1)
			mu.Lock()
			getHeaders = append(getHeaders, r.Header.Get("Mcp-Session-Id")+" "+r.Header.Get("MCP-Protocol-Version"))
			mu.Unlock()
			if n == 3 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"n\":%d}}\n\n", n)
			if n == 1 {
				fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"roots/list\"}\n\n")
				w.(http.Flusher).Flush()
				<-answeredSeen(answered) // the answer is posted while the stream is open
			}
		}
	}))
	t.Cleanup(hs.Close)
	tr := NewHTTPTransport(hs.URL, nil)
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := tr.Do(ctx, &Request{ID: 1, Method: "initialize", Params: exactjson.Object()}, nil); err != nil {
		t.Fatal(err)
	}
	tr.SetProtocolVersion("2025-11-25")
	notes := make(chan string, 4)
	ended := make(chan error, 1)
	var opened atomic.Int32
	err := tr.OpenSessionStream(SessionStreamHandlers{
		Notify: func(n Notification) { notes <- n.Method + " " + enc(n.Params) },
		Request: func(_ context.Context, method string, _ exactjson.Value) (exactjson.Value, error) {
			return exactjson.Object(exactjson.Field("roots", exactjson.Array())), nil
		},
		Opened: func() { opened.Add(1) },
		Ended:  func(err error) { ended <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, ErrSessionExpired) {
			t.Fatalf("Ended(%v), want ErrSessionExpired", err)
		}
	case <-ctx.Done():
		t.Fatal("the stream did not end")
	}
	select {
	case a := <-answered:
		if !strings.Contains(a, `"result":{"roots":[]}`) {
			t.Errorf("the answer to roots/list on the stream: %s", a)
		}
	default:
		t.Error("the server's request on the stream was not answered")
	}
	close(notes)
	var got []string
	for n := range notes {
		got = append(got, n)
	}
	if want := []string{`notifications/tools/list_changed {"n":1}`, `notifications/tools/list_changed {"n":2}`}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("notifications %q, want %q", got, want)
	}
	if n := opened.Load(); n != 2 {
		t.Errorf("Opened %d times, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, h := range getHeaders {
		if h != "s1 2025-11-25" {
			t.Errorf("GET %d: session and version %q", i+1, h)
		}
	}
}

// answeredSeen returns a channel closed once the answer to r1 arrived
// (and puts it back for the test to read).
func answeredSeen(answered chan string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		a := <-answered
		answered <- a
		close(ch)
	}()
	return ch
}

// TestResetSessionSendsNothing: once a 2025-era session is reset (the
// server forgot it, the connection is being replaced), the transport sends
// no request but initialize. Sent without its session, a request would
// reach a server of both eras as a 2026-07-28 request and fail there
// (-32602, no _meta): the caller gets ErrSessionExpired instead, and the
// client opens a new session.
func TestResetSessionSendsNothing(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "both-eras", Version: "1"},
		&weft.Options{Logger: quietLogger(), Legacy: weft.LegacyOptions{InMemorySessions: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddTool(weft.Tool{Name: "ping", Description: "Answers pong."},
		func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("pong")}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	var posts atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	tr := NewHTTPTransport(hs.URL, nil)
	c := New(tr, &Options{ProtocolVersion: LegacyProtocolVersion, Logger: quietLogger()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if res, err := c.CallTool(ctx, "ping", nil); err != nil || res.Text() != "pong" {
		t.Fatalf("first call: %v, %v", res, err)
	}
	tr.ResetSession()
	before := posts.Load()
	_, err = tr.Do(ctx, &Request{ID: 99, Method: "tools/call", Params: exactjson.Object(exactjson.Field("name", exactjson.String("ping")))}, nil)
	if !errors.Is(err, ErrSessionExpired) {
		t.Errorf("a request after ResetSession: %v, want ErrSessionExpired", err)
	}
	if n := posts.Load() - before; n != 0 {
		t.Errorf("%d requests sent without the session", n)
	}
	if res, err := c.CallTool(ctx, "ping", nil); err != nil || res.Text() != "pong" {
		t.Fatalf("the call after the reset (a new session): %v, %v", res, err)
	}
}
