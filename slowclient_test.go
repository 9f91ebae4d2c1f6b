package weft

import (
	"context"
	"errors"
	"log/slog"
	"net"
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
	s := NewServer(Implementation{Name: "slow"}, &Options{WriteTimeout: 200 * time.Millisecond, KeepAlive: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	big := strings.Repeat("x", 64<<10)
	err := s.AddTool(Tool{Name: "flood", Description: "Sends progress until it cannot."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
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
