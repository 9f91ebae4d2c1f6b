package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
)

// After calls that complete, time out, crash the upstream and park, and
// with a 2025 task working and another waiting for input, Close leaves no
// goroutine, parked call or process behind.
func TestNothingLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	up, log := fakeUpstream(t, "fake")
	up.CallTimeout = gateway.Duration(300 * time.Millisecond)
	up.Env[fakeTasksEnv] = "1"
	srv, err := weft.NewServer(weft.Implementation{Name: "gw", Version: "1"}, &weft.Options{Protector: testKeyring(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := gateway.New(ctx, srv, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	hc := &http.Client{Transport: &http.Transport{}}
	c := client.New(client.NewHTTPTransport(hs.URL, &client.HTTPOptions{Client: hc}), &client.Options{TasksEnabled: true, Capabilities: exactjson.Object(
		exactjson.Field("elicitation", exactjson.Object()))})

	if _, err := c.CallTool(ctx, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "hang", nil); err == nil {
		t.Fatal("hang succeeded")
	}
	res, err := c.Call(ctx, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
	if err != nil || !strings.Contains(res.String(), "input_required") {
		t.Fatalf("ask: %v %v", res, err)
	}
	if gw.Parked() != 1 {
		t.Fatalf("%d parked calls, want 1", gw.Parked())
	}
	for _, tool := range []string{"slowtask", "asktask"} {
		res, err := c.Call(ctx, "tools/call", map[string]any{"name": tool})
		if err != nil || str(res, "resultType") != "task" {
			t.Fatalf("%s: %v %v", tool, res, err)
		}
		if tool == "asktask" {
			waitFor(t, "the task to wait for input", func() bool {
				tk, err := c.GetTask(ctx, str(res, "taskId"))
				return err == nil && tk.Status == client.TaskInputRequired
			})
		}
	}
	pid := fakePid(t, log)
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	if gw.Parked() != 0 {
		t.Fatalf("%d parked calls after Close", gw.Parked())
	}
	if alive(pid) {
		t.Fatalf("upstream %d runs after Close", pid)
	}
	hs.Close()
	hc.CloseIdleConnections()
	waitFor(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
