package middleware_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/middleware"
)

// A cache in front of the list and read methods, timing around everything.
func Example() {
	cache := middleware.NewCache(nil)
	s, err := weft.NewServer(weft.Implementation{Name: "example"}, &weft.Options{
		Cache: &weft.CachePolicy{TTLMillis: 60_000, Public: true}, // the hint tools/list carries
		Middleware: []weft.Middleware{
			middleware.Recover(nil),
			middleware.Timing(func(ctx context.Context, req *weft.Request, d time.Duration, res weft.Result, err error) {
				outcome, _ := middleware.Outcome(res, err)
				fmt.Println(req.Method, outcome)
			}),
			cache.Middleware(),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = s.AddTool(weft.Tool{Name: "echo", Description: "Echoes."}, func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("hi")}}, nil
	})
	ts := httptest.NewServer(s)
	defer ts.Close()
	c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{ProtocolVersion: client.ProtocolVersion})
	ctx := context.Background()
	_, _ = c.ListTools(ctx) // after the client's server/discover
	_, _ = c.ListTools(ctx) // served from the cache
	_, _ = c.CallTool(ctx, "echo", nil)
	fmt.Printf("cache hits: %d\n", cache.Stats().Hits)
	// Output:
	// server/discover complete
	// tools/list complete
	// tools/list complete
	// tools/call complete
	// cache hits: 1
}
