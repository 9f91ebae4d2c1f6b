package weft_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
)

// searchCatalog is a server of 1,000 tools in ten groups ("billing_*",
// "crm_*", ...) behind the search tool, "billing_*" listed.
func searchCatalog(t *testing.T, visible func(name string) bool) *weft.Server {
	t.Helper()
	srv, err := weft.NewServer(weft.Implementation{Name: "catalog", Version: "1"}, &weft.Options{
		Logger:     slog.New(slog.DiscardHandler),
		Legacy:     weft.LegacyOptions{InMemorySessions: true},
		ToolSearch: &weft.ToolSearch{Listed: []string{"billing_*"}, MaxResults: 5},
		Visible: func(ctx context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
			return visible == nil || visible(name)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	echo := func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("called " + req.Name)}}, nil
	}
	groups := []string{"billing", "crm", "storage", "dns", "mail", "search", "auth", "metrics", "queue", "cdn"}
	verbs := []string{"create", "get", "list", "update", "delete"}
	for i := range 1000 {
		g, v := groups[i%10], verbs[i/10%5]
		name := fmt.Sprintf("%s_%s_thing%d", g, v, i)
		desc := fmt.Sprintf("%s a %s thing number %d.", v, g, i)
		schema := fmt.Sprintf(`{"type":"object","properties":{"thing_id":{"type":"string","description":"The %s thing."}}}`, g)
		if err := srv.AddTool(weft.Tool{Name: name, Description: desc, InputSchema: []byte(schema)}, echo); err != nil {
			t.Fatal(err)
		}
	}
	// One tool that only its parameter names: matched by "refund".
	if err := srv.AddTool(weft.Tool{Name: "payments_reverse", Description: "Reverses a charge.",
		InputSchema: []byte(`{"type":"object","properties":{"refund_reason":{"type":"string"}}}`)}, echo); err != nil {
		t.Fatal(err)
	}
	return srv
}

// foundNames are the tool names of a search result's structuredContent.
func foundNames(t *testing.T, res *client.ToolResult) []string {
	t.Helper()
	if res.IsError {
		t.Fatalf("search failed: %v", res.Raw)
	}
	tools, _ := res.StructuredContent.Get("tools")
	var names []string
	for _, tool := range tools.Elements() {
		n, _ := tool.Get("name")
		s, _ := n.AsString()
		if _, ok := tool.Get("inputSchema"); !ok {
			t.Errorf("found tool %s has no inputSchema", s)
		}
		names = append(names, s)
	}
	return names
}

// TestToolSearch: with Options.ToolSearch, tools/list of a 1,000-tool
// catalog holds the search tool and the listed group only; the search tool
// returns full definitions of the best matches (name over description and
// parameters, limit and MaxResults honoured, "more" counting the rest);
// hidden tools are never found; a found tool is called by name. Both eras.
func TestToolSearch(t *testing.T) {
	srv := searchCatalog(t, func(name string) bool { return name != "dns_delete_thing43" })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	for _, version := range []string{client.ProtocolVersion, client.LegacyProtocolVersion} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := client.New(client.NewHTTPTransport(hs.URL, nil), &client.Options{ProtocolVersion: version})
			defer c.Close()
			tools, err := c.ListTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, tool := range tools {
				if tool.Name != weft.DefaultToolSearchName && !strings.HasPrefix(tool.Name, "billing_") {
					t.Errorf("tools/list shows %s", tool.Name)
				}
				listed = append(listed, tool.Name)
			}
			if len(listed) != 101 || !slices.Contains(listed, weft.DefaultToolSearchName) {
				t.Fatalf("tools/list shows %d tools (%v...), want search_tools and the 100 billing tools", len(listed), listed[:min(3, len(listed))])
			}
			for _, tc := range []struct {
				name  string
				args  map[string]any
				want  []string
				more  int64
				check func([]string) bool
			}{
				{name: "hidden", args: map[string]any{"query": "dns delete thing43"},
					check: func(got []string) bool {
						return len(got) == 5 && !slices.Contains(got, "dns_delete_thing43") && strings.HasPrefix(got[0], "dns_delete_")
					}},
				{name: "exact name first", args: map[string]any{"query": "storage_update_thing32"},
					check: func(got []string) bool { return len(got) == 5 && got[0] == "storage_update_thing32" }},
				{name: "all words before some", args: map[string]any{"query": "thing update storage"},
					check: func(got []string) bool {
						return len(got) == 5 && !slices.ContainsFunc(got, func(n string) bool { return !strings.HasPrefix(n, "storage_update_") })
					}},
				{name: "parameter name", args: map[string]any{"query": "Refund"}, want: []string{"payments_reverse"}},
				{name: "limit", args: map[string]any{"query": "crm create", "limit": 2},
					check: func(got []string) bool { return len(got) == 2 && strings.HasPrefix(got[0], "crm_create_") }, more: 278},
				{name: "no match", args: map[string]any{"query": "zebra"}, want: nil},
			} {
				res, err := c.CallTool(ctx, weft.DefaultToolSearchName, tc.args)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				got := foundNames(t, res)
				if tc.check != nil && !tc.check(got) || tc.check == nil && !slices.Equal(got, tc.want) {
					t.Errorf("%s: found %v", tc.name, got)
				}
				if tc.more > 0 {
					mv, _ := res.StructuredContent.Get("more")
					if n, _ := mv.AsNumber(); n.String() != fmt.Sprint(tc.more) {
						t.Errorf("%s: more = %v, want %d", tc.name, mv, tc.more)
					}
				}
			}
			// A found tool is called by name though it is not listed.
			res, err := c.CallTool(ctx, "storage_update_thing32", map[string]any{"thing_id": "x"})
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "called storage_update_thing32" {
				t.Fatalf("calling a found tool: %+v, %v", res, err)
			}
			// An empty query is a tool error the model can correct.
			res, err = c.CallTool(ctx, weft.DefaultToolSearchName, map[string]any{"query": "  "})
			if err != nil || !res.IsError {
				t.Fatalf("blank query: %+v, %v", res, err)
			}
		})
	}
}

// TestToolSearchOptions: a bad ToolSearch is a configuration error naming
// the setting.
func TestToolSearchOptions(t *testing.T) {
	for _, tc := range []struct {
		ts   weft.ToolSearch
		want string
	}{
		{weft.ToolSearch{Name: "no spaces"}, "ToolSearch.Name"},
		{weft.ToolSearch{MaxResults: weft.MaxToolSearchResults + 1}, "ToolSearch.MaxResults"},
		{weft.ToolSearch{MaxResults: -1}, "ToolSearch.MaxResults"},
		{weft.ToolSearch{Listed: []string{"[a"}}, "ToolSearch.Listed"},
	} {
		if _, err := weft.NewServer(weft.Implementation{Name: "x"}, &weft.Options{ToolSearch: &tc.ts}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.ts, err, tc.want)
		}
	}
	if _, err := weft.NewServer(weft.Implementation{Name: "x"}, &weft.Options{ToolSearch: &weft.ToolSearch{Name: "find_tools"}}); err != nil {
		t.Fatal(err)
	}
}
