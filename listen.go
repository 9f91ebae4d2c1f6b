package weft

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/task"

	"github.com/weftmcp/weft/exactjson"
)

type eventKind uint8

const (
	evToolsListChanged eventKind = iota + 1
	evPromptsListChanged
	evResourcesListChanged
	evResourceUpdated
)

type event struct {
	kind eventKind
	uri  string
	// open is the event's notification encoded up to its params' last own
	// member, the params object left open (openFrame): set once by
	// bus.deliver for every stream it reaches. It follows from kind and uri,
	// so events stay comparable as before.
	open string
}

func (ev event) method() string {
	switch ev.kind {
	case evToolsListChanged:
		return "notifications/tools/list_changed"
	case evPromptsListChanged:
		return "notifications/prompts/list_changed"
	case evResourcesListChanged:
		return "notifications/resources/list_changed"
	case evResourceUpdated:
		return "notifications/resources/updated"
	}
	return ""
}

// frame is the notification of an event, with extra params members.
func (ev event) frame(extra ...exactjson.Member) frame {
	var params []exactjson.Member
	if ev.kind == evResourceUpdated {
		params = append(params, exactjson.Field("uri", exactjson.String(ev.uri)))
	}
	params = append(params, extra...)
	if len(params) == 0 {
		return frame{method: ev.method()}
	}
	return frame{method: ev.method(), params: exactjson.Object(params...)}
}

// openFrame encodes the notification of ev as appendFrame does, up to its
// params' own members followed by a comma, the object left open for the
// members of one stream (listenTail).
func (ev event) openFrame() string {
	b := append(make([]byte, 0, 128), `{"jsonrpc":"2.0","method":`...)
	b = appendQuoted(b, ev.method())
	b = append(b, `,"params":{`...)
	if ev.kind == evResourceUpdated {
		b = append(b, `"uri":`...)
		b = appendQuoted(b, ev.uri)
		b = append(b, ',')
	}
	return string(b)
}

// listenTail encodes the rest of one stream's notifications after
// openFrame: its _meta member and the closing braces.
func listenTail(meta exactjson.Value) (string, error) {
	b, err := exactjson.AppendJSON(append(make([]byte, 0, 96), `"_meta":`...), meta)
	if err != nil {
		return "", err
	}
	return string(append(b, '}', '}')), nil
}

// listenFrame is ev's notification on the stream whose tail is tail: the
// shared encoding of ev and the stream's own, nothing encoded again.
func (ev event) listenFrame(tail string) frame {
	open := ev.open
	if open == "" {
		open = ev.openFrame()
	}
	return frame{method: ev.method(), raw: open, rawTail: tail}
}

// bus fans catalog events out to open subscriptions. Each subscriber keeps a
// coalescing set of pending events, so a slow subscriber never blocks
// publishers and never loses the fact that something changed.
type bus struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
	// open counts the open listen streams per partition share
	// (listenShares), openID per caller, total all of them.
	open   map[fairKey]int
	openID map[fairKey]int
	total  int
	remote task.Bus // fleet-wide bus (Options.Events), or nil
	// serving turns true with the first request: catalog registrations made
	// while an instance starts are not news for the rest of the fleet.
	serving atomic.Bool
	log     *slog.Logger
	// version counts the events delivered to this instance (Server.CatalogVersion).
	version atomic.Uint64
	// detachClosed is set (under mu) when Shutdown ends the detached
	// streams (listen_detached.go): none is attached after it.
	detachClosed bool

	// The writers' queue of detached streams with pending events: runq
	// from qhead, each stream at most once; writers is how many writer
	// goroutines run.
	qmu     sync.Mutex
	runq    []*subscriber
	qhead   int
	writers int
}

// listenShares are the keys a listen stream is counted under: its
// partition's share (Identity.Partition; for a caller without one, its own
// key as the gate makes it: principal, else remote host, else stdio) and
// its caller's (Identity.Principal, else the partition, else the remote
// host, else stdio). Anonymous callers thus get a share per address, and
// one principal cannot take all of its partition's streams.
func listenShares(id Identity, remoteAddr string) (share, caller fairKey) {
	share = fairKeyOf(id, remoteAddr)
	if id.Principal != "" {
		return share, fairKey{'u', id.Principal}
	}
	return share, share
}

// reserve counts a listen stream against the limits of its partition's
// share, its caller and the server; it reports which refused ("" when
// none did).
func (b *bus) reserve(share, caller fairKey, l *Limits) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.total >= l.MaxSubscriptions:
		return "Too many open subscriptions on this server"
	case b.open[share] >= l.MaxSubscriptionsPerPartition:
		return "Too many open subscriptions in this partition"
	case b.openID[caller] >= l.MaxSubscriptionsPerIdentity:
		return "Too many open subscriptions of this caller"
	}
	b.total++
	b.open[share]++
	b.openID[caller]++
	return ""
}

func (b *bus) unreserve(share, caller fairKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total--
	if b.open[share]--; b.open[share] <= 0 {
		delete(b.open, share)
	}
	if b.openID[caller]--; b.openID[caller] <= 0 {
		delete(b.openID, caller)
	}
}

type subscriber struct {
	mu sync.Mutex
	// order holds the pending events, each once, in the order they came;
	// pending indexes them once there are more than pendingScan (below
	// that, finding a duplicate is a scan of order, and a stream needs no
	// map of its own).
	order   []event
	pending map[event]struct{}
	wake    chan struct{}
	// ds is the detached stream this subscription feeds and f its filter
	// (both set once, under mu): its events go to the bus's writers, not to
	// wake. queued reports that it is in the writers' queue or being
	// written.
	ds     *detachedStream
	f      filter
	queued bool
}

// pendingScan is how many pending events a subscriber keeps before it
// indexes them in a map (bursts of resource updates to distinct URIs).
const pendingScan = 16

// addLocked adds ev to the pending events unless it is already there; the
// caller holds s.mu.
func (s *subscriber) addLocked(ev event) {
	if s.pending != nil {
		if _, dup := s.pending[ev]; dup {
			return
		}
		s.pending[ev] = struct{}{}
		s.order = append(s.order, ev)
		return
	}
	for _, e := range s.order {
		if e == ev {
			return
		}
	}
	s.order = append(s.order, ev)
	if len(s.order) > pendingScan {
		s.pending = make(map[event]struct{}, 2*len(s.order))
		for _, e := range s.order {
			s.pending[e] = struct{}{}
		}
	}
}

func newBus() *bus {
	return &bus{subs: map[*subscriber]struct{}{}, open: map[fairKey]int{}, openID: map[fairKey]int{}}
}

func (b *bus) subscribe() *subscriber {
	s := &subscriber{wake: make(chan struct{}, 1)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

func (b *bus) unsubscribe(s *subscriber) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

// eventsChannel is the channel of [Options.Events] on which catalog and
// resource events travel between the instances of a fleet.
const eventsChannel = "weft.events"

func (ev event) encode() string {
	switch ev.kind {
	case evToolsListChanged:
		return "tools"
	case evPromptsListChanged:
		return "prompts"
	case evResourcesListChanged:
		return "resources"
	case evResourceUpdated:
		return "updated:" + ev.uri
	}
	return ""
}

func decodeEvent(s string) (event, bool) {
	switch {
	case s == "tools":
		return event{kind: evToolsListChanged}, true
	case s == "prompts":
		return event{kind: evPromptsListChanged}, true
	case s == "resources":
		return event{kind: evResourcesListChanged}, true
	case strings.HasPrefix(s, "updated:") && len(s) > len("updated:"):
		return event{kind: evResourceUpdated, uri: s[len("updated:"):]}, true
	}
	return event{}, false
}

// publish sends an event to every listener of the fleet: through the
// external bus when one is configured (which delivers it back here too),
// locally otherwise or when the external bus fails.
func (b *bus) publish(ev event) {
	if b.remote != nil && b.serving.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := b.remote.Publish(ctx, eventsChannel, ev.encode())
		cancel()
		if err == nil {
			return
		}
		if b.log != nil {
			b.log.Warn("weft: publishing an event on the fleet bus failed; delivering it locally only", "err", err)
		}
	}
	b.deliver(ev)
}

// relay feeds events from the external bus to local listeners until done.
func (b *bus) relay(done <-chan struct{}) {
	listenFleet(done, b.remote, eventsChannel, b.log, func(payload string) {
		if ev, ok := decodeEvent(payload); ok {
			b.deliver(ev)
		}
	})
}

// listenFleet calls fn with every payload published on channel of the
// fleet bus until done, subscribing again (after a second) whenever the
// subscription fails or ends.
func listenFleet(done <-chan struct{}, remote task.Bus, channel string, log *slog.Logger, fn func(string)) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-done; cancel() }()
	for ctx.Err() == nil {
		ch, err := remote.Subscribe(ctx, channel)
		if err != nil {
			if log != nil {
				log.Warn("weft: subscribing to the fleet event bus failed; retrying", "channel", channel, "err", err)
			}
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			continue
		}
		for payload := range ch {
			fn(payload)
		}
	}
}

// deliverBatch is how many detached streams deliver queues for the writers
// at a time.
const deliverBatch = 256

func (b *bus) deliver(ev event) {
	ev.open = ev.openFrame() // once, for every stream
	b.version.Add(1)
	var run []*subscriber // detached streams to queue for the writers
	b.mu.Lock()
	for s := range b.subs {
		s.mu.Lock()
		ds := s.ds
		if ds != nil && !s.f.wants(ev) {
			s.mu.Unlock()
			continue
		}
		s.addLocked(ev)
		queue := ds != nil && !s.queued
		if queue {
			s.queued = true
		}
		s.mu.Unlock()
		switch {
		case queue:
			if run = append(run, s); len(run) == deliverBatch {
				// The writers start on the first streams while the rest
				// are being queued.
				b.enqueue(run)
				run = run[:0]
			}
		case ds == nil:
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
	b.mu.Unlock()
	b.enqueue(run)
}

func (s *subscriber) drain() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drainLocked()
}

// drainLocked takes the pending events; the caller holds s.mu.
func (s *subscriber) drainLocked() []event {
	out := s.order
	s.order = nil
	s.pending = nil
	return out
}

// subscription filter accepted from subscriptions/listen.
type filter struct {
	tools, prompts, resources bool
	uris                      []string
}

func (f *filter) wants(ev event) bool {
	switch ev.kind {
	case evToolsListChanged:
		return f.tools
	case evPromptsListChanged:
		return f.prompts
	case evResourcesListChanged:
		return f.resources
	case evResourceUpdated:
		for _, u := range f.uris {
			if ev.uri == u || strings.HasPrefix(ev.uri, strings.TrimSuffix(u, "/")+"/") {
				return true
			}
		}
	}
	return false
}

// listenState is what an open subscriptions/listen stream keeps while it
// waits: only this, so the frame that parsed and checked the request is off
// the stack of the idle goroutine (which the garbage collector can then
// shrink further).
type listenState struct {
	f filter
	// share and caller are the keys the stream is counted under (listenShares).
	share, caller fairKey
	sub           *subscriber
	subMeta       exactjson.Value
	tail          string // listenTail(subMeta)
	taskIDs       map[string]bool
	taskEvents    <-chan string
	// taskCtx and cancel scope the task subscription of a stream that
	// will be detached (it outlives its request); nil otherwise.
	taskCtx context.Context
	cancel  context.CancelFunc
}

// handleListen serves subscriptions/listen: over HTTP/1.1 it returns once
// the stream is acknowledged and the transport detaches it
// (listen_detached.go); elsewhere it serves the stream until it ends.
func (s *Server) handleListen(ctx context.Context, req *Request) (Result, error) {
	h, detach := req.out.(*httpResponder)
	detach = detach && h.canDetach()
	st, err := s.openListen(ctx, req, detach)
	if err != nil {
		return nil, err
	}
	if detach {
		// The transport takes the stream over once this request has
		// completed (listen_detached.go); Shutdown waits for the hand-over.
		s.inflight.Add(1)
		h.pending = &pendingDetach{s: s, req: req, st: st}
		return &EmptyResult{Meta: st.subMeta}, nil
	}
	defer st.release(s)
	return s.listenLoop(ctx, req, st)
}

// openListen checks a subscriptions/listen request, reserves its stream in
// its shares (listenShares), subscribes and sends the acknowledgement. On success the
// caller owns the reservation and the subscription.
//
// A stream to be detached (listen_detached.go) subscribes to task events
// under a context of its own, which outlives the request.
func (s *Server) openListen(ctx context.Context, req *Request, detach bool) (*listenState, error) {
	if req.out == nil || !req.out.canStream() {
		return nil, withFault(protocolError(CodeInvalidRequest, "subscriptions/listen needs a client that accepts text/event-stream", exactjson.Value{}), faultNotAcceptable)
	}
	nv, ok := req.Params.Get("notifications")
	if !ok || nv.Kind() != exactjson.KindObject {
		return nil, InvalidParams("params.notifications must be an object")
	}
	var f filter
	boolOf := func(name string) (bool, *Error) {
		v, ok := nv.Get(name)
		if !ok {
			return false, nil
		}
		b, isBool := v.AsBool()
		if !isBool {
			return false, InvalidParams("params.notifications." + name + " must be a boolean")
		}
		return b, nil
	}
	var e *Error
	if f.tools, e = boolOf("toolsListChanged"); e != nil {
		return nil, e
	}
	if f.prompts, e = boolOf("promptsListChanged"); e != nil {
		return nil, e
	}
	if f.resources, e = boolOf("resourcesListChanged"); e != nil {
		return nil, e
	}
	if rs, ok := nv.Get("resourceSubscriptions"); ok {
		if rs.Kind() != exactjson.KindArray || rs.Len() > s.limits.MaxResourceSubscriptions {
			return nil, InvalidParams("params.notifications.resourceSubscriptions must be an array of at most " + strconv.Itoa(s.limits.MaxResourceSubscriptions) + " URIs")
		}
		for u := range rs.Values() {
			us, ok := u.AsString()
			if !ok || us == "" || len(us) > s.limits.MaxURIBytes {
				return nil, InvalidParams("resource subscriptions must be non-empty URI strings")
			}
			f.uris = append(f.uris, us)
		}
	}
	taskIDs, e := s.listenTaskIDs(ctx, req, nv)
	if e != nil {
		return nil, e
	}
	var taskEvents <-chan string
	var taskCtx context.Context
	var cancel context.CancelFunc
	if len(taskIDs) > 0 {
		subCtx := ctx
		if detach {
			taskCtx, cancel = context.WithCancel(context.WithoutCancel(ctx))
			subCtx = taskCtx
		}
		ch, err := s.taskEngine().store.Subscribe(subCtx, task.ChannelChanged)
		if err != nil {
			if cancel != nil {
				cancel()
			}
			return nil, fmt.Errorf("weft: subscribing to task events: %w", err)
		}
		taskEvents = ch
	}
	fail := func() {
		if cancel != nil {
			cancel()
		}
	}
	nt, np, nr := s.catalogSizes()
	// Honour only what this server delivers.
	f.tools = f.tools && nt > 0
	f.prompts = f.prompts && np > 0
	f.resources = f.resources && nr > 0
	if nr == 0 {
		f.uris = nil
	}
	accepted := []exactjson.Member{}
	if f.tools {
		accepted = append(accepted, exactjson.Field("toolsListChanged", exactjson.Bool(true)))
	}
	if f.prompts {
		accepted = append(accepted, exactjson.Field("promptsListChanged", exactjson.Bool(true)))
	}
	if f.resources {
		accepted = append(accepted, exactjson.Field("resourcesListChanged", exactjson.Bool(true)))
	}
	if len(f.uris) > 0 {
		accepted = append(accepted, exactjson.Field("resourceSubscriptions", stringArray(f.uris)))
	}
	if len(taskIDs) > 0 {
		ids := make([]string, 0, len(taskIDs))
		for id := range taskIDs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		accepted = append(accepted, exactjson.Field("taskIds", stringArray(ids)))
	}
	share, caller := listenShares(req.Identity, req.remoteAddr)
	if msg := s.bus.reserve(share, caller, &s.limits); msg != "" {
		fail()
		e := protocolError(CodeRateLimited, msg, exactjson.Value{})
		e.retryAfter = 5 * time.Second
		return nil, e
	}
	subMeta := exactjson.Object(exactjson.Field(metaSubscriptionID, req.ID.v))
	tail, err := listenTail(subMeta)
	if err != nil {
		fail()
		s.bus.unreserve(share, caller)
		return nil, fmt.Errorf("weft: encoding the subscription id: %w", err)
	}
	st := &listenState{f: f, share: share, caller: caller, sub: s.bus.subscribe(), subMeta: subMeta, tail: tail,
		taskIDs: taskIDs, taskEvents: taskEvents, taskCtx: taskCtx, cancel: cancel}
	if h, ok := req.out.(*httpResponder); ok && detach {
		// The connection ends with the stream (listen_detached.go): the
		// client must not pool it.
		h.w.Header().Set("Connection", "close")
	}
	if err := req.out.send(frame{method: "notifications/subscriptions/acknowledged", params: exactjson.Object(
		exactjson.Field("notifications", exactjson.Object(accepted...)),
		exactjson.Field("_meta", subMeta))}); err != nil {
		st.release(s)
		return nil, errNoReply
	}
	return st, nil
}

// listenLoop delivers events to an open stream until the client leaves or
// the server shuts down.
func (s *Server) listenLoop(ctx context.Context, req *Request, st *listenState) (Result, error) {
	// A stdio client that closed its side can no longer cancel the stream:
	// it ends as at shutdown, so the connection can end.
	var hangup <-chan struct{}
	if h, ok := req.out.(interface{ hangup() <-chan struct{} }); ok {
		hangup = h.hangup()
	}
	for {
		select {
		case <-ctx.Done():
			return nil, errNoReply // the client went away: nothing more is sent
		case <-s.done:
			return &EmptyResult{Meta: st.subMeta}, nil
		case <-hangup:
			return &EmptyResult{Meta: st.subMeta}, nil
		case id, ok := <-st.taskEvents:
			if !ok {
				st.taskEvents = nil
				continue
			}
			if st.taskIDs[id] && s.sendTaskEvent(ctx, req, st, id) != nil {
				return nil, errNoReply
			}
		case <-st.sub.wake:
			for _, ev := range st.sub.drain() {
				if !st.f.wants(ev) {
					continue
				}
				if err := req.out.send(ev.listenFrame(st.tail)); err != nil {
					return nil, errNoReply
				}
			}
		}
	}
}

// sendTaskEvent sends the notifications/tasks of task id, if the caller
// may still see it; an error means the stream is gone.
func (s *Server) sendTaskEvent(ctx context.Context, req *Request, st *listenState, id string) error {
	f, ok := s.taskFrame(ctx, req, st, id)
	if !ok {
		return nil
	}
	return req.out.send(f)
}

// taskFrame is the notifications/tasks of task id, if the caller of req may
// still see it (a fresh authorization check per event).
func (s *Server) taskFrame(ctx context.Context, req *Request, st *listenState, id string) (frame, bool) {
	rec, e := s.authorizedTask(ctx, req, id)
	if e != nil {
		return frame{}, false // gone or no longer authorized: nothing is sent
	}
	params := &enc{}
	params.open()
	encodeTaskFields(params, rec, true)
	params.value("_meta", st.subMeta)
	params.close()
	if params.err != nil {
		return frame{}, false
	}
	pv, err := exactjson.Parse(params.b, exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling})
	if err != nil {
		return frame{}, false
	}
	return frame{method: "notifications/tasks", params: pv}, true
}

// maxTaskSubscriptions bounds the task ids of one subscriptions/listen.
const maxTaskSubscriptions = 256

// listenTaskIDs validates notifications.taskIds and keeps the ids the caller
// may see (a fresh authorization check; others are left out of the ack).
func (s *Server) listenTaskIDs(ctx context.Context, req *Request, nv exactjson.Value) (map[string]bool, *Error) {
	tv, ok := nv.Get("taskIds")
	if !ok {
		return nil, nil
	}
	engine := s.taskEngine()
	if !declaresTasks(req.ClientCapabilities) || engine == nil && !s.hasTaskRelays() {
		return nil, errMissingCapabilities(tasksCapability())
	}
	if tv.Kind() != exactjson.KindArray || tv.Len() > maxTaskSubscriptions {
		return nil, InvalidParams("params.notifications.taskIds must be an array of at most " + strconv.Itoa(maxTaskSubscriptions) + " task ids")
	}
	ids := map[string]bool{}
	for v := range tv.Values() {
		id, ok := v.AsString()
		if !ok {
			return nil, InvalidParams("task ids must be strings")
		}
		// Relayed tasks (RelayTasks) get no status notifications: their
		// ids are not this server's, so they stay out of the ack, as do
		// ids the caller may not see; the client polls tasks/get for them.
		if engine == nil {
			continue
		}
		if _, e := s.authorizedTask(ctx, req, id); e == nil {
			ids[id] = true
		}
	}
	return ids, nil
}
