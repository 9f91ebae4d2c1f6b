package client

import (
	"context"
	"strings"
	"testing"

	"github.com/weftmcp/weft"
)

type sumOut struct {
	Sum int `json:"sum"`
}

// TestStructuredAs: a typed tool's output reads back as its Go type through
// a real server (stdio), and a result without structuredContent is an error.
func TestStructuredAs(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "structured", Version: "1"}, &weft.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := weft.AddTool(srv, weft.Tool{Name: "add", Description: "Adds."},
		func(ctx context.Context, req *weft.Request, in struct{ A, B int }) (sumOut, error) {
			return sumOut{Sum: in.A + in.B}, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddTool(weft.Tool{Name: "plain", Description: "Text only."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return weft.TextResult("hi"), nil
		}); err != nil {
		t.Fatal(err)
	}
	c := New(startStdio(t, srv), nil)
	res, err := c.CallTool(t.Context(), "add", map[string]int{"A": 2, "B": 40})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := StructuredAs[sumOut](res); err != nil || out.Sum != 42 {
		t.Errorf("StructuredAs = %+v, %v", out, err)
	}
	if _, err := StructuredAs[[]int](res); err == nil {
		t.Error("an object decoded into a slice")
	}
	plain, err := c.CallTool(t.Context(), "plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Text() != "hi" {
		t.Errorf("TextResult read back as %q", plain.Text())
	}
	if _, err := StructuredAs[sumOut](plain); err == nil || !strings.Contains(err.Error(), "no structuredContent") {
		t.Errorf("StructuredAs without structuredContent: %v", err)
	}
}
