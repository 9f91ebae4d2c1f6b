package weft

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/task"
)

// era is the protocol era a message is encoded for. The core asks it what
// differs between the eras instead of testing for the 2025 one; only the
// 2025-11-25 adapter (era2025_*.go) picks era2025.
type era uint8

const (
	eraModern era = iota // MCP 2026-07-28
	era2025              // MCP 2025-11-25 and 2025-06-18 sessions
	numEras
)

// resultEnvelope reports whether results carry resultType, the caching hint
// (ttlMs, cacheScope) and serverInfo in _meta: 2026-07-28 results do;
// 2025-era results carry none (serverInfo came with initialize).
func (e era) resultEnvelope() bool { return e == eraModern }

// objectsOnly reports whether structuredContent and output schemas must be
// JSON objects: in the 2025 era they must, and others are left out.
func (e era) objectsOnly() bool { return e == era2025 }

// completesElicitations reports whether the era has
// notifications/elicitation/complete (2025-11-25; a 2026-07-28 client
// learns the outcome of a URL elicitation by retrying).
func (e era) completesElicitations() bool { return e == era2025 }

// newAdapters makes the era adapters of a server: the 2025-11-25 one
// (era2025_*.go) unless Options.Legacy disables it. modern reports whether
// the core serves 2026-07-28 messages itself; when it does not, the
// adapters answer them too (with their own versions' error).
func newAdapters(env eraEnv, o *Options) (adapters []eraAdapter, modern bool, err error) {
	a, err := newLegacyServer(env, o.Legacy)
	if err != nil || a == nil {
		return nil, true, err
	}
	return []eraAdapter{a}, !a.opts.Only, nil
}

// isModern reports whether a parsed message is of 2026-07-28: its
// params._meta names a protocol version. The core serves it without
// offering it to the adapters.
func isModern(v exactjson.Value) bool {
	params, _ := v.Get("params")
	meta, _ := params.Get("_meta")
	return meta.Has(metaProtocolVersion)
}

// eraAdapter is a protocol era served beside the core's own (2026-07-28),
// as connect-go serves its protocols behind one handler: the core offers it
// every message that is not of 2026-07-28 (isModern), it decodes the
// messages of its era and encodes their replies, and it enters the core
// only to admit and dispatch them.
// The 2025-11-25 era (era2025_*.go, Options.Legacy) is the one adapter; a
// later protocol revision is another.
type eraAdapter interface {
	// serveMessage serves a parsed message of its era; it reports false
	// for a message it leaves to the core. It sees a 2026-07-28 message
	// only when the core does not serve that era (newAdapters).
	serveMessage(ctx context.Context, in *inbound, v exactjson.Value, rt *requestTelemetry) (reply, bool)
	// serveHTTP serves an HTTP request other than a POST of a message (an
	// event stream, the end of a session); it reports false for one it
	// leaves to the core.
	serveHTTP(w http.ResponseWriter, r *http.Request) bool
	// stdioEvents sends the events of a stdio connection's session until
	// ctx ends; the transport starts it once the session is set up.
	stdioEvents(ctx context.Context, conn *stdioConn)
	// endStdio releases what a stdio connection that ended held.
	endStdio(conn *stdioConn)
	// run does the adapter's background work until done is closed.
	run(done <-chan struct{})
	// ready reports a store of the adapter that cannot be read, naming it.
	ready(ctx context.Context) (string, error)
}

// eraCore is the core as an era adapter sees it: the seam between them. An
// adapter enters the core at two points, admit and dispatch, and holds this
// interface, never the *Server. What else it uses of the server (its
// logger, clock, limits, event bus, protector and description) is handed
// to it once, in eraEnv, when the server is made.
type eraCore interface {
	// admit runs Options.Admission (inside its span) for a message of
	// method with the given target ("" for none); a non-nil reply is the
	// refusal, to be answered as it is.
	admit(ctx context.Context, in *inbound, method, target string) (Identity, *reply)
	// dispatch runs an admitted call through the stages every era shares
	// (the Observer, the rate limiter, the concurrency gate and deadline,
	// the handler span, panic recovery, the middleware and the handler),
	// and encodes its result with the call's encoder.
	dispatch(ctx context.Context, c eraCall) reply
}

// eraCall is an admitted request of an era, as the adapter hands it to the
// core: by value, so that handing it over allocates nothing.
type eraCall struct {
	in                    *inbound
	era                   era
	method, version, name string
	id                    ID
	params, caps          exactjson.Value
	clientInfo            exactjson.Value // Request.ClientInfo
	ident                 Identity
	logLevel              int // index into logLevels; -1 = no logging requested
	// conn is the adapter's own state of the request (the 2025 era's
	// connection and session), for its handlers and encoder (Request.conn).
	conn any
	// charged marks a later round of a call the adapter runs in rounds: the
	// client's request was charged to the rate limiter once, in the first.
	charged bool
	// handler is the handler of method: the era's own (wrapped in the
	// middleware with eraEnv.wrap) or the core's (eraEnv.handler).
	handler Handler
	encode  encoder           // the era's encoding of a typed result
	rt      *requestTelemetry // the telemetry of the request's first round; nil for later rounds
}

// eraEnv is what the core hands an era adapter when the server is made.
type eraEnv struct {
	core   eraCore
	log    *slog.Logger
	now    func() time.Time
	limits *Limits
	// done is closed when the server shuts down; closing reports that it
	// is shutting down.
	done    <-chan struct{}
	closing func() bool
	// bus carries the server's own events (list changes, resource updates,
	// log messages) to the era's event streams; events is Options.Events,
	// the fleet's bus (nil on one instance).
	bus    *bus
	events task.Bus
	// keepAlive and writeTimeout are the transports' Options.KeepAlive and
	// Options.WriteTimeout.
	keepAlive, writeTimeout time.Duration
	// wrap applies Options.Middleware to one of the era's own handlers.
	wrap func(Handler) Handler
	// protector seals what the era keeps at the client (Options.Protector,
	// or the development protector made on first use).
	protector func() seal.Protector
	// handler returns the core's middleware-wrapped handler of method, and
	// whether the core serves it now (a catalog method only while its
	// catalog has items).
	handler func(method string) (Handler, bool)
	// targetOf reads the target of a request (tool or prompt name, resource
	// URI, task id, a custom method's NameParam) from its params, for
	// admission.
	targetOf func(method string, params exactjson.Value) (target, *Error)
	// encode encodes a result object for an era (Limits.MaxOutputBytes).
	encode func(res Result, to era) ([]byte, error)
	// describe is the server's implementation, instructions and
	// capabilities, without the extensions 2026-07-28 added.
	describe func() (Implementation, string, exactjson.Value)
}

// env is the eraEnv of the server's adapters.
func (s *Server) env() eraEnv {
	return eraEnv{
		core:         seam{s},
		log:          s.log,
		now:          s.now,
		limits:       &s.limits,
		done:         s.done,
		closing:      s.closing.Load,
		bus:          s.bus,
		events:       s.opts.Events,
		keepAlive:    s.opts.KeepAlive,
		writeTimeout: s.opts.WriteTimeout,
		wrap:         s.wrap,
		protector:    s.stateProtector,
		targetOf:     s.targetName,
		encode:       s.encodeResult,
		handler:      s.handler,
		describe: func() (Implementation, string, exactjson.Value) {
			return s.impl, s.opts.Instructions, s.capabilities(false)
		},
	}
}

// seam is the core's side of eraCore.
type seam struct{ s *Server }

func (c seam) admit(ctx context.Context, in *inbound, method, target string) (Identity, *reply) {
	return c.s.admitObserved(ctx, in, method, target)
}

func (c seam) dispatch(ctx context.Context, ec eraCall) reply {
	s := c.s
	req := s.newRequest(ec.in, ec.method, ec.id, ec.version, ec.name, ec.params, ec.caps, ec.ident)
	req.ClientInfo = ec.clientInfo
	req.logLevel = ec.logLevel
	req.era = ec.era
	req.conn = ec.conn
	req.charged = ec.charged
	if ec.rt != nil {
		ec.rt.admitted(req)
	}
	return s.dispatch(ctx, req, ec.handler, ec.encode)
}

// adaptersServeHTTP offers an HTTP request other than a POST of a message
// to the era adapters; it reports whether one served it.
func (s *Server) adaptersServeHTTP(w http.ResponseWriter, r *http.Request) bool {
	for _, a := range s.adapters {
		if a.serveHTTP(w, r) {
			return true
		}
	}
	return false
}
