package weft_test

import (
	"context"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

// A conditional input kind the client lacks holds progress back unless the
// handler releases the output; MissingCapabilities answers -32021.
func TestReleaseOutput(t *testing.T) {
	srv := weft.NewServer(weft.Implementation{Name: "t", Version: "1"}, nil)
	for _, release := range []bool{false, true} {
		name := "held"
		if release {
			name = "released"
		}
		if err := srv.AddTool(weft.Tool{Name: name, Description: "Reports progress.", Inputs: []weft.Input{weft.Sampling(weft.ConditionalCapability)}},
			func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
				if release {
					req.ReleaseOutput()
				}
				_ = req.Progress(1, 2, "half")
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("done")}}, nil
			}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.AddTool(weft.Tool{Name: "refuse", Description: "Relays a refusal."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return nil, weft.MissingCapabilities(exactjson.Object(exactjson.Field("sampling", exactjson.Object())))
		}); err != nil {
		t.Fatal(err)
	}
	c := wefttest.NewClient(srv, wefttest.WithProgress())
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		want int
	}{{"held", 0}, {"released", 1}} {
		resp, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String(tc.tool)),
			exactjson.Field("arguments", exactjson.Object())))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(resp.Progress()); got != tc.want {
			t.Errorf("%s: %d progress notifications, want %d", tc.tool, got, tc.want)
		}
	}
	resp, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("refuse")),
		exactjson.Field("arguments", exactjson.Object())))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil || resp.Error.Code != weft.CodeMissingRequiredCapability {
		t.Fatalf("refuse: %+v", resp)
	}
	if caps, _ := resp.Error.Data.Get("requiredCapabilities"); !caps.Has("sampling") {
		t.Fatalf("refuse: data %s", resp.Error.Data)
	}
}
