package demo

import (
	"context"
	"fmt"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/apps"
)

// CounterAppURI is the demo's MCP App: a small counter view for counter.show.
const CounterAppURI = "ui://weft-demo/counter"

const counterHTML = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Counter</title>
<style>body{font-family:system-ui;margin:1rem}button{font-size:1.2rem}</style></head>
<body><p>Count: <span id="n">0</span></p><button id="inc">+1</button>
<script>let n=0;document.getElementById('inc').onclick=()=>{n++;document.getElementById('n').textContent=n;};</script>
</body></html>`

// addCounterApp registers the counter app and the tool it renders.
func addCounterApp(s *weft.Server) error {
	if err := apps.Register(s, apps.App{URI: CounterAppURI, Name: "counter", Title: "Counter",
		Description: "A counter view for counter.show.", HTML: counterHTML, Border: apps.BorderOn}); err != nil {
		return err
	}
	type args struct {
		Start int `json:"start,omitempty"`
	}
	tool := apps.UITool(weft.Tool{Name: "counter.show", Description: "Shows a counter; hosts with MCP Apps render it as an interactive view."},
		CounterAppURI, apps.VisibilityModel, apps.VisibilityApp)
	return weft.AddTool(s, tool, func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(fmt.Sprintf("Counter at %d.", in.Start))}}, nil
	})
}
