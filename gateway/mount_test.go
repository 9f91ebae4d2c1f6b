package gateway_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/gateway"
)

// A Weft server mounted in another: prefixed names, multi-round input,
// progress, passthrough authorization and list changes, in process.
func TestMount(t *testing.T) {
	child, _ := httpUpstream(t)
	parent, err := weft.NewServer(weft.Implementation{Name: "parent", Version: "1"}, &weft.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.AddTool(weft.Tool{Name: "own", Description: "The parent's own tool."},
		func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("own")}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := gateway.Mount(ctx, parent, "child", "child.", child, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	in := &instance{gw: gw, srv: parent, url: serveHTTP(t, parent)}
	var mu sync.Mutex
	var progress []float64
	c := client.New(client.NewHTTPTransport(in.url, &client.HTTPOptions{BearerToken: "tok-m"}), &client.Options{
		Handlers: client.Handlers{Elicit: nameAnswer("lin")},
		OnProgress: func(p, _ float64, _ string) {
			mu.Lock()
			progress = append(progress, p)
			mu.Unlock()
		}})

	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"child.approve", "child.count", "child.whoami", "own"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for tool, want := range map[string]string{"child.approve": "approved by lin", "child.whoami": "auth=Bearer tok-m", "own": "own", "child.count": "counted"} {
		res, err := c.CallTool(ctx, tool, nil)
		if err != nil || res.Text() != want {
			t.Fatalf("%s: %v %v, want %q", tool, res, err, want)
		}
	}
	mu.Lock()
	if !slices.Equal(progress, []float64{1, 2, 3}) {
		t.Errorf("progress %v", progress)
	}
	mu.Unlock()
	sub, err := c.Listen(ctx, client.ListenFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	child.RemoveTool("whoami")
	select {
	case <-sub.Notifications():
	case <-ctx.Done():
		t.Fatal("no list change through the mount")
	}
	waitFor(t, "child.whoami to go", func() bool {
		tools, _ := c.ListTools(ctx)
		return len(tools) == 3
	})
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	tools, err = c.ListTools(ctx)
	if err != nil || len(tools) != 1 || tools[0].Name != "own" {
		t.Fatalf("after unmount: %v %v", tools, err)
	}
}

// A mounted server's lists are read as the caller: its visibility filter
// applies per caller of the parent, and its hidden tools stay uncallable.
func TestMountListsPerCaller(t *testing.T) {
	child, err := weft.NewServer(weft.Implementation{Name: "child", Version: "1"}, &weft.Options{
		Admission: func(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			return weft.Identity{Principal: r.BearerToken}, nil
		},
		Visible: func(_ context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
			switch name {
			case "admin": // for admin (and root) only
				return req.Identity.Principal == "admin" || req.Identity.Principal == "root"
			case "guest": // hidden from admin
				return req.Identity.Principal != "admin"
			}
			return true
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"open", "admin", "guest"} {
		if err := child.AddTool(weft.Tool{Name: name, Description: "A tool."},
			func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(name)}}, nil
			}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		listAuth string
		want     map[string][]string // caller token -> tools listed
	}{
		{"", map[string][]string{"": {"c.guest", "c.open"}, "admin": {"c.open"}, "bob": {"c.guest", "c.open"}}},
		{"Bearer root", map[string][]string{"": {"c.guest", "c.open"}, "admin": {"c.admin", "c.open"}, "root": {"c.admin", "c.guest", "c.open"}}},
	} {
		t.Run("listAuthorization="+tc.listAuth, func(t *testing.T) {
			parent, err := weft.NewServer(weft.Implementation{Name: "parent", Version: "1"}, &weft.Options{})
			if err != nil {
				t.Fatal(err)
			}
			gw, err := gateway.Mount(ctx, parent, "child", "c.", child, &gateway.Options{ListAuthorization: tc.listAuth})
			if err != nil {
				t.Fatal(err)
			}
			defer gw.Close()
			url := serveHTTP(t, parent)
			for token, want := range tc.want {
				c := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{BearerToken: token}), nil)
				defer c.Close()
				tools, err := c.ListTools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range tools {
					names = append(names, tl.Name)
				}
				slices.Sort(names)
				if !slices.Equal(names, want) {
					t.Errorf("caller %q lists %v, want %v", token, names, want)
				}
				for _, name := range []string{"c.open", "c.admin", "c.guest"} {
					res, err := c.CallTool(ctx, name, nil)
					if listed := slices.Contains(want, name); listed != (err == nil) {
						t.Errorf("caller %q calls %s (listed %v): %v %v", token, name, listed, res, err)
					}
				}
			}
		})
	}
}

// The middleware of both servers run on a mounted operation, the parent's
// first, and the visibility filters of both apply.
func TestMountMiddlewareAndVisibility(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	record := func(who string) weft.Middleware {
		return func(next weft.Handler) weft.Handler {
			return func(ctx context.Context, req *weft.Request) (weft.Result, error) {
				mu.Lock()
				seen = append(seen, who+" "+req.Method+" "+req.Name)
				mu.Unlock()
				return next(ctx, req)
			}
		}
	}
	child, err := weft.NewServer(weft.Implementation{Name: "child", Version: "1"}, &weft.Options{
		Middleware: []weft.Middleware{record("child")},
		Visible: func(_ context.Context, _ *weft.Request, _ weft.ItemKind, name string) bool {
			return name != "child-hidden"
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"echo", "child-hidden", "parent-hidden"} {
		if err := child.AddTool(weft.Tool{Name: name, Description: "A tool."},
			func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(name)}}, nil
			}); err != nil {
			t.Fatal(err)
		}
	}
	parent, err := weft.NewServer(weft.Implementation{Name: "parent", Version: "1"}, &weft.Options{
		Middleware: []weft.Middleware{record("parent")},
		Visible: func(_ context.Context, _ *weft.Request, _ weft.ItemKind, name string) bool {
			return name != "c.parent-hidden"
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := gateway.Mount(ctx, parent, "child", "c.", child, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	c := client.New(client.NewHTTPTransport(serveHTTP(t, parent), nil), nil)
	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Name != "c.echo" {
		t.Fatalf("tools %+v, want c.echo only", tools)
	}
	for _, hidden := range []string{"c.child-hidden", "c.parent-hidden"} {
		if _, err := c.CallTool(ctx, hidden, nil); err == nil {
			t.Errorf("%s was called", hidden)
		}
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
	if res, err := c.CallTool(ctx, "c.echo", nil); err != nil || res.Text() != "echo" {
		t.Fatalf("c.echo: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"parent tools/call c.echo", "child tools/call echo"}; !slices.Equal(seen, want) {
		t.Fatalf("middleware saw %q, want %q", seen, want)
	}
}
