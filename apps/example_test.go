package apps_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"sync/atomic"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/apps"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// counterPage is the view: it shows the count from the tool result the
// host hands it, and asks the host to call the app-only increment tool
// (ui/initialize, ui/notifications/tool-result and tools/call over
// postMessage, as the SEP defines).
const counterPage = `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>Counter</title></head>
<body>
<p>Count: <output id="count">0</output></p>
<button id="inc">+1</button>
<script>
let id = 0;
const pending = new Map();
function request(method, params) {
  return new Promise((resolve) => {
    pending.set(++id, resolve);
    window.parent.postMessage({jsonrpc: "2.0", id, method, params}, "*");
  });
}
function show(result) {
  const n = result && result.structuredContent && result.structuredContent.count;
  if (typeof n === "number") document.getElementById("count").textContent = n;
}
window.addEventListener("message", (e) => {
  const m = e.data;
  if (m && m.id && pending.has(m.id)) { pending.get(m.id)(m.result); pending.delete(m.id); }
  else if (m && m.method === "ui/notifications/tool-result") show(m.params);
});
document.getElementById("inc").onclick = async () =>
  show(await request("tools/call", {name: "counter_increment", arguments: {}}));
request("ui/initialize", {appInfo: {name: "counter", version: "1.0.0"}, appCapabilities: {}});
</script>
</body>
</html>
`

type empty struct{}

type countOut struct {
	Count int64 `json:"count"`
}

// newCounterServer serves the counter app: counter_show (model and app)
// renders its result in the page; counter_increment is for the page only.
func newCounterServer() (*weft.Server, error) {
	s, err := weft.NewServer(weft.Implementation{Name: "counter", Version: "1.0.0"}, &weft.Options{
		Logger:  slog.New(slog.DiscardHandler),
		Visible: apps.Visible(nil, "counter_increment"),
	})
	if err != nil {
		return nil, err
	}
	var count atomic.Int64
	result := func(n int64) *weft.CallToolResult {
		sc, _ := exactjson.FromGo(countOut{Count: n})
		return &weft.CallToolResult{
			Content:           []weft.Content{weft.TextContent("The count is " + strconv.FormatInt(n, 10) + ".")},
			StructuredContent: sc,
		}
	}
	err = apps.Register(s, apps.App{
		URI:         "ui://counter/page",
		Name:        "counter",
		Description: "A counter with a +1 button.",
		HTML:        counterPage,
		Border:      apps.BorderOn,
	})
	if err != nil {
		return nil, err
	}
	err = weft.AddTool(s, apps.UITool(weft.Tool{Name: "counter_show", Description: "Shows the counter."}, "ui://counter/page"),
		func(ctx context.Context, req *weft.Request, _ empty) (*weft.CallToolResult, error) {
			return result(count.Load()), nil
		})
	if err != nil {
		return nil, err
	}
	err = weft.AddTool(s, apps.UITool(weft.Tool{Name: "counter_increment", Description: "Adds one to the counter."},
		"ui://counter/page", apps.VisibilityApp),
		func(ctx context.Context, req *weft.Request, _ empty) (*weft.CallToolResult, error) {
			return result(count.Add(1)), nil
		})
	return s, err
}

// A counter page: a UI-capable host reads the app and calls the app-only
// tool on the page's behalf; a plain client sees only the text tool.
func Example_counter() {
	s, err := newCounterServer()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	ui := exactjson.Object(exactjson.Field("extensions", exactjson.Object(
		exactjson.Field(apps.ExtensionID, exactjson.Object(
			exactjson.Field("mimeTypes", exactjson.Array(exactjson.String(apps.MimeType))))))))
	ts := httptest.NewServer(s)
	defer ts.Close()
	host := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{Capabilities: ui})

	page, _ := host.ReadResource(ctx, "ui://counter/page")
	c := page.Contents[0]
	meta, _ := c.Raw.Get("_meta")
	fmt.Println(c.MimeType, len(c.Text) == len(counterPage), meta)

	tools, _ := host.ListTools(ctx)
	for _, t := range tools {
		m, _ := t.Raw.Get("_meta")
		fmt.Println(t.Name, m)
	}
	host.CallTool(ctx, "counter_increment", empty{})
	r, _ := host.CallTool(ctx, "counter_increment", empty{})
	fmt.Println(r.Text(), r.StructuredContent)

	plain := client.New(client.NewHTTPTransport(ts.URL, nil), nil)
	tools, _ = plain.ListTools(ctx)
	fmt.Println("plain client:", len(tools), tools[0].Name)
	r, _ = plain.CallTool(ctx, "counter_show", empty{})
	fmt.Println(r.Text())
	_, err = plain.ReadResource(ctx, "ui://counter/page")
	fmt.Println(err)
	// Output:
	// text/html;profile=mcp-app true {"ui":{"prefersBorder":true}}
	// counter_show {"ui":{"resourceUri":"ui://counter/page"}}
	// counter_increment {"ui":{"resourceUri":"ui://counter/page","visibility":["app"]}}
	// The count is 2. {"count":2}
	// plain client: 1 counter_show
	// The count is 2.
	// mcp error -32602: Resource not found
}
