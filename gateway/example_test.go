package gateway_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/gateway"
)

func ExampleParseConfig() {
	cfg, err := gateway.ParseConfig([]byte(`
upstreams:
  - name: files
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /srv/shared]
    protocol: "2025-11-25"
    prefix: fs_
    exclude: ["write_*"]
    rename: {read_file: read}
`), "yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	u := cfg.Upstreams[0]
	fmt.Println(u.Name, u.Command, u.Protocol, u.Prefix)
	// Output: files npx 2025-11-25 fs_
}

func ExampleMount() {
	ctx := context.Background()
	billing, err := weft.NewServer(weft.Implementation{Name: "billing", Version: "1"}, &weft.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_ = billing.AddTool(weft.Tool{Name: "balance", Description: "Returns the balance."},
		func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("42.00 EUR")}}, nil
		})
	_ = billing.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "invoice://latest", Name: "latest"}},
		func(_ context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "text/plain", "INV-7")}}, nil
		})
	app, err := weft.NewServer(weft.Implementation{Name: "app", Version: "1"}, &weft.Options{})
	if err != nil {
		log.Fatal(err)
	}
	gw, err := gateway.Mount(ctx, app, "billing", "billing.", billing, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()
	ts := httptest.NewServer(app)
	defer ts.Close()
	c := client.New(client.NewHTTPTransport(ts.URL, nil), nil)
	res, err := c.CallTool(ctx, "billing.balance", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text())
	// The resource prefix "billing" (the name prefix without its ".") goes
	// after the scheme.
	inv, err := c.ReadResource(ctx, "invoice://billing/latest")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(inv.Contents[0].URI, inv.Contents[0].Text)
	// Output:
	// 42.00 EUR
	// invoice://billing/latest INV-7
}
