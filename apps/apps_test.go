package apps_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/apps"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

const page = "<!DOCTYPE html>\n<html><body><p>Weather</p></body></html>\n"

var weather = apps.App{
	URI:         "ui://weather/dashboard",
	Name:        "weather_dashboard",
	Description: "Interactive weather dashboard",
	HTML:        page,
	CSP: apps.CSP{
		ConnectDomains:  []string{"https://api.openweathermap.org", "wss://realtime.example.com:8443"},
		ResourceDomains: []string{"https://*.jsdelivr.net"},
		FrameDomains:    []string{"https://www.youtube.com"},
		BaseURIDomains:  []string{"https://cdn.example.com"},
	},
	Permissions: apps.Permissions{Geolocation: true, ClipboardWrite: true},
	Domain:      "a904794854a047f6.claudemcpcontent.com",
	Border:      apps.BorderOn,
}

const weatherMeta = `{"ui":{"csp":{"connectDomains":["https://api.openweathermap.org","wss://realtime.example.com:8443"],` +
	`"resourceDomains":["https://*.jsdelivr.net"],"frameDomains":["https://www.youtube.com"],"baseUriDomains":["https://cdn.example.com"]},` +
	`"permissions":{"geolocation":{},"clipboardWrite":{}},"domain":"a904794854a047f6.claudemcpcontent.com","prefersBorder":true}}`

// uiCaps are the capabilities of a client that renders MCP Apps.
var uiCaps = exactjson.Object(exactjson.Field("extensions", exactjson.Object(
	exactjson.Field(apps.ExtensionID, exactjson.Object(
		exactjson.Field("mimeTypes", exactjson.Array(exactjson.String(apps.MimeType))))))))

type noArgs struct{}

// newServer serves the weather app, a tool it renders and an app-only
// refresh tool; visible installs apps.Visible.
func newServer(t *testing.T, visible bool) *weft.Server {
	t.Helper()
	opts := &weft.Options{Logger: slog.New(slog.DiscardHandler)}
	if visible {
		opts.Visible = apps.Visible(nil, "refresh_dashboard")
	}
	s, err := weft.NewServer(weft.Implementation{Name: "apps-test"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := apps.Register(s, weather); err != nil {
		t.Fatal(err)
	}
	h := func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Sunny, 22°C")}}, nil
	}
	must(t, weft.AddTool(s, apps.UITool(weft.Tool{Name: "get_weather", Description: "Current weather."}, weather.URI), h))
	must(t, weft.AddTool(s, apps.UITool(weft.Tool{Name: "refresh_dashboard", Description: "Refreshes the dashboard."},
		weather.URI, apps.VisibilityApp), h))
	must(t, s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "test://plain", Name: "plain"}},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "text/plain", "x")}}, nil
		}))
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// caps is a client's options declaring the given capabilities.
func caps(v exactjson.Value) *wefttest.Options {
	return &wefttest.Options{Client: client.Options{Capabilities: v}}
}

func get(v exactjson.Value, path ...string) exactjson.Value {
	for _, p := range path {
		v, _ = v.Get(p)
	}
	return v
}

// list returns every item of tools/list or resources/list.
func list(t *testing.T, c *client.Client, method string) []exactjson.Value {
	t.Helper()
	ctx := context.Background()
	var items []exactjson.Value
	switch method {
	case "resources/list":
		var err error
		if items, err = c.ListResources(ctx); err != nil {
			t.Fatal(err)
		}
	case "tools/list":
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			items = append(items, tl.Raw)
		}
	default:
		t.Fatalf("list %s", method)
	}
	return items
}

func names(t *testing.T, c *client.Client, method, member string) string {
	t.Helper()
	items := list(t, c, method)
	var out []string
	for _, it := range items {
		s, _ := get(it, member).AsString()
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestClientWithUI(t *testing.T) {
	ctx := context.Background()
	for _, visible := range []bool{true, false} {
		c := wefttest.NewClient(t, newServer(t, visible), caps(uiCaps))
		d, err := c.Discover(ctx)
		must(t, err)
		if s := get(d.Capabilities, "extensions", apps.ExtensionID).String(); s != "{}" {
			t.Errorf("extension settings %s", s)
		}

		if got := names(t, c, "resources/list", "uri"); got != "ui://weather/dashboard test://plain" {
			t.Errorf("resources %s", got)
		}
		listed := list(t, c, "resources/list")[0]
		if get(listed, "mimeType").String() != `"text/html;profile=mcp-app"` || get(listed, "_meta").String() != weatherMeta {
			t.Errorf("listed UI resource %s", listed)
		}

		r, err := c.ReadResource(ctx, weather.URI)
		must(t, err)
		if len(r.Contents) != 1 {
			t.Fatalf("contents %+v", r.Contents)
		}
		got := r.Contents[0]
		if got.URI != weather.URI || got.MimeType != apps.MimeType || got.Text != page {
			t.Errorf("contents %s", got.Raw)
		}
		if m := get(got.Raw, "_meta").String(); m != weatherMeta {
			t.Errorf("contents _meta %s\nwant %s", m, weatherMeta)
		}

		tools, err := c.ListTools(ctx)
		must(t, err)
		if len(tools) != 2 {
			t.Fatalf("%d tools", len(tools))
		}
		for _, tool := range tools {
			want := `{"ui":{"resourceUri":"ui://weather/dashboard"}}`
			if tool.Name == "refresh_dashboard" {
				want = `{"ui":{"resourceUri":"ui://weather/dashboard","visibility":["app"]}}`
			}
			if m := get(tool.Raw, "_meta").String(); m != want {
				t.Errorf("%s _meta %s, want %s", tool.Name, m, want)
			}
		}
		res, err := c.CallTool(ctx, "refresh_dashboard", map[string]any{})
		if err != nil || res.Text() != "Sunny, 22°C" {
			t.Errorf("app-only tool: %v %v", res, err)
		}
	}
}

func TestClientWithoutUI(t *testing.T) {
	ctx := context.Background()
	other := exactjson.Object(exactjson.Field("extensions", exactjson.Object(
		exactjson.Field(apps.ExtensionID, exactjson.Object(
			exactjson.Field("mimeTypes", exactjson.Array(exactjson.String("text/uri-list"))))))))
	for name, c := range map[string]*client.Client{
		"no capabilities":      wefttest.NewClient(t, newServer(t, true), nil),
		"another media type":   wefttest.NewClient(t, newServer(t, true), caps(other)),
		"no Visible filter":    wefttest.NewClient(t, newServer(t, false), nil),
		"malformed capability": wefttest.NewClient(t, newServer(t, true), caps(exactjson.Object(exactjson.Field("extensions", exactjson.Object(exactjson.Field(apps.ExtensionID, exactjson.String("yes"))))))),
	} {
		_, err := c.ReadResource(ctx, weather.URI)
		var rpc *client.RPCError
		if !errors.As(err, &rpc) || weft.Code(rpc.Code) != weft.CodeInvalidParams || rpc.Message != "Resource not found" ||
			get(rpc.Data, "uri").String() != `"ui://weather/dashboard"` {
			t.Errorf("%s: read of the UI resource: %v", name, err)
		}
		if name == "no Visible filter" {
			continue // lists are unfiltered; only reads are refused
		}
		if got := names(t, c, "resources/list", "uri"); got != "test://plain" {
			t.Errorf("%s: resources %s", name, got)
		}
		if got := names(t, c, "tools/list", "name"); got != "get_weather" {
			t.Errorf("%s: tools %s", name, got)
		}
		if _, err := c.CallTool(ctx, "refresh_dashboard", map[string]any{}); err == nil {
			t.Errorf("%s: an app-only tool was called", name)
		}
		if res, err := c.CallTool(ctx, "get_weather", map[string]any{}); err != nil || res.Text() != "Sunny, 22°C" {
			t.Errorf("%s: the text fallback of get_weather: %v %v", name, res, err)
		}
	}
}

func TestVisibleDefersToNext(t *testing.T) {
	calls := 0
	next := func(ctx context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
		calls++
		return name != "test://plain"
	}
	s, err := weft.NewServer(weft.Implementation{}, &weft.Options{Logger: slog.New(slog.DiscardHandler), Visible: apps.Visible(next)})
	if err != nil {
		t.Fatal(err)
	}
	must(t, apps.Register(s, weather))
	must(t, s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "test://plain", Name: "plain"}},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) { return nil, nil }))
	c := wefttest.NewClient(t, s, caps(uiCaps))
	if got := names(t, c, "resources/list", "uri"); got != "ui://weather/dashboard" || calls == 0 {
		t.Errorf("resources %q, %d calls", got, calls)
	}
}

func TestMeta(t *testing.T) {
	if m := (apps.App{}).Meta(); !m.IsNull() {
		t.Errorf("empty app meta %s", m)
	}
	if m := (apps.App{Border: apps.BorderOff, Permissions: apps.Permissions{Camera: true, Microphone: true}}).Meta().String(); m != `{"ui":{"permissions":{"camera":{},"microphone":{}},"prefersBorder":false}}` {
		t.Errorf("meta %s", m)
	}
	if m := weather.Meta().String(); m != weatherMeta {
		t.Errorf("meta %s", m)
	}
}

func TestValidate(t *testing.T) {
	mod := func(f func(*apps.App)) apps.App {
		a := weather
		a.CSP.ConnectDomains = append([]string(nil), a.CSP.ConnectDomains...)
		f(&a)
		return a
	}
	cases := map[string]apps.App{
		"http scheme":         mod(func(a *apps.App) { a.URI = "https://weather/dashboard" }),
		"empty URI path":      mod(func(a *apps.App) { a.URI = "ui://" }),
		"space in URI":        mod(func(a *apps.App) { a.URI = "ui://weather dash" }),
		"fragment":            mod(func(a *apps.App) { a.URI = "ui://weather#x" }),
		"no name":             mod(func(a *apps.App) { a.Name = " " }),
		"no doctype":          mod(func(a *apps.App) { a.HTML = "<html></html>" }),
		"doctype prefix only": mod(func(a *apps.App) { a.HTML = "<!DOCTYPE htmlx>" }),
		"invalid UTF-8":       mod(func(a *apps.App) { a.HTML = "<!DOCTYPE html>\xff" }),
		"origin with path":    mod(func(a *apps.App) { a.CSP.ConnectDomains[0] = "https://api.example.com/v1" }),
		"origin injection":    mod(func(a *apps.App) { a.CSP.ConnectDomains[0] = "https://a.com; script-src *" }),
		"quoted keyword":      mod(func(a *apps.App) { a.CSP.ResourceDomains = []string{"'unsafe-eval'"} }),
		"bare wildcard":       mod(func(a *apps.App) { a.CSP.FrameDomains = []string{"https://*"} }),
		"inner wildcard":      mod(func(a *apps.App) { a.CSP.FrameDomains = []string{"https://a.*.com"} }),
		"ftp scheme":          mod(func(a *apps.App) { a.CSP.BaseURIDomains = []string{"ftp://x.com"} }),
		"bad port":            mod(func(a *apps.App) { a.CSP.ConnectDomains[0] = "https://x.com:99999" }),
		"domain with scheme":  mod(func(a *apps.App) { a.Domain = "https://x.example.com" }),
		"unknown border":      mod(func(a *apps.App) { a.Border = 7 }),
		"negative TTL":        mod(func(a *apps.App) { a.Cache.TTLMillis = -1 }),
		"too many origins":    mod(func(a *apps.App) { a.CSP.ConnectDomains = make([]string, apps.MaxDomains+1) }),
	}
	for name, a := range cases {
		if err := a.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if err := apps.Register(bareServer(t), a); err == nil {
			t.Errorf("%s: registered", name)
		}
	}
	ok := mod(func(a *apps.App) {
		a.HTML = "\ufeff\n  <!doctype HTML>\n<p>x</p>"
		a.CSP.ConnectDomains = []string{"http://localhost:3000", "ws://127.0.0.1:8080"}
	})
	if err := ok.Validate(); err != nil {
		t.Errorf("valid app: %v", err)
	}
}

func TestUITool(t *testing.T) {
	base := weft.Tool{Name: "t", Description: "d", Meta: exactjson.Object(exactjson.Field("x", exactjson.Int(1)))}
	got := apps.UITool(base, "ui://a/b", apps.VisibilityModel, apps.VisibilityApp)
	if s := got.Meta.String(); s != `{"x":1,"ui":{"resourceUri":"ui://a/b","visibility":["model","app"]}}` {
		t.Errorf("meta %s", s)
	}
	if base.Meta.Has("ui") {
		t.Error("UITool changed its argument")
	}
	again := apps.UITool(got, "ui://a/c")
	if s := again.Meta.String(); s != `{"x":1,"ui":{"resourceUri":"ui://a/c"}}` {
		t.Errorf("relinked meta %s", s)
	}
	for name, f := range map[string]func(){
		"not ui://":          func() { apps.UITool(base, "https://a") },
		"unknown visibility": func() { apps.UITool(base, "ui://a", "user") },
		"repeated":           func() { apps.UITool(base, "ui://a", apps.VisibilityApp, apps.VisibilityApp) },
		"meta not an object": func() { apps.UITool(weft.Tool{Name: "t", Meta: exactjson.Int(1)}, "ui://a") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// bareServer is a server with the default options, for registrations that
// must fail.
func bareServer(t *testing.T) *weft.Server {
	t.Helper()
	s, err := weft.NewServer(weft.Implementation{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
