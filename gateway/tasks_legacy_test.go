package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
)

// The tasks of a 2025-11-25 upstream (the fake with fakeTasksEnv) through
// the gateway, as tasks of the tasks extension: input through the task,
// an upstream failure, a cancellation reaching the upstream, a process
// dying under a task, and clients without the extension.
func TestLegacyTasks(t *testing.T) {
	up, log := fakeUpstream(t, "fake")
	up.Env[fakeTasksEnv] = "1"
	up.MaxProcesses = 1
	kr := testKeyring(t)
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, kr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var asked []exactjson.Value
	c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{TasksEnabled: true, Handlers: client.Handlers{
		Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
			asked = append(asked, p)
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
				exactjson.Field("content", exactjson.Object(exactjson.Field("answer", exactjson.String("yes"))))), nil
		}}})

	defer c.Close()
	create := func(tool string) string {
		t.Helper()
		res, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String(tool))))
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if str(res, "resultType") != "task" || !strings.HasPrefix(str(res, "taskId"), "relayed.") || str(res, "status") != "working" {
			t.Fatalf("%s answered %s", tool, res)
		}
		return str(res, "taskId")
	}
	settle := func(id string) *client.Task {
		t.Helper()
		var tk *client.Task
		waitFor(t, "the task to end", func() bool {
			var err error
			if tk, err = c.GetTask(ctx, id); err != nil {
				t.Fatal(err)
			}
			return tk.Status == client.TaskCompleted || tk.Status == client.TaskFailed || tk.Status == client.TaskCancelled
		})
		return tk
	}

	t.Run("input", func(t *testing.T) {
		res, err := c.CallTool(ctx, "asktask", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() != `asked "yes"` || res.TaskID == "" || strings.Contains(res.Meta.String(), "related-task") {
			t.Fatalf("result %+v", res)
		}
		if len(asked) != 1 || str(asked[0], "message") != "proceed?" || asked[0].Has("_meta") {
			t.Fatalf("the client was asked %v", asked)
		}
	})

	t.Run("URL refused", func(t *testing.T) {
		// The task's URL elicitation names an origin the URL policy does
		// not allow: the upstream is refused, the client never asked.
		n := len(asked)
		res, err := c.CallTool(ctx, "urltask", nil)
		if err != nil || res.Text() != "refused" || len(asked) != n {
			t.Fatalf("result %+v %v; asked %v", res, err, asked[n:])
		}
	})

	t.Run("failed", func(t *testing.T) {
		tk := settle(create("failtask"))
		if tk.Status != client.TaskFailed || tk.Error == nil || !strings.Contains(tk.Error.Message, "boom") {
			t.Fatalf("task %s", tk.Raw)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		id := create("slowtask")
		if tk, err := c.GetTask(ctx, id); err != nil || tk.Status != client.TaskWorking {
			t.Fatalf("task %v %v", tk, err)
		}
		if err := c.CancelTask(ctx, id); err != nil {
			t.Fatal(err)
		}
		if tk := settle(id); tk.Status != client.TaskCancelled {
			t.Fatalf("task %s", tk.Raw)
		}
		if !strings.Contains(readLog(t, log), "task cancelled slowtask") {
			t.Fatalf("the upstream did not see the cancellation:\n%s", readLog(t, log))
		}
	})

	t.Run("cancelled waiting for input", func(t *testing.T) {
		id := create("asktask")
		var tk *client.Task
		waitFor(t, "input_required", func() bool {
			var err error
			if tk, err = c.GetTask(ctx, id); err != nil {
				t.Fatal(err)
			}
			return tk.Status == client.TaskInputRequired
		})
		if tk.InputRequests.Len() != 1 || !tk.InputRequests.Has("elicit-1") {
			t.Fatalf("task %s", tk.Raw)
		}
		if err := c.CancelTask(ctx, id); err != nil {
			t.Fatal(err)
		}
		tk, err := c.GetTask(ctx, id)
		if err != nil || tk.Status != client.TaskCancelled || tk.InputRequests.Len() != 0 {
			t.Fatalf("after tasks/cancel: %v %v", tk, err)
		}
		// A late answer is ignored.
		if err := c.UpdateTask(ctx, id, exactjson.Object(exactjson.Field("elicit-1", exactjson.Object(exactjson.Field("action", exactjson.String("decline")))))); err != nil {
			t.Fatal(err)
		}
		if tk, err := c.GetTask(ctx, id); err != nil || tk.Status != client.TaskCancelled {
			t.Fatalf("after a late answer: %v %v", tk, err)
		}
	})

	t.Run("process died", func(t *testing.T) {
		tk := settle(create("crashtask"))
		if tk.Status != client.TaskFailed || tk.Error == nil || tk.Error.Code != gateway.CodeUpstreamUnavailable {
			t.Fatalf("task %s", tk.Raw)
		}
		// The upstream is started again for the next call.
		if res, err := c.CallTool(ctx, "echo", nil); err != nil || res.IsError {
			t.Fatalf("echo after the crash: %v %v", res, err)
		}
	})

	t.Run("without the extension", func(t *testing.T) {
		plain := fakeClient(t, in, client.Handlers{})
		_, err := plain.CallTool(ctx, "slowtask", nil)
		var re *client.RPCError
		if !errors.As(err, &re) || re.Code != client.CodeMissingRequiredClientCapability {
			t.Fatalf("a task-required tool: %v", err)
		}
		// A tool with optional task support runs in line.
		if res, err := plain.CallTool(ctx, "failtask", nil); err != nil || res.Text() != "in line" {
			t.Fatalf("a tool with optional task support: %v %v", res, err)
		}
	})

	t.Run("unknown", func(t *testing.T) {
		for _, id := range []string{"relayed.nothing", "gw-task-0"} {
			_, err := c.GetTask(ctx, id)
			var re *client.RPCError
			if !errors.As(err, &re) || re.Code != client.CodeInvalidParams {
				t.Fatalf("tasks/get %q: %v", id, err)
			}
		}
		// Another instance (same keyring, same upstream configuration)
		// opens the id but does not hold the task: it lives in the
		// upstream session of the instance that created it.
		id := create("slowtask")
		other := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, kr, nil)
		oc := client.New(client.NewHTTPTransport(other.url, nil), &client.Options{TasksEnabled: true})
		defer oc.Close()
		_, err := oc.GetTask(ctx, id)
		var re *client.RPCError
		if !errors.As(err, &re) || re.Code != client.CodeInvalidParams || re.Message != "Unknown task" {
			t.Fatalf("tasks/get on another instance: %v", err)
		}
		if tk, err := c.GetTask(ctx, id); err != nil || tk.Status != client.TaskWorking {
			t.Fatalf("tasks/get on its instance: %v %v", tk, err)
		}
	})
}
