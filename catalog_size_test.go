package weft_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/syncbuf"
	"github.com/weftmcp/weft/middleware"
)

// maxOutputBytes is the default Limits.MaxOutputBytes (4 MiB).
const maxOutputBytes = 4 << 20

// bigSchema is an input schema of about size bytes: one property per KiB,
// each with a long description, as generated API catalogs have.
func bigSchema(name string, size int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range size / 1024 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s_p%d":{"type":"string","description":"%s"}`, name, i, strings.Repeat("d", 1000))
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// pageLog counts the list pages a server sends and keeps the largest.
type pageLog struct {
	mu      sync.Mutex
	pages   map[string]int
	largest int
}

func (p *pageLog) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !strings.HasSuffix(r.Header.Get("Mcp-Method"), "/list") {
		return resp, err
	}
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.pages[r.Header.Get("Mcp-Method")]++
	p.largest = max(p.largest, body.Len())
	p.mu.Unlock()
	resp.Body = readCloser{bytes.NewReader(body.Bytes())}
	return resp, nil
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// TestListsPageBySize: a catalog of more than twice the output limit (4
// MiB) in each of the four lists, fewer items than a page holds by count,
// is listed to its end by the client in both protocol eras, through the
// response cache, in order and without a duplicate; no page exceeds the
// limit, and a cursor gives the same page again.
func TestListsPageBySize(t *testing.T) {
	const n = 150 // under DefaultPageSize: only the size splits the lists
	const itemBytes = 64 << 10
	srv, err := weft.NewServer(weft.Implementation{Name: "big", Version: "1"}, &weft.Options{
		Logger:     slog.New(slog.DiscardHandler),
		Legacy:     weft.LegacyOptions{InMemorySessions: true},
		Cache:      &weft.CachePolicy{TTLMillis: 60_000, Public: true},
		Middleware: []weft.Middleware{middleware.NewCache(nil).Middleware()},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(req.Name)}}, nil
	}
	read := func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
		return &weft.ReadResourceResult{}, nil
	}
	var want []string
	long := strings.Repeat("x", itemBytes)
	for i := range n {
		name := fmt.Sprintf("op%03d", i)
		want = append(want, name)
		if err := srv.AddTool(weft.Tool{Name: name, Description: "Calls " + name + ".", InputSchema: bigSchema(name, itemBytes)}, text); err != nil {
			t.Fatal(err)
		}
		if err := srv.AddPrompt(weft.Prompt{Name: name, Description: long}, func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			return &weft.GetPromptResult{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := srv.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "doc://" + name, Name: name, Description: long}}, read); err != nil {
			t.Fatal(err)
		}
		if err := srv.AddResourceTemplate(weft.ResourceTemplate{URITemplate: "doc://" + name + "/{id}", Name: name, Description: long}, read); err != nil {
			t.Fatal(err)
		}
	}
	// Shut down after the HTTP server closes: its 2025 sessions (and the
	// 40 MB catalog with them) are not left to the idle timeout.
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	for _, version := range []string{client.ProtocolVersion, client.LegacyProtocolVersion} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			log := &pageLog{pages: map[string]int{}}
			c := client.New(client.NewHTTPTransport(hs.URL, &client.HTTPOptions{Client: &http.Client{Transport: log}}), &client.Options{ProtocolVersion: version})
			defer c.Close()
			for range 2 { // the second walk comes from the response cache
				tools, err := c.ListTools(ctx)
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				var got []string
				for _, tool := range tools {
					got = append(got, tool.Name)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("tools/list gave %d tools, want %d in order", len(got), len(want))
				}
				for _, l := range []struct {
					method string
					list   func(context.Context) ([]exactjson.Value, error)
				}{{"prompts/list", c.ListPrompts}, {"resources/list", c.ListResources}, {"resources/templates/list", c.ListResourceTemplates}} {
					items, err := l.list(ctx)
					if err != nil {
						t.Fatalf("%s: %v", l.method, err)
					}
					got = got[:0]
					for _, it := range items {
						nv, _ := it.Get("name")
						s, _ := nv.AsString()
						got = append(got, s)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%s gave %d items, want %d in order", l.method, len(got), len(want))
					}
				}
			}
			if log.largest > maxOutputBytes {
				t.Errorf("a list page of %d bytes exceeds the output limit %d", log.largest, maxOutputBytes)
			}
			for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
				// 150 items of 64 KiB: 10 MB in at least 3 pages, walked twice.
				if log.pages[m] < 6 {
					t.Errorf("%s took %d pages in two walks, want at least 6", m, log.pages[m])
				}
			}
		})
	}
}

// TestListItemLargerThanLimit: a tool too large for a page of its own is
// logged when it is registered, and an error naming it (logged, with the
// limit to raise) where its page would start.
func TestListItemLargerThanLimit(t *testing.T) {
	var logBuf syncbuf.Buffer
	srv, err := weft.NewServer(weft.Implementation{Name: "big", Version: "1"}, &weft.Options{
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil)),
		Limits: weft.Limits{MaxOutputBytes: 1 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{}, nil
	}
	for i := range 6 {
		if err := srv.AddTool(weft.Tool{Name: fmt.Sprintf("small%d", i), Description: "Small.", InputSchema: bigSchema("s", 256<<10)}, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.AddTool(weft.Tool{Name: "huge", Description: "Huge.", InputSchema: bigSchema("h", 1<<20)}, text); err != nil {
		t.Fatal(err)
	}
	if l := logBuf.String(); !strings.Contains(l, "tool too large for a list page") || !strings.Contains(l, "name=huge") || strings.Contains(l, "name=small") {
		t.Errorf("registration does not warn of the oversize tool (only):\n%s", l)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(client.NewHTTPTransport(hs.URL, nil), nil)
	defer c.Close()
	_, err = c.ListTools(ctx)
	var rerr *client.RPCError
	if !errors.As(err, &rerr) || weft.Code(rerr.Code) != weft.CodeInternalError || !strings.Contains(rerr.Message, `tool "huge"`) || !strings.Contains(rerr.Message, "Limits.MaxOutputBytes") {
		t.Fatalf("tools/list with an oversize tool: %v, want an internal error naming it and the limit", err)
	}
	if l := logBuf.String(); !strings.Contains(l, "list item larger than the output limit") || !strings.Contains(l, "max_output_bytes=1048576") {
		t.Errorf("log does not name the oversize tool:\n%s", l)
	}
}
