package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
)

// Tasks across eras: a tool of a 2025-11-25 upstream with
// execution.taskSupport "optional" or "required", called by a client
// declaring the tasks extension, runs as a task of the upstream
// (task-augmented tools/call) and the client gets a task of the tasks
// extension for it (weft.Proxy.RelayedTask, served by the upstream's taskRelay).
//
// The 2025 task lives in the upstream's session (over stdio: the process
// that created it), so the gateway instance holding that session drives it
// (legacyTask.run), as a 2025 client would: it polls tasks/get at the
// upstream's pollInterval; once the task needs input or completed, it calls
// tasks/result on the task's process, which relays the upstream's
// elicitation and sampling requests for the task and returns the result.
// Those requests become the task's inputRequests (status input_required);
// the client's tasks/update answers them. tasks/get of the client reads the
// driver's latest view; tasks/cancel reaches the upstream at once. The
// driver ends at a terminal status; the task stays known (to the caller who
// created it: the server seals its id) until its TTL, at least
// legacyTaskKeep after it ended.

// legacyTaskPrefix starts the relay ids of 2025-era tasks (those of a
// 2026-07-28 upstream are the upstream's ids).
const legacyTaskPrefix = "gw-task-"

// maxLegacyTasks bounds the 2025-era tasks one upstream's relay keeps on
// an instance, running or ended (ended ones are dropped first).
const maxLegacyTasks = 1024

// legacyTaskKeep is how long an ended 2025-era task stays known after it
// ended, when its TTL is shorter or unlimited.
const legacyTaskKeep = 10 * time.Minute

// Bounds of the upstream's pollInterval the driver honours (outside them,
// the nearest bound; none given: defaultLegacyPoll).
const (
	minLegacyPoll     = 50 * time.Millisecond
	maxLegacyPoll     = time.Minute
	defaultLegacyPoll = time.Second
)

// legacyTasks are the 2025-era tasks of one upstream on this instance.
type legacyTasks struct {
	mu       sync.Mutex
	m        map[string]*legacyTask
	reserved int // places taken by tasks being created
}

// legacyTask is one 2025-era task of the upstream and its driver's view.
type legacyTask struct {
	u      *upstream
	id     string // the relay id (legacyTaskPrefix...)
	upID   string // the upstream's taskId
	c      *conn  // the session (process) holding the task
	unpin  func() // ends the task's count on its process (procPool.pin)
	caller string // callerKey of its creator (the process's fair shares)
	// supports reports whether the creator's client can answer a request.
	supports func(method string, params exactjson.Value) bool
	ctx      context.Context
	cancel   context.CancelFunc

	mu      sync.Mutex
	rec     task.Record // the latest view (InputRequests from pending)
	pending map[string]*pendingInput
	order   []string // keys of pending, in order
	seq     int
	// leave ends the task's place among the upstream's calls waiting for
	// input (admitParked), taken at its first request; nil before.
	leave func()
	// started is when the gateway created the task (its clock, not the
	// upstream's: the TTL counts from it); ended is zero while running.
	started, ended time.Time
}

// pendingInput is a request of the upstream waiting for the client.
type pendingInput struct {
	method string
	params exactjson.Value
	answer chan exactjson.Value
}

// offersLegacyTasks reports a 2025-era upstream that runs tools/call as
// tasks (capabilities.tasks.requests.tools.call).
func offersLegacyTasks(c *conn) bool {
	t, _ := c.caps.Get("tasks")
	return !c.modern() && mustGet(mustGet(t, "requests"), "tools").Has("call")
}

// taskSupport is a tool's execution.taskSupport ("" when absent).
func taskSupport(tool exactjson.Value) string {
	s, _ := mustGet(mustGet(tool, "execution"), "taskSupport").AsString()
	return s
}

// tasksRequired is the requiredCapabilities of a tool that runs only as a
// task.
func tasksRequired() exactjson.Value {
	return exactjson.Object(exactjson.Field("extensions", exactjson.Object(exactjson.Field(client.TasksExtension, exactjson.Object()))))
}

// callAsTask runs tools/call params as a task of a 2025-era upstream and
// answers the client with the relayed task (see the top of this file). An
// upstream answering in line gets its result relayed as such.
func (u *upstream) callAsTask(ctx context.Context, req *weft.Request, params exactjson.Value) (exactjson.Value, error) {
	g := u.g
	c, err := u.get(ctx)
	if err != nil {
		return exactjson.Value{}, g.unavailable(u, err)
	}
	if c.modern() || !u.relaysTasks() { // the upstream changed meanwhile
		return u.invoke(ctx, req, "tools/call", params)
	}
	if err := u.legacy.reserve(); err != nil {
		return exactjson.Value{}, err
	}
	caller := callerKey(req)
	var t *turn
	if u.cfg.Command != "" {
		if t, err = u.pool.acquire(ctx, c, caller); err != nil {
			u.legacy.unreserve()
			return exactjson.Value{}, g.unavailable(u, err)
		}
		c = t.p.c
	}
	tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
	res, err := c.do(tctx, "tools/call", params.With("task", exactjson.Object()), callOpts{})
	cancel()
	unpin := func() {}
	if t != nil {
		unpin = u.pool.pin(c) // the process carries the task until it ends
	}
	t.done(answered(err))
	if err != nil {
		unpin()
		u.legacy.unreserve()
		var re *client.RPCError
		if errors.As(err, &re) {
			return exactjson.Value{}, upstreamError(u.cfg.Name, re)
		}
		if ctx.Err() != nil {
			return exactjson.Value{}, ctx.Err()
		}
		return exactjson.Value{}, g.unavailable(u, err)
	}
	tv, ok := res.Get("task")
	if !ok {
		unpin()
		u.legacy.unreserve()
		return res, nil // run in line after all
	}
	rec, err := legacyTaskRecord(tv)
	if err != nil {
		unpin()
		u.legacy.unreserve()
		return exactjson.Value{}, g.unavailable(u, fmt.Errorf("tools/call: %w", err))
	}
	id, err := newID()
	if err != nil {
		unpin()
		u.legacy.unreserve()
		return exactjson.Value{}, g.unavailable(u, err)
	}
	lctx, lcancel := context.WithCancel(g.park.ctx)
	lt := &legacyTask{u: u, id: legacyTaskPrefix + strings.TrimPrefix(id, "gw-"), upID: rec.ID, c: c, unpin: unpin, caller: caller,
		supports: supportsNow(req, u.cfg.Inputs), ctx: lctx, cancel: lcancel, pending: map[string]*pendingInput{}, started: time.Now()}
	if rec.Status == task.InputRequired {
		rec.Status = task.Working // until its requests are known
	}
	lt.rec = *rec
	u.legacy.add(lt)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		lt.run()
	}()
	return exactjson.Value{}, weft.Proxy{}.RelayedTask(u.relayName(), lt.view())
}

// reserve takes a place for a new task, dropping the tasks past their
// keep; an error when maxLegacyTasks are known.
func (ls *legacyTasks) reserve() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := time.Now()
	for id, lt := range ls.m {
		if lt.expired(now) {
			delete(ls.m, id)
		}
	}
	if len(ls.m)+ls.reserved >= maxLegacyTasks {
		return weft.NewError(weft.CodeInternalError, fmt.Sprintf("Too many tasks of this upstream are known to the gateway instance (%d, of which the ended are kept %s); retry later", maxLegacyTasks, legacyTaskKeep))
	}
	ls.reserved++
	return nil
}

func (ls *legacyTasks) unreserve() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.reserved--
}

// add puts lt in the place reserved for it.
func (ls *legacyTasks) add(lt *legacyTask) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.reserved--
	if ls.m == nil {
		ls.m = map[string]*legacyTask{}
	}
	ls.m[lt.id] = lt
}

func (ls *legacyTasks) get(id string) (*legacyTask, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	lt, ok := ls.m[id]
	if !ok || lt.expired(time.Now()) {
		return nil, false
	}
	return lt, true
}

// expired reports an ended task past both its TTL and legacyTaskKeep.
func (lt *legacyTask) expired(now time.Time) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.ended.IsZero() {
		return false
	}
	until := lt.ended.Add(legacyTaskKeep)
	if lt.rec.TTL > 0 && lt.started.Add(lt.rec.TTL).After(until) {
		until = lt.started.Add(lt.rec.TTL)
	}
	return now.After(until)
}

// view returns the task as the client sees it.
func (lt *legacyTask) view() *task.Record {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	rec := lt.rec.Clone()
	rec.ID = lt.id
	return rec
}

// legacyTaskRecord reads a 2025-11-25 Task object.
func legacyTaskRecord(v exactjson.Value) (*task.Record, error) {
	if v.Kind() != exactjson.KindObject {
		return nil, errors.New("the upstream's task is not an object")
	}
	m := v.Without("ttl").Without("pollInterval").Without("result").Without("error").Without("inputRequests")
	if ttl, ok := v.Get("ttl"); ok && !ttl.IsNull() {
		m = m.With("ttlMs", ttl)
	}
	if pi, ok := v.Get("pollInterval"); ok {
		m = m.With("pollIntervalMs", pi)
	}
	return taskRecord(m)
}

// pollInterval is the upstream's pollInterval within the driver's bounds.
func (lt *legacyTask) pollInterval() time.Duration {
	lt.mu.Lock()
	d := lt.rec.PollInterval
	lt.mu.Unlock()
	if d <= 0 {
		return defaultLegacyPoll
	}
	return min(max(d, minLegacyPoll), maxLegacyPoll)
}

// deadline bounds the driver: the task's TTL from its creation, else
// InputConfig.Lifetime.
func (lt *legacyTask) deadline() time.Time {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.rec.TTL > 0 {
		return lt.started.Add(lt.rec.TTL)
	}
	return lt.started.Add(lt.u.g.park.lim.Lifetime.D())
}

// run drives the task until it ends: tasks/get every pollInterval while it
// works, tasks/result once it needs input or completed.
func (lt *legacyTask) run() {
	u := lt.u
	ctx, cancel := context.WithDeadline(lt.ctx, lt.deadline())
	defer cancel()
	defer lt.cancel()
	if lt.unpin != nil {
		defer lt.unpin()
	}
	for {
		select {
		case <-ctx.Done():
			lt.fail(ctx, ctx.Err())
			return
		case <-time.After(lt.pollInterval()):
		}
		rec, err := lt.poll(ctx)
		if err != nil {
			lt.fail(ctx, err)
			return
		}
		switch rec.Status {
		case task.Working:
			lt.update(rec)
			continue
		case task.Failed, task.Cancelled:
			lt.finish(rec, nil, nil)
			return
		}
		// input_required or completed: the result, and the requests before.
		lt.update(rec)
		res, err := lt.result(ctx)
		if err != nil && ctx.Err() != nil {
			lt.fail(ctx, ctx.Err())
			return
		}
		var re *client.RPCError
		if err != nil && !errors.As(err, &re) {
			lt.fail(ctx, err)
			return
		}
		// The status the result goes with.
		final, perr := lt.poll(ctx)
		switch {
		case err == nil:
			if perr != nil || final.Status != task.Completed {
				final = rec // the result was returned: completed
				final.Status = task.Completed
			}
			b, eerr := exactjson.Encode(u.uris.resultJSON(withoutRelatedTask(res)), 0)
			if eerr != nil {
				lt.fail(ctx, fmt.Errorf("tasks/result: %w", eerr))
				return
			}
			lt.finish(final, b, nil)
		case perr == nil && final.Status == task.Cancelled:
			lt.finish(final, nil, nil)
		default:
			if perr != nil || final.Status != task.Failed {
				final = rec
				final.Status = task.Failed
			}
			lt.finish(final, nil, rpcErrorJSON(re))
		}
		return
	}
}

// poll asks the upstream for the task (tasks/get).
func (lt *legacyTask) poll(ctx context.Context) (*task.Record, error) {
	tctx, cancel := context.WithTimeout(ctx, lt.u.cfg.callTimeout())
	defer cancel()
	res, err := lt.c.do(tctx, "tasks/get", taskIDParams(lt.upID), callOpts{})
	if err != nil {
		return nil, fmt.Errorf("tasks/get: %w", err)
	}
	rec, err := legacyTaskRecord(res)
	if err != nil {
		return nil, fmt.Errorf("tasks/get: %w", err)
	}
	return rec, nil
}

// result calls tasks/result on the task's process, relaying the requests
// the upstream sends for the task (request).
func (lt *legacyTask) result(ctx context.Context) (_ exactjson.Value, err error) {
	u := lt.u
	var t *turn
	if u.cfg.Command != "" {
		var err error
		if t, err = u.pool.acquireOn(ctx, lt.c, lt.caller); err != nil {
			return exactjson.Value{}, err
		}
		defer func() { t.done(answered(err)) }()
	}
	defer func() {
		lt.mu.Lock()
		leave := lt.leave
		lt.leave = nil
		lt.mu.Unlock()
		if leave != nil {
			leave()
		}
	}()
	s := &sink{request: func(rctx context.Context, method string, params exactjson.Value) (exactjson.Value, *client.RPCError) {
		return lt.request(rctx, t, method, params)
	}, notify: func(string, exactjson.Value) {}} // progress and logs are not relayed on tasks
	if t != nil {
		s.attending = t.attends
	}
	return lt.c.do(ctx, "tasks/result", taskIDParams(lt.upID), callOpts{sink: s})
}

// request relays a request of the upstream for the task to the client:
// it becomes one of the task's inputRequests until tasks/update answers
// it.
func (lt *legacyTask) request(ctx context.Context, t *turn, method string, params exactjson.Value) (exactjson.Value, *client.RPCError) {
	u := lt.u
	if method == "roots/list" && len(u.cfg.Roots) > 0 {
		return u.cfg.rootsResult(), nil
	}
	params = withoutRelatedTask(params)
	if _, err := inputRequest(method, params, nil, false); err != nil {
		return exactjson.Value{}, &client.RPCError{Code: client.CodeInvalidParams, Message: "The gateway cannot relay this request: " + err.Error()}
	}
	if err := u.checkURL(method, params); err != nil {
		return exactjson.Value{}, &client.RPCError{Code: client.CodeInvalidParams, Message: "The gateway does not relay this request: " + err.Error()}
	}
	// The server's own policies (its URL policy when the upstream has
	// none, secret form fields): nothing emits these requests but us.
	if err := checkRelayed(u.g.srv, method, params, u.urlPolicy); err != nil {
		u.g.log.Warn("gateway: refused an upstream's request for a task", "upstream", u.cfg.Name, "method", method, "err", err)
		return exactjson.Value{}, &client.RPCError{Code: client.CodeInvalidParams, Message: "The gateway does not relay this request: " + err.Error()}
	}
	if !lt.supports(method, params) {
		return exactjson.Value{}, &client.RPCError{Code: client.CodeMethodNotFound, Message: "The client behind the gateway does not support " + method}
	}
	switch method {
	case "elicitation/create":
		if isStr(mustGet(params, "mode"), "url") {
			params = params.Without("elicitationId") // the client's revision needs none
		}
	case "roots/list":
		params = exactjson.Object()
	}
	p := &pendingInput{method: method, params: params, answer: make(chan exactjson.Value, 1)}
	lt.mu.Lock()
	if lt.leave == nil {
		// Waiting for input counts among the upstream's parked calls.
		leave, err := u.admitParked(lt.caller)
		if err != nil {
			lt.mu.Unlock()
			return exactjson.Value{}, &client.RPCError{Code: client.CodeInternalError, Message: err.Error()}
		}
		lt.leave = leave
	}
	lt.seq++
	key := shortMethod(method) + "-" + strconv.Itoa(lt.seq)
	lt.pending[key] = p
	lt.order = append(lt.order, key)
	lt.syncInputLocked()
	lt.mu.Unlock()
	if !u.cfg.OneCallPerProcess {
		t.park() // the process may serve other calls meanwhile
	}
	defer func() {
		lt.mu.Lock()
		lt.dropLocked(key)
		lt.mu.Unlock()
	}()
	select {
	case v := <-p.answer:
		if !u.cfg.OneCallPerProcess {
			if err := t.resume(ctx); err != nil {
				return exactjson.Value{}, &client.RPCError{Code: client.CodeInternalError, Message: "Cancelled"}
			}
		}
		return v, nil
	case <-ctx.Done():
		return exactjson.Value{}, &client.RPCError{Code: client.CodeInternalError, Message: "Cancelled"}
	case <-lt.ctx.Done():
		return exactjson.Value{}, &client.RPCError{Code: client.CodeInternalError, Message: "The task ended"}
	}
}

// dropLocked removes pending request key (lt.mu held).
func (lt *legacyTask) dropLocked(key string) {
	if _, ok := lt.pending[key]; !ok {
		return
	}
	delete(lt.pending, key)
	for i, k := range lt.order {
		if k == key {
			lt.order = append(lt.order[:i:i], lt.order[i+1:]...)
			break
		}
	}
	lt.syncInputLocked()
}

// syncInputLocked sets the view's status and inputRequests from the
// pending requests (lt.mu held).
func (lt *legacyTask) syncInputLocked() {
	if !lt.ended.IsZero() {
		return
	}
	if len(lt.order) == 0 {
		lt.rec.InputRequests = nil
		if lt.rec.Status == task.InputRequired {
			lt.rec.Status = task.Working
		}
		return
	}
	ms := make([]exactjson.Member, len(lt.order))
	for i, k := range lt.order {
		p := lt.pending[k]
		ms[i] = exactjson.Field(k, exactjson.Object(exactjson.Field("method", exactjson.String(p.method)), exactjson.Field("params", p.params)))
	}
	b, err := exactjson.Encode(exactjson.Object(ms...), exactjson.MaxInputBytesCeiling)
	if err != nil {
		return
	}
	lt.rec.Status, lt.rec.InputRequests = task.InputRequired, b
	lt.rec.UpdatedAt = time.Now()
}

// update takes the upstream's view of a running task: its status message,
// times and intervals; the status is the driver's (input_required only
// with requests to show).
func (lt *legacyTask) update(rec *task.Record) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if !lt.ended.IsZero() {
		return
	}
	lt.rec.StatusMessage = rec.StatusMessage
	if rec.UpdatedAt.After(lt.rec.UpdatedAt) {
		lt.rec.UpdatedAt = rec.UpdatedAt
	}
	lt.rec.TTL, lt.rec.ExpiresAt, lt.rec.PollInterval = rec.TTL, rec.ExpiresAt, rec.PollInterval
}

// finish records the task's terminal status with its result or error.
func (lt *legacyTask) finish(rec *task.Record, result, rpcErr []byte) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if !lt.ended.IsZero() {
		return
	}
	id := lt.rec.ID
	lt.rec = *rec
	lt.rec.ID = id
	lt.rec.InputRequests = nil
	lt.rec.Result, lt.rec.Error = nil, nil
	switch rec.Status {
	case task.Completed:
		lt.rec.Result = result
	case task.Failed:
		lt.rec.Error = rpcErr
		if rpcErr == nil {
			msg := "The task failed upstream"
			if rec.StatusMessage != "" {
				msg += ": " + rec.StatusMessage
			}
			lt.rec.Error = rpcErrorJSON(&client.RPCError{Code: client.CodeInternalError, Message: msg})
		}
	}
	if lt.rec.UpdatedAt.IsZero() || lt.rec.UpdatedAt.Before(rec.UpdatedAt) {
		lt.rec.UpdatedAt = rec.UpdatedAt
	}
	lt.ended = time.Now()
}

// fail ends the task as failed by a local failure (the upstream broke, did
// not answer, the task outlived its TTL or the gateway closed).
func (lt *legacyTask) fail(ctx context.Context, err error) {
	u := lt.u
	lt.mu.Lock()
	ended := !lt.ended.IsZero()
	lt.mu.Unlock()
	if ended {
		return // cancelled: the driver stopped
	}
	u.g.log.Warn("gateway: an upstream task failed", "upstream", u.cfg.Name, "task", lt.upID, "err", err)
	reason := "it failed (see the gateway log)"
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		reason = "the task outlived its time to live"
	case errors.Is(err, context.DeadlineExceeded):
		reason = "it did not answer in time"
	case errors.Is(err, context.Canceled):
		reason = "the gateway stopped driving the task"
	case errors.Is(err, errUpstreamClosed):
		reason = "the connection to it broke"
	case errors.Is(err, client.ErrProtocol):
		reason = "it broke the protocol (see the gateway log)"
	}
	lt.mu.Lock()
	rec := lt.rec
	lt.mu.Unlock()
	rec.Status = task.Failed
	rec.UpdatedAt = time.Now()
	lt.finish(&rec, nil, rpcErrorJSON(&client.RPCError{Code: CodeUpstreamUnavailable,
		Message: fmt.Sprintf("Upstream %q is unavailable: %s", u.cfg.Name, reason),
		Data:    exactjson.Object(exactjson.Field("upstream", exactjson.String(u.cfg.Name)))}))
}

// answer passes the client's inputResponses to the pending requests they
// name; others are ignored (the tasks extension's tasks/update).
func (lt *legacyTask) answer(responses exactjson.Value) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for key, v := range responses.All() {
		p := lt.pending[key]
		if p == nil || v.Kind() != exactjson.KindObject {
			continue
		}
		select {
		case p.answer <- v:
			lt.dropLocked(key) // answered: no longer shown
		default:
		}
	}
}

// cancelTask asks the upstream to cancel the task (tasks/cancel); the
// pending requests end.
func (lt *legacyTask) cancelTask(ctx context.Context) error {
	u := lt.u
	tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
	defer cancel()
	res, err := lt.c.do(tctx, "tasks/cancel", taskIDParams(lt.upID), callOpts{})
	if err != nil {
		var re *client.RPCError
		if errors.As(err, &re) {
			return upstreamError(u.cfg.Name, re)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return u.g.unavailable(u, err)
	}
	if rec, err := legacyTaskRecord(res); err == nil && rec.Status == task.Cancelled {
		lt.finish(rec, nil, nil)
		lt.cancel() // the driver and the pending requests stop
	}
	return nil
}

// withoutRelatedTask drops the 2025 related-task key from v's _meta (the
// upstream's task id means nothing to the client).
func withoutRelatedTask(v exactjson.Value) exactjson.Value {
	meta, ok := v.Get("_meta")
	if !ok || meta.Kind() != exactjson.KindObject {
		return v
	}
	meta = meta.Without("io.modelcontextprotocol/related-task")
	if meta.Len() == 0 {
		return v.Without("_meta")
	}
	return v.With("_meta", meta)
}

// rpcErrorJSON encodes a JSON-RPC error object.
func rpcErrorJSON(e *client.RPCError) []byte {
	m := []exactjson.Member{exactjson.Field("code", exactjson.Int(int64(e.Code))), exactjson.Field("message", exactjson.String(e.Message))}
	if !e.Data.IsNull() {
		m = append(m, exactjson.Field("data", e.Data))
	}
	b, _ := exactjson.Encode(exactjson.Object(m...), 0)
	return b
}

// legacy returns the relay's 2025-era task of id; ok is false for the id
// of a 2026-07-28 upstream's task (even one starting like ours).
func (t taskRelay) legacy(id string) (*legacyTask, bool, error) {
	if lt, ok := t.u.legacy.get(id); ok {
		return lt, true, nil
	}
	if !strings.HasPrefix(id, legacyTaskPrefix) {
		return nil, false, nil
	}
	t.u.mu.Lock()
	c := t.u.c
	t.u.mu.Unlock()
	if c != nil && c.modern() {
		return nil, false, nil
	}
	return nil, true, weft.InvalidParams("Unknown task")
}

// pin counts a task on the process running c (so that it is kept while
// the task runs, owned by the task's caller: what the server sends for the
// task reaches no other caller's call) until the returned function is
// called. The caller's call that created the task holds the process then.
func (pp *procPool) pin(c *conn) (unpin func()) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for _, p := range pp.procs {
		if p.c == c && p.calls > 0 {
			owner := p.owner
			p.calls++
			return sync.OnceFunc(func() {
				pp.mu.Lock()
				defer pp.mu.Unlock()
				if p.calls--; p.calls == 0 {
					p.owner = ""
					pp.disown(owner)
				}
				pp.dispatch()
			})
		}
	}
	return func() {}
}

// acquireOn gives a call of caller the turn of the process running c (a
// task's), once it is free, within ctx.
func (pp *procPool) acquireOn(ctx context.Context, c *conn, caller string) (*turn, error) {
	pp.mu.Lock()
	var p *proc
	for _, q := range pp.procs {
		if q.c == c {
			p = q
		}
	}
	if p == nil || !pp.alive(p) {
		pp.mu.Unlock()
		return nil, fmt.Errorf("%w: the process running the task is gone", errUpstreamClosed)
	}
	p.calls++
	w := pp.enqueue(caller, p)
	pp.dispatch()
	pp.mu.Unlock()
	t := &turn{pool: pp, p: p, caller: caller}
	select {
	case <-w.ch:
	case <-ctx.Done():
		if pp.withdraw(w) {
			pp.mu.Lock()
			p.calls--
			pp.dispatch()
			pp.mu.Unlock()
			return nil, ctx.Err()
		}
		<-w.ch
		t.attending.Store(true)
		t.done(true) // the turn was granted, nothing was sent on it
		return nil, ctx.Err()
	}
	t.attending.Store(true)
	return t, nil
}

// supportsNow reports, for the requests of a task, what req's client
// declared and kinds admit (evaluated now: the task outlives req).
func supportsNow(req *weft.Request, kinds []string) func(method string, params exactjson.Value) bool {
	type kind struct {
		method string
		params exactjson.Value
	}
	probe := func(method string, params exactjson.Value) string {
		k := inputKind(method, params)
		if k == "sampling" && (params.Has("tools") || params.Has("toolChoice")) {
			k += "+tools"
		}
		return k
	}
	ok := map[string]bool{}
	for _, k := range []kind{
		{"elicitation/create", exactjson.Object(exactjson.Field("mode", exactjson.String("form")))},
		{"elicitation/create", exactjson.Object(exactjson.Field("mode", exactjson.String("url")))},
		{"sampling/createMessage", exactjson.Object()},
		{"sampling/createMessage", exactjson.Object(exactjson.Field("tools", exactjson.Array()))},
		{"roots/list", exactjson.Object()},
	} {
		ok[probe(k.method, k.params)] = allowed(kinds, k.method, k.params) && clientSupports(req, k.method, k.params)
	}
	return func(method string, params exactjson.Value) bool { return ok[probe(method, params)] }
}
