package weft

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/localsess"
	"github.com/weftmcp/weft/sessionstore"
)

// Serving MCP 2025-11-25 ("legacy") clients on the same endpoint and with the
// same registrations as 2026-07-28 clients (docs/legacy.md).
//
// The era is chosen per message, as the 2026-07-28 backward-compatibility
// section describes: a message carrying the modern _meta protocol version is
// modern; otherwise a message carrying Mcp-Session-Id (requests, client
// notifications and the client's answers to server requests), an initialize
// request, and GET or DELETE with Mcp-Session-Id are legacy. On stdio an
// initialize opens a legacy session for that connection.

// Legacy protocol revisions Weft can serve.
const (
	LegacyVersion20251125 = "2025-11-25"
	LegacyVersion20250618 = "2025-06-18"
)

var knownLegacyVersions = []string{LegacyVersion20251125, LegacyVersion20250618}

// LegacyOptions configure the legacy era. The zero value serves both eras
// on one endpoint, and serves 2025-era HTTP clients statelessly (see Store),
// which is correct behind any load balancer.
type LegacyOptions struct {
	// Disabled serves 2026-07-28 alone: an initialize request is answered
	// with -32601 naming this setting.
	Disabled bool
	// Only serves the legacy era alone: 2026-07-28 requests are answered
	// with -32022 naming the legacy versions.
	Only bool
	// Versions are the legacy revisions served, preferred first. An
	// initialize asking for another revision is answered with the first.
	// Default: 2025-11-25, 2025-06-18.
	Versions []string
	// Store keeps the sessions of 2025-era HTTP clients; every legacy
	// message reads its session from it (and refreshes its idle deadline).
	// Use a shared store (sessionstore/pgstore) for a fleet, and give every
	// instance the same Options.Protector keyring: legacy pagination
	// cursors are sealed with it. The server does not close a configured
	// store.
	//
	// Nil (the default, without InMemorySessions): 2025-era HTTP clients
	// get no session. initialize is answered without Mcp-Session-Id and
	// every request is served on its own by whichever instance receives it
	// (the client's MCP-Protocol-Version header names its revision), so a
	// fleet needs nothing shared. Without a session the server cannot ask
	// such a client for input (a server-to-client request must be answered
	// to the instance that waits for it), holds no subscriptions, log level
	// or event stream: a call that needs input fails with -32021 naming
	// this setting (docs/legacy.md). stdio connections always have a
	// session.
	Store sessionstore.Store
	// InMemorySessions keeps the sessions of 2025-era HTTP clients in this
	// process, bounded by Limits: correct for a single instance (or a
	// balancer that routes every request of a session to one instance),
	// not for a round-robin fleet, which needs Store.
	InMemorySessions bool
	// Limits bound the in-memory store of InMemorySessions (a configured
	// Store has its own limits). Each identity (each network address of
	// anonymous HTTP callers) may hold MaxPerIdentity sessions, each
	// partition MaxPerPartition, and the in-memory store always evicts
	// when full (sessionstore.Limits.EvictWhenFull).
	Limits sessionstore.Limits
	// IdleTimeout ends a session unused this long. Default 30 minutes.
	IdleTimeout time.Duration
	// MaxLifetime ends a session this long after initialize, used or not.
	// Default 24 hours, ceiling 30 days; IdleTimeout may not exceed it.
	MaxLifetime time.Duration
	// MaxRounds bounds the input rounds of one call: how many times a
	// handler may return input_required before the call fails. Default 10,
	// ceiling 100.
	MaxRounds int
	// InputTimeout bounds the wait for the client's answers to one round of
	// server-to-client requests. Default 10 minutes, ceiling 24 hours.
	InputTimeout time.Duration
}

// Defaults and ceilings of LegacyOptions.
const (
	defaultLegacyIdleTimeout  = 30 * time.Minute
	defaultLegacyMaxLifetime  = 24 * time.Hour
	legacyMaxLifetimeCeiling  = 30 * 24 * time.Hour
	defaultLegacyMaxRounds    = 10
	legacyMaxRoundsCeiling    = 100
	defaultLegacyInputTimeout = 10 * time.Minute
	legacyInputTimeoutCeiling = 24 * time.Hour
)

// legacyServer is the legacy era of one Server.
type legacyServer struct {
	env        eraEnv
	opts       LegacyOptions
	store      sessionstore.Store
	stdioStore *sessionstore.Memory
	local      *localsess.Local[*legacyStream]
	handlers   map[string]Handler // the session methods, wrapped in the middleware
	enc        encoder            // l.encode, made once
	// sweeping is set while the sweeper of the in-memory stores runs (under
	// sweepMu, read without it on the fast path).
	sweepMu  sync.Mutex
	sweeping atomic.Bool
}

// sweepInterval is how often the in-memory session stores are swept of
// expired sessions: a quarter of the idle timeout, within 1s..1min.
func (l *legacyServer) sweepInterval() time.Duration {
	return min(max(l.opts.IdleTimeout/4, time.Second), time.Minute)
}

// sweep purges the expired sessions of the in-memory stores (a configured
// store sweeps itself) every sweepInterval while they hold sessions, and
// ends when they hold none or the server shuts down: a server that holds
// no session runs no goroutine, so one never shut down (an Example, a
// test) is not pinned in memory by its sweeper. keepSweeping starts it.
func (l *legacyServer) sweep() {
	t := time.NewTicker(l.sweepInterval())
	defer t.Stop()
	for {
		select {
		case <-l.env.done:
			l.sweeping.Store(false)
			return
		case <-t.C:
			if m, ok := l.store.(*sessionstore.Memory); ok {
				m.Sweep()
			}
			l.stdioStore.Sweep()
			l.sweepMu.Lock()
			if !l.holdsSessions() {
				l.sweeping.Store(false)
				l.sweepMu.Unlock()
				return
			}
			l.sweepMu.Unlock()
		}
	}
}

// keepSweeping starts the sweeper after a message of a session kept in
// memory was served, unless it runs or the in-memory stores hold no
// session. It runs after the message (which may have created the session)
// and takes sweepMu as the sweeper's last check does, so a session is never
// left without one.
func (l *legacyServer) keepSweeping() {
	if l.sweeping.Load() || l.env.closing() {
		return
	}
	l.sweepMu.Lock()
	defer l.sweepMu.Unlock()
	if l.sweeping.Load() || !l.holdsSessions() {
		return
	}
	l.sweeping.Store(true)
	go l.sweep()
}

// holdsSessions reports whether the in-memory stores the sweeper purges
// (the HTTP one when no Store is configured, and the stdio one) hold any
// session.
func (l *legacyServer) holdsSessions() bool {
	if m, ok := l.store.(*sessionstore.Memory); ok && m.Len() > 0 {
		return true
	}
	return l.stdioStore.Len() > 0
}

// newLegacyServer validates o; nil means the legacy era is off.
func newLegacyServer(env eraEnv, o LegacyOptions) (*legacyServer, error) {
	switch {
	case o.Disabled && o.Only:
		return nil, errors.New("weft: LegacyOptions.Disabled and LegacyOptions.Only are both set: no era would be served")
	case o.Disabled:
		return nil, nil
	case o.Store != nil && o.InMemorySessions:
		return nil, errors.New("weft: LegacyOptions.Store and LegacyOptions.InMemorySessions are both set: choose one session store")
	case o.Limits != (sessionstore.Limits{}) && !o.InMemorySessions:
		return nil, errors.New("weft: LegacyOptions.Limits bound the in-memory session store: set LegacyOptions.InMemorySessions, or the limits of your Store")
	}
	l := &legacyServer{env: env, opts: o, local: localsess.New[*legacyStream](env.events != nil)}
	if len(l.opts.Versions) == 0 {
		l.opts.Versions = knownLegacyVersions
	}
	l.opts.Versions = slices.Clone(l.opts.Versions)
	for _, v := range l.opts.Versions {
		if !slices.Contains(knownLegacyVersions, v) {
			return nil, fmt.Errorf("weft: LegacyOptions.Versions: %q is not a legacy revision Weft serves (%v)", v, knownLegacyVersions)
		}
	}
	if l.opts.IdleTimeout == 0 {
		l.opts.IdleTimeout = defaultLegacyIdleTimeout
	}
	if l.opts.MaxLifetime == 0 {
		l.opts.MaxLifetime = defaultLegacyMaxLifetime
	}
	if l.opts.MaxRounds == 0 {
		l.opts.MaxRounds = defaultLegacyMaxRounds
	}
	if l.opts.InputTimeout == 0 {
		l.opts.InputTimeout = defaultLegacyInputTimeout
	}
	switch {
	case l.opts.IdleTimeout < 0 || l.opts.IdleTimeout > l.opts.MaxLifetime:
		return nil, fmt.Errorf("weft: LegacyOptions.IdleTimeout = %v is outside 1ns..MaxLifetime (%v)", l.opts.IdleTimeout, l.opts.MaxLifetime)
	case l.opts.MaxLifetime < 0 || l.opts.MaxLifetime > legacyMaxLifetimeCeiling:
		return nil, fmt.Errorf("weft: LegacyOptions.MaxLifetime = %v is outside 1ns..%v", l.opts.MaxLifetime, legacyMaxLifetimeCeiling)
	case l.opts.MaxRounds < 0 || l.opts.MaxRounds > legacyMaxRoundsCeiling:
		return nil, fmt.Errorf("weft: LegacyOptions.MaxRounds = %d is outside 1..%d", l.opts.MaxRounds, legacyMaxRoundsCeiling)
	case l.opts.InputTimeout < 0 || l.opts.InputTimeout > legacyInputTimeoutCeiling:
		return nil, fmt.Errorf("weft: LegacyOptions.InputTimeout = %v is outside 1ns..%v", l.opts.InputTimeout, legacyInputTimeoutCeiling)
	}
	if err := l.opts.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("weft: LegacyOptions.Limits: %w", err)
	}
	l.store = l.opts.Store
	if l.opts.InMemorySessions {
		// A full in-memory store evicts a session of the caller holding the
		// most rather than refusing everyone (sessionstore.Limits).
		lim := l.opts.Limits
		lim.EvictWhenFull = true
		l.store = sessionstore.NewMemory(&sessionstore.MemoryOptions{Limits: lim, Now: env.now})
	}
	l.stdioStore = sessionstore.NewMemory(&sessionstore.MemoryOptions{Now: env.now})
	l.handlers = l.sessionHandlers()
	l.enc = l.encode
	return l, nil
}

// legacyConn is one legacy message's view of its session.
type legacyConn struct {
	store     sessionstore.Store    // nil for a stateless request
	sess      *sessionstore.Session // nil while initialize opens it, and for a stateless request
	version   string                // the revision of a stateless request
	ident     Identity
	caps      exactjson.Value
	info      exactjson.Value
	in        *inbound
	transport string
}

// stateless reports whether c is a stateless request (no session; not
// initialize).
func (c *legacyConn) stateless() bool { return c.store == nil && c.version != "" }

// sessionID is the id of c's session, "" for a stateless request.
func (c *legacyConn) sessionID() string {
	if c.sess == nil {
		return ""
	}
	return c.sess.ID
}

// errStatelessInput replaces a missing-capability error of a stateless
// request: the client may well have the capability, but without a session
// the server neither knows it nor can ask.
func errStatelessInput(e *Error) *Error {
	c := *e
	c.Message = "This request needs input from the client, which this server asks 2025-era HTTP clients only in a session; " +
		"its operator enables sessions with weft.LegacyOptions.Store (or InMemorySessions on a single instance)"
	return &c
}

// serveMessage is the adapter's entry from the transports (eraAdapter): it
// serves the messages of 2025-era clients and reports false for those of
// 2026-07-28 ones.
func (l *legacyServer) serveMessage(ctx context.Context, in *inbound, v exactjson.Value, rt *requestTelemetry) (reply, bool) {
	if v.Kind() != exactjson.KindObject {
		return reply{}, false
	}
	params, _ := v.Get("params")
	meta, _ := params.Get("_meta")
	if meta.Has(metaProtocolVersion) {
		if l.opts.Only {
			id, _ := v.Get("id")
			pv, _ := meta.Get(metaProtocolVersion)
			requested, _ := pv.AsString()
			e := protocolError(CodeUnsupportedProtocolVersion, "Unsupported protocol version", exactjson.Object(
				exactjson.Field("supported", stringArray(l.opts.Versions)),
				exactjson.Field("requested", exactjson.String(requested))))
			return reply{id: ID{id}, err: e, fault: faultBadRequest}, true
		}
		return reply{}, false
	}
	mv, _ := v.Get("method")
	method, _ := mv.AsString()
	if in.header == nil {
		if in.conn == nil {
			return reply{}, false
		}
		sid, _ := in.conn.session()
		if sid == "" && method != "initialize" {
			return reply{}, false
		}
		return l.serveSessionMessage(ctx, in, v, sid, l.stdioStore, "stdio", rt, ""), true
	}
	sids := in.header.Values("Mcp-Session-Id")
	if len(sids) > 1 {
		return reply{err: protocolError(CodeInvalidRequest, "Mcp-Session-Id appears more than once", exactjson.Value{}),
			fault: faultBadRequest}, true
	}
	if len(sids) == 0 && method != "initialize" {
		if l.stateless() && l.opts.Only && method != "" && !v.Has("id") {
			// A notification (both eras: the modern path accepts it):
			// there is no session it could concern.
			if m, perr := parseMessage(v); perr != nil {
				return reply{id: m.id, err: perr, fault: faultBadRequest}, true
			}
			return reply{none: true}, true
		}
		if l.stateless() && v.Has("id") && method != "" {
			// A stateless 2025-era request names its revision in the
			// MCP-Protocol-Version header.
			if version, ok := l.statelessVersion(in.header); ok {
				if version == "" {
					return transportError(faultBadRequest, "Bad Request: unsupported MCP-Protocol-Version (supported: "+strings.Join(l.opts.Versions, ", ")+")"), true
				}
				return l.serveSessionMessage(ctx, in, v, "", nil, "http", rt, version), true
			}
		}
		if l.opts.Only {
			return reply{err: protocolError(CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required", exactjson.Value{}),
				fault: faultBadRequest}, true
		}
		return reply{}, false
	}
	sid := ""
	if len(sids) == 1 {
		sid = sids[0]
		if l.stateless() {
			return errNoSession(), true // this server gives 2025-era HTTP clients no sessions
		}
	}
	return l.serveSessionMessage(ctx, in, v, sid, l.store, "http", rt, ""), true
}

// stateless reports whether 2025-era HTTP clients are served without
// sessions (LegacyOptions.Store).
func (l *legacyServer) stateless() bool { return l.store == nil }

// statelessVersion reads the revision of a stateless 2025-era request from
// its MCP-Protocol-Version header: ok is false when the header names no
// legacy revision (the request is left to the modern era), version is ""
// when it names one this server does not serve. A server serving only the
// legacy era takes a request without the header as its preferred revision.
func (l *legacyServer) statelessVersion(h http.Header) (version string, ok bool) {
	pv := h.Values("MCP-Protocol-Version")
	switch {
	case len(pv) == 0 && l.opts.Only:
		return l.opts.Versions[0], true
	case len(pv) != 1 || !isLegacy(pv[0]):
		return "", false
	case slices.Contains(l.opts.Versions, pv[0]):
		return pv[0], true
	}
	return "", true
}

// isLegacy reports whether a protocol version names a revision before
// 2026-07-28 (revisions are dates).
func isLegacy(v string) bool { return len(v) == len("2025-11-25") && v < "2026-07-28" }

func transportError(f fault, msg string) reply {
	return reply{err: protocolError(CodeInvalidRequest, msg, exactjson.Value{}), fault: f}
}

func errNoSession() reply { return transportError(faultNoSession, "Session not found") }

// serveSessionMessage serves one 2025-era message of session sid ("" before
// initialize) kept in store. Requests are recorded by the telemetry of
// serve (rt), like modern ones, and dispatched by the same core.
//
// A nil store serves one stateless request of revision version.
func (l *legacyServer) serveSessionMessage(ctx context.Context, in *inbound, v exactjson.Value, sid string, store sessionstore.Store, transport string, rt *requestTelemetry, version string) reply {
	if _, ok := store.(*sessionstore.Memory); ok {
		defer l.keepSweeping() // other stores sweep themselves
	}
	if l.env.closing() {
		return errReply(ID{}, errShuttingDown())
	}
	if !v.Has("method") && (v.Has("result") || v.Has("error")) {
		return l.serveAnswer(ctx, in, v, sid, store)
	}
	m, perr := parseMessage(v)
	if perr != nil {
		return reply{id: m.id, err: perr, fault: faultBadRequest}
	}
	if !m.isNotify {
		ctx = rt.parsed(ctx, &m) // the server span continues params._meta traceparent
	}
	params := m.params
	if params.Kind() != exactjson.KindObject {
		params = exactjson.Object()
	}
	var c *legacyConn
	if m.method == "initialize" {
		switch {
		case sid != "":
			return reply{id: m.id, err: protocolError(CodeInvalidRequest, "Session already initialized", exactjson.Value{}), fault: faultBadRequest}
		case m.isNotify:
			return transportError(faultBadRequest, "initialize must be a request")
		}
		c = &legacyConn{store: store, in: in, transport: transport, caps: exactjson.Object()}
		c.caps, _ = params.Get("capabilities")
		c.info, _ = params.Get("clientInfo")
	} else if store == nil {
		// Stateless: the client's capabilities are unknown (it sent them
		// with initialize, to whichever instance), so none are assumed.
		c = &legacyConn{in: in, transport: transport, caps: exactjson.Object(), version: version}
	} else if sid == "" {
		return transportError(faultBadRequest, "Bad Request: Mcp-Session-Id header is required")
	}
	// Admission sees the request's target, as in the modern era (a
	// malformed one is reported after admission).
	name, nameErr := l.env.targetOf(m.method, params)
	ident, rej := l.env.core.admit(ctx, in, m.method, name.value)
	if rej != nil {
		rej.id = m.id
		return *rej
	}
	if c == nil {
		var rep reply
		if c, rep = l.open(ctx, in, sid, store, ident, transport); c == nil {
			return rep
		}
	} else {
		c.ident = ident
	}
	if m.isNotify {
		l.notification(ctx, c, m)
		return reply{none: true}
	}
	rep := l.serveRequest(ctx, c, m, params, name, nameErr, rt)
	rep.id = m.id
	if e := rep.err; e != nil {
		rep.err = legacyError(e)
		if c.stateless() && e.Code == CodeMissingRequiredCapability {
			rep.err = errStatelessInput(e)
		}
		if rep.fault == faultNone {
			switch {
			case e.fault != faultNone:
				rep.fault = e.fault // shutting down, overload, deadlines, session store failures
			case e.reserved && e.Code == CodeRateLimited:
			default:
				rep.fault = faultAnswered // a JSON-RPC error, not a transport failure
			}
		}
	}
	return rep
}

// serveRequest dispatches one admitted request of a session.
func (l *legacyServer) serveRequest(ctx context.Context, c *legacyConn, m message, params exactjson.Value, name target, nameErr *Error, rt *requestTelemetry) reply {
	h, ok := l.handler(m.method, c.stateless())
	if !ok {
		return reply{err: legacyMethodNotFound(m.method)}
	}
	if nameErr != nil {
		return reply{err: nameErr}
	}
	if paged := m.method == "tools/list" || m.method == "prompts/list" || m.method == "resources/list" || m.method == "resources/templates/list"; paged {
		if cv, ok := params.Get("cursor"); ok {
			inner, e := l.openCursor(ctx, c, m.method, cv)
			if e != nil {
				return reply{err: e}
			}
			params = params.With("cursor", exactjson.String(inner))
		}
	}
	call := l.call(c, m.method, m.id, name.value, params)
	call.handler, call.rt = h, rt
	if c.sess != nil {
		// A call of a session can be cancelled (notifications/cancelled,
		// DELETE, the fleet's cancellations) and sees its session.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer l.local.AddCall(c.sess.ID, m.id.key(), cancel)()
		ctx = context.WithValue(ctx, sessionKey{}, SessionInfo{ID: c.sess.ID, ProtocolVersion: c.sess.ProtocolVersion, ClientInfo: c.info, Transport: c.transport})
	} else if c.stateless() {
		ctx = context.WithValue(ctx, sessionKey{}, SessionInfo{ProtocolVersion: c.version, Transport: c.transport})
	}
	switch m.method {
	case "tools/call", "prompts/get", "resources/read":
		return l.bridge(ctx, call)
	}
	return l.env.core.dispatch(ctx, call)
}

// run relays the fleet's 2025-era cancellations (eraAdapter) until done,
// when the server has Options.Events.
func (l *legacyServer) run(done <-chan struct{}) {
	if l.env.events != nil {
		l.relayCancels(done)
	}
}

// ready checks the session store (eraAdapter).
func (l *legacyServer) ready(ctx context.Context) (string, error) {
	if l.store == nil {
		return "", nil
	}
	if _, err := l.store.Get(ctx, readinessProbeID); err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
		return "sessions", err
	}
	return "", nil
}

// call is the core's view of one invocation for a session c.
func (l *legacyServer) call(c *legacyConn, method string, id ID, name string, params exactjson.Value) eraCall {
	ec := eraCall{in: c.in, era: era2025, method: method, id: id, name: name, params: params,
		caps: c.caps, clientInfo: c.info, ident: c.ident, logLevel: -1, conn: c, encode: l.enc}
	if c.sess != nil {
		ec.version = c.sess.ProtocolVersion
		ec.logLevel = levelIndex(LogLevel(c.sess.LogLevel))
	} else if c.stateless() {
		ec.version = c.version
	}
	return ec
}

// handler returns the handler of a method a session may call: its own
// (the session methods), or the core's for a 2026-07-28 method that also
// exists in 2025-11-25 (not discovery, listen or the tasks extension). A
// stateless request has no session to keep a log level or subscriptions
// in.
func (l *legacyServer) handler(method string, stateless bool) (Handler, bool) {
	if h, ok := l.handlers[method]; ok {
		if stateless && (method == "logging/setLevel" || method == "resources/subscribe" || method == "resources/unsubscribe") {
			return nil, false
		}
		if method == "resources/subscribe" || method == "resources/unsubscribe" {
			_, ok := l.env.handler("resources/read")
			return h, ok
		}
		return h, true
	}
	switch method {
	case "server/discover", "subscriptions/listen", "tasks/get", "tasks/update", "tasks/cancel":
		return nil, false
	}
	return l.env.handler(method)
}

// sessionHandlers are the methods only 2025-11-25 has, wrapped in the
// middleware once.
func (l *legacyServer) sessionHandlers() map[string]Handler {
	hs := map[string]Handler{
		"initialize":            l.handleInitialize,
		"ping":                  func(context.Context, *Request) (Result, error) { return &EmptyResult{}, nil },
		"logging/setLevel":      l.handleSetLevel,
		"resources/subscribe":   l.handleSubscribe,
		"resources/unsubscribe": l.handleSubscribe,
	}
	for m, h := range hs {
		hs[m] = l.env.wrap(h)
	}
	return hs
}

// encode is the 2025-11-25 encoding of a result (the era's encoder): no
// resultType, caching hints or serverInfo, and a pagination cursor sealed
// to the session. An input_required result stays typed, for the bridge to
// answer.
func (l *legacyServer) encode(ctx context.Context, req *Request, res Result) reply {
	c := req.conn.(*legacyConn)
	switch r := res.(type) {
	case askResult:
		return reply{res: r}
	case paged:
		if next := r.nextCursor(); next != "" {
			sealed, e := l.sealCursor(ctx, c, req.Method, next)
			if e != nil {
				return reply{err: e, outcome: OutcomeInternalError}
			}
			res = r.withCursor(sealed)
		}
	}
	b, err := l.env.encode(res, era2025)
	if err != nil {
		l.env.log.Error("weft: encoding a result failed", "method", req.Method, "name", req.Name, "err", err)
		return reply{err: internalError(err), outcome: OutcomeInternalError}
	}
	rep := reply{result: b}
	if ir, ok := res.(*InitializeResult); ok && c.transport == "http" && ir.sessionID != "" {
		rep.sessionID = ir.sessionID
	}
	return rep
}

// legacyError translates errors whose code differs in 2025-11-25.
func legacyError(e *Error) *Error {
	if e.notFound {
		c := *e
		c.Code = codeResourceNotFoundLegacy
		return &c
	}
	return e
}

// codeResourceNotFoundLegacy is the resource-not-found code of 2025-11-25
// (2026-07-28 uses -32602).
const codeResourceNotFoundLegacy = -32002

// open loads the session of a message and checks that it belongs to the
// admitted identity and protocol version. An unknown, expired, deleted or
// foreign session is 404.
func (l *legacyServer) open(ctx context.Context, in *inbound, sid string, store sessionstore.Store, ident Identity, transport string) (*legacyConn, reply) {
	if !sessionstore.ValidID(sid) {
		return nil, errNoSession()
	}
	sess, err := store.Get(ctx, sid)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		return nil, errNoSession()
	case err != nil:
		l.env.log.Error("weft: loading a legacy session failed", "err", err)
		return nil, reply{err: internalError(err), fault: faultUnavailable}
	case !sameIdentity(sess, ident):
		return nil, errNoSession()
	}
	if in.header != nil {
		if pv := in.header.Values("MCP-Protocol-Version"); len(pv) > 1 || (len(pv) == 1 && pv[0] != sess.ProtocolVersion) {
			return nil, transportError(faultBadRequest, "Bad Request: unsupported MCP-Protocol-Version for this session (negotiated "+sess.ProtocolVersion+")")
		}
	}
	c := &legacyConn{store: store, sess: sess, ident: ident, in: in, transport: transport}
	if c.caps, err = exactjson.Parse(sess.ClientCapabilities, exactjson.Limits{}); err != nil || c.caps.Kind() != exactjson.KindObject {
		c.caps = exactjson.Object()
	}
	if len(sess.ClientInfo) > 0 {
		c.info, _ = exactjson.Parse(sess.ClientInfo, exactjson.Limits{})
	}
	return c, reply{}
}

// handleInitialize opens a session.
func (l *legacyServer) handleInitialize(ctx context.Context, req *Request) (Result, error) {
	c := req.conn.(*legacyConn)
	// A bad initialize is a transport failure (HTTP 400), unlike the
	// JSON-RPC errors of a session (HTTP 200).
	bad := func(msg string) error { return withFault(InvalidParams(msg), faultBadRequest) }
	pv, _ := req.Params.Get("protocolVersion")
	requested, ok := pv.AsString()
	if !ok {
		return nil, bad("params.protocolVersion must be a string")
	}
	caps, ok := req.Params.Get("capabilities")
	if !ok || caps.Kind() != exactjson.KindObject {
		return nil, bad("params.capabilities must be an object")
	}
	info, ok := req.Params.Get("clientInfo")
	if !ok || info.Kind() != exactjson.KindObject {
		return nil, bad("params.clientInfo must be an object")
	}
	version := l.opts.Versions[0]
	if slices.Contains(l.opts.Versions, requested) {
		version = requested
	}
	impl, instructions, capabilities := l.env.describe() // 2025-11-25 capabilities have no extensions
	if c.store == nil {
		// Stateless: no session, so no event stream for list changes, no
		// subscriptions and no log level.
		return &InitializeResult{
			ProtocolVersion: version,
			Capabilities:    statelessCapabilities(capabilities),
			ServerInfo:      impl,
			Instructions:    instructions,
		}, nil
	}
	sid, err := newSessionID()
	if err != nil {
		return nil, err
	}
	capsJSON, err1 := exactjson.Encode(caps, 0)
	infoJSON, err2 := exactjson.Encode(info, 0)
	if err := errors.Join(err1, err2); err != nil {
		return nil, bad("params could not be stored")
	}
	now := l.env.now()
	sess := &sessionstore.Session{
		ID: sid, ProtocolVersion: version, ClientCapabilities: capsJSON, ClientInfo: infoJSON,
		IdentityDigest: identityDigest(req.Identity), Owner: sessionOwner(req.Identity, c.in.remoteAddr),
		Partition: sessionPartition(req.Identity), CreatedAt: now, LastSeen: now,
		IdleTimeout: l.opts.IdleTimeout, ExpiresAt: now.Add(l.opts.MaxLifetime),
	}
	if c.transport == "stdio" {
		// The connection is the session: it ends with the process, not
		// with idleness.
		sess.IdleTimeout, sess.ExpiresAt = 100*365*24*time.Hour, now.Add(100*365*24*time.Hour)
	}
	switch err := c.store.Create(ctx, sess); {
	case errors.Is(err, sessionstore.ErrLimit):
		e := withFault(protocolError(CodeInternalError, "Too many open sessions; retry later", exactjson.Value{}), faultUnavailable)
		e.retryAfter = 5 * time.Second
		return nil, e
	case err != nil:
		return nil, withFault(internalError(fmt.Errorf("weft: storing a legacy session: %w", err)), faultUnavailable)
	}
	if c.transport == "stdio" {
		// The session's events start when this response is out
		// (ServeStdio); the subscription starts now, so none is lost.
		sub := l.env.bus.subscribe()
		if !c.in.conn.bind(sid, sub) {
			l.env.bus.unsubscribe(sub)
			_, _ = c.store.Delete(ctx, sid)
			return nil, withFault(protocolError(CodeInvalidRequest, "Session already initialized", exactjson.Value{}), faultBadRequest)
		}
	}
	return &InitializeResult{
		ProtocolVersion: version,
		Capabilities:    capabilities,
		ServerInfo:      impl,
		Instructions:    instructions,
		sessionID:       sid,
	}, nil
}

// statelessCapabilities are the server capabilities offered without a
// session: the lists without listChanged, resources without subscribe, no
// logging.
func statelessCapabilities(caps exactjson.Value) exactjson.Value {
	for _, k := range []string{"tools", "prompts", "resources"} {
		if caps.Has(k) {
			caps = caps.With(k, exactjson.Object())
		}
	}
	return caps.Without("logging")
}

// notification handles a client notification of a session.
func (l *legacyServer) notification(ctx context.Context, c *legacyConn, m message) {
	switch m.method {
	case "notifications/initialized":
		if !c.sess.Initialized {
			_, _ = c.store.Update(ctx, c.sess.ID, func(s *sessionstore.Session) error { s.Initialized = true; return nil })
		}
	case "notifications/cancelled":
		// Cancels a call of the session running on this instance (HTTP),
		// or, with a fleet bus, on whichever instance runs it; stdio
		// cancellation is handled by the stdio transport.
		if rid, ok := m.params.Get("requestId"); ok {
			sid, key := c.sess.ID, ID{rid}.key()
			if !l.local.CancelCall(sid, key) && c.transport == "http" {
				l.publishCancel(ctx, "call "+localsess.SessionDigest(sid)+" "+localsess.CallDigest(sid, key))
			}
		}
	}
}

// legacyCancelChannel is the channel of [Options.Events] on which the
// instances of a fleet pass on 2025-11-25 cancellations: a
// notifications/cancelled or a session DELETE that one instance receives
// also cancels the session's calls running on the others. Payloads name
// sessions and calls by digests ("call <session> <call>", "session
// <session>"), never by session id. Delivery is best effort, as for every
// event on the bus.
const legacyCancelChannel = "weft.legacy.cancel"

// publishCancel passes a cancellation on to the fleet, when there is one.
func (l *legacyServer) publishCancel(ctx context.Context, payload string) {
	bus := l.env.events
	if bus == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := bus.Publish(ctx, legacyCancelChannel, payload); err != nil {
		l.env.log.Warn("weft: passing a cancellation on to the fleet failed", "err", err)
	}
}

// relayCancels applies the fleet's cancellations to the calls and streams of
// this instance until done.
func (l *legacyServer) relayCancels(done <-chan struct{}) {
	listenFleet(done, l.env.events, legacyCancelChannel, l.env.log, func(payload string) {
		f := strings.Fields(payload)
		switch {
		case len(f) == 3 && f[0] == "call":
			l.local.CancelByDigest(f[1], f[2])
		case len(f) == 2 && f[0] == "session":
			l.local.EndByDigest(f[1])
		}
	})
}

// serveAnswer routes the client's answer to a server-to-client request to
// the waiting handler, on whichever instance it runs.
func (l *legacyServer) serveAnswer(ctx context.Context, in *inbound, v exactjson.Value, sid string, store sessionstore.Store) reply {
	if sid == "" {
		return transportError(faultBadRequest, "Bad Request: Mcp-Session-Id header is required")
	}
	jv, _ := v.Get("jsonrpc")
	idv, _ := v.Get("id")
	rid, isStr := idv.AsString()
	if !isString(jv, "2.0") || (v.Has("result") == v.Has("error")) {
		return transportError(faultBadRequest, "Invalid JSON-RPC response")
	}
	ident, rej := l.env.core.admit(ctx, in, "", "")
	if rej != nil {
		return *rej
	}
	c, rep := l.open(ctx, in, sid, store, ident, "")
	if c == nil {
		return rep
	}
	if isStr && sessionstore.ValidID(rid) {
		if _, err := store.Deliver(ctx, sid, rid, in.body); err != nil {
			l.env.log.Error("weft: delivering a client answer failed", "err", err)
			return reply{err: internalError(err), fault: faultUnavailable}
		}
	}
	// Unsolicited and late answers are dropped.
	return reply{none: true}
}

// handleSetLevel serves logging/setLevel.
func (l *legacyServer) handleSetLevel(ctx context.Context, req *Request) (Result, error) {
	c := req.conn.(*legacyConn)
	lv, _ := req.Params.Get("level")
	level, _ := lv.AsString()
	if levelIndex(LogLevel(level)) < 0 {
		return nil, InvalidParams("Invalid log level")
	}
	if _, err := c.store.Update(ctx, c.sess.ID, func(s *sessionstore.Session) error { s.LogLevel = level; return nil }); err != nil {
		return nil, l.storeError(err)
	}
	return &EmptyResult{}, nil
}

func legacyMethodNotFound(method string) *Error {
	return protocolError(CodeMethodNotFound, "Method not found", exactjson.Object(exactjson.Field("method", exactjson.String(method))))
}

func (l *legacyServer) storeError(err error) error {
	if errors.Is(err, sessionstore.ErrNotFound) {
		return withFault(protocolError(CodeInvalidRequest, "Session not found", exactjson.Value{}), faultNoSession)
	}
	return fmt.Errorf("weft: legacy session store: %w", err)
}

// handleSubscribe serves resources/subscribe and resources/unsubscribe.
func (l *legacyServer) handleSubscribe(ctx context.Context, req *Request) (Result, error) {
	lim := l.env.limits
	c := req.conn.(*legacyConn)
	uv, _ := req.Params.Get("uri")
	uri, ok := uv.AsString()
	if !ok || uri == "" || len(uri) > lim.MaxURIBytes {
		return nil, InvalidParams("params.uri must be a non-empty URI string")
	}
	subscribe := req.Method == "resources/subscribe"
	_, err := c.store.Update(ctx, c.sess.ID, func(sess *sessionstore.Session) error {
		i := slices.Index(sess.Subscriptions, uri)
		switch {
		case subscribe && i < 0:
			if len(sess.Subscriptions) >= lim.MaxResourceSubscriptions {
				return errTooManySubscriptions
			}
			sess.Subscriptions = append(sess.Subscriptions, uri)
		case !subscribe && i >= 0:
			sess.Subscriptions = slices.Delete(sess.Subscriptions, i, i+1)
		}
		return nil
	})
	if errors.Is(err, errTooManySubscriptions) {
		return nil, InvalidParams("Too many resource subscriptions (at most " + strconv.Itoa(lim.MaxResourceSubscriptions) + ")")
	}
	if err != nil {
		return nil, l.storeError(err)
	}
	return &EmptyResult{}, nil
}

var errTooManySubscriptions = errors.New("too many subscriptions")

// A legacy pagination cursor is the modern cursor sealed with the server's
// request-state Protector and bound to the endpoint, session and method, so
// a client can neither forge nor transplant one. A fleet needs one keyring
// on every instance (Options.Protector), as for request state.
const cursorDomain = "weft-legacy-cursor-v1"

func cursorBinding(endpoint, sid, method string) []byte {
	b := append([]byte(cursorDomain), 0)
	for _, s := range []string{endpoint, sid, method} {
		b = appendLP(b, s)
	}
	return b
}

func (l *legacyServer) sealCursor(ctx context.Context, c *legacyConn, method, inner string) (string, *Error) {
	tok, err := l.env.protector().Seal(ctx, cursorBinding(c.in.endpoint, c.sessionID(), method), []byte(inner))
	if err != nil {
		l.env.log.Error("weft: sealing a pagination cursor failed", "err", err)
		return "", internalError(err)
	}
	return tok, nil
}

func (l *legacyServer) openCursor(ctx context.Context, c *legacyConn, method string, cv exactjson.Value) (string, *Error) {
	tok, ok := cv.AsString()
	if !ok || len(tok) > l.env.limits.MaxCursorBytes {
		return "", InvalidParams("Invalid cursor")
	}
	if tok == "" {
		return "", nil
	}
	plain, err := l.env.protector().Open(ctx, tok, cursorBinding(c.in.endpoint, c.sessionID(), method))
	if err != nil {
		return "", InvalidParams("Invalid cursor")
	}
	return string(plain), nil
}
