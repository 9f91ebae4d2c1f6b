package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
)

// Tasks of 2026-07-28 upstreams (the tasks extension): a tools/call the
// upstream answers with a task gives the client that task, under an id the
// gateway's server seals (weft.Proxy.RelayTasks: bound to the caller, carrying
// the relay's name, which names the upstream, and the upstream's task id),
// so that tasks/get, tasks/update and tasks/cancel on any instance of the
// fleet reach the upstream's task. The same relay serves the tasks of a
// 2025-era upstream, which the instance holding its session drives
// (tasks_legacy.go).

// relayName is the name of the upstream's task relay on the server.
func (u *upstream) relayName() string { return "gateway/" + u.cfg.Name }

// offersTasks reports an upstream advertising the tasks extension.
func offersTasks(c *conn) bool {
	ext, _ := c.caps.Get("extensions")
	return c.modern() && ext.Has(client.TasksExtension)
}

// registerTasks registers the upstream's task relay on the server, once.
func (u *upstream) registerTasks() error {
	u.regMu.Lock()
	defer u.regMu.Unlock()
	if u.unrelay != nil || u.g.srv == nil {
		return nil
	}
	remove, err := u.g.srv.Proxy().RelayTasks(u.relayName(), taskRelay{u})
	if err != nil {
		return fmt.Errorf("gateway: upstream %q: %w", u.cfg.Name, err)
	}
	u.unrelay = remove
	u.tasksOn.Store(true)
	return nil
}

// taskRelay serves the relayed tasks of one upstream.
type taskRelay struct{ u *upstream }

func (t taskRelay) call(ctx context.Context, req *weft.Request, method string, params exactjson.Value) (exactjson.Value, error) {
	u := t.u
	if a := req.Header.Get("Authorization"); a != "" && u.cfg.Authorization == "passthrough" {
		ctx = context.WithValue(ctx, authKey{}, a)
	}
	c, err := u.get(ctx)
	if err != nil {
		return exactjson.Value{}, u.g.unavailable(u, err)
	}
	if !c.modern() {
		// The upstream was replaced by a 2025-era server: its tasks are gone.
		return exactjson.Value{}, weft.InvalidParams("Unknown task")
	}
	tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
	defer cancel()
	res, err := u.do(tctx, c, method, params, callOpts{caps: req.ClientCapabilities})
	if err != nil {
		var re *client.RPCError
		if errors.As(err, &re) {
			return exactjson.Value{}, upstreamError(u.cfg.Name, re)
		}
		if ctx.Err() != nil {
			return exactjson.Value{}, ctx.Err()
		}
		return exactjson.Value{}, u.g.unavailable(u, err)
	}
	return res, nil
}

func (t taskRelay) GetTask(ctx context.Context, req *weft.Request, id string) (*task.Record, error) {
	if lt, ok, err := t.legacy(id); ok {
		if err != nil {
			return nil, err
		}
		return lt.view(), nil
	}
	res, err := t.call(ctx, req, "tasks/get", taskIDParams(id))
	if err != nil {
		return nil, err
	}
	rec, err := taskRecord(res)
	if err != nil {
		return nil, t.u.g.unavailable(t.u, fmt.Errorf("tasks/get: %w", err))
	}
	if rec.Status == task.InputRequired {
		if err := t.screen(ctx, req, id, rec); err != nil {
			return nil, err
		}
	}
	if rec.Result != nil && t.u.uris.prefix != "" {
		// The resource links of the tool result carry exposed URIs.
		v, err := exactjson.Parse(rec.Result, exactjson.Limits{})
		if err == nil {
			rec.Result, err = exactjson.Encode(t.u.uris.resultJSON(v), 0)
		}
		if err != nil {
			return nil, t.u.g.unavailable(t.u, fmt.Errorf("tasks/get: the task's result: %w", err))
		}
	}
	return rec, nil
}

// screen removes from rec's inputRequests those the gateway does not relay
// (a URL its policy or the server's refuses, a form asking for secrets:
// see checkRelayed), declining them upstream with tasks/update; with none
// left the task shows as working.
func (t taskRelay) screen(ctx context.Context, req *weft.Request, id string, rec *task.Record) error {
	u := t.u
	reqs, err := exactjson.Parse(rec.InputRequests, parseLimits)
	if err != nil || reqs.Kind() != exactjson.KindObject {
		return u.g.unavailable(u, fmt.Errorf("tasks/get: the task's inputRequests: not an object"))
	}
	var declined []exactjson.Member
	keep := reqs
	for key, r := range reqs.All() {
		m := str(r, "method")
		p, _ := r.Get("params")
		err := u.checkURL(m, p)
		if err == nil {
			err = checkRelayed(u.g.srv, m, p, u.urlPolicy)
		}
		if err == nil {
			continue
		}
		u.g.log.Warn("gateway: refused an input request of an upstream's task; declined upstream", "upstream", u.cfg.Name, "key", key, "method", m, "err", err)
		keep = keep.Without(key)
		if m == "elicitation/create" {
			declined = append(declined, exactjson.Field(key, exactjson.Object(exactjson.Field("action", exactjson.String("decline")))))
		}
	}
	if keep.Len() == reqs.Len() {
		return nil
	}
	if len(declined) > 0 {
		if _, err := t.call(ctx, req, "tasks/update", taskIDParams(id).With("inputResponses", exactjson.Object(declined...))); err != nil {
			return err
		}
	}
	if keep.Len() == 0 {
		rec.Status, rec.InputRequests = task.Working, nil
		return nil
	}
	rec.InputRequests, err = exactjson.Encode(keep, 0)
	return err
}

func (t taskRelay) UpdateTask(ctx context.Context, req *weft.Request, id string, inputResponses exactjson.Value) error {
	if lt, ok, err := t.legacy(id); ok {
		if err == nil {
			lt.answer(inputResponses)
		}
		return err
	}
	_, err := t.call(ctx, req, "tasks/update", taskIDParams(id).With("inputResponses", inputResponses))
	return err
}

func (t taskRelay) CancelTask(ctx context.Context, req *weft.Request, id string) error {
	if lt, ok, err := t.legacy(id); ok {
		if err == nil {
			err = lt.cancelTask(ctx)
		}
		return err
	}
	_, err := t.call(ctx, req, "tasks/cancel", taskIDParams(id))
	return err
}

func taskIDParams(id string) exactjson.Value {
	return exactjson.Object(exactjson.Field("taskId", exactjson.String(id)))
}

// taskStatuses are the statuses of the tasks extension.
var taskStatuses = map[string]task.Status{
	"working": task.Working, "input_required": task.InputRequired, "completed": task.Completed,
	"failed": task.Failed, "cancelled": task.Cancelled,
}

// taskRecord reads an upstream's Task object (a CreateTaskResult or the
// result of tasks/get).
func taskRecord(v exactjson.Value) (*task.Record, error) {
	rec := &task.Record{ID: str(v, "taskId"), StatusMessage: str(v, "statusMessage")}
	if rec.ID == "" {
		return nil, errors.New("the upstream's task has no taskId")
	}
	st, ok := taskStatuses[str(v, "status")]
	if !ok {
		return nil, fmt.Errorf("the upstream's task has status %q", str(v, "status"))
	}
	rec.Status = st
	var err error
	if rec.CreatedAt, err = time.Parse(time.RFC3339Nano, str(v, "createdAt")); err != nil {
		return nil, fmt.Errorf("the upstream's task createdAt: %w", err)
	}
	if rec.UpdatedAt, err = time.Parse(time.RFC3339Nano, str(v, "lastUpdatedAt")); err != nil {
		return nil, fmt.Errorf("the upstream's task lastUpdatedAt: %w", err)
	}
	if ms, ok := intMember(v, "ttlMs"); ok && ms > 0 {
		rec.TTL = time.Duration(ms) * time.Millisecond
		rec.ExpiresAt = rec.CreatedAt.Add(rec.TTL)
	}
	if ms, ok := intMember(v, "pollIntervalMs"); ok && ms > 0 {
		rec.PollInterval = time.Duration(ms) * time.Millisecond
	}
	raw := func(name string, kind exactjson.Kind) ([]byte, error) {
		m, ok := v.Get(name)
		if !ok {
			return nil, nil
		}
		if m.Kind() != kind {
			return nil, fmt.Errorf("the upstream's task %s is not an object", name)
		}
		return exactjson.Encode(m, 0)
	}
	switch st {
	case task.InputRequired:
		rec.InputRequests, err = raw("inputRequests", exactjson.KindObject)
	case task.Completed:
		rec.Result, err = raw("result", exactjson.KindObject)
	case task.Failed:
		rec.Error, err = raw("error", exactjson.KindObject)
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

func intMember(v exactjson.Value, name string) (int64, bool) {
	m, _ := v.Get(name)
	n, ok := m.AsNumber()
	if !ok {
		return 0, false
	}
	return n.Int64()
}

// relaysTasks reports whether the upstream's task relay is registered.
func (u *upstream) relaysTasks() bool { return u.tasksOn.Load() }

// declaresTasks reports a client declaring the tasks extension.
func declaresTasks(caps exactjson.Value) bool {
	ext, _ := caps.Get("extensions")
	t, ok := ext.Get(client.TasksExtension)
	return ok && t.Kind() == exactjson.KindObject
}
