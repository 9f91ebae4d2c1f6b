package weft

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
)

// TestTaskRunnerDoesNotFailTasksOfUnregisteredTools reproduces what the soak
// (soak/, issue #8) found when an instance of a fleet restarts while tasks
// are runnable: turning tasks on starts the runner at once, the runner claims a
// task before the instance has registered the task's tool, runTaskStep
// answers "runs tool ..., which is not registered" as a Go error, and the
// runner fails the task for good (InternalErrorJSON). The demo registers its
// tools after turning tasks on, so every restart of a `weft serve` in a fleet
// with a task backlog fails a few tasks (14 in the soak run recorded in
// docs/reliability.md). A tool this instance does not know (yet) is not a
// failure of the task: another instance, or this one a moment later, runs
// it.
func TestTaskRunnerDoesNotFailTasksOfUnregisteredTools(t *testing.T) {
	store := task.NewMemoryStore(nil)
	handler := func(ctx context.Context, req *Request) (*CallToolResult, error) {
		if req.Task() == nil && req.TasksSupported() {
			return nil, RunAsTask(nil)
		}
		return textResult("done"), nil
	}
	// The instance that creates the task runs no steps.
	front, _ := newServer(t, &Options{Tasks: &TaskOptions{Store: store, NoRunner: true}})
	must(t, front.AddTool(Tool{Name: "job", Description: "A task.", Task: TaskOptional}, handler))
	r := invRec(t, front, invBody(t, "tools/call", paramsCaps(invTasksCaps(), M{"name": "job"})))
	var created struct{ TaskID string }
	if r.msg.Result == nil || json.Unmarshal(r.msg.Result, &created) != nil || created.TaskID == "" {
		t.Fatalf("creating the task: %s", r)
	}

	// A starting instance: tasks first, tools a moment later (the demo's order).
	worker, logs := newServer(t, &Options{Tasks: &TaskOptions{Store: store, Lease: 500 * time.Millisecond}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = worker.Shutdown(ctx)
	})
	// The runner polls at once: it claims the task and hands it back.
	deadline := time.Now().Add(hangGuard)
	for logs.count(slog.LevelWarn, "step cannot run here now") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the runner never claimed the task before its tool was registered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	must(t, worker.AddTool(Tool{Name: "job", Description: "A task.", Task: TaskOptional}, handler))

	deadline = time.Now().Add(hangGuard)
	for {
		rec, err := store.Get(context.Background(), created.TaskID)
		must(t, err)
		switch rec.Status {
		case task.Completed:
			return
		case task.Failed, task.Cancelled:
			t.Fatalf("the task ended %s (error %s) because the runner claimed it before its tool was registered", rec.Status, rec.Error)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task is still %s", rec.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
