package weft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
)

// TasksExtension is the identifier of the MCP tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// TaskSupport declares whether a tool may continue as a durable task.
type TaskSupport uint8

const (
	// TaskNone: the tool always answers synchronously (the default).
	TaskNone TaskSupport = iota
	// TaskOptional: the handler may return [RunAsTask] when the client
	// declared the tasks extension on the request.
	TaskOptional
	// TaskRequired: the tool cannot be served without a task; a client that
	// does not declare the tasks extension gets -32021 before the handler runs.
	TaskRequired
)

// TaskOptions configure durable tasks ([Options].Tasks). The zero value
// is usable: every field has a documented default.
type TaskOptions struct {
	// Store persists tasks: task/sqlitestore for one machine, task/pgstore
	// for fleets. Default: an in-memory store, for development only (its
	// tasks do not survive a restart; logged as a warning). A store the
	// application gives stays the application's to close.
	Store task.Store
	// Workers is the number of task steps run concurrently by this server
	// (default task.DefaultWorkers).
	Workers int
	// MaxPartitionWorkers bounds the steps of one partition this server
	// runs at once, so that one tenant's slow steps leave workers for the
	// others (default task.DefaultPartitionWorkers(Workers): all but a
	// quarter of them). The store's claims serve the partitions
	// round-robin, so one tenant's backlog does not delay another's tasks.
	MaxPartitionWorkers int
	// MaxTasksPerIdentity bounds the live (working or input_required)
	// tasks of one identity (principal within its partition): a tools/call
	// that would create one more fails with -31999 (HTTP 429, Retry-After)
	// before any task is stored (default task.DefaultMaxTasksPerIdentity;
	// negative: unbounded).
	MaxTasksPerIdentity int
	// MaxTasksPerPartition bounds the live tasks of one partition, all its
	// principals together, likewise (default
	// task.DefaultMaxTasksPerPartition; negative: unbounded).
	MaxTasksPerPartition int
	// Lease is the lease of a running step (default task.DefaultLease).
	Lease time.Duration
	// TTL is the lifetime of each task from creation (default 1 hour).
	TTL time.Duration
	// PollInterval is the polling interval suggested to clients (default 500ms).
	PollInterval time.Duration
	// Retention is how long finished tasks stay readable (default task.DefaultRetention).
	Retention time.Duration
	// SweepInterval is how often expired tasks are failed and finished ones
	// past Retention deleted (default task.DefaultSweepInterval).
	SweepInterval time.Duration
	// WorkerID names this server's task runner in lease records (the lease
	// owner of every step it runs), so an operator sees which instance holds
	// a step. Default: a random id.
	WorkerID string
	// NoRunner disables running steps on this server (a front-end that only
	// creates and serves tasks while other instances run them).
	NoRunner bool
}

type taskEngine struct {
	opts   TaskOptions
	store  task.Store
	owned  bool // the store is the default in-memory one: closed with the engine
	cancel context.CancelFunc
	done   chan struct{}
}

// check reports the first count or duration that is negative.
func (o TaskOptions) check() error {
	for _, c := range []struct {
		name string
		v    int64
	}{{"Workers", int64(o.Workers)}, {"MaxPartitionWorkers", int64(o.MaxPartitionWorkers)},
		{"Lease", int64(o.Lease)}, {"TTL", int64(o.TTL)}, {"PollInterval", int64(o.PollInterval)},
		{"Retention", int64(o.Retention)}, {"SweepInterval", int64(o.SweepInterval)}} {
		if c.v < 0 {
			return fmt.Errorf("weft: TaskOptions.%s = %d is negative (0 means the default)", c.name, c.v)
		}
	}
	return nil
}

// ensureTasks turns tasks on with the default TaskOptions, for a tool that
// declares task support on a server whose Options.Tasks is nil.
func (s *Server) ensureTasks() error {
	if s.taskEngine() != nil {
		return nil
	}
	err := s.startTasks(TaskOptions{})
	if errors.Is(err, errTasksStarted) { // another AddTool got there first
		return nil
	}
	return err
}

var errTasksStarted = errors.New("weft: tasks are already on")

// startTasks turns on the tasks extension: it is advertised in
// server/discover, tasks/get, tasks/update and tasks/cancel are served, tools
// declared with [TaskOptional] or [TaskRequired] may continue as durable
// tasks, and (unless NoRunner) a runner claims and runs task steps until
// [Server.Shutdown].
func (s *Server) startTasks(opts TaskOptions) error {
	if err := opts.check(); err != nil {
		return err
	}
	owned := opts.Store == nil
	if owned {
		opts.Store = task.NewMemoryStore(nil)
	}
	if opts.TTL <= 0 {
		opts.TTL = time.Hour
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	opts.MaxTasksPerIdentity = taskBound(opts.MaxTasksPerIdentity, task.DefaultMaxTasksPerIdentity)
	opts.MaxTasksPerPartition = taskBound(opts.MaxTasksPerPartition, task.DefaultMaxTasksPerPartition)
	ctx, cancel := context.WithCancel(context.Background())
	e := &taskEngine{opts: opts, store: opts.Store, owned: owned, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.tasks != nil {
		s.mu.Unlock()
		cancel()
		if owned {
			_ = opts.Store.Close()
		}
		return errTasksStarted
	}
	s.tasks = e
	s.mu.Unlock()
	if owned {
		s.log.Warn("weft: DEVELOPMENT ONLY: durable tasks are kept in memory; they will not survive a restart or be seen by another instance. " +
			"Configure Options.Tasks.Store (task/sqlitestore, task/pgstore) for production.")
	}
	s.EnableExtension(TasksExtension, exactjson.Object())
	s.tel.watchTasks(opts.Store) // the weft.tasks gauge (internal/taskgauge)
	if opts.NoRunner {
		close(e.done)
		return nil
	}
	r := &task.Runner{Store: opts.Store, Handler: s.observedTaskStep, Workers: opts.Workers,
		MaxPartitionWorkers: opts.MaxPartitionWorkers, Lease: opts.Lease,
		Retention: opts.Retention, SweepInterval: opts.SweepInterval, Logger: s.log, WorkerID: opts.WorkerID}
	go func() {
		defer close(e.done)
		if err := r.Run(ctx); err != nil {
			s.log.Error("weft: task runner stopped", "err", err)
		}
	}()
	return nil
}

// taskBound is a live-task bound as configured: 0 means def, negative
// unbounded (0 in a task.Quota).
func taskBound(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

func (s *Server) taskEngine() *taskEngine {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tasks
}

// stopTasks stops the runner and waits for it (bounded by ctx).
func (s *Server) stopTasks(ctx context.Context) error {
	e := s.taskEngine()
	if e == nil {
		return nil
	}
	e.cancel()
	select {
	case <-e.done:
		if e.owned {
			return e.store.Close()
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TasksSupported reports whether the client declared the tasks extension on
// this request, so a handler may return [RunAsTask].
func (r *Request) TasksSupported() bool {
	if r.srv == nil || r.srv.taskEngine() == nil {
		return false
	}
	return declaresTasks(r.ClientCapabilities)
}

func declaresTasks(caps exactjson.Value) bool {
	ext, _ := caps.Get("extensions")
	t, ok := ext.Get(TasksExtension)
	return ok && t.Kind() == exactjson.KindObject
}

func tasksCapability() exactjson.Value {
	return exactjson.Object(exactjson.Field("extensions", exactjson.Object(
		exactjson.Field(TasksExtension, exactjson.Object()))))
}

// TaskInfo describes the durable task a handler runs in.
type TaskInfo struct {
	// ID is the task id.
	ID string
	// Step is the 1-based step number: it advances after each input round.
	Step int
	// Attempt counts runs of this step; above 1 means an earlier run was cut off.
	Attempt int
	// IdempotencyKey is stable across attempts of one step: use it to make
	// side effects idempotent (steps run at least once).
	IdempotencyKey string
}

// Task returns the task this handler runs in, or nil when the handler runs
// for an ordinary request.
func (r *Request) Task() *TaskInfo { return r.task }

// runAsTask is the signal returned by [RunAsTask].
type runAsTask struct{ state any }

func (*runAsTask) Error() string { return "weft: continue as a task" }

// RunAsTask is returned by a tool handler (through its error result) to
// continue the call as a durable task: the framework stores the task with
// state (nil for none; an [exactjson.Value] as it is, any other value as
// encoding/json/v2 marshals it), answers resultType "task", and a runner
// then calls the same handler again with [Request.Task] set and the state
// readable through [FrameworkState]. Only valid when
// [Request.TasksSupported].
func RunAsTask(state any) error { return &runAsTask{state: state} }

// createTask stores a new task for req: the answer to a tools/call whose
// handler returned [RunAsTask].
func (s *Server) createTask(ctx context.Context, req *Request, rt *runAsTask) (Result, error) {
	e := s.taskEngine()
	if e == nil || !declaresTasks(req.ClientCapabilities) {
		s.log.Error("weft: handler returned RunAsTask but the client did not declare the tasks extension (check Request.TasksSupported)", "tool", req.Name)
		return nil, internalError(errors.New("RunAsTask without the tasks extension"))
	}
	params := req.Params.Without("inputResponses", "requestState", "task")
	pb, err := exactjson.Encode(params, 0)
	if err != nil {
		return nil, err
	}
	var state json.RawMessage
	sv, ok := rt.state.(exactjson.Value)
	if !ok && rt.state != nil {
		if sv, err = exactjson.FromGo(rt.state); err != nil {
			return nil, s.programmingError(ctx, req, fmt.Errorf("the state given to weft.RunAsTask: %w", err))
		}
	}
	if sv.Kind() != exactjson.KindNull {
		b, err := exactjson.Encode(sv, 0)
		if err != nil {
			return nil, err
		}
		state = b
	}
	rec, err := e.store.Create(ctx, task.NewTask{
		Owner:        task.Owner{Principal: req.Identity.Principal, Partition: req.Identity.Partition},
		Operation:    req.Name,
		Params:       pb,
		TTL:          e.opts.TTL,
		PollInterval: e.opts.PollInterval,
		State:        state,
		Quota:        task.Quota{PerOwner: e.opts.MaxTasksPerIdentity, PerPartition: e.opts.MaxTasksPerPartition},
	})
	if errors.Is(err, task.ErrLimit) {
		s.log.Info("weft: task refused: too many live tasks", "tool", req.Name, "err", err)
		e := protocolError(CodeRateLimited, "Too many unfinished tasks; retry later", exactjson.Value{})
		e.retryAfter = taskRetryAfter
		return nil, e
	}
	if err != nil {
		return nil, fmt.Errorf("weft: storing a task: %w", err)
	}
	return &CreateTaskResult{Task: rec}, nil
}

// taskRetryAfter is the Retry-After of a tools/call refused because its
// identity or partition has too many live tasks.
const taskRetryAfter = 5 * time.Second

func millis(d time.Duration) int64 { return d.Milliseconds() }

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// encodeTaskFields writes the Task members; detailed adds the status payloads.
func encodeTaskFields(e *enc, r *task.Record, detailed bool) {
	e.str("taskId", r.ID)
	e.str("status", string(r.Status))
	e.strOpt("statusMessage", r.StatusMessage)
	e.str("createdAt", isoTime(r.CreatedAt))
	e.str("lastUpdatedAt", isoTime(r.UpdatedAt))
	if r.TTL > 0 {
		e.integer("ttlMs", millis(r.TTL))
	} else {
		e.raw("ttlMs", []byte("null"))
	}
	if r.PollInterval > 0 {
		e.integer("pollIntervalMs", max(millis(r.PollInterval), 1))
	}
	if !detailed {
		return
	}
	switch r.Status {
	case task.InputRequired:
		if len(r.InputRequests) > 0 {
			e.raw("inputRequests", r.InputRequests)
		}
	case task.Completed:
		if len(r.Result) > 0 {
			e.raw("result", r.Result)
		}
	case task.Failed:
		if len(r.Error) > 0 {
			e.raw("error", r.Error)
		}
	}
}

// lookupTask resolves and authorizes the task of a tasks/* request. Unknown,
// expired and foreign tasks get the same -32602.
func (s *Server) lookupTask(ctx context.Context, req *Request) (*task.Record, *Error) {
	if !declaresTasks(req.ClientCapabilities) {
		return nil, errMissingCapabilities(tasksCapability())
	}
	return s.authorizedTask(ctx, req, req.Name)
}

// authorizedTask reads a task and checks it belongs to the caller.
func (s *Server) authorizedTask(ctx context.Context, req *Request, id string) (*task.Record, *Error) {
	notFound := InvalidParams("Unknown task")
	if s.taskEngine() == nil { // only relayed tasks are served (proxy.go)
		return nil, notFound
	}
	rec, err := s.taskEngine().store.Get(ctx, id)
	if err != nil {
		if !errors.Is(err, task.ErrNotFound) {
			s.log.Error("weft: reading a task failed", "err", err)
			return nil, internalError(err)
		}
		return nil, notFound
	}
	if rec.Owner.Principal != req.Identity.Principal || rec.Owner.Partition != req.Identity.Partition ||
		rec.Expired(s.now()) && !rec.Status.IsTerminal() {
		return nil, notFound
	}
	return rec, nil
}

func (s *Server) handleTasksGet(ctx context.Context, req *Request) (Result, error) {
	if res, ok, err := s.relayedTaskMethod(ctx, req); ok { // proxy.go
		return res, err
	}
	rec, e := s.lookupTask(ctx, req)
	if e != nil {
		return nil, e
	}
	return &GetTaskResult{Task: rec}, nil
}

func (s *Server) handleTasksUpdate(ctx context.Context, req *Request) (Result, error) {
	if res, ok, err := s.relayedTaskMethod(ctx, req); ok { // proxy.go
		return res, err
	}
	rec, e := s.lookupTask(ctx, req)
	if e != nil {
		return nil, e
	}
	ir, ok := req.Params.Get("inputResponses")
	if !ok || ir.Kind() != exactjson.KindObject {
		return nil, InvalidParams("params.inputResponses must be an object")
	}
	if ir.Len() > s.limits.MaxInputResponses {
		return nil, InvalidParams("Too many input responses")
	}
	outstanding := map[string]string{}
	if len(rec.InputRequests) > 0 {
		if reqs, err := exactjson.Parse(rec.InputRequests, exactjson.Limits{}); err == nil {
			for k, v := range reqs.All() {
				m, _ := v.Get("method")
				outstanding[k], _ = m.AsString()
			}
		}
	}
	for k, v := range ir.All() {
		method, ok := outstanding[k]
		if !ok {
			continue // not outstanding: ignored by the store
		}
		if err := checkInputResponse(v, method); err != nil {
			return nil, InvalidParams(fmt.Sprintf("Invalid input response %q: %v", k, err))
		}
	}
	b, err := exactjson.Encode(ir, 0)
	if err != nil {
		return nil, err
	}
	if _, err := s.taskEngine().store.SubmitInput(ctx, rec.ID, b); err != nil {
		if errors.Is(err, task.ErrNotFound) {
			return nil, InvalidParams("Unknown task")
		}
		return nil, fmt.Errorf("weft: submitting task input: %w", err)
	}
	return &EmptyResult{}, nil
}

func (s *Server) handleTasksCancel(ctx context.Context, req *Request) (Result, error) {
	if res, ok, err := s.relayedTaskMethod(ctx, req); ok { // proxy.go
		return res, err
	}
	rec, e := s.lookupTask(ctx, req)
	if e != nil {
		return nil, e
	}
	if _, err := s.taskEngine().store.RequestCancel(ctx, rec.ID); err != nil && !errors.Is(err, task.ErrNotFound) {
		return nil, fmt.Errorf("weft: cancelling a task: %w", err)
	}
	return &EmptyResult{}, nil
}

// taskState is how a step's continuation state is stored.
type taskState struct {
	Mode  string          `json:"mode"` // "framework" or "application"
	Value json.RawMessage `json:"value"`
}

// taskNotifier turns progress into the task's status message.
type taskNotifier struct {
	ctx context.Context
	job *task.Job
}

func (n *taskNotifier) canStream() bool { return true }

func (n *taskNotifier) send(f frame) error {
	if f.method != "notifications/progress" {
		return nil // log messages are not delivered for tasks
	}
	params := f.params
	msg := ""
	if m, ok := params.Get("message"); ok {
		msg, _ = m.AsString()
	}
	p, _ := params.Get("progress")
	pn, _ := p.AsNumber()
	status := pn.String()
	if t, ok := params.Get("total"); ok {
		tn, _ := t.AsNumber()
		status += "/" + tn.String()
	}
	if msg != "" {
		status = msg + " (" + status + ")"
	}
	return n.job.Progress(n.ctx, status)
}

// runTaskStep runs one step of a task: the tool's handler, re-entered with
// the stored params, state and the input responses received since.
func (s *Server) runTaskStep(ctx context.Context, job *task.Job) (task.Outcome, error) {
	s.mu.RLock()
	t, ok := s.tools.get(job.Operation())
	s.mu.RUnlock()
	if !ok {
		// Not (yet) registered here, e.g. while this instance starts: leave
		// the step for a later claim instead of failing the task.
		return task.Outcome{}, fmt.Errorf("weft: task %s runs tool %q, which is not registered here: %w", job.ID(), job.Operation(), task.ErrRequeue)
	}
	params, err := exactjson.Parse(job.Params(), exactjson.Limits{})
	if err != nil {
		return task.Outcome{}, fmt.Errorf("weft: task params: %w", err)
	}
	meta, _ := params.Get("_meta")
	version, caps, _ := requiredMeta(meta)
	req := &Request{
		Method: "tools/call", ProtocolVersion: version, Name: job.Operation(), Params: params, Meta: meta,
		ClientCapabilities: caps, Endpoint: "task",
		Identity: Identity{Principal: job.Owner().Principal, Partition: job.Owner().Partition},
		srv:      s, op: t.op, logLevel: -1, transport: "task",
		progressToken: exactjson.String("task"),
		task:          &TaskInfo{ID: job.ID(), Step: job.Step(), Attempt: job.Attempt(), IdempotencyKey: job.IdempotencyKey()},
	}
	req.ClientInfo, _ = meta.Get(metaClientInfo)
	req.out = &taskNotifier{ctx: ctx, job: job}
	req.bound()
	if len(job.InputResponses()) > 0 {
		v, err := exactjson.Parse(job.InputResponses(), exactjson.Limits{})
		if err != nil {
			return task.Outcome{}, fmt.Errorf("weft: task input: %w", err)
		}
		req.retried().inputResponses = InputResponses{v}
	}
	if len(job.State()) > 0 {
		var st taskState
		if err := json.Unmarshal(job.State(), &st); err == nil && st.Mode != "" {
			if st.Mode == "application" {
				rs := req.retried()
				_ = json.Unmarshal(st.Value, &rs.appState)
				rs.hasAppState = true
			} else if v, err := exactjson.Parse(st.Value, exactjson.Limits{}); err == nil {
				req.retried().fwState, req.retry.hasFwState = v, true
			}
		} else if v, err := exactjson.Parse(job.State(), exactjson.Limits{}); err == nil {
			// State given to RunAsTask.
			req.retried().fwState, req.retry.hasFwState = v, true
		}
	}
	rep := s.dispatch(ctx, req, s.taskStep, nil)
	return s.taskOutcome(ctx, req, rep)
}

// runTaskHandler is the handler of a task step (wrapped in the middleware as
// Server.taskStep): the tool's own handler, re-entered.
func (s *Server) runTaskHandler(ctx context.Context, req *Request) (Result, error) {
	s.mu.RLock()
	t, ok := s.tools.get(req.Name)
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("weft: tool %q is no longer registered", req.Name)
	}
	return s.callTool(ctx, req, t)
}

// taskOutcome turns a task step's reply into the step's outcome: a complete
// result or an application error ends the task, input_required parks it, a
// cancellation cancels it, and an internal failure goes back to the runner
// (which retries the step).
func (s *Server) taskOutcome(ctx context.Context, req *Request, rep reply) (task.Outcome, error) {
	if e := rep.err; e != nil {
		switch {
		case context.Cause(ctx) != nil && errors.Is(context.Cause(ctx), task.ErrCancelRequested):
			return task.Cancel(), nil
		case e.reserved && e.Code == CodeInternalError:
			if e.cause != nil {
				return task.Outcome{}, fmt.Errorf("weft: task step: %w", e.cause)
			}
			return task.Outcome{}, fmt.Errorf("weft: task step: %w", e)
		}
		return task.Fail(appendRPCError(nil, e)), nil
	}
	switch r := rep.res.(type) {
	case *CallToolResult:
		b, err := s.encodeResult(r, eraModern)
		if err != nil {
			return task.Outcome{}, err
		}
		return task.Complete(b), nil
	case askResult:
		return s.taskInput(req, r.InputRequired)
	}
	return task.Outcome{}, fmt.Errorf("weft: a task step returned %T, not a tool result", rep.res)
}

// taskInput turns an InputRequired from a task step into stored requests and
// state. Keys must be new over the task's life (the store enforces it).
func (s *Server) taskInput(req *Request, ir *InputRequired) (task.Outcome, error) {
	if ir.err != nil {
		return task.Outcome{}, ir.err
	}
	if len(ir.keys) == 0 {
		return task.Outcome{}, errors.New("weft: a task step asked for input without input requests")
	}
	e := &enc{}
	e.open()
	for i, k := range ir.keys {
		r := ir.requests[i]
		if d, ok := req.op.declaration(r.decl.kind); !ok || d != r.decl {
			return task.Outcome{}, fmt.Errorf("weft: input request %q (%s) is not declared by %q", k, r.decl.kind, req.op.name)
		}
		e.name(k)
		e.open()
		e.str("method", r.Method())
		e.value("params", r.params)
		e.close()
	}
	e.close()
	if e.err != nil {
		return task.Outcome{}, e.err
	}
	var st taskState
	switch ir.mode {
	case StateApplication:
		v, _ := json.Marshal(ir.appState)
		st = taskState{Mode: "application", Value: v}
	case StateFramework:
		v, err := exactjson.Encode(ir.fwState, 0)
		if err != nil {
			return task.Outcome{}, err
		}
		st = taskState{Mode: "framework", Value: v}
	}
	var state json.RawMessage
	if st.Mode != "" {
		b, err := json.Marshal(st)
		if err != nil {
			return task.Outcome{}, err
		}
		state = b
	}
	return task.NeedInput(e.b, state), nil
}

func appendRPCError(dst []byte, e *Error) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendQuoted(dst, e.Message)
	if e.Data.Kind() != exactjson.KindNull {
		if b, err := exactjson.AppendJSON(nil, e.Data); err == nil {
			dst = append(dst, `,"data":`...)
			dst = append(dst, b...)
		}
	}
	return append(dst, '}')
}
