package weft_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/wefttest"
)

// A conditional input kind the client lacks holds progress back unless the
// handler releases the output; MissingCapabilities answers -32021.
func TestReleaseOutput(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "t", Version: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, release := range []bool{false, true} {
		name := "held"
		if release {
			name = "released"
		}
		if err := srv.AddTool(weft.Tool{Name: name, Description: "Reports progress.", Inputs: []weft.Input{weft.Sampling(weft.ConditionalCapability)}},
			func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
				if release {
					srv.Proxy().ReleaseOutput(req)
				}
				_ = req.Progress(1, 2, "half")
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("done")}}, nil
			}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.AddTool(weft.Tool{Name: "refuse", Description: "Relays a refusal."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return nil, weft.Proxy{}.MissingCapabilities(exactjson.Object(exactjson.Field("sampling", exactjson.Object())))
		}); err != nil {
		t.Fatal(err)
	}
	var progress atomic.Int32
	c := wefttest.NewClient(t, srv, &wefttest.Options{Client: client.Options{
		OnProgress: func(float64, float64, string) { progress.Add(1) }}})
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		want int32
	}{{"held", 0}, {"released", 1}} {
		progress.Store(0)
		if _, err := c.CallTool(ctx, tc.tool, nil); err != nil {
			t.Fatal(err)
		}
		if got := progress.Load(); got != tc.want {
			t.Errorf("%s: %d progress notifications, want %d", tc.tool, got, tc.want)
		}
	}
	_, err = c.CallTool(ctx, "refuse", nil)
	var rerr *client.RPCError
	if !errors.As(err, &rerr) || weft.Code(rerr.Code) != weft.CodeMissingRequiredCapability {
		t.Fatalf("refuse: %v", err)
	}
	if caps, _ := rerr.Data.Get("requiredCapabilities"); !caps.Has("sampling") {
		t.Fatalf("refuse: data %s", rerr.Data)
	}
}

// fakeRelay is a TaskRelay over records in memory.
type fakeRelay struct {
	mu      sync.Mutex
	tasks   map[string]*task.Record
	updates []string
}

func (f *fakeRelay) GetTask(_ context.Context, _ *weft.Request, id string) (*task.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.tasks[id]
	if !ok {
		return nil, weft.InvalidParams("Unknown task upstream")
	}
	c := *r
	return &c, nil
}

func (f *fakeRelay) UpdateTask(_ context.Context, _ *weft.Request, id string, in exactjson.Value) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, id+" "+in.String())
	f.tasks[id].Status = task.Working
	return nil
}

func (f *fakeRelay) CancelTask(_ context.Context, _ *weft.Request, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks[id].Status = task.Cancelled
	return nil
}

// A tool answering with another server's task gives the client an id of
// this server, bound to the caller, through which the relay serves
// tasks/get, tasks/update and tasks/cancel.
func TestRelayTasks(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "t", Version: "1"}, &weft.Options{
		Admission: func(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			return weft.Identity{Principal: r.BearerToken, Partition: r.BearerToken}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	relay := &fakeRelay{tasks: map[string]*task.Record{"up-1": {ID: "up-1", Status: task.InputRequired, CreatedAt: now, UpdatedAt: now,
		TTL: time.Minute, PollInterval: 10 * time.Millisecond, InputRequests: []byte(`{"k":{"method":"roots/list","params":{}}}`)}}}
	remove, err := srv.Proxy().RelayTasks("up", relay)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Proxy().RelayTasks("up", relay); err == nil {
		t.Fatal("a second relay of the same name was registered")
	}
	for name, relayName := range map[string]string{"job": "up", "orphan": "nobody"} {
		if err := srv.AddTool(weft.Tool{Name: name, Description: "Answers with a task of another server."},
			func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
				r, _ := relay.GetTask(ctx, req, "up-1")
				return nil, weft.Proxy{}.RelayedTask(relayName, r)
			}); err != nil {
			t.Fatal(err)
		}
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	newClient := func(token string, tasks bool) *client.Client {
		c := client.New(client.NewHTTPTransport(hs.URL, &client.HTTPOptions{BearerToken: token}), &client.Options{TasksEnabled: tasks})
		t.Cleanup(func() { c.Close() })
		return c
	}
	alice := newClient("alice", true)
	d, err := alice.Discover(ctx)
	if ext, _ := d.Capabilities.Get("extensions"); err != nil || !ext.Has(weft.TasksExtension) {
		t.Fatalf("discover: %v %v", d, err)
	}
	created, err := alice.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("job"))))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := created.Get("taskId")
	id, _ := m.AsString()
	if rt, _ := created.Get("resultType"); rt.String() != `"task"` || !strings.HasPrefix(id, "relayed.") || strings.Contains(id, "up-1") {
		t.Fatalf("created %s", created)
	}
	tk, err := alice.GetTask(ctx, id)
	if err != nil || tk.TaskID != id || tk.Status != client.TaskInputRequired || !tk.InputRequests.Has("k") || tk.TTLMillis != 60000 {
		t.Fatalf("tasks/get: %v %v", tk, err)
	}
	if err := alice.UpdateTask(ctx, id, exactjson.Object(exactjson.Field("k", exactjson.Object(exactjson.Field("roots", exactjson.Array()))))); err != nil {
		t.Fatal(err)
	}
	if err := alice.CancelTask(ctx, id); err != nil {
		t.Fatal(err)
	}
	if tk, err := alice.GetTask(ctx, id); err != nil || tk.Status != client.TaskCancelled {
		t.Fatalf("after cancel: %v %v", tk, err)
	}
	relay.mu.Lock()
	if len(relay.updates) != 1 || relay.updates[0] != `up-1 {"k":{"roots":[]}}` {
		t.Errorf("updates %v", relay.updates)
	}
	relay.mu.Unlock()

	code := func(err error) int {
		var re *client.RPCError
		if errors.As(err, &re) {
			return re.Code
		}
		return 0
	}
	for _, tc := range []struct {
		name string
		c    *client.Client
		id   string
		want int
	}{
		{"another caller", newClient("mallory", true), id, client.CodeInvalidParams},
		{"a forged id", alice, "relayed.weft1.forged", client.CodeInvalidParams},
		{"a truncated id", alice, id[:len(id)-4], client.CodeInvalidParams},
		{"no tasks extension", newClient("alice", false), id, client.CodeMissingRequiredClientCapability},
	} {
		if _, err := tc.c.GetTask(ctx, tc.id); code(err) != tc.want {
			t.Errorf("%s: tasks/get %v, want code %d", tc.name, err, tc.want)
		}
	}
	if _, err := alice.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("orphan")))); code(err) != client.CodeInternalError {
		t.Errorf("a task of an unregistered relay: %v", err)
	}
	// A server whose only tasks are relayed acknowledges a listen for them
	// without agreeing to their status notifications (the client polls);
	// a client without the extension still gets -32021.
	sub, err := alice.Listen(ctx, client.ListenFilter{ToolsListChanged: true, TaskIDs: []string{id}})
	if err != nil {
		t.Fatalf("listen with a relayed task id: %v", err)
	}
	if sub.Accepted.Has("taskIds") || !sub.Accepted.Has("toolsListChanged") {
		t.Errorf("listen acknowledged %s, want the tools list but no task ids", sub.Accepted)
	}
	_ = sub.Close()
	if _, err := newClient("alice", false).Listen(ctx, client.ListenFilter{TaskIDs: []string{id}}); code(err) != client.CodeMissingRequiredClientCapability {
		t.Errorf("listen for tasks without the extension: %v", err)
	}
	remove()
	if _, err := alice.GetTask(ctx, id); code(err) != client.CodeInvalidParams && code(err) != client.CodeMethodNotFound {
		t.Errorf("after the relay is removed: %v", err)
	}
}

// AddVisibilityFilter hides items from the lists of the requests it
// refuses, makes list caching private, and is removable.
func TestAddVisibilityFilter(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "t", Version: "1"}, &weft.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := srv.AddTool(weft.Tool{Name: name, Description: "A tool."},
			func(context.Context, *weft.Request) (*weft.CallToolResult, error) {
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(name)}}, nil
			}); err != nil {
			t.Fatal(err)
		}
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c := client.New(client.NewHTTPTransport(hs.URL, nil), nil)
	defer c.Close()
	ctx := context.Background()
	list := func() (names []string, scope string) {
		t.Helper()
		res, err := c.Call(ctx, "tools/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		tools, _ := res.Get("tools")
		for v := range tools.Values() {
			n, _ := v.Get("name")
			s, _ := n.AsString()
			names = append(names, s)
		}
		sc, _ := res.Get("cacheScope")
		scope, _ = sc.AsString()
		return names, scope
	}
	for _, tc := range []struct {
		filter    bool
		want      string
		wantScope string
	}{
		{false, "a,b", "public"},
		{true, "a", "private"},
		{false, "a,b", "public"},
	} {
		var remove func()
		if tc.filter {
			remove = srv.Proxy().AddVisibilityFilter(func(_ context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
				return !(kind == weft.KindTool && name == "b")
			})
		}
		names, scope := list()
		if strings.Join(names, ",") != tc.want || scope != tc.wantScope {
			t.Errorf("filter %v: tools %v (%s), want %s (%s)", tc.filter, names, scope, tc.want, tc.wantScope)
		}
		if remove != nil {
			remove()
		}
	}
}

// CheckInputRequest applies the server's URL policy to a relayed URL
// elicitation (or the request's own policy), and lets other kinds pass.
func TestCheckInputRequest(t *testing.T) {
	s, err := weft.NewServer(weft.Implementation{Name: "s", Version: "1"}, &weft.Options{
		URLElicitation: elicit.URLPolicy{AllowedOrigins: []string{"https://example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	url := func(u string) exactjson.Value {
		return exactjson.Object(exactjson.Field("mode", exactjson.String("url")), exactjson.Field("message", exactjson.String("m")),
			exactjson.Field("url", exactjson.String(u)))
	}
	in := weft.URL(weft.ConditionalCapability)
	for _, tc := range []struct {
		name string
		r    weft.InputRequest
		ok   bool
	}{
		{"allowed", weft.Proxy{}.Relay(in, url("https://example.com/x")), true},
		{"other origin", weft.Proxy{}.Relay(in, url("https://elsewhere.example/x")), false},
		{"http", weft.Proxy{}.Relay(in, url("http://example.com/x")), false},
		{"own policy", weft.Proxy{}.WithURLPolicy(weft.Proxy{}.Relay(in, url("https://elsewhere.example/x")), elicit.URLPolicy{AllowedOrigins: []string{"https://elsewhere.example"}}), true},
		{"roots", weft.Proxy{}.Relay(weft.Roots(weft.ConditionalCapability), exactjson.Object()), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Proxy().CheckInputRequest(tc.r); (err == nil) != tc.ok {
				t.Fatalf("CheckInputRequest: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestZeroProxy: the zero Proxy builds values but refuses, with an error
// saying how to get a real one, what needs a server.
func TestZeroProxy(t *testing.T) {
	var p weft.Proxy
	if r := p.Relay(weft.Roots(weft.ConditionalCapability), exactjson.Object()); r.Err() != nil {
		t.Errorf("Relay on the zero Proxy: %v", r.Err())
	}
	if _, err := p.RelayTasks("r", nil); err == nil || !strings.Contains(err.Error(), "Server.Proxy") {
		t.Errorf("RelayTasks: %v", err)
	}
	if _, err := p.Admit(context.Background(), &weft.AdmissionRequest{}); err == nil || !strings.Contains(err.Error(), "Server.Proxy") {
		t.Errorf("Admit: %v", err)
	}
	if err := p.CheckInputRequest(p.Relay(weft.Roots(weft.ConditionalCapability), exactjson.Object())); err == nil {
		t.Error("CheckInputRequest on the zero Proxy succeeded")
	}
}
