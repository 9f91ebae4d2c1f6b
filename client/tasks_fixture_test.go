package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// TestTasksAgainstFixture follows real durable tasks of the conformance
// fixture server: task input answered through tasks/update (two parallel
// requests), a completed task with a tool error, and the MRTR round that
// precedes a task.
func TestTasksAgainstFixture(t *testing.T) {
	url := startConformance(t)
	var mu sync.Mutex
	var statuses, elicited []string
	c := New(NewHTTPTransport(url, &HTTPOptions{Client: &http.Client{}}), &Options{
		TasksEnabled: true,
		Handlers: Handlers{Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
			m, _ := params.Get("message")
			ms, _ := m.AsString()
			mu.Lock()
			elicited = append(elicited, ms)
			mu.Unlock()
			content := exactjson.Object(exactjson.Field("answer", exactjson.String("yes")),
				exactjson.Field("confirm", exactjson.Bool(true)), exactjson.Field("name", exactjson.String("Ada")))
			if strings.Contains(ms, "Delete") {
				content = exactjson.Object(exactjson.Field("confirm", exactjson.Bool(true)))
			} else if strings.Contains(ms, "question") {
				content = exactjson.Object(exactjson.Field("answer", exactjson.String("yes")))
			} else if strings.Contains(ms, "name") {
				content = exactjson.Object(exactjson.Field("name", exactjson.String("Ada")))
			}
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", content)), nil
		}},
		OnTaskStatus: func(_, status, message string) {
			mu.Lock()
			statuses = append(statuses, status)
			mu.Unlock()
		},
	})

	defer c.Close()
	ctx := testCtx(t)

	res, err := c.CallTool(ctx, "confirm_delete", map[string]string{"filename": "a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if res.TaskID == "" || res.Text() != "Deleted a.txt." {
		t.Fatalf("confirm_delete: task %q text %q", res.TaskID, res.Text())
	}
	res, err = c.CallTool(ctx, "multi_input", nil)
	if err != nil || res.Text() != "Both answers received." {
		t.Fatalf("multi_input: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx, "failing_job", nil)
	if err != nil || !res.IsError || res.TaskID == "" {
		t.Fatalf("failing_job: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx, "test_tool_with_task", nil)
	if err != nil || res.TaskID == "" || !strings.Contains(res.Text(), "Hello, Ada!") {
		t.Fatalf("test_tool_with_task: %v %+v", err, res)
	}
	_, err = c.CallTool(ctx, "protocol_error_job", nil)
	var te *TaskError
	if !errors.As(err, &te) {
		t.Fatalf("protocol_error_job: want a *TaskError, got %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elicited) < 4 {
		t.Fatalf("elicitations: %v", elicited)
	}
	if !contains(statuses, "input_required") || !contains(statuses, "completed") {
		t.Fatalf("statuses seen: %v", statuses)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
