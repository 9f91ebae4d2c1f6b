package weft

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// TestNeverReadingClient: a client that stops reading an SSE stream cannot
// hold the handler: writes time out after WriteTimeout, the handler's
// progress calls fail and it returns.
func TestNeverReadingClient(t *testing.T) {
	returned := make(chan error, 1)
	s, err := NewServer(Implementation{Name: "slow"}, &Options{WriteTimeout: 200 * time.Millisecond, KeepAlive: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 64<<10)
	err = s.AddTool(Tool{Name: "flood", Description: "Sends progress until it cannot."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		for i := 1; i <= 100000; i++ {
			if err := req.Progress(float64(i), 0, big); err != nil {
				returned <- err
				return nil, err
			}
		}
		returned <- nil
		return &CallToolResult{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req := "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: flood\r\nContent-Length: " + itoaTest(len(body)) + "\r\n\r\n" + body
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	// Never read. The handler must give up (hang guard only, not a timing assertion).
	select {
	case err := <-returned:
		if err == nil {
			t.Fatal("the handler wrote 100,000 frames of 64 KiB to a client that never reads")
		}
		if !errors.Is(err, errNoStream) && !strings.Contains(err.Error(), "timeout") && !strings.Contains(err.Error(), "deadline") {
			t.Logf("progress failed with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the handler is still blocked writing to a client that never reads")
	}
}

func itoaTest(n int) string { v, _ := exactjson.Int(int64(n)).AsNumber(); return v.String() }

// TestLegacyGetStreamNeverReadingClient: a 2025-11-25 session's GET stream
// whose client stops reading is cut after WriteTimeout too: the stream ends
// (its slot frees, so the session can open another) instead of holding its
// goroutine until TCP gives up.
func TestLegacyGetStreamNeverReadingClient(t *testing.T) {
	s, _ := legacyServerFor(t, &Options{WriteTimeout: 200 * time.Millisecond, KeepAlive: 100 * time.Millisecond})
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://dir", Name: "dir"}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "d")}}, nil
		}))
	ts := startHTTP(t, s)
	c := newLegacyClient(t, ts.URL)
	c.initialize()
	if r := c.call(1, "resources/subscribe", M{"uri": "test://dir"}); string(r.Msg.Result) != "{}" {
		t.Fatalf("subscribe: %v", r)
	}
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + c.sid +
		"\r\nMCP-Protocol-Version: " + c.version + "\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	// Read the response head (the stream is open), then never read again;
	// flood the stream with large notifications until the server gives up
	// on it (hang guard only, not a timing assertion).
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	head, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(head, " 200 ") {
		t.Fatalf("GET stream: %q %v", head, err)
	}
	if r := c.raw(http.MethodGet, nil); r.Status != http.StatusConflict {
		t.Fatalf("a second GET while the stream is open: %v", r)
	}
	big := "test://dir/" + strings.Repeat("x", 32<<10)
	deadline := time.Now().Add(60 * time.Second)
	for {
		for range 64 {
			s.NotifyResourceUpdated(big)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
		must(t, err)
		r.Header = c.headers()
		r.Header.Set("Accept", "text/event-stream")
		res, err := http.DefaultClient.Do(r)
		if err == nil {
			status := res.StatusCode
			res.Body.Close()
			cancel()
			if status == http.StatusOK {
				return // the stuck stream ended: its slot is free again
			}
		} else {
			cancel()
		}
		if time.Now().After(deadline) {
			t.Fatal("the GET stream of a client that never reads still holds its session's slot")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
