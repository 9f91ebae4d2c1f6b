package weft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/task"
)

// Proxy is the part of a Server's API that only a proxy needs: a program
// that serves another server's tools, prompts, resources and tasks as its
// own (package gateway). Get it with [Server.Proxy]. The methods that only
// build values (Relay, WithURLPolicy, MissingCapabilities, RelayedTask,
// ReleaseOutput) need no server, so the zero Proxy has them too; the
// others fail on it.
type Proxy struct{ s *Server }

// errNoServer is the error of a zero Proxy's methods that need a server.
var errNoServer = errors.New("weft: a zero Proxy has no server: get one with Server.Proxy")

// Proxy returns the proxy API of s.
func (s *Server) Proxy() Proxy { return Proxy{s} }

// ReleaseOutput lets the handler stream progress and log messages although
// the client lacks a capability of an input kind the operation declares
// conditionally. By default such output is held back, so that an input
// request the client cannot answer can still be refused with -32021 before
// anything is sent. A handler calling ReleaseOutput promises to emit only
// input requests the client supports (check with [Request.ClientSupports]);
// if it emits another, the -32021 error may follow output already sent.
// A proxy calls it: it relays only what its upstream asks.
func (Proxy) ReleaseOutput(r *Request) {
	r.mu.Lock()
	r.holdOutput = false
	r.mu.Unlock()
}

// MissingCapabilities returns the -32021 error "Missing required client
// capability" with data.requiredCapabilities set to required (a
// ClientCapabilities object), for a handler relaying a server's refusal.
func (Proxy) MissingCapabilities(required exactjson.Value) *Error {
	return errMissingCapabilities(required)
}

// Relay returns the input request of in carrying params exactly as another
// server sent them, for a proxy that passes that server's
// elicitation/create, sampling/createMessage or roots/list on to its own
// client. The request is checked with the handler's result like one built
// by Ask: its kind must be declared (sampling that offers tools needs
// Sampling(...).WithTools()), and forms and URLs must pass the server's
// elicitation policies.
func (Proxy) Relay(in Input, params exactjson.Value) (r InputRequest) {
	defer r.from(in)
	d := in.input()
	if d.err != nil {
		return d.decl.failed(d.err)
	}
	r = InputRequest{decl: d.decl, kind: d.decl.kind, params: params}
	if d.decl.kind == inputSampling && (params.Has("tools") || params.Has("toolChoice")) {
		r.kind = inputSamplingTools
		r.err = errors.New("weft: a relayed sampling request offers tools but the operation declared weft.Sampling without WithTools")
	}
	return r
}

// WithURLPolicy returns r checked against pol instead of the server's
// Options.URLElicitation when it is a URL elicitation: a proxy relaying
// another server's URL requests applies the policy its operator set for
// that server.
func (Proxy) WithURLPolicy(r InputRequest, pol elicit.URLPolicy) InputRequest {
	r.urlPolicy = &pol
	return r
}

// CheckInputRequest applies the policies the server applies to the input
// requests it emits (form fields asking for secrets, Options.SecretPolicy;
// a URL elicitation's URL, Options.URLElicitation or the request's own
// [Proxy.WithURLPolicy]) to r: a proxy handing r to its client
// another way than an [InputRequired] result (the inputRequests of a
// relayed task) checks it first.
func (p Proxy) CheckInputRequest(r InputRequest) error {
	if err := r.Err(); err != nil {
		return err
	}
	if p.s == nil {
		return errNoServer
	}
	return p.s.checkElicitation(r)
}

// Relayed tasks: a proxy whose upstream answers a tools/call with a task
// (the tasks extension) gives its client that task under an id of this
// server, and serves tasks/get, tasks/update and tasks/cancel of the id by
// asking the upstream.

// TaskRelay serves the tasks another server created for calls relayed by a
// proxy (see [Proxy.RelayTasks] and [Proxy.RelayedTask]). id is the other
// server's task id. Errors are answered like a handler's (an *Error as it
// is); a task the other server does not know should be -32602.
type TaskRelay interface {
	// GetTask returns the task as the other server's tasks/get answers it
	// (the record's ID is replaced by the id this server's client knows).
	GetTask(ctx context.Context, req *Request, id string) (*task.Record, error)
	// UpdateTask passes inputResponses (a JSON object) to the task.
	UpdateTask(ctx context.Context, req *Request, id string, inputResponses exactjson.Value) error
	// CancelTask asks the other server to cancel the task.
	CancelTask(ctx context.Context, req *Request, id string) error
}

// relayedTaskPrefix starts the id of every relayed task; the rest is
// sealed by the server's Protector.
const relayedTaskPrefix = "relayed."

// relayedTaskDomain separates the binding of relayed task ids from that
// of request state.
const relayedTaskDomain = "weft-relayed-task-v1"

type taskRelaysKey struct{}

type taskRelays struct {
	mu sync.RWMutex
	m  map[string]TaskRelay
}

func (s *Server) taskRelays() *taskRelays {
	return s.ExtensionState(taskRelaysKey{}, func() any { return &taskRelays{m: map[string]TaskRelay{}} }).(*taskRelays)
}

func (s *Server) taskRelay(name string) (TaskRelay, bool) {
	rs := s.taskRelays()
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	r, ok := rs.m[name]
	return r, ok
}

func (s *Server) hasTaskRelays() bool {
	rs := s.taskRelays()
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	return len(rs.m) > 0
}

// RelayTasks registers relay under name (unique on the server): tool
// handlers may then return [Proxy.RelayedTask] for it, the tasks extension is
// advertised, and tasks/get, tasks/update and tasks/cancel of its tasks
// reach relay. The ids this server gives its clients are sealed by
// [Options.Protector] and bound to the caller's principal and partition, so
// any instance sharing the keyring finds the relay and the other server's
// id in them, and no other caller can use them. The returned function
// removes the registration (the ids of its tasks are then unknown) and,
// with the last relay gone and no tasks of the server's own
// ([Options].Tasks), stops advertising the extension.
func (p Proxy) RelayTasks(name string, relay TaskRelay) (remove func(), err error) {
	s := p.s
	if s == nil {
		return nil, errNoServer
	}
	if name == "" || relay == nil {
		return nil, errors.New("weft: RelayTasks needs a name and a relay")
	}
	rs := s.taskRelays()
	rs.mu.Lock()
	if _, ok := rs.m[name]; ok {
		rs.mu.Unlock()
		return nil, fmt.Errorf("weft: a task relay named %q is registered already", name)
	}
	rs.m[name] = relay
	rs.mu.Unlock()
	disable := s.EnableExtension(TasksExtension, exactjson.Object())
	return func() {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if rs.m[name] == relay {
			delete(rs.m, name)
			disable()
		}
	}, nil
}

// relayedTask is the signal returned by [Proxy.RelayedTask].
type relayedTask struct {
	relay string
	rec   *task.Record
}

func (*relayedTask) Error() string { return "weft: a relayed task" }

// RelayedTask is returned by a tool handler (through its error result) to
// answer the call with a task another server created for it (its
// CreateTaskResult, as a record), served afterwards by the [TaskRelay]
// registered as relay. Only valid when the client declared the tasks
// extension on the request (check [Request.ClientCapabilities]).
func (Proxy) RelayedTask(relay string, rec *task.Record) error {
	return &relayedTask{relay: relay, rec: rec}
}

// relayedTaskBinding is the associated data of a relayed task id: the
// caller's principal and partition.
func relayedTaskBinding(req *Request) []byte {
	b := append([]byte(relayedTaskDomain), 0)
	b = appendLP(b, req.Identity.Principal)
	return appendLP(b, req.Identity.Partition)
}

// createRelayedTask answers a tools/call whose handler returned
// [Proxy.RelayedTask].
func (s *Server) createRelayedTask(ctx context.Context, req *Request, rt *relayedTask) (Result, error) {
	if _, ok := s.taskRelay(rt.relay); !ok || rt.rec == nil || rt.rec.ID == "" || !declaresTasks(req.ClientCapabilities) {
		return nil, internalError(fmt.Errorf("weft: RelayedTask(%q) without a registered relay, a task id or the client's tasks extension", rt.relay))
	}
	plain := appendLP(nil, rt.relay)
	plain = append(plain, rt.rec.ID...)
	token, err := s.stateProtector().Seal(ctx, relayedTaskBinding(req), plain)
	if err != nil {
		return nil, fmt.Errorf("weft: sealing a relayed task id: %w", err)
	}
	rec := *rt.rec
	rec.ID = relayedTaskPrefix + token
	return &CreateTaskResult{Task: &rec}, nil
}

// relayedTaskMethod serves tasks/get, tasks/update and tasks/cancel of a
// relayed task id; ok is false for any other id. An id that does not open
// for the caller, or whose relay is gone, is the "Unknown task" of the
// server's own tasks.
func (s *Server) relayedTaskMethod(ctx context.Context, req *Request) (res Result, ok bool, err error) {
	token, found := strings.CutPrefix(req.Name, relayedTaskPrefix)
	if !found {
		return nil, false, nil
	}
	if !declaresTasks(req.ClientCapabilities) {
		return nil, true, errMissingCapabilities(tasksCapability())
	}
	notFound := InvalidParams("Unknown task")
	plain, oerr := s.stateProtector().Open(ctx, token, relayedTaskBinding(req))
	if oerr != nil {
		if !errors.Is(oerr, seal.ErrInvalidState) {
			s.log.Error("weft: opening a relayed task id failed", "err", oerr)
			return nil, true, internalError(oerr)
		}
		return nil, true, notFound
	}
	if len(plain) < 4 {
		return nil, true, notFound
	}
	n := int(binary.BigEndian.Uint32(plain))
	if len(plain) < 4+n {
		return nil, true, notFound
	}
	relay, ok := s.taskRelay(string(plain[4 : 4+n]))
	id := string(plain[4+n:])
	if !ok || id == "" {
		return nil, true, notFound
	}
	switch req.Method {
	case "tasks/get":
		rec, err := relay.GetTask(ctx, req, id)
		if err != nil {
			return nil, true, err
		}
		if rec == nil {
			return nil, true, internalError(errors.New("weft: a TaskRelay returned no task"))
		}
		out := *rec
		out.ID = req.Name
		return &GetTaskResult{Task: &out}, true, nil
	case "tasks/update":
		ir, has := req.Params.Get("inputResponses")
		if !has || ir.Kind() != exactjson.KindObject {
			return nil, true, InvalidParams("params.inputResponses must be an object")
		}
		if ir.Len() > s.limits.MaxInputResponses {
			return nil, true, InvalidParams("Too many input responses")
		}
		if err := relay.UpdateTask(ctx, req, id, ir); err != nil {
			return nil, true, err
		}
	case "tasks/cancel":
		if err := relay.CancelTask(ctx, req, id); err != nil {
			return nil, true, err
		}
	}
	return &EmptyResult{}, true, nil
}

// visibilityFilter is a filter of [Proxy.AddVisibilityFilter].
type visibilityFilter struct {
	Show func(ctx context.Context, req *Request, kind ItemKind, name string) bool
}

// AddVisibilityFilter adds a filter that [Server.Visible] applies after
// [Options.Visible], so that the lists and lookups of req hide what it
// hides: a proxy filters another server's items per caller with it. Lists
// are cached privately (cacheScope) while a filter is set. The returned
// function removes the filter.
//
// It panics on the zero Proxy.
func (p Proxy) AddVisibilityFilter(show func(ctx context.Context, req *Request, kind ItemKind, name string) bool) (remove func()) {
	s := p.s
	if s == nil {
		panic(errNoServer)
	}
	f := &visibilityFilter{Show: show}
	for {
		old := s.visFilters.Load()
		var next []*visibilityFilter
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, f)
		if s.visFilters.CompareAndSwap(old, &next) {
			break
		}
	}
	return func() {
		for {
			old := s.visFilters.Load()
			if old == nil {
				return
			}
			var next []*visibilityFilter
			for _, g := range *old {
				if g != f {
					next = append(next, g)
				}
			}
			var p *[]*visibilityFilter
			if len(next) > 0 {
				p = &next
			}
			if s.visFilters.CompareAndSwap(old, p) {
				return
			}
		}
	}
}

// filtersShow applies the filters of AddVisibilityFilter.
func (s *Server) filtersShow(ctx context.Context, req *Request, kind ItemKind, name string) bool {
	fs := s.visFilters.Load()
	if fs == nil {
		return true
	}
	for _, f := range *fs {
		if !f.Show(ctx, req, kind, name) {
			return false
		}
	}
	return true
}

// Admit runs the server's Options.Admission for r, outside any MCP
// request (the anonymous identity when the server has none). A gateway
// page that signs the person in a browser in at the server's own
// authorization server admits the token it obtains with it, so that the
// person and the server's callers compare as the same [Identity].
func (p Proxy) Admit(ctx context.Context, r *AdmissionRequest) (Identity, error) {
	s := p.s
	if s == nil {
		return Identity{}, errNoServer
	}
	if s.opts.Admission == nil || r == nil {
		return Identity{}, nil
	}
	id, err := s.opts.Admission(ctx, r)
	if err != nil {
		return Identity{}, err
	}
	if len(id.Partition) > maxPartitionBytes {
		return Identity{}, fmt.Errorf("weft: admission returned a partition of %d bytes (at most %d)", len(id.Partition), maxPartitionBytes)
	}
	return id, nil
}
