package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/apps"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/skills"
)

// kitEnv makes the test binary serve kitServer on stdio.
const kitEnv = "WEFT_GATEWAY_KIT"

// kitServer is an upstream with resources (one whose URI has no "://"), a
// template with completions,
// resource links and embedded resources in a tool result and a prompt, an
// MCP App (apps.Register, a tool linked to it, ui:// hidden from clients
// without the extension) and a skill (skills.Register).
func kitServer() (*weft.Server, error) {
	s, err := weft.NewServer(weft.Implementation{Name: "kit", Version: "1"}, &weft.Options{Visible: apps.Visible(nil)})
	if err != nil {
		return nil, err
	}
	today := weft.ResourceInfo{URI: "data://notes/today", Name: "today", MimeType: "text/plain"}
	text := func(uri, body string) *weft.ReadResourceResult {
		return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(uri, "text/plain", body)}}
	}
	bundles, err := skills.LoadAll(fstest.MapFS{
		"pdf-tools/SKILL.md":     {Data: []byte("---\nname: pdf-tools\ndescription: Fill PDF forms\n---\n\n# PDF tools\n")},
		"pdf-tools/ref/FORMS.md": {Data: []byte("# Forms\n")},
	}, nil)
	if err != nil {
		return nil, err
	}
	for _, err := range []error{
		s.AddResource(weft.Resource{ResourceInfo: today}, func(context.Context, *weft.Request) (*weft.ReadResourceResult, error) {
			return text(today.URI, "today's notes"), nil
		}),
		// A URI without "://" cannot carry a resource prefix.
		s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "urn:kit:about", Name: "about"}}, func(context.Context, *weft.Request) (*weft.ReadResourceResult, error) {
			return text("urn:kit:about", "about the kit"), nil
		}),
		s.AddResourceTemplate(weft.ResourceTemplate{URITemplate: "data://notes/{day}", Name: "notes",
			Complete: func(_ context.Context, _ *weft.Request, c weft.CompletionRequest) (weft.Completion, error) {
				var out []string
				for _, d := range []string{"monday", "tuesday"} {
					if strings.HasPrefix(d, c.Value) {
						out = append(out, d)
					}
				}
				return weft.Completion{Values: out}, nil
			}},
			func(_ context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
				return text(req.Name, "notes of "+req.URIParams()["day"]), nil
			}),
		s.AddTool(weft.Tool{Name: "link", Description: "Links and embeds today's notes."},
			func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
				return &weft.CallToolResult{Content: []weft.Content{weft.ResourceLinkContent(today),
					weft.EmbeddedResource(weft.TextResource(today.URI, "text/plain", "today's notes"))}}, nil
			}),
		s.AddPrompt(weft.Prompt{Name: "brief", Description: "Today's notes, embedded."},
			func(context.Context, *weft.Request, map[string]string) (*weft.GetPromptResult, error) {
				return &weft.GetPromptResult{Messages: []weft.PromptMessage{{Role: weft.RoleUser,
					Content: weft.EmbeddedResource(weft.TextResource(today.URI, "text/plain", "today's notes"))}}}, nil
			}),
		apps.Register(s, apps.App{URI: "ui://chart", Name: "chart", HTML: "<!DOCTYPE html><html><body>chart</body></html>",
			CSP: apps.CSP{ConnectDomains: []string{"https://api.example.com"}}}),
		s.AddTool(apps.UITool(weft.Tool{Name: "chart", Description: "Charts the notes."}, "ui://chart"),
			func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("charted")}}, nil
			}),
		s.AddTool(weft.Tool{Name: "touch", Description: "Announces an update of today's notes."},
			func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
				s.NotifyResourceUpdated(today.URI)
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("touched")}}, nil
			}),
		skills.Register(s, bundles...),
	} {
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

func runKitStdio() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s, err := kitServer()
	if err == nil {
		err = s.ServeStdio(ctx, os.Stdin, os.Stdout)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func mustKit(t *testing.T) *weft.Server {
	t.Helper()
	s, err := kitServer()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// uiCaps declares the MCP Apps extension.
var uiCaps = exactjson.Object(exactjson.Field("extensions", exactjson.Object(exactjson.Field(apps.ExtensionID,
	exactjson.Object(exactjson.Field("mimeTypes", exactjson.Array(exactjson.String(apps.MimeType))))))))

// A server fronted by the gateway over loopback HTTP and stdio, and
// mounted in process, under one prefix: its resource and template URIs,
// the links and embedded resources of its results, its app's resourceUri,
// its skills (skills/list, skills/get, resources/directory/read) and its
// resource updates all carry the resource prefix "kit" after the scheme,
// and every operation reaches the upstream with its own URIs.
func TestComposedURIsAppsSkills(t *testing.T) {
	for _, mode := range []string{"http", "stdio", "mount"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var url, sep string
			switch mode {
			case "http", "stdio":
				sep = "_"
				up := gateway.UpstreamConfig{Name: "kit", Prefix: "kit_"}
				if mode == "http" {
					kit := mustKit(t)
					hs := httptest.NewServer(kit)
					t.Cleanup(hs.Close)
					up.URL = hs.URL
				} else {
					up.Command, up.Env = os.Args[0], map[string]string{kitEnv: "1"}
				}
				url = startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil).url
			case "mount":
				sep = "."
				kit := mustKit(t)
				parent, err := weft.NewServer(weft.Implementation{Name: "parent", Version: "1"}, &weft.Options{})
				if err != nil {
					t.Fatal(err)
				}
				gw, err := gateway.Mount(ctx, parent, "kit", "kit.", kit, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { gw.Close() })
				url = serveHTTP(t, parent)
			}
			ui := client.New(client.NewHTTPTransport(url, nil), &client.Options{Capabilities: uiCaps})
			defer ui.Close()
			plain := client.New(client.NewHTTPTransport(url, nil), nil)
			defer plain.Close()

			// Lists.
			uris := func(c *client.Client) []string {
				t.Helper()
				rs, err := c.ListResources(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, r := range rs {
					out = append(out, str(r, "uri"))
				}
				slices.Sort(out)
				return out
			}
			files := []string{"skill://kit/pdf-tools/SKILL.md", "skill://kit/pdf-tools/ref/FORMS.md"}
			want := append([]string{"data://kit/notes/today"}, files...)
			if got := uris(plain); !slices.Equal(got, want) {
				t.Errorf("resources of a client without UI: %v, want %v", got, want)
			}
			want = append(want, "ui://kit/chart")
			if got := uris(ui); !slices.Equal(got, want) {
				t.Errorf("resources: %v, want %v", got, want)
			}
			tpls, err := ui.ListResourceTemplates(ctx)
			if err != nil || len(tpls) != 1 || str(tpls[0], "uriTemplate") != "data://kit/notes/{day}" {
				t.Fatalf("templates %v %v", tpls, err)
			}

			// Reads, mapped both ways.
			for uri, body := range map[string]string{"data://kit/notes/today": "today's notes", "data://kit/notes/monday": "notes of monday"} {
				r, err := ui.ReadResource(ctx, uri)
				if err != nil || len(r.Contents) != 1 || r.Contents[0].URI != uri || r.Contents[0].Text != body {
					t.Fatalf("read %s: %+v %v", uri, r, err)
				}
			}
			for _, uri := range []string{"data://notes/today", "data://notes/monday"} {
				if _, err := ui.ReadResource(ctx, uri); err == nil {
					t.Errorf("the upstream's own URI %s is readable through the gateway", uri)
				}
			}
			comp, err := ui.Complete(ctx, client.ResourceRef("data://kit/notes/{day}"), "day", "mo", nil)
			if err != nil || !slices.Equal(comp.Values, []string{"monday"}) {
				t.Fatalf("completion: %+v %v", comp, err)
			}

			// Links and embedded resources.
			res, err := ui.CallTool(ctx, "kit"+sep+"link", nil)
			if err != nil || len(res.Content) != 2 {
				t.Fatalf("link: %+v %v", res, err)
			}
			for _, b := range res.Content {
				if b.URI != "data://kit/notes/today" {
					t.Errorf("%s block URI %q, want data://kit/notes/today", b.Type, b.URI)
				}
			}
			p, err := ui.GetPrompt(ctx, "kit"+sep+"brief", nil)
			if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.URI != "data://kit/notes/today" {
				t.Fatalf("prompt: %+v %v", p, err)
			}

			// The app: the tool's resourceUri names the exposed ui://
			// resource, which a UI client reads through the gateway.
			tools, err := ui.ListTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var chart client.Tool
			for _, tl := range tools {
				if tl.Name == "kit"+sep+"chart" {
					chart = tl
				}
			}
			meta, _ := chart.Raw.Get("_meta")
			uiMeta, _ := meta.Get("ui")
			if got := str(uiMeta, "resourceUri"); got != "ui://kit/chart" {
				t.Fatalf("chart tool _meta %s: resourceUri %q, want ui://kit/chart", meta, got)
			}
			app, err := ui.ReadResource(ctx, "ui://kit/chart")
			if err != nil || len(app.Contents) != 1 || app.Contents[0].URI != "ui://kit/chart" || app.Contents[0].MimeType != apps.MimeType ||
				!strings.Contains(app.Contents[0].Text, "chart") || !strings.Contains(app.Raw.String(), "https://api.example.com") {
				t.Fatalf("app: %+v %v", app, err)
			}
			if _, err := plain.ReadResource(ctx, "ui://kit/chart"); err == nil {
				t.Error("a client without UI read the app")
			}
			if res, err := ui.CallTool(ctx, "kit"+sep+"chart", nil); err != nil || res.Text() != "charted" {
				t.Fatalf("chart: %+v %v", res, err)
			}
			d, err := ui.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ext, _ := d.Capabilities.Get("extensions")
			if !ext.Has(apps.ExtensionID) || !ext.Has(skills.ExtensionID) {
				t.Fatalf("the gateway's extensions %s lack ui or skills", ext)
			}

			// Skills.
			list, err := ui.Call(ctx, skills.MethodList, exactjson.Object())
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := list.Get("skills")
			if entries.Len() != 1 {
				t.Fatalf("skills/list: %s", list)
			}
			e := entries.Elements()[0]
			rs, _ := e.Get("resources")
			var got []string
			for _, r := range rs.Elements() {
				got = append(got, str(r, "uri"))
			}
			slices.Sort(got)
			if str(e, "uri") != "skill://kit/pdf-tools/SKILL.md" || !slices.Equal(got, files) {
				t.Fatalf("skill entry %s", e)
			}
			g, err := ui.Call(ctx, skills.MethodGet, exactjson.Object(exactjson.Field("uri", exactjson.String("skill://kit/pdf-tools/SKILL.md"))))
			if sk, _ := g.Get("skill"); err != nil || str(sk, "uri") != "skill://kit/pdf-tools/SKILL.md" {
				t.Fatalf("skills/get: %s %v", g, err)
			}
			if g, err := ui.Call(ctx, skills.MethodGet, exactjson.Object(exactjson.Field("uri", exactjson.String("skill://pdf-tools/SKILL.md")))); err == nil {
				t.Fatalf("skills/get of the upstream's own URI: %s", g)
			}
			dir := func(uri string) []string {
				t.Helper()
				r, err := ui.Call(ctx, skills.MethodDirectoryRead, exactjson.Object(exactjson.Field("uri", exactjson.String(uri))))
				if err != nil {
					t.Fatalf("directory %s: %v", uri, err)
				}
				kids, _ := r.Get("resources")
				var out []string
				for _, k := range kids.Elements() {
					out = append(out, str(k, "uri")+" "+str(k, "mimeType"))
				}
				return out
			}
			if got, want := dir("skill://kit"), []string{"skill://kit/pdf-tools inode/directory"}; !slices.Equal(got, want) {
				t.Errorf("directory skill://kit: %v, want %v", got, want)
			}
			if got, want := dir("skill://kit/pdf-tools"), []string{"skill://kit/pdf-tools/SKILL.md text/markdown", "skill://kit/pdf-tools/ref inode/directory"}; !slices.Equal(got, want) {
				t.Errorf("directory skill://kit/pdf-tools: %v, want %v", got, want)
			}
			if got, want := dir("skill://kit/pdf-tools/ref"), []string{"skill://kit/pdf-tools/ref/FORMS.md text/markdown"}; !slices.Equal(got, want) {
				t.Errorf("directory skill://kit/pdf-tools/ref: %v, want %v", got, want)
			}
			md, err := ui.ReadResource(ctx, "skill://kit/pdf-tools/SKILL.md")
			if err != nil || len(md.Contents) != 1 || !strings.Contains(md.Contents[0].Text, "# PDF tools") {
				t.Fatalf("SKILL.md: %+v %v", md, err)
			}

			// Resource updates: the gateway subscribes upstream to
			// data://notes/today and relays its updates under the exposed
			// URI (the tool touch makes the upstream announce one).
			sub, err := ui.Listen(ctx, client.ListenFilter{ResourceSubscriptions: []string{"data://kit/notes/today"}})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case n := <-sub.Notifications():
					if n.Method != "notifications/resources/updated" || str(n.Params, "uri") != "data://kit/notes/today" {
						t.Fatalf("notification %s %s", n.Method, n.Params)
					}
					return
				case <-tick.C:
					if _, err := plain.CallTool(ctx, "kit"+sep+"touch", nil); err != nil {
						t.Fatal(err)
					}
				case <-ctx.Done():
					t.Fatal("no resource update through the gateway")
				}
			}
		})
	}
}

// Two upstreams serving the same URIs are both reachable under their
// resource prefixes; without prefixes the first keeps the URI.
func TestSameURIsTwoUpstreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	upstreams := func(pa, pb *string) []gateway.UpstreamConfig {
		var out []gateway.UpstreamConfig
		for i, p := range []*string{pa, pb} {
			hs := httptest.NewServer(mustKit(t))
			t.Cleanup(hs.Close)
			out = append(out, gateway.UpstreamConfig{Name: fmt.Sprintf("kit%d", i), URL: hs.URL, Prefix: fmt.Sprintf("k%d_", i), ResourcePrefix: p})
		}
		return out
	}
	a, b, none := "a", "b", ""
	for _, tc := range []struct {
		name   string
		pa, pb *string
		read   map[string]bool // URI -> readable
		skills []string
	}{
		{"prefixed", &a, &b, map[string]bool{"data://a/notes/today": true, "data://b/notes/monday": true, "data://notes/today": false, "urn:kit:about": false},
			[]string{"skill://a/pdf-tools/SKILL.md", "skill://b/pdf-tools/SKILL.md"}},
		{"unprefixed", &none, &none, map[string]bool{"data://notes/today": true, "data://a/notes/today": false, "urn:kit:about": true},
			[]string{"skill://pdf-tools/SKILL.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := startGateway(t, &gateway.Config{Upstreams: upstreams(tc.pa, tc.pb)}, testKeyring(t), nil)
			c := client.New(client.NewHTTPTransport(in.url, nil), nil)
			defer c.Close()
			for uri, ok := range tc.read {
				if _, err := c.ReadResource(ctx, uri); (err == nil) != ok {
					t.Errorf("read %s: %v, want readable %v", uri, err, ok)
				}
			}
			list, err := c.Call(ctx, skills.MethodList, exactjson.Object())
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := list.Get("skills")
			var got []string
			for _, e := range entries.Elements() {
				got = append(got, str(e, "uri"))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.skills) {
				t.Errorf("skills %v, want %v", got, tc.skills)
			}
		})
	}
}

// A mounted server's skills are listed per caller: the child's visibility
// filter applies to skills/list, skills/get and directory reads of the
// parent's callers.
func TestMountSkillsPerCaller(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	child, err := weft.NewServer(weft.Implementation{Name: "child", Version: "1"}, &weft.Options{
		Admission: func(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			return weft.Identity{Principal: r.BearerToken}, nil
		},
		Visible: func(_ context.Context, req *weft.Request, _ weft.ItemKind, name string) bool {
			return !strings.HasPrefix(name, "skill://secret") || req.Identity.Principal == "admin"
		}})
	if err != nil {
		t.Fatal(err)
	}
	bundles, err := skills.LoadAll(fstest.MapFS{
		"open/SKILL.md":   {Data: []byte("---\nname: open\ndescription: For everyone\n---\n")},
		"secret/SKILL.md": {Data: []byte("---\nname: secret\ndescription: For admins\n---\n")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := skills.Register(child, bundles...); err != nil {
		t.Fatal(err)
	}
	parent, err := weft.NewServer(weft.Implementation{Name: "parent", Version: "1"}, &weft.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Mount(ctx, parent, "child", "c.", child, &gateway.Options{ListAuthorization: "Bearer admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	url := serveHTTP(t, parent)
	for token, want := range map[string][]string{
		"":      {"skill://c/open/SKILL.md"},
		"bob":   {"skill://c/open/SKILL.md"},
		"admin": {"skill://c/open/SKILL.md", "skill://c/secret/SKILL.md"},
	} {
		c := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{BearerToken: token}), nil)
		defer c.Close()
		list, err := c.Call(ctx, skills.MethodList, exactjson.Object())
		if err != nil {
			t.Fatal(err)
		}
		entries, _ := list.Get("skills")
		var got []string
		for _, e := range entries.Elements() {
			got = append(got, str(e, "uri"))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("caller %q lists %v, want %v", token, got, want)
		}
		admin := token == "admin"
		if _, err := c.Call(ctx, skills.MethodGet, exactjson.Object(exactjson.Field("uri", exactjson.String("skill://c/secret/SKILL.md")))); (err == nil) != admin {
			t.Errorf("caller %q gets the secret skill: %v", token, err)
		}
		dir, err := c.Call(ctx, skills.MethodDirectoryRead, exactjson.Object(exactjson.Field("uri", exactjson.String("skill://c"))))
		if err != nil {
			t.Fatal(err)
		}
		if kids, _ := dir.Get("resources"); strings.Contains(kids.String(), "secret") != admin {
			t.Errorf("caller %q reads skill://c: %s", token, kids)
		}
		if _, err := c.Call(ctx, skills.MethodDirectoryRead, exactjson.Object(exactjson.Field("uri", exactjson.String("skill://c/secret")))); (err == nil) != admin {
			t.Errorf("caller %q reads skill://c/secret: %v", token, err)
		}
	}
}

// Closing the last mount that brought the UI and skills extensions
// withdraws them from the parent's server/discover, and the skills methods
// with them (Method not found); the parent's own extensions stay.
func TestCloseWithdrawsExtensions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	parent, err := weft.NewServer(weft.Implementation{Name: "parent", Version: "1"}, &weft.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const own = "example.com/own"
	parent.EnableExtension(own, exactjson.Value{})
	var gws []*gateway.Gateway
	for _, name := range []string{"kit", "kat"} {
		gw, err := gateway.Mount(ctx, parent, name, name+".", mustKit(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		gws = append(gws, gw)
	}
	url := serveHTTP(t, parent)
	c := client.New(client.NewHTTPTransport(url, nil), &client.Options{Capabilities: uiCaps})
	defer c.Close()
	exts := func() exactjson.Value {
		t.Helper()
		d, err := c.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ext, _ := d.Capabilities.Get("extensions")
		return ext
	}
	for i, want := range []bool{true, false} { // after closing the first mount, then the second
		gws[i].Close()
		ext := exts()
		if ext.Has(apps.ExtensionID) != want || ext.Has(skills.ExtensionID) != want {
			t.Fatalf("after closing %d of 2 mounts: extensions %s; want ui and skills %v", i+1, ext, want)
		}
		_, err := c.Call(ctx, skills.MethodList, exactjson.Object())
		var re *client.RPCError
		if unknown := errors.As(err, &re) && weft.Code(re.Code) == weft.CodeMethodNotFound; unknown == want {
			t.Fatalf("after closing %d of 2 mounts: skills/list: %v; want served %v", i+1, err, want)
		}
		if !ext.Has(own) {
			t.Fatalf("the parent's own extension went with the mounts: %s", ext)
		}
	}
}
