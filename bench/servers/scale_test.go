package servers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft"
)

// TestScaleSessions opens two 2025-11-25 sessions on every in-memory
// session server over loopback, as benchload does, and checks the answers
// and the memory report.
func TestScaleSessions(t *testing.T) {
	for _, impl := range []string{"weft-sessions", "gosdk-sessions", "mcpgo-sessions"} {
		t.Run(impl, func(t *testing.T) {
			h, release, err := NewScale(t.Context(), impl, ScaleOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			ts := httptest.NewServer(h)
			defer ts.Close()
			post := func(body, sid string) (*http.Response, []byte) {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+Path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if sid != "" {
					req.Header.Set("Mcp-Session-Id", sid)
					req.Header.Set("MCP-Protocol-Version", "2025-11-25")
				}
				resp, err := ts.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp, b
			}
			seen := map[string]bool{}
			for range 2 {
				resp, b := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
				sid := resp.Header.Get("Mcp-Session-Id")
				if resp.StatusCode != http.StatusOK || sid == "" || seen[sid] || !bytes.Contains(b, []byte(`"protocolVersion":"2025-11-25"`)) {
					t.Fatalf("initialize: HTTP %d, session %q (seen %v): %s", resp.StatusCode, sid, seen[sid], b)
				}
				seen[sid] = true
				if resp, b := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid); resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
					t.Fatalf("initialized: HTTP %d: %s", resp.StatusCode, b)
				}
				// The session is known: a call in it is answered.
				if resp, b := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, sid); resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"name":"t"`)) {
					t.Fatalf("tools/list in the session: HTTP %d: %s", resp.StatusCode, b)
				}
			}
			m := mem(t, ts)
			if m.HeapInuse == 0 || m.StackInuse == 0 || m.Goroutines == 0 {
				t.Fatalf("memory report %+v", m)
			}
			// Every session's GET stream hears one toggle's list_changed.
			var streams []*bufio.Reader
			for sid := range seen {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+Path, nil)
				req.Header.Set("Accept", "text/event-stream")
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("MCP-Protocol-Version", "2025-11-25")
				resp, err := ts.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET stream: HTTP %d", resp.StatusCode)
				}
				streams = append(streams, bufio.NewReader(resp.Body))
			}
			// A stream registers after its response headers on some servers:
			// toggle until each stream has heard one.
			for i, br := range streams {
				got := make(chan error, 1)
				go func() { got <- until(br, "notifications/tools/list_changed") }()
				deadline := time.After(30 * time.Second)
			wait:
				for {
					resp, err := ts.Client().Post(ts.URL+TogglePath, "text/plain", nil)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						t.Fatalf("toggle: HTTP %d", resp.StatusCode)
					}
					select {
					case err := <-got:
						if err != nil {
							t.Fatalf("stream %d: %v", i, err)
						}
						break wait
					case <-time.After(100 * time.Millisecond):
					case <-deadline:
						t.Fatalf("stream %d heard no list_changed", i)
					}
				}
			}
		})
	}
}

// TestScaleListen opens listen streams on weft-listen and checks that one
// toggle reaches every stream, twice (tool added, then removed).
func TestScaleListen(t *testing.T) {
	h, release, err := NewScale(t.Context(), "weft-listen", ScaleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		weft.ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	var streams []*bufio.Reader
	for i := range 3 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+Path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", weft.ProtocolVersion)
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		req.Header.Set(PartitionHeader, fmt.Sprint("p", i))
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if err := until(br, "notifications/subscriptions/acknowledged"); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		streams = append(streams, br)
	}
	if m := mem(t, ts); m.Goroutines < len(streams) {
		t.Fatalf("memory report %+v with %d streams open", m, len(streams))
	}
	for round := range 2 {
		resp, err := ts.Client().Post(ts.URL+TogglePath, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("toggle: HTTP %d", resp.StatusCode)
		}
		for i, br := range streams {
			if err := until(br, "notifications/tools/list_changed"); err != nil {
				t.Fatalf("round %d, stream %d: %v", round, i, err)
			}
		}
	}
}

func until(br *bufio.Reader, marker string) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.Contains(line, marker) {
			return nil
		}
	}
}

func mem(t *testing.T, ts *httptest.Server) Mem {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + MemPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m Mem
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}
