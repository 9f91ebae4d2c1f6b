package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

type greetArgs struct {
	Name string `json:"name,omitempty"`
}

type deleteArgs struct {
	Filename string `json:"filename,omitempty"`
}

type computeArgs struct {
	Seconds float64 `json:"seconds,omitempty"`
	Label   string  `json:"label,omitempty"`
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// addTaskTools registers the fixtures of the tasks extension scenarios.
func addTaskTools(s *weft.Server, add func(error)) {
	form := weft.Form(weft.ConditionalCapability)

	add(weft.AddTool(s, weft.Tool{Name: "greet", Description: "Greets synchronously."},
		func(ctx context.Context, req *weft.Request, in greetArgs) (*weft.CallToolResult, error) {
			return text("Hello, " + in.Name + "!"), nil
		}))
	add(weft.AddTool(s, weft.Tool{Name: "slow_compute", Description: "Sleeps for the given seconds, as a task when the client supports tasks.", Task: weft.TaskOptional},
		func(ctx context.Context, req *weft.Request, in computeArgs) (*weft.CallToolResult, error) {
			if req.Task() == nil && req.TasksSupported() {
				return nil, weft.RunAsTask(nil)
			}
			total := time.Duration(in.Seconds * float64(time.Second))
			for elapsed := time.Duration(0); elapsed < total; elapsed += 250 * time.Millisecond {
				_ = req.Progress(float64(elapsed.Milliseconds()), float64(total.Milliseconds()), "computing "+in.Label)
				if err := sleep(ctx, min(250*time.Millisecond, total-elapsed)); err != nil {
					return nil, err
				}
			}
			return text(fmt.Sprintf("Computed %s after %gs.", in.Label, in.Seconds)), nil
		}))
	add(weft.AddTool(s, weft.Tool{Name: "failing_job", Description: "Runs as a task and ends with a tool error.", Task: weft.TaskRequired},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			return nil, &weft.ToolError{Message: "The job failed, as it always does."}
		}))
	add(weft.AddTool(s, weft.Tool{Name: "protocol_error_job", Description: "Runs as a task and fails with an internal error.", Task: weft.TaskOptional},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if req.Task() == nil && req.TasksSupported() {
				return nil, weft.RunAsTask(nil)
			}
			return nil, errors.New("simulated internal failure")
		}))
	add(weft.AddTool(s, weft.Tool{Name: "confirm_delete", Description: "Asks for confirmation through the task, then deletes.",
		Task: weft.TaskOptional, Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, in deleteArgs) (*weft.CallToolResult, error) {
			if req.Task() == nil && req.TasksSupported() {
				return nil, weft.RunAsTask(nil)
			}
			_, outcome, ok, err := form.Answer(req, "confirm")
			if !ok {
				return nil, weft.AskInput("confirm", form.Ask("Delete the item?", objectSchema(boolProp("confirm"))))
			}
			if err != nil || outcome != weft.Accepted {
				return text("Deletion cancelled."), nil
			}
			return text("Deleted " + in.Filename + "."), nil
		}))
	add(weft.AddTool(s, weft.Tool{Name: "multi_input", Description: "Asks two questions at once through the task.",
		Task: weft.TaskOptional, Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if req.Task() == nil && req.TasksSupported() {
				return nil, weft.RunAsTask(nil)
			}
			in := req.InputResponses()
			if in.Has("first") && in.Has("second") {
				return text("Both answers received."), nil
			}
			return nil, weft.AskInput("first", form.Ask("First question?", objectSchema(stringProp("answer")))).
				Ask("second", form.Ask("Second question?", objectSchema(stringProp("answer"))))
		}))
	add(weft.AddTool(s, weft.Tool{Name: "test_tool_with_task", Description: "Asks for a name (MRTR), then continues as a task.",
		Task: weft.TaskRequired, Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if req.Task() != nil {
				st, _, _ := weft.FrameworkState[exactjson.Value](req)
				n, _ := st.Get("user_name")
				name, _ := n.AsString()
				return text("Hello, " + name + "! (from the task)"), nil
			}
			content, ok := acceptedContent(req, form, "user_name")
			if !ok {
				return nil, weft.AskInput("user_name", form.Ask("What is your name?", objectSchema(stringProp("name"))))
			}
			n, _ := content.Get("name")
			return nil, weft.RunAsTask(exactjson.Object(exactjson.Field("user_name", n)))
		}))
}
