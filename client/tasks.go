package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// Task statuses.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// Task polling bounds: the interval used when the server suggests none,
// the longest wait honoured, and the shortest (so that pollIntervalMs 0
// does not spin).
const (
	DefaultPollInterval = time.Second
	MaxPollInterval     = 60 * time.Second
	minPollInterval     = time.Millisecond
)

// cancelTimeout bounds the best-effort tasks/cancel sent when the client
// stops following a task.
const cancelTimeout = 5 * time.Second

// Task is a task as returned by tasks/get (or a CreateTaskResult).
type Task struct {
	TaskID        string
	Status        string
	StatusMessage string
	CreatedAt     string
	LastUpdatedAt string
	// TTLMillis is the task's time to live; -1 when null (unlimited) or absent.
	TTLMillis int64
	// PollInterval is the suggested polling interval; 0 when absent.
	PollInterval  time.Duration
	InputRequests exactjson.Value // input_required
	Result        exactjson.Value // completed
	Error         *RPCError       // failed
	Raw           exactjson.Value
}

func parseTask(v exactjson.Value) *Task {
	t := &Task{TaskID: str(v, "taskId"), Status: str(v, "status"), StatusMessage: str(v, "statusMessage"),
		CreatedAt: str(v, "createdAt"), LastUpdatedAt: str(v, "lastUpdatedAt"), TTLMillis: -1, Raw: v}
	if ttl, ok := integer(v, "ttlMs"); ok {
		t.TTLMillis = ttl
	}
	if pi, ok := integer(v, "pollIntervalMs"); ok && pi >= 0 {
		t.PollInterval = time.Duration(min(pi, int64(MaxPollInterval/time.Millisecond))) * time.Millisecond
	}
	t.InputRequests, _ = v.Get("inputRequests")
	t.Result, _ = v.Get("result")
	if ev, ok := v.Get("error"); ok {
		t.Error = parseRPCError(ev)
	}
	return t
}

// pollInterval is the wait before the next tasks/get: the server's
// pollIntervalMs (capped), or DefaultPollInterval.
func pollInterval(v exactjson.Value) time.Duration {
	pi, ok := integer(v, "pollIntervalMs")
	if !ok || pi < 0 {
		return DefaultPollInterval
	}
	d := time.Duration(min(pi, int64(MaxPollInterval/time.Millisecond))) * time.Millisecond
	return max(d, minPollInterval)
}

func taskParams(id string) exactjson.Value {
	return exactjson.Object(exactjson.Field("taskId", exactjson.String(id)))
}

// GetTask calls tasks/get.
func (c *Client) GetTask(ctx context.Context, taskID string) (*Task, error) {
	res, err := c.roundTrip(ctx, "tasks/get", taskParams(taskID), nil, nil)
	if err != nil {
		return nil, err
	}
	return parseTask(res), nil
}

// UpdateTask calls tasks/update with inputResponses (key → result).
func (c *Client) UpdateTask(ctx context.Context, taskID string, inputResponses exactjson.Value) error {
	if inputResponses.Kind() != exactjson.KindObject {
		return errors.New("client: inputResponses must be an object")
	}
	_, err := c.roundTrip(ctx, "tasks/update", taskParams(taskID).With("inputResponses", inputResponses), nil, nil)
	return err
}

// CancelTask calls tasks/cancel. Cancellation is cooperative: the task may
// still complete.
func (c *Client) CancelTask(ctx context.Context, taskID string) error {
	_, err := c.roundTrip(ctx, "tasks/cancel", taskParams(taskID), nil, nil)
	return err
}

// FollowTask polls task taskID until it ends, answering its input requests
// through the handlers, and returns the inlined result of a completed task
// (e.g. a CallToolResult object). A failed or cancelled task is a
// *TaskError (wrapping the task's *RPCError when failed). When ctx ends, or
// an input handler fails, the task is cancelled with tasks/cancel, unless
// the handler's error wraps ErrLeaveTask: the task then keeps waiting for
// its input, to be followed again later.
func (c *Client) FollowTask(ctx context.Context, taskID string) (exactjson.Value, error) {
	cur, err := c.roundTrip(ctx, "tasks/get", taskParams(taskID), nil, nil)
	if err != nil {
		return exactjson.Value{}, err
	}
	if str(cur, "taskId") == "" {
		cur = cur.With("taskId", exactjson.String(taskID))
	}
	return c.followTask(ctx, cur)
}

// followTask drives a task from its CreateTaskResult to the end.
func (c *Client) followTask(ctx context.Context, cur exactjson.Value) (exactjson.Value, error) {
	id := str(cur, "taskId")
	if id == "" {
		return exactjson.Value{}, protocolErrorf("task result without a taskId")
	}
	answered := map[string]bool{}
	var lastStatus, lastMsg string
	reported := false
	abandon := func(status string, err error) (exactjson.Value, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
		defer cancel()
		_ = c.CancelTask(cctx, id)
		return exactjson.Value{}, &TaskError{TaskID: id, Status: status, StatusMessage: lastMsg, Err: err}
	}
	for {
		status, msg := str(cur, "status"), str(cur, "statusMessage")
		if !reported || status != lastStatus || msg != lastMsg {
			reported, lastStatus, lastMsg = true, status, msg
			if c.opts.OnTaskStatus != nil {
				c.opts.OnTaskStatus(id, status, msg)
			}
		}
		switch status {
		case TaskCompleted:
			res, ok := cur.Get("result")
			if !ok || res.Kind() != exactjson.KindObject {
				return exactjson.Value{}, protocolErrorf("completed task %s has no result object", id)
			}
			return res, nil
		case TaskFailed:
			ev, _ := cur.Get("error")
			return exactjson.Value{}, &TaskError{TaskID: id, Status: status, StatusMessage: msg, Err: parseRPCError(ev)}
		case TaskCancelled:
			return exactjson.Value{}, &TaskError{TaskID: id, Status: status, StatusMessage: msg}
		case TaskInputRequired:
			reqs, _ := cur.Get("inputRequests")
			var todo []exactjson.Member
			for k, r := range reqs.All() {
				if !answered[k] {
					todo = append(todo, exactjson.Field(k, r))
				}
			}
			if len(todo) > 0 {
				responses, err := c.resolveInputs(ctx, exactjson.Object(todo...))
				if err != nil {
					if ctx.Err() != nil {
						err = ctx.Err()
					} else if errors.Is(err, ErrLeaveTask) {
						return exactjson.Value{}, &TaskError{TaskID: id, Status: status, StatusMessage: msg, Err: err}
					}
					return abandon(status, err)
				}
				if err := c.UpdateTask(ctx, id, responses); err != nil {
					if ctx.Err() != nil {
						return abandon(status, ctx.Err())
					}
					return exactjson.Value{}, &TaskError{TaskID: id, Status: status, StatusMessage: msg, Err: err}
				}
				for _, m := range todo {
					answered[m.Name] = true
				}
			}
		}
		if err := sleepCtx(ctx, pollInterval(cur)); err != nil {
			return abandon(status, err)
		}
		next, err := c.roundTrip(ctx, "tasks/get", taskParams(id), nil, nil)
		if err != nil {
			if ctx.Err() != nil {
				return abandon(status, ctx.Err())
			}
			return exactjson.Value{}, &TaskError{TaskID: id, Status: status, StatusMessage: msg, Err: err}
		}
		if got := str(next, "taskId"); got != "" && got != id {
			return exactjson.Value{}, protocolErrorf("tasks/get for %s returned task %s", id, got)
		}
		cur = next
	}
}

// ErrLeaveTask, wrapped in the error of an input handler answering a
// task's input request, stops following the task without cancelling it:
// the task keeps waiting for the input, and FollowTask (here or in another
// process) can answer it later. The *TaskError returned wraps it.
var ErrLeaveTask = errors.New("client: the task was left waiting for its input")

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// String describes a task briefly.
func (t *Task) String() string {
	return fmt.Sprintf("task %s %s", t.TaskID, t.Status)
}
