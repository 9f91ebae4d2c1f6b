package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/sessionstore"
)

// Era translation for 2025-era upstreams. Such an upstream asks for input
// with server-to-client requests (elicitation/create,
// sampling/createMessage, roots/list) sent during a call and waits for the
// answers. A 2026-07-28 client cannot receive them: it expects an
// input_required result and retries the call with inputResponses.
//
// So the gateway parks the upstream call: it keeps it running on the
// instance that holds the upstream connection, answers the client
// input_required with the upstream's requests, and seals a reference to the
// parked call into the requestState. The retry may reach any instance. The
// instance that serves it hands the answers to the parked call and receives
// the call's next outcome (its result, or the next input requests) through
// the mailbox of a [sessionstore.Store], the same shared store and mailbox
// the 2025 bridge uses (PostgreSQL for a fleet): each parked call is a
// session record of the store, "in-N" slots carry round N's answers to the
// parked call, "out-N" slots carry its outcome after round N, and "note-N-K"
// slots its notifications after round N-1's answers to a retry served by
// another instance.
//
// The parked call lives in the memory of its instance, its record in the
// store. So that a record does not outlive its call when the instance stops
// without removing it (a crash, a kill), the record is a lease: it idles out
// after InputConfig.Lease, and the instance renews the records of all its
// parked calls every Lease/3 (one ticker per instance, renew). A retry then
// finds the record of a call whose instance is gone missing, or, already
// waiting on the mailbox, sees it vanish within Lease; either way the
// client gets errParkedGone instead of waiting for an answer that cannot
// come.

// parker owns the parked calls of one gateway instance.
type parker struct {
	store sessionstore.Store
	lim   InputConfig
	log   *slog.Logger
	now   func() time.Time

	ctx    context.Context // ends when the gateway closes
	cancel context.CancelFunc
	local  sync.Map // id -> *parkedCall running here
	wg     sync.WaitGroup
	active atomic.Int64 // parked calls running here (for tests and metrics)
}

func newParker(store sessionstore.Store, lim InputConfig, log *slog.Logger) *parker {
	ctx, cancel := context.WithCancel(context.Background())
	p := &parker{store: store, lim: lim.withDefaults(), log: log, now: time.Now, ctx: ctx, cancel: cancel}
	p.wg.Add(1)
	go p.heartbeat()
	return p
}

// heartbeat renews the records of the parked calls running here every
// InputConfig.heartbeat until the gateway closes.
func (p *parker) heartbeat() {
	defer p.wg.Done()
	t := time.NewTicker(p.lim.heartbeat())
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.renew()
		}
	}
}

// renewConcurrency bounds the renewals of one heartbeat in flight at once.
const renewConcurrency = 8

// renew renews the record of every parked call running here (Get refreshes
// a record's idle expiry), within one heartbeat period. A record found gone
// (this instance failed to renew it in time, and a retry may have been told
// the call is gone) ends its call.
func (p *parker) renew() {
	ctx, cancel := context.WithTimeout(p.ctx, p.lim.heartbeat())
	defer cancel()
	sem := make(chan struct{}, renewConcurrency)
	var wg sync.WaitGroup
	p.local.Range(func(_, v any) bool {
		pc := v.(*parkedCall)
		if !pc.held.Load() {
			return true
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := p.store.Get(ctx, pc.id)
			switch {
			case err == nil || !pc.held.Load():
			case errors.Is(err, sessionstore.ErrNotFound):
				p.log.Warn("gateway: a parked call's record lapsed before this instance renewed it; cancelling the call", "id", pc.id)
				pc.cancel()
			case ctx.Err() == nil:
				p.log.Warn("gateway: cannot renew a parked call's record", "id", pc.id, "err", err)
			}
		}()
		return true
	})
	wg.Wait()
	if ctx.Err() != nil && p.ctx.Err() == nil {
		p.log.Warn("gateway: renewing the records of the parked calls took longer than the heartbeat period", "period", p.lim.heartbeat())
	}
}

func (p *parker) close() {
	p.cancel()
	p.wg.Wait()
}

// outcome is what a parked call reports after a round: input requests
// ({key: {method, params}}), a result, or an error.
type outcome struct {
	requests exactjson.Value
	result   exactjson.Value
	err      *client.RPCError
	// fail is a local failure (the upstream broke, timed out...), of
	// kind failClosed, failTimeout, failProtocol or "".
	fail, kind string
	// notes counts the notifications of the stretch delivered through the
	// mailbox before this outcome (the retry relays them all first).
	notes int
}

// Kinds of local failures.
const (
	failClosed   = "closed"
	failTimeout  = "timeout"
	failProtocol = "protocol"
)

func failOf(err error) outcome {
	o := outcome{fail: err.Error()}
	switch {
	case errors.Is(err, errUpstreamClosed):
		o.kind = failClosed
	case errors.Is(err, context.DeadlineExceeded):
		o.kind = failTimeout
	case errors.Is(err, client.ErrProtocol):
		o.kind = failProtocol
	}
	return o
}

// error returns the local failure as an error that keeps its kind and
// reads as the failure did (its message already names the kind).
func (o outcome) error() error {
	var kind error
	switch o.kind {
	case failClosed:
		kind = errUpstreamClosed
	case failTimeout:
		kind = context.DeadlineExceeded
	case failProtocol:
		kind = client.ErrProtocol
	default:
		return errors.New(o.fail)
	}
	return &keptKind{msg: o.fail, kind: kind}
}

// keptKind is a failure carried through the mailbox: its message as
// written, and the sentinel errors.Is finds.
type keptKind struct {
	msg  string
	kind error
}

func (e *keptKind) Error() string { return e.msg }
func (e *keptKind) Unwrap() error { return e.kind }

func (o outcome) encode() []byte {
	var m []exactjson.Member
	switch {
	case !o.requests.IsNull():
		m = append(m, exactjson.Field("requests", o.requests))
	case o.err != nil:
		em := []exactjson.Member{exactjson.Field("code", exactjson.Int(int64(o.err.Code))), exactjson.Field("message", exactjson.String(o.err.Message))}
		if !o.err.Data.IsNull() {
			em = append(em, exactjson.Field("data", o.err.Data))
		}
		m = append(m, exactjson.Field("error", exactjson.Object(em...)))
	case o.fail != "":
		m = append(m, exactjson.Field("fail", exactjson.String(o.fail)), exactjson.Field("kind", exactjson.String(o.kind)))
	default:
		m = append(m, exactjson.Field("result", o.result))
	}
	if o.notes > 0 {
		m = append(m, exactjson.Field("notes", exactjson.Int(int64(o.notes))))
	}
	b, err := exactjson.Encode(exactjson.Object(m...), exactjson.MaxInputBytesCeiling)
	if err != nil {
		b, _ = exactjson.Encode(exactjson.Object(exactjson.Field("fail", exactjson.String("the outcome cannot be encoded: "+err.Error()))), 0)
	}
	return b
}

func decodeOutcome(b []byte) (outcome, error) {
	v, err := exactjson.Parse(b, parseLimits)
	if err != nil {
		return outcome{}, err
	}
	var o outcome
	if r, ok := v.Get("requests"); ok {
		o.requests = r
	} else if e, ok := v.Get("error"); ok {
		o.err = rpcError(e)
	} else if f, ok := v.Get("fail"); ok {
		o.fail, _ = f.AsString()
		o.kind = str(v, "kind")
	} else if r, ok := v.Get("result"); ok {
		o.result = r
	} else {
		return outcome{}, errors.New("empty outcome")
	}
	if n, ok := intMember(v, "notes"); ok && n > 0 && n < 1<<20 {
		o.notes = int(n)
	}
	return o, nil
}

// parkedCall is one upstream call running on this instance.
type parkedCall struct {
	p      *parker
	id     string // the session id of its mailbox
	digest string // partition digest (per-partition bound)
	// supports reports whether the client can answer a request.
	supports func(method string, params exactjson.Value) bool
	ctx      context.Context
	cancel   context.CancelFunc

	first       chan outcome  // round 0's outcome, to the handler of the call
	handlerGone chan struct{} // closed when round 0's handler stopped waiting
	kick        chan struct{}
	done        chan outcome

	// listener receives the call's notifications (progress, logs) while a
	// request of its client is open on this instance: the first request,
	// then each retry served here.
	lmu      sync.Mutex
	listener func(method string, params exactjson.Value)
	// stretch is the round whose outcome the call works toward after
	// answers were delivered (0: the first request's); notes counts the
	// notifications of this stretch sent through the mailbox to a retry
	// served by another instance ("note-R-K" slots, see resume).
	stretch, notes int

	mu      sync.Mutex
	queue   []queued                        // upstream requests not yet sent to the client
	waiting map[string]chan exactjson.Value // by input key
	seq     int
	created bool
	// outstanding counts the upstream's requests waiting for the client.
	outstanding int

	admit    func() (func(), error)
	check    func(method string, params exactjson.Value) error
	onPark   func()
	onResume func(context.Context) error
	// held is set while the call's record is this instance's to renew:
	// from its creation to the call's final outcome.
	held atomic.Bool
}

type queued struct {
	key    string
	method string
	params exactjson.Value
}

func newID() (string, error) {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "gw-" + hex.EncodeToString(b[:]), nil
}

// parkOpts are the per-call inputs of start.
type parkOpts struct {
	digest string // the caller's partition digest (the store's bound)
	// supports reports whether the client can answer a request.
	supports func(method string, params exactjson.Value) bool
	// notify receives the call's notifications until the first request's
	// handler detaches it (pc.listen(nil)).
	notify func(string, exactjson.Value)
	// admit, when set, admits the call to wait for input (this instance's
	// bounds of parked calls) when it first asks; leave ends that.
	admit func() (leave func(), err error)
	// check, when set, refuses an upstream request the gateway must not
	// relay (a URL its policy does not allow), answered with -32602.
	check func(method string, params exactjson.Value) error
	// onPark runs when the call starts waiting for its client (it stops
	// attending its process); onResume before its answers go upstream.
	onPark   func()
	onResume func(context.Context) error
}

// start runs an upstream call that may park. do performs the call with the
// given sink; the call's context is the parked call's (independent of the
// first request, bounded by the lifetime).
// notify receives the call's notifications until the first request's
// handler detaches it (pc.listen(nil)).
func (p *parker) start(o parkOpts, do func(ctx context.Context, s *sink) (exactjson.Value, error)) (*parkedCall, error) {
	id, err := newID()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.lim.Lifetime.D())
	pc := &parkedCall{p: p, id: id, digest: o.digest, supports: o.supports, ctx: ctx, cancel: cancel,
		first: make(chan outcome), handlerGone: make(chan struct{}), kick: make(chan struct{}, 1),
		done: make(chan outcome, 1), waiting: map[string]chan exactjson.Value{}, listener: o.notify,
		admit: o.admit, check: o.check, onPark: o.onPark, onResume: o.onResume}
	p.wg.Add(2)
	p.active.Add(1)
	p.local.Store(id, pc)
	go func() {
		defer p.wg.Done()
		res, err := do(ctx, &sink{request: pc.request, notify: pc.notify})
		var o outcome
		var re *client.RPCError
		switch {
		case err == nil:
			o.result = res
		case errors.As(err, &re):
			o.err = re
		default:
			o = failOf(err)
		}
		pc.done <- o
	}()
	go func() {
		defer p.wg.Done()
		defer p.active.Add(-1)
		defer p.local.Delete(id)
		pc.run()
	}()
	return pc, nil
}

// listen makes fn the receiver of the call's notifications (nil: none).
func (pc *parkedCall) listen(fn func(string, exactjson.Value)) {
	pc.lmu.Lock()
	defer pc.lmu.Unlock()
	pc.listener = fn
}

// notify passes a notification of the upstream call to its listener. With
// none (no request of the client open on this instance) it goes through
// the mailbox to a retry waiting on another instance, if any; otherwise it
// is dropped (and logged): progress and log messages belong to an open
// request.
func (pc *parkedCall) notify(method string, params exactjson.Value) {
	pc.lmu.Lock()
	defer pc.lmu.Unlock()
	if pc.listener != nil {
		pc.listener(method, params)
		return
	}
	if pc.stretch == 0 {
		return // the first request has returned; no retry is due yet
	}
	// The retry of this stretch may wait on another instance: it expects
	// the next note slots (noteWindow of them ahead).
	b, err := exactjson.Encode(exactjson.Object(exactjson.Field("method", exactjson.String(method)), exactjson.Field("params", params)), exactjson.MaxInputBytesCeiling)
	if err != nil {
		return
	}
	ok, err := pc.p.store.Deliver(pc.ctx, pc.id, noteSlot(pc.stretch, pc.notes), b)
	switch {
	case err != nil:
		pc.p.log.Warn("gateway: cannot pass a parked call's notification to its retry", "id", pc.id, "err", err)
	case ok:
		pc.notes++
	default:
		pc.p.log.Debug("gateway: a parked call's notification found no retry waiting for it; dropped", "id", pc.id, "method", method)
	}
}

// noteWindow is how many note slots a retry served by another instance
// keeps open ahead: notifications sent faster than it relays them beyond
// that are dropped.
const noteWindow = 4

func noteSlot(stretch, k int) string { return "note-" + strconv.Itoa(stretch) + "-" + strconv.Itoa(k) }

// setStretch starts stretch r of the call (answers of round r-1 delivered).
func (pc *parkedCall) setStretch(r int) {
	pc.lmu.Lock()
	defer pc.lmu.Unlock()
	pc.stretch, pc.notes = r, 0
}

// awaitFirst waits for round 0's outcome on the handler's goroutine. When
// the handler's context ends first, the call is cancelled upstream.
func (pc *parkedCall) awaitFirst(ctx context.Context) (outcome, error) {
	select {
	case o := <-pc.first:
		return o, nil
	case <-ctx.Done():
		close(pc.handlerGone)
		pc.cancel()
		return outcome{}, ctx.Err()
	}
}

// request is the sink of the upstream's server-to-client requests: it
// queues the request for the client and waits for its answer.
func (pc *parkedCall) request(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, *client.RPCError) {
	if _, err := inputRequest(method, params, nil, false); err != nil {
		return exactjson.Value{}, &client.RPCError{Code: client.CodeInvalidParams, Message: "The gateway cannot relay this request: " + err.Error()}
	}
	if pc.check != nil {
		if err := pc.check(method, params); err != nil {
			return exactjson.Value{}, &client.RPCError{Code: client.CodeInvalidParams, Message: "The gateway does not relay this request: " + err.Error()}
		}
	}
	if pc.supports != nil && !pc.supports(method, params) {
		return exactjson.Value{}, &client.RPCError{Code: client.CodeMethodNotFound, Message: "The client behind the gateway does not support " + method}
	}
	ch := make(chan exactjson.Value, 1)
	pc.mu.Lock()
	pc.seq++
	key := shortMethod(method) + "-" + strconv.Itoa(pc.seq)
	pc.queue = append(pc.queue, queued{key: key, method: method, params: params})
	pc.waiting[key] = ch
	pc.outstanding++
	parks := pc.outstanding == 1
	pc.mu.Unlock()
	if parks && pc.onPark != nil {
		pc.onPark() // the process may serve other calls meanwhile
	}
	select {
	case pc.kick <- struct{}{}:
	default:
	}
	defer func() {
		pc.mu.Lock()
		delete(pc.waiting, key)
		pc.outstanding--
		pc.mu.Unlock()
	}()
	select {
	case v := <-ch:
		if pc.onResume != nil {
			if err := pc.onResume(ctx); err != nil {
				return exactjson.Value{}, &client.RPCError{Code: client.CodeInternalError, Message: "Cancelled"}
			}
		}
		return v, nil
	case <-ctx.Done():
		return exactjson.Value{}, &client.RPCError{Code: client.CodeInternalError, Message: "Cancelled"}
	case <-pc.ctx.Done():
		return exactjson.Value{}, &client.RPCError{Code: client.CodeInternalError, Message: "The client did not answer in time"}
	}
}

func shortMethod(m string) string {
	switch m {
	case "elicitation/create":
		return "elicit"
	case "sampling/createMessage":
		return "sample"
	case "roots/list":
		return "roots"
	}
	return "input"
}

// run drives the parked call round by round until it completes, fails,
// exceeds its bounds or its client stops retrying.
func (pc *parkedCall) run() {
	p := pc.p
	defer pc.cancel()
	handedOff := false // the final outcome went to a retry, which deletes the mailbox
	defer func() {
		if pc.created && !handedOff {
			// Deleting the session removes every slot; a waiter elsewhere
			// sees ErrNotFound.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := p.store.Delete(ctx, pc.id); err != nil {
				p.log.Warn("gateway: cannot delete a parked call's mailbox", "id", pc.id, "err", err)
			}
		}
	}()
	round := 0
	final := func(o outcome) {
		pc.held.Store(false) // a retry may delete the record once it has the outcome
		handedOff = pc.emit(round, o) && round > 0
	}
	for {
		select {
		case o := <-pc.done:
			final(o)
			return
		case <-pc.ctx.Done():
			if round == 0 {
				// The first request's handler may still wait.
				select {
				case pc.first <- outcome{fail: "the upstream call was cancelled"}:
				case <-pc.handlerGone:
				}
			}
			return
		case <-pc.kick:
		}
		pc.mu.Lock()
		batch := pc.queue
		pc.queue = nil
		pc.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		if round >= p.lim.MaxRounds {
			final(outcome{err: &client.RPCError{Code: client.CodeInternalError,
				Message: fmt.Sprintf("The upstream asked for input more than %d times", p.lim.MaxRounds)}})
			return
		}
		if !pc.created && pc.admit != nil {
			leave, err := pc.admit()
			if err != nil {
				final(outcome{err: &client.RPCError{Code: client.CodeInternalError, Message: err.Error()}})
				return
			}
			defer leave()
			pc.admit = nil
		}
		if !pc.created {
			s := &sessionstore.Session{ID: pc.id, ProtocolVersion: "gateway", IdentityDigest: pc.digest,
				IdleTimeout: p.lim.Lease.D(), ExpiresAt: p.now().Add(p.lim.Lifetime.D())}
			switch err := p.store.Create(pc.ctx, s); {
			case errors.Is(err, sessionstore.ErrLimit):
				final(outcome{err: &client.RPCError{Code: client.CodeInternalError,
					Message: "Too many calls are waiting for input; retry later"}})
				return
			case err != nil:
				final(outcome{fail: "cannot park the call: " + err.Error()})
				return
			}
			pc.created = true
			pc.held.Store(true)
		}
		in := "in-" + strconv.Itoa(round)
		if err := p.store.Expect(pc.ctx, pc.id, in, p.now().Add(p.lim.Lifetime.D())); err != nil {
			final(outcome{fail: "cannot park the call: " + err.Error()})
			return
		}
		reqs := make([]exactjson.Member, len(batch))
		for i, q := range batch {
			reqs[i] = exactjson.Field(q.key, exactjson.Object(
				exactjson.Field("method", exactjson.String(q.method)),
				exactjson.Field("params", q.params)))
		}
		if !pc.emit(round, outcome{requests: exactjson.Object(reqs...)}) {
			return
		}
		body, err := p.store.Await(pc.ctx, pc.id, in)
		if err != nil {
			if pc.ctx.Err() != nil && p.ctx.Err() == nil {
				p.log.Info("gateway: a parked call's client never retried; cancelling it upstream", "id", pc.id, "round", round)
			}
			return
		}
		answers, err := exactjson.Parse(body, parseLimits)
		if err != nil {
			return
		}
		pc.setStretch(round + 1)
		pc.mu.Lock()
		var again []queued
		for _, q := range batch {
			ch := pc.waiting[q.key]
			if ch == nil {
				continue // the upstream withdrew the request
			}
			if v, ok := answers.Get(q.key); ok && v.Kind() == exactjson.KindObject {
				ch <- v
			} else {
				again = append(again, q) // unanswered: asked again next round
			}
		}
		if len(again) > 0 {
			pc.queue = append(again, pc.queue...)
			select {
			case pc.kick <- struct{}{}:
			default:
			}
		}
		pc.mu.Unlock()
		round++
	}
}

// emit reports the outcome of round r: to round 0's handler directly, or to
// the retry waiting on its out slot. It reports whether someone took it.
func (pc *parkedCall) emit(r int, o outcome) bool {
	if r == 0 {
		select {
		case pc.first <- o:
			return true
		case <-pc.handlerGone:
			return false
		}
	}
	pc.lmu.Lock()
	if pc.stretch == r {
		o.notes = pc.notes
	}
	pc.lmu.Unlock()
	ok, err := pc.p.store.Deliver(pc.p.ctx, pc.id, "out-"+strconv.Itoa(r), o.encode())
	if err != nil {
		pc.p.log.Warn("gateway: cannot deliver a parked call's outcome", "id", pc.id, "err", err)
	}
	return ok && err == nil
}

// resume serves a retry: it hands answers to the parked call id (round r's
// input) and waits for the call's next outcome, wherever the call runs.
//
// The call's notifications (progress, logs) go to notify while the retry
// waits: directly when the call runs on this instance, else through the
// mailbox (relayNotes).
func (p *parker) resume(ctx context.Context, id string, r int, answers exactjson.Value, notify func(string, exactjson.Value)) (outcome, error) {
	if v, ok := p.local.Load(id); ok && notify != nil {
		pc := v.(*parkedCall)
		pc.listen(notify)
		defer pc.listen(nil)
	} else if notify != nil {
		// The call runs elsewhere (or nowhere): its notifications of this
		// stretch come through the mailbox, all of them before the outcome
		// (which counts them) is returned.
		wait, stop := p.relayNotes(ctx, id, r+1, notify)
		defer stop()
		return p.resumeOutcome(ctx, id, r, answers, wait)
	}
	return p.resumeOutcome(ctx, id, r, answers, nil)
}

// resumeOutcome is resume without the notifications; drain, when set, is
// given the outcome's count of notes before the mailbox goes.
func (p *parker) resumeOutcome(ctx context.Context, id string, r int, answers exactjson.Value, drain func(notes int)) (outcome, error) {
	out := "out-" + strconv.Itoa(r+1)
	switch err := p.store.Expect(ctx, id, out, p.now().Add(p.lim.Lifetime.D())); {
	case errors.Is(err, sessionstore.ErrNotFound):
		p.log.Debug("gateway: retry of a parked call that is gone", "id", id, "round", r, "step", "expect")
		return outcome{}, errParkedGone
	case err != nil:
		return outcome{}, fmt.Errorf("gateway: resume a parked call: %w", err)
	}
	body, err := exactjson.Encode(answers, exactjson.MaxInputBytesCeiling)
	if err != nil {
		return outcome{}, err
	}
	ok, err := p.store.Deliver(ctx, id, "in-"+strconv.Itoa(r), body)
	if err != nil || !ok {
		done, cancel := context.WithCancel(context.WithoutCancel(ctx))
		cancel()
		_, _ = p.store.Await(done, id, out) // remove our slot
		if err != nil {
			return outcome{}, fmt.Errorf("gateway: resume a parked call: %w", err)
		}
		p.log.Debug("gateway: retry of a parked call that is gone", "id", id, "round", r, "step", "deliver")
		return outcome{}, errParkedGone
	}
	b, err := p.store.Await(ctx, id, out)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		p.log.Debug("gateway: retry of a parked call that is gone", "id", id, "round", r, "step", "await")
		return outcome{}, errParkedGone
	case err != nil:
		return outcome{}, err
	}
	o, err := decodeOutcome(b)
	if drain != nil && err == nil {
		drain(o.notes)
	}
	if err != nil || o.requests.IsNull() {
		// The call is over: its mailbox goes (the parked call left it to
		// the reader of its last outcome, lest it be deleted unread).
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, derr := p.store.Delete(dctx, id); derr != nil {
			p.log.Warn("gateway: cannot delete a parked call's mailbox", "id", id, "err", derr)
		}
	}
	return o, err
}

// relayNotes passes the notifications of stretch r of the parked call id,
// sent by the instance running it, to notify until stop is called: it keeps
// noteWindow slots expected ahead and removes them at the end.
//
// wait(n) returns once n notes were relayed (the outcome's count: they are
// in their slots already), or the relay ended.
func (p *parker) relayNotes(ctx context.Context, id string, r int, notify func(string, exactjson.Value)) (wait func(n int), stop func()) {
	expires := p.now().Add(p.lim.Lifetime.D())
	next := 0 // the first slot not yet expected
	for ; next < noteWindow; next++ {
		if err := p.store.Expect(ctx, id, noteSlot(r, next), expires); err != nil {
			break // no session (the retry fails anyway), or the store is full: no notes
		}
	}
	nctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	relayed := make(chan int, noteWindow+1) // the count so far, after each note
	opened := next
	go func() {
		defer close(done)
		for k := 0; k < opened; k++ {
			b, err := p.store.Await(nctx, id, noteSlot(r, k))
			if err != nil {
				return
			}
			if p.store.Expect(nctx, id, noteSlot(r, opened), expires) == nil {
				opened++
			}
			if v, err := exactjson.Parse(b, parseLimits); err == nil {
				params, _ := v.Get("params")
				notify(str(v, "method"), params)
			}
			select {
			case relayed <- k + 1:
			default:
				<-relayed // keep the latest count
				relayed <- k + 1
			}
		}
	}()
	wait = func(want int) {
		for n := 0; n < want; {
			select {
			case n = <-relayed:
				continue
			case <-done:
			case <-ctx.Done():
			}
			break
		}
	}
	return wait, func() {
		cancel()
		<-done
		// Await removed the slots it reached; remove the others.
		dead, dcancel := context.WithCancel(context.WithoutCancel(ctx))
		dcancel()
		for k := 0; k < opened; k++ {
			_, _ = p.store.Await(dead, id, noteSlot(r, k))
		}
	}
}

// errParkedGone reports a retry whose parked call no longer waits.
var errParkedGone = errors.New("the upstream call this retry continues is no longer waiting: it finished, failed or expired, " +
	"was answered already, or the gateway instance running it stopped; start the call over without requestState")
