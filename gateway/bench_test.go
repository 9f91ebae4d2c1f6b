package gateway_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/gateway"
)

// BenchmarkToolsCall measures a tools/call over loopback HTTP made directly
// to a Weft upstream and through the gateway in front of it (the upstream
// spoken to as a 2026-07-28 server, and as a 2025-11-25 session): the
// difference is the gateway's overhead per call.
func BenchmarkToolsCall(b *testing.B) {
	up, err := weft.NewServer(weft.Implementation{Name: "upstream", Version: "1"}, &weft.Options{Legacy: weft.LegacyOptions{InMemorySessions: true}})
	if err != nil {
		b.Fatal(err)
	}
	if err := up.AddTool(weft.Tool{Name: "echo", Description: "Echoes.", InputSchema: []byte(`{"type":"object","properties":{"s":{"type":"string"}}}`)},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("ok")}}, nil
		}); err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(up)
	defer hs.Close()
	run := func(b *testing.B, url, tool string) {
		c := client.New(client.NewHTTPTransport(url, nil), nil)
		defer c.Close()
		ctx := context.Background()
		args := map[string]any{"s": "hello"}
		if _, err := c.CallTool(ctx, tool, args); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.CallTool(ctx, tool, args)
			if err != nil || res.Text() != "ok" {
				b.Fatal(res, err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, hs.URL, "echo") })
	for _, protocol := range []string{gateway.Version20260728, gateway.Version20251125} {
		b.Run("gateway/upstream="+protocol, func(b *testing.B) {
			srv, err := weft.NewServer(weft.Implementation{Name: "gw", Version: "1"}, &weft.Options{})
			if err != nil {
				b.Fatal(err)
			}
			gw, err := gateway.New(context.Background(), srv, &gateway.Config{Upstreams: []gateway.UpstreamConfig{
				{Name: "up", URL: hs.URL, Protocol: protocol}}}, nil)

			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			gs := httptest.NewServer(srv)
			defer gs.Close()
			run(b, gs.URL, "echo")
		})
	}
}

// BenchmarkResourceRead measures resources/read of a 2026-07-28 upstream
// through the gateway with the URIs unchanged and under a resource prefix
// (the request's URI mapped back, the contents' URI mapped out).
func BenchmarkResourceRead(b *testing.B) {
	up, err := weft.NewServer(weft.Implementation{Name: "upstream", Version: "1"}, &weft.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := up.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "data://notes/today", Name: "today"}},
		func(context.Context, *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource("data://notes/today", "text/plain", "notes")}}, nil
		}); err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(up)
	defer hs.Close()
	for _, tc := range []struct{ name, prefix, uri string }{
		{"unprefixed", "", "data://notes/today"},
		{"prefixed", "p_", "data://p/notes/today"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv, err := weft.NewServer(weft.Implementation{Name: "gw", Version: "1"}, &weft.Options{})
			if err != nil {
				b.Fatal(err)
			}
			gw, err := gateway.New(context.Background(), srv, &gateway.Config{Upstreams: []gateway.UpstreamConfig{
				{Name: "up", URL: hs.URL, Protocol: gateway.Version20260728, Prefix: tc.prefix}}}, nil)

			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			gs := httptest.NewServer(srv)
			defer gs.Close()
			c := client.New(client.NewHTTPTransport(gs.URL, nil), nil)
			defer c.Close()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r, err := c.ReadResource(ctx, tc.uri)
				if err != nil || len(r.Contents) != 1 || r.Contents[0].URI != tc.uri {
					b.Fatal(r, err)
				}
			}
		})
	}
}
