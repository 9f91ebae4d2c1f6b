package weft_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
)

// TestTasksNoisyNeighbour (issue 25, D4): tenant A creates tasks whose
// steps never end until the test ends, as many as it may. Its creates
// past TaskOptions.MaxTasksPerIdentity fail with -31999 (HTTP 429), and
// tenant B's task, created afterwards, still runs and completes: A's
// backlog neither fills the store nor takes every worker. Seen failing
// before the change: A's creates were never refused and B's task never
// started.
func TestTasksNoisyNeighbour(t *testing.T) {
	const perIdentity = 40
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tenants := map[string]weft.Identity{
		"alice": {Principal: "alice", Partition: "tenant-a"},
		"bob":   {Principal: "bob", Partition: "tenant-b"},
	}
	store := task.NewMemoryStore(nil)
	defer store.Close()
	s, err := weft.NewServer(weft.Implementation{Name: "fair"}, &weft.Options{
		Logger: slog.New(slog.DiscardHandler),
		Tasks:  &weft.TaskOptions{Store: store, Workers: 4, MaxTasksPerIdentity: perIdentity, PollInterval: 20 * time.Millisecond},
		Admission: func(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			id, ok := tenants[r.BearerToken]
			if !ok {
				return weft.Identity{}, &weft.AdmissionError{Status: 401, Message: "who are you?"}
			}
			return id, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	err = weft.AddTool(s, weft.Tool{Name: "job", Description: "Runs as a task.", Task: weft.TaskRequired},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			if req.Identity.Partition == "tenant-a" {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("done for " + req.Identity.Principal)}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	defer close(release) // before Shutdown, which waits for the steps
	connect := func(token string) *client.Client {
		cl := client.New(client.NewHTTPTransport(ts.URL, &client.HTTPOptions{BearerToken: token}), &client.Options{TasksEnabled: true})
		t.Cleanup(func() { cl.Close() })
		return cl
	}

	alice := connect("alice")
	created := 0
	for {
		res, err := alice.Call(ctx, "tools/call", map[string]any{"name": "job", "arguments": map[string]any{}})
		if err != nil {
			var rerr *client.RPCError
			if !errors.As(err, &rerr) || weft.Code(rerr.Code) != weft.CodeRateLimited || rerr.HTTPStatus != 429 {
				t.Fatalf("tenant A's create %d: %v; want -31999 with HTTP 429", created+1, err)
			}
			break
		}
		if rt, _ := res.Get("resultType"); !exactjson.Equal(rt, exactjson.String("task")) {
			t.Fatalf("tenant A's create %d: %v, want a task", created+1, res)
		}
		created++
		if created > 10*perIdentity {
			t.Fatalf("tenant A created %d live tasks; want refusal past %d", created, perIdentity)
		}
	}
	if created != perIdentity {
		t.Fatalf("tenant A created %d live tasks before refusal, want %d", created, perIdentity)
	}

	res, err := connect("bob").CallTool(ctx, "job", map[string]any{})
	if err != nil {
		t.Fatalf("tenant B's task while tenant A floods: %v", err)
	}
	if res.TaskID == "" || res.Text() != "done for bob" {
		t.Fatalf("tenant B's result: task %q, %q", res.TaskID, res.Text())
	}
}
