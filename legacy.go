package weft

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftmcp/weft/exactjson"
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

// LegacyOptions enable and configure the legacy era. Set [Options.Legacy]
// to a non-nil value to serve both eras on one endpoint.
type LegacyOptions struct {
	// Versions are the legacy revisions served, preferred first. An
	// initialize asking for another revision is answered with the first.
	// Default: 2025-11-25, 2025-06-18.
	Versions []string
	// Only serves the legacy era alone: 2026-07-28 requests are answered
	// with -32022 naming the legacy versions.
	Only bool
	// Store persists sessions; every legacy message reads its session from
	// it (and refreshes its idle deadline). Default: an in-memory store
	// bounded by Limits. Use a shared store (sessionstore/pgstore) for a
	// fleet, and give every instance the same Options.Protector keyring:
	// legacy pagination cursors are sealed with it. The server does not
	// close a configured store.
	Store sessionstore.Store
	// Limits bound the default in-memory store (a configured Store has its
	// own limits).
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
	DefaultLegacyIdleTimeout  = 30 * time.Minute
	DefaultLegacyMaxLifetime  = 24 * time.Hour
	LegacyMaxLifetimeCeiling  = 30 * 24 * time.Hour
	DefaultLegacyMaxRounds    = 10
	LegacyMaxRoundsCeiling    = 100
	DefaultLegacyInputTimeout = 10 * time.Minute
	LegacyInputTimeoutCeiling = 24 * time.Hour
)

// legacyServer is the legacy era of one Server.
type legacyServer struct {
	srv        *Server
	opts       LegacyOptions
	store      sessionstore.Store
	stdioStore *sessionstore.Memory
	local      *localSessions
}

// newLegacyServer validates o; nil means the legacy era is off.
func newLegacyServer(s *Server, o *LegacyOptions) (*legacyServer, error) {
	if o == nil {
		return nil, nil
	}
	l := &legacyServer{srv: s, opts: *o, local: newLocalSessions()}
	l.local.fleet = s.opts.Events != nil
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
		l.opts.IdleTimeout = DefaultLegacyIdleTimeout
	}
	if l.opts.MaxLifetime == 0 {
		l.opts.MaxLifetime = DefaultLegacyMaxLifetime
	}
	if l.opts.MaxRounds == 0 {
		l.opts.MaxRounds = DefaultLegacyMaxRounds
	}
	if l.opts.InputTimeout == 0 {
		l.opts.InputTimeout = DefaultLegacyInputTimeout
	}
	switch {
	case l.opts.IdleTimeout < 0 || l.opts.IdleTimeout > l.opts.MaxLifetime:
		return nil, fmt.Errorf("weft: LegacyOptions.IdleTimeout = %v is outside 1ns..MaxLifetime (%v)", l.opts.IdleTimeout, l.opts.MaxLifetime)
	case l.opts.MaxLifetime < 0 || l.opts.MaxLifetime > LegacyMaxLifetimeCeiling:
		return nil, fmt.Errorf("weft: LegacyOptions.MaxLifetime = %v is outside 1ns..%v", l.opts.MaxLifetime, LegacyMaxLifetimeCeiling)
	case l.opts.MaxRounds < 0 || l.opts.MaxRounds > LegacyMaxRoundsCeiling:
		return nil, fmt.Errorf("weft: LegacyOptions.MaxRounds = %d is outside 1..%d", l.opts.MaxRounds, LegacyMaxRoundsCeiling)
	case l.opts.InputTimeout < 0 || l.opts.InputTimeout > LegacyInputTimeoutCeiling:
		return nil, fmt.Errorf("weft: LegacyOptions.InputTimeout = %v is outside 1ns..%v", l.opts.InputTimeout, LegacyInputTimeoutCeiling)
	}
	if err := l.opts.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("weft: LegacyOptions.Limits: %w", err)
	}
	l.store = l.opts.Store
	if l.store == nil {
		l.store = sessionstore.NewMemory(sessionstore.MemoryOptions{Limits: l.opts.Limits, Now: s.now})
	}
	l.stdioStore = sessionstore.NewMemory(sessionstore.MemoryOptions{Now: s.now})
	return l, nil
}

// legacyConn is one legacy message's view of its session.
type legacyConn struct {
	store     sessionstore.Store
	sess      *sessionstore.Session
	ident     Identity
	caps      exactjson.Value
	info      exactjson.Value
	in        *inbound
	transport string
}

// stdioConn returns the stdio connection of in, if any.
func stdioConn(in *inbound) *stdioWriter {
	if n, ok := in.out.(*stdioNotifier); ok {
		return n.out
	}
	return nil
}

// serveLegacy is the legacy hook of serve: it reports false for messages of
// the modern era.
func (s *Server) serveLegacy(ctx context.Context, in *inbound, v exactjson.Value, rt *requestTelemetry) (reply, bool) {
	l := s.legacy
	if l == nil || v.Kind() != exactjson.KindObject {
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
			return reply{id: ID{id}, err: e, status: http.StatusBadRequest}, true
		}
		return reply{}, false
	}
	mv, _ := v.Get("method")
	method, _ := mv.AsString()
	if in.header == nil {
		w := stdioConn(in)
		if w == nil {
			return reply{}, false
		}
		sid, open := l.local.stdioSession(w)
		if !open && method != "initialize" {
			return reply{}, false
		}
		return l.serveMessage(ctx, in, v, sid, l.stdioStore, "stdio", rt), true
	}
	sids := in.header.Values("Mcp-Session-Id")
	if len(sids) > 1 {
		return reply{err: protocolError(CodeInvalidRequest, "Mcp-Session-Id appears more than once", exactjson.Value{}),
			status: http.StatusBadRequest}, true
	}
	if len(sids) == 0 && method != "initialize" {
		if l.opts.Only {
			return reply{err: protocolError(CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required", exactjson.Value{}),
				status: http.StatusBadRequest}, true
		}
		return reply{}, false
	}
	sid := ""
	if len(sids) == 1 {
		sid = sids[0]
	}
	return l.serveMessage(ctx, in, v, sid, l.store, "http", rt), true
}

func transportError(status int, msg string) reply {
	return reply{err: protocolError(CodeInvalidRequest, msg, exactjson.Value{}), status: status}
}

func errNoSession() reply { return transportError(http.StatusNotFound, "Session not found") }

// serveMessage serves one legacy message of session sid ("" before
// initialize) kept in store. Requests are recorded by the telemetry of
// serve (rt), like modern ones.
func (l *legacyServer) serveMessage(ctx context.Context, in *inbound, v exactjson.Value, sid string, store sessionstore.Store, transport string, rt *requestTelemetry) reply {
	s := l.srv
	if s.closing.Load() {
		return reply{err: protocolError(CodeInternalError, "Server is shutting down", exactjson.Value{}), status: http.StatusServiceUnavailable}
	}
	if !v.Has("method") && (v.Has("result") || v.Has("error")) {
		return l.serveAnswer(ctx, in, v, sid, store)
	}
	m, perr := parseMessage(v)
	if perr != nil {
		return reply{id: m.id, err: perr, status: http.StatusBadRequest}
	}
	if !m.isNotify {
		ctx = rt.parsed(ctx, &m) // weft: telemetry hook: span, metrics, request log
	}
	if m.method == "initialize" {
		switch {
		case sid != "":
			return reply{id: m.id, err: protocolError(CodeInvalidRequest, "Session already initialized", exactjson.Value{}), status: http.StatusBadRequest}
		case m.isNotify:
			return transportError(http.StatusBadRequest, "initialize must be a request")
		}
		return l.initialize(ctx, in, m, store, transport)
	}
	if sid == "" {
		return transportError(http.StatusBadRequest, "Bad Request: Mcp-Session-Id header is required")
	}
	// Admission sees the request's target, as in the modern pipeline (a
	// malformed one is reported by dispatch after admission).
	if name, e := targetName(m.method, m.params); e == nil {
		target := *in
		target.target = name.value
		in = &target
	}
	ident, rej := s.admit(ctx, in, m.method)
	if rej != nil {
		rej.id = m.id
		return *rej
	}
	c, rep := l.open(ctx, in, sid, store, ident, transport)
	if c == nil {
		return rep
	}
	if m.isNotify {
		l.notification(ctx, c, m)
		return reply{none: true}
	}
	if rt != nil {
		params := m.params
		if params.Kind() != exactjson.KindObject {
			params = exactjson.Object()
		}
		name, _ := targetName(m.method, params)
		rt.admitted((&legacyCall{l: l, c: c, method: m.method, id: m.id, name: name.value}).request(params, m.id))
	}
	if rl := s.opts.RateLimiter; rl != nil {
		if ok, retry := rl.Allow(ctx, rateKey(ident, in)); !ok {
			rep := rateLimitedReply(retry)
			rep.id = m.id
			return rep
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer l.local.addCall(sid, m.id.key(), cancel)()
	ctx = context.WithValue(ctx, sessionKey{}, SessionInfo{ID: sid, ProtocolVersion: c.sess.ProtocolVersion, ClientInfo: c.info, Transport: transport})
	s.inflight.Add(1)
	defer s.inflight.Done()
	rep = func() (rep reply) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("weft: handler panic", "method", m.method, "panic", p, "stack", string(debug.Stack()))
				rep = reply{err: internalError(fmt.Errorf("panic: %v", p))}
			}
		}()
		return l.dispatch(ctx, c, m)
	}()
	rep.id = m.id
	if rep.err != nil {
		rep.err = legacyError(rep.err)
		if rep.status == 0 {
			switch rep.err.HTTPStatus() {
			case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
				// Overload and deadlines keep their transport status.
			default:
				rep.status = http.StatusOK // a JSON-RPC error, not a transport failure
			}
		}
	}
	return rep
}

// legacyError translates errors whose code differs in 2025-11-25.
func legacyError(e *Error) *Error {
	if e.notFound {
		c := *e
		c.Code = CodeResourceNotFoundLegacy
		return &c
	}
	return e
}

// CodeResourceNotFoundLegacy is the resource-not-found code of 2025-11-25
// (2026-07-28 uses -32602).
const CodeResourceNotFoundLegacy = -32002

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
		l.srv.log.Error("weft: loading a legacy session failed", "err", err)
		return nil, reply{err: internalError(err), status: http.StatusServiceUnavailable}
	case !sameIdentity(sess, ident):
		return nil, errNoSession()
	}
	if in.header != nil {
		if pv := in.header.Values("MCP-Protocol-Version"); len(pv) > 1 || (len(pv) == 1 && pv[0] != sess.ProtocolVersion) {
			return nil, transportError(http.StatusBadRequest, "Bad Request: unsupported MCP-Protocol-Version for this session (negotiated "+sess.ProtocolVersion+")")
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

// initialize opens a session.
func (l *legacyServer) initialize(ctx context.Context, in *inbound, m message, store sessionstore.Store, transport string) reply {
	s := l.srv
	bad := func(msg string) reply {
		return reply{id: m.id, err: InvalidParams(msg), status: http.StatusBadRequest}
	}
	pv, _ := m.params.Get("protocolVersion")
	requested, ok := pv.AsString()
	if !ok {
		return bad("params.protocolVersion must be a string")
	}
	caps, ok := m.params.Get("capabilities")
	if !ok || caps.Kind() != exactjson.KindObject {
		return bad("params.capabilities must be an object")
	}
	info, ok := m.params.Get("clientInfo")
	if !ok || info.Kind() != exactjson.KindObject {
		return bad("params.clientInfo must be an object")
	}
	ident, rej := s.admit(ctx, in, m.method)
	if rej != nil {
		return *rej
	}
	version := l.opts.Versions[0]
	if slices.Contains(l.opts.Versions, requested) {
		version = requested
	}
	sid, err := newSessionID()
	if err != nil {
		return reply{id: m.id, err: internalError(err), status: http.StatusInternalServerError}
	}
	capsJSON, err1 := exactjson.Encode(caps, 0)
	infoJSON, err2 := exactjson.Encode(info, 0)
	if err := errors.Join(err1, err2); err != nil {
		return bad("params could not be stored")
	}
	now := s.now()
	sess := &sessionstore.Session{
		ID: sid, ProtocolVersion: version, ClientCapabilities: capsJSON, ClientInfo: infoJSON,
		IdentityDigest: identityDigest(ident), CreatedAt: now, LastSeen: now,
		IdleTimeout: l.opts.IdleTimeout, ExpiresAt: now.Add(l.opts.MaxLifetime),
	}
	if transport == "stdio" {
		// The connection is the session: it ends with the process, not
		// with idleness.
		sess.IdleTimeout, sess.ExpiresAt = 100*365*24*time.Hour, now.Add(100*365*24*time.Hour)
	}
	switch err := store.Create(ctx, sess); {
	case errors.Is(err, sessionstore.ErrLimit):
		return reply{id: m.id, err: protocolError(CodeInternalError, "Too many open sessions; retry later", exactjson.Value{}),
			status: http.StatusServiceUnavailable, header: http.Header{"Retry-After": {"5"}}}
	case err != nil:
		s.log.Error("weft: storing a legacy session failed", "err", err)
		return reply{id: m.id, err: internalError(err), status: http.StatusServiceUnavailable}
	}
	if transport == "stdio" {
		l.local.setStdioSession(stdioConn(in), sid)
	}
	rep := s.resultPlain(func(e *enc) {
		e.str("protocolVersion", version)
		l.srv.capabilities(false)(e) // 2025-11-25 capabilities have no extensions
		e.name("serverInfo")
		e.open()
		e.str("name", s.impl.Name)
		e.str("version", s.impl.Version)
		e.strOpt("title", s.impl.Title)
		e.close()
		e.strOpt("instructions", s.opts.Instructions)
	})
	rep.id = m.id
	if transport == "http" {
		rep.header = http.Header{"Mcp-Session-Id": {sid}}
	}
	return rep
}

// resultPlain encodes a result object without the 2026-07-28 members.
func (s *Server) resultPlain(body func(e *enc)) reply {
	e := &enc{b: make([]byte, 0, 128)}
	e.open()
	if body != nil {
		body(e)
	}
	e.close()
	if e.err != nil {
		return reply{err: internalError(e.err)}
	}
	return reply{result: e.b}
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
			if !l.local.cancelCall(sid, key) && c.transport == "http" {
				l.publishCancel(ctx, "call "+sessionDigest(sid)+" "+callDigest(sid, key))
			}
		}
	}
}

// LegacyCancelChannel is the channel of [Options.Events] on which the
// instances of a fleet pass on 2025-11-25 cancellations: a
// notifications/cancelled or a session DELETE that one instance receives
// also cancels the session's calls running on the others. Payloads name
// sessions and calls by digests ("call <session> <call>", "session
// <session>"), never by session id. Delivery is best effort, as for every
// event on the bus.
const LegacyCancelChannel = "weft.legacy.cancel"

// publishCancel passes a cancellation on to the fleet, when there is one.
func (l *legacyServer) publishCancel(ctx context.Context, payload string) {
	bus := l.srv.opts.Events
	if bus == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := bus.Publish(ctx, LegacyCancelChannel, payload); err != nil {
		l.srv.log.Warn("weft: passing a cancellation on to the fleet failed", "err", err)
	}
}

// relayCancels applies the fleet's cancellations to the calls and streams of
// this instance until done.
func (l *legacyServer) relayCancels(done <-chan struct{}) {
	listenFleet(done, l.srv.opts.Events, LegacyCancelChannel, l.srv.log, func(payload string) {
		f := strings.Fields(payload)
		switch {
		case len(f) == 3 && f[0] == "call":
			l.local.cancelByDigest(f[1], f[2])
		case len(f) == 2 && f[0] == "session":
			l.local.endByDigest(f[1])
		}
	})
}

// serveAnswer routes the client's answer to a server-to-client request to
// the waiting handler, on whichever instance it runs.
func (l *legacyServer) serveAnswer(ctx context.Context, in *inbound, v exactjson.Value, sid string, store sessionstore.Store) reply {
	if sid == "" {
		return transportError(http.StatusBadRequest, "Bad Request: Mcp-Session-Id header is required")
	}
	jv, _ := v.Get("jsonrpc")
	idv, _ := v.Get("id")
	rid, isStr := idv.AsString()
	if !isString(jv, "2.0") || (v.Has("result") == v.Has("error")) {
		return transportError(http.StatusBadRequest, "Invalid JSON-RPC response")
	}
	ident, rej := l.srv.admit(ctx, in, "")
	if rej != nil {
		return *rej
	}
	c, rep := l.open(ctx, in, sid, store, ident, "")
	if c == nil {
		return rep
	}
	if isStr && sessionstore.ValidID(rid) {
		if _, err := store.Deliver(ctx, sid, rid, in.body); err != nil {
			l.srv.log.Error("weft: delivering a client answer failed", "err", err)
			return reply{err: internalError(err), status: http.StatusServiceUnavailable}
		}
	}
	// Unsolicited and late answers are dropped.
	return reply{none: true}
}

var emptyResult = []byte(`{}`)

// dispatch serves one legacy request.
func (l *legacyServer) dispatch(ctx context.Context, c *legacyConn, m message) reply {
	s := l.srv
	switch m.method {
	case "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		return l.observed(ctx, c, m, func() reply { return l.sessionMethod(ctx, c, m) })
	case "server/discover", "subscriptions/listen", "tasks/get", "tasks/update", "tasks/cancel":
		// 2026-07-28 methods (the tasks extension is not 2025-11-25 tasks).
		return reply{err: legacyMethodNotFound(m.method)}
	}
	h, ok := s.methods(m.method)
	if !ok {
		return reply{err: legacyMethodNotFound(m.method)}
	}
	name, e := targetName(m.method, m.params)
	if e != nil {
		return reply{err: e}
	}
	params := m.params
	if params.Kind() != exactjson.KindObject {
		params = exactjson.Object()
	}
	call := &legacyCall{l: l, c: c, method: m.method, id: m.id, name: name.value, h: h}
	switch m.method {
	case "tools/call", "prompts/get", "resources/read":
		return call.bridge(ctx, params)
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		if cv, ok := params.Get("cursor"); ok {
			inner, e := l.openCursor(ctx, c, m.method, cv)
			if e != nil {
				return reply{err: e}
			}
			params = params.With("cursor", exactjson.String(inner))
		}
	}
	rep := call.invoke(ctx, params, m.id)
	if rep.err != nil || rep.none {
		return rep
	}
	return l.translateResult(ctx, c, m.method, rep)
}

// observed runs a session-level method under the Observer, like every
// admitted request.
func (l *legacyServer) observed(ctx context.Context, c *legacyConn, m message, run func() reply) (rep reply) {
	obs := l.srv.opts.Observer
	if obs == nil {
		return run()
	}
	params := m.params
	if params.Kind() != exactjson.KindObject {
		params = exactjson.Object()
	}
	req := (&legacyCall{l: l, c: c, method: m.method, id: m.id}).request(params, m.id)
	obs.RequestStarted(ctx, req)
	defer func() {
		var err error
		if rep.err != nil {
			err = rep.err
		}
		obs.RequestFinished(ctx, req, rep.classify(), err)
	}()
	return run()
}

// sessionMethod serves the methods that exist only in the legacy era.
func (l *legacyServer) sessionMethod(ctx context.Context, c *legacyConn, m message) reply {
	switch m.method {
	case "logging/setLevel":
		lv, _ := m.params.Get("level")
		level, _ := lv.AsString()
		if levelIndex(LogLevel(level)) < 0 {
			return reply{err: InvalidParams("Invalid log level")}
		}
		if _, err := c.store.Update(ctx, c.sess.ID, func(s *sessionstore.Session) error { s.LogLevel = level; return nil }); err != nil {
			return l.storeError(err)
		}
	case "resources/subscribe", "resources/unsubscribe":
		return l.subscribe(ctx, c, m)
	}
	return reply{result: emptyResult} // ping
}

func legacyMethodNotFound(method string) *Error {
	return protocolError(CodeMethodNotFound, "Method not found", exactjson.Object(exactjson.Field("method", exactjson.String(method))))
}

func (l *legacyServer) storeError(err error) reply {
	if errors.Is(err, sessionstore.ErrNotFound) {
		return errNoSession()
	}
	l.srv.log.Error("weft: legacy session store failed", "err", err)
	return reply{err: internalError(err)}
}

// subscribe handles resources/subscribe and resources/unsubscribe.
func (l *legacyServer) subscribe(ctx context.Context, c *legacyConn, m message) reply {
	s := l.srv
	s.mu.RLock()
	nr := s.resources.len() + s.templates.len()
	s.mu.RUnlock()
	if nr == 0 {
		return reply{err: legacyMethodNotFound(m.method)}
	}
	uv, _ := m.params.Get("uri")
	uri, ok := uv.AsString()
	if !ok || uri == "" || len(uri) > s.limits.MaxURIBytes {
		return reply{err: InvalidParams("params.uri must be a non-empty URI string")}
	}
	subscribe := m.method == "resources/subscribe"
	_, err := c.store.Update(ctx, c.sess.ID, func(sess *sessionstore.Session) error {
		i := slices.Index(sess.Subscriptions, uri)
		switch {
		case subscribe && i < 0:
			if len(sess.Subscriptions) >= s.limits.MaxResourceSubscriptions {
				return errTooManySubscriptions
			}
			sess.Subscriptions = append(sess.Subscriptions, uri)
		case !subscribe && i >= 0:
			sess.Subscriptions = slices.Delete(sess.Subscriptions, i, i+1)
		}
		return nil
	})
	if errors.Is(err, errTooManySubscriptions) {
		return reply{err: InvalidParams("Too many resource subscriptions (at most " + strconv.Itoa(s.limits.MaxResourceSubscriptions) + ")")}
	}
	if err != nil {
		return l.storeError(err)
	}
	return reply{result: emptyResult}
}

var errTooManySubscriptions = errors.New("too many subscriptions")

// outputLimits parse the server's own results (bounded by MaxOutputBytes).
var outputLimits = exactjson.Limits{
	MaxInputBytes:  exactjson.MaxInputBytesCeiling,
	MaxDepth:       exactjson.MaxDepthCeiling,
	MaxNodes:       exactjson.MaxNodesCeiling,
	MaxStringBytes: exactjson.MaxStringBytesCeiling,
}

// translateResult turns a 2026-07-28 result into its 2025-11-25 form: no
// resultType, ttlMs, cacheScope or _meta serverInfo (serverInfo came with
// initialize), a sealed pagination cursor, and only object structured
// content and output schemas.
func (l *legacyServer) translateResult(ctx context.Context, c *legacyConn, method string, rep reply) reply {
	v, err := exactjson.Parse(rep.result, outputLimits)
	if err != nil {
		return reply{err: internalError(err)}
	}
	v = v.Without("resultType", "ttlMs", "cacheScope")
	if meta, ok := v.Get("_meta"); ok && meta.Kind() == exactjson.KindObject {
		if meta = meta.Without(metaServerInfo); meta.Len() == 0 {
			v = v.Without("_meta")
		} else {
			v = v.With("_meta", meta)
		}
	}
	if nc, ok := v.Get("nextCursor"); ok {
		inner, _ := nc.AsString()
		sealed, e := l.sealCursor(ctx, c, method, inner)
		if e != nil {
			return reply{err: e}
		}
		v = v.With("nextCursor", exactjson.String(sealed))
	}
	switch method {
	case "tools/call":
		if sc, ok := v.Get("structuredContent"); ok && sc.Kind() != exactjson.KindObject {
			v = v.Without("structuredContent")
		}
	case "tools/list":
		if tools, ok := v.Get("tools"); ok {
			out := make([]exactjson.Value, 0, tools.Len())
			for t := range tools.Values() {
				if os, ok := t.Get("outputSchema"); ok {
					if ty, _ := os.Get("type"); !isString(ty, "object") {
						t = t.Without("outputSchema")
					}
				}
				out = append(out, t)
			}
			v = v.With("tools", exactjson.Array(out...))
		}
	}
	b, err := exactjson.AppendJSON(make([]byte, 0, len(rep.result)), v)
	if err != nil {
		return reply{err: internalError(err)}
	}
	return reply{result: b}
}

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
	tok, err := l.srv.stateProtector().Seal(ctx, cursorBinding(c.in.endpoint, c.sess.ID, method), []byte(inner))
	if err != nil {
		l.srv.log.Error("weft: sealing a pagination cursor failed", "err", err)
		return "", internalError(err)
	}
	return tok, nil
}

func (l *legacyServer) openCursor(ctx context.Context, c *legacyConn, method string, cv exactjson.Value) (string, *Error) {
	tok, ok := cv.AsString()
	if !ok || len(tok) > l.srv.limits.MaxCursorBytes {
		return "", InvalidParams("Invalid cursor")
	}
	if tok == "" {
		return "", nil
	}
	plain, err := l.srv.stateProtector().Open(ctx, tok, cursorBinding(c.in.endpoint, c.sess.ID, method))
	if err != nil {
		return "", InvalidParams("Invalid cursor")
	}
	return string(plain), nil
}
