package weft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/digestcache"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/task"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ProtocolVersion is the MCP revision this package serves natively.
const ProtocolVersion = "2026-07-28"

// Implementation names a server or client.
type Implementation struct {
	Name    string
	Version string
	Title   string
}

// Options configure a [Server]. The zero value is usable: every field has a
// documented default.
type Options struct {
	// Instructions are returned by server/discover.
	Instructions string
	// Admission turns each request into an identity. Default: every request
	// is admitted as anonymous with an empty partition.
	Admission Admission
	// Observer receives start and finish callbacks for every admitted request.
	Observer Observer
	// ReadinessCheck, when set, is part of [Server.ReadinessHandler]: the
	// server is not ready while it fails (for example when a database the
	// tools need is unreachable). It is called with a deadline of
	// 2 seconds.
	ReadinessCheck func(ctx context.Context) error
	// Middleware wraps the handler of every method of both protocol eras
	// and every task step, outermost first (see [Middleware] for what they
	// see and docs/architecture.md for where they run). The middleware
	// package has request logging, timing, per-tool rate limits, a response
	// cache and panic recovery.
	Middleware []Middleware
	// Visible filters lists and lookups per request: a hidden tool, prompt or
	// resource is indistinguishable from an unknown one. Default: all visible.
	Visible func(ctx context.Context, req *Request, kind ItemKind, name string) bool
	// ToolSearch, when set, turns on progressive discovery for large
	// catalogs: tools/list shows a search tool and the tools it lists, and
	// the search tool returns the definitions of the tools that match a
	// query (see [ToolSearch]). Default: every tool listed.
	ToolSearch *ToolSearch

	// Protector seals framework-protected request state. Default: a
	// development-only ephemeral key (logged as a warning) when any operation
	// uses StateFramework. Use a *seal.Manager built from a real keyring in
	// production.
	Protector seal.Protector
	// State bounds framework-protected request state.
	State StateLimits

	// Limits bounds what a client can make large.
	Limits Limits

	// SecretPolicy refuses form elicitations whose fields ask for secrets
	// (passwords, API keys, tokens, payment cards, verification codes...).
	// The zero value is elicit.DefaultSecretPolicy(); extend it with With.
	SecretPolicy elicit.SecretPolicy
	// URLElicitation says which URLs URL-mode elicitations may carry: HTTPS
	// on server-owned origins (Development also allows loopback). The zero
	// value allows none, so URL elicitation needs this configured.
	URLElicitation elicit.URLPolicy

	// Cache is the caching hint for server/discover and the list results.
	// Default: 0 ms, private when Admission or Visible is set, else public.
	Cache *CachePolicy
	// PageSize is the number of items per list page. Default 256.
	PageSize int
	// OmitServerInfo leaves _meta serverInfo out of results.
	OmitServerInfo bool

	// AllowedOrigins lists the Origin values (scheme://host[:port]) accepted
	// besides loopback origins. AllowedHosts lists the Host header values
	// accepted besides loopback hosts. Both guard against DNS rebinding.
	AllowedOrigins []string
	AllowedHosts   []string

	// Events, when set, carries list-changed and resource-updated events
	// between the instances of a fleet, so that a subscriptions/listen stream
	// on one instance hears about changes made on another (channel
	// "weft.events"), and 2025-11-25 cancellations (channel
	// "weft.legacy.cancel"), so that a cancellation reaching
	// one instance stops the call running on another. The PostgreSQL task
	// store (task/pgstore) is such a bus (LISTEN/NOTIFY).
	Events task.Bus

	// Legacy configures serving MCP 2025-11-25 (and 2025-06-18) clients on
	// the same endpoint with the same registrations (era2025_serve.go,
	// docs/legacy.md). The zero value serves them, statelessly over HTTP;
	// Legacy.Disabled serves 2026-07-28 alone.
	Legacy LegacyOptions

	// Tasks, when set, turns on durable tasks (the tasks extension) with
	// these options. A tool declared with [TaskOptional] or [TaskRequired]
	// turns them on too, with the default TaskOptions when Tasks is nil.
	Tasks *TaskOptions

	// Logger receives the server's logs. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// KeepAlive is the interval of SSE keep-alive comments. Default 15s.
	KeepAlive time.Duration
	// BodyTimeout bounds reading one HTTP request body. Default 60s.
	BodyTimeout time.Duration
	// WriteTimeout bounds each write of a response or SSE frame, so a client
	// that stops reading is cut off. Default 30s (keep-alive comments are
	// written every KeepAlive, which must be shorter).
	WriteTimeout time.Duration

	// MaxConcurrent bounds handlers running at once (default 64); MaxQueue
	// bounds requests waiting for a slot (default 256), each for at most
	// QueueTimeout (default 5s). A full queue or a timed-out wait answers
	// HTTP 503 with Retry-After. Slots and queue are shared fairly among
	// callers, keyed by Identity.Partition, else Identity.Principal, else
	// the remote host (HTTP; stdio is one caller): see
	// MaxConcurrentPerIdentity and MaxQueuePerIdentity.
	MaxConcurrent int
	MaxQueue      int
	QueueTimeout  time.Duration
	// MaxConcurrentPerIdentity bounds the handlers one caller (fairness
	// key, above) runs at once; its further requests queue. Default: half
	// of MaxConcurrent (32 at the defaults); at
	// most MaxConcurrent, which turns the per-caller bound off.
	MaxConcurrentPerIdentity int
	// MaxQueuePerIdentity bounds the requests one caller has queued; past
	// it HTTP 503 with Retry-After. Default: a quarter of MaxQueue
	// (64 at the defaults); at most MaxQueue. Freed
	// slots go to the queued callers in turn, one request each, so one
	// caller's backlog never waits in front of another caller's first
	// request; when the whole queue is full, the caller with the longest
	// queue loses its newest place to a caller queueing less.
	MaxQueuePerIdentity int
	// RequestTimeout is each request's deadline (default 60s; listen
	// streams are exempt): the handler's context is cancelled and the client
	// gets HTTP 504.
	RequestTimeout time.Duration
	// RateLimiter, when set, is charged once per admitted request (429 with
	// Retry-After when denied), keyed per caller (see RateLimiter). Nil (the
	// default): no rate limit; each caller's share of the handlers is
	// bounded by MaxConcurrentPerIdentity instead. See NewTokenBucket.
	RateLimiter RateLimiter

	// TracerProvider, when set, traces every request with OpenTelemetry: a
	// server span continuing the W3C trace context of params._meta
	// (traceparent, tracestate, baggage; SEP-414) and child spans for
	// admission, request state and the handler, plus a span per task step.
	// Nil: no tracing. See docs/operations.md.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records request, state, keyring, task and
	// subscription metrics (docs/operations.md; package metrics exports
	// them for Prometheus). Nil: no metrics.
	MeterProvider metric.MeterProvider
}

// StateLimits bound framework-protected request state.
type StateLimits struct {
	// Lifetime is the maximum lifetime of state from its first emission.
	// Default 15 minutes.
	Lifetime time.Duration
	// Rounds is the maximum number of emitted continuations. Default 10.
	Rounds int
	// MaxEncodedBytes bounds the requestState string. Default 65,536.
	MaxEncodedBytes int
	// MaxDecodedBytes bounds the sealed plaintext. Default 49,152; must not
	// exceed MaxEncodedBytes.
	MaxDecodedBytes int
}

// Defaults for StateLimits.
const (
	defaultStateLifetime        = 15 * time.Minute
	defaultStateRounds          = 10
	defaultStateMaxEncodedBytes = 65536
	defaultStateMaxDecodedBytes = 49152

	// Ceilings of StateLimits.
	stateLifetimeCeiling        = 24 * time.Hour
	stateRoundsCeiling          = 1000
	stateMaxEncodedBytesCeiling = 1 << 20
)

func (l StateLimits) withDefaults() (StateLimits, error) {
	if l.Lifetime == 0 {
		l.Lifetime = defaultStateLifetime
	}
	if l.Rounds == 0 {
		l.Rounds = defaultStateRounds
	}
	if l.MaxEncodedBytes == 0 {
		l.MaxEncodedBytes = defaultStateMaxEncodedBytes
	}
	if l.MaxDecodedBytes == 0 {
		l.MaxDecodedBytes = defaultStateMaxDecodedBytes
	}
	switch {
	case l.Lifetime < 0:
		return l, errors.New("weft: StateLimits.Lifetime must be positive")
	case l.Rounds < 0:
		return l, errors.New("weft: StateLimits.Rounds must be positive")
	case l.MaxEncodedBytes < 0 || l.MaxDecodedBytes < 0:
		return l, errors.New("weft: StateLimits sizes must be positive")
	case l.Lifetime > stateLifetimeCeiling:
		return l, errors.New("weft: StateLimits.Lifetime exceeds stateLifetimeCeiling (24h)")
	case l.Rounds > stateRoundsCeiling:
		return l, errors.New("weft: StateLimits.Rounds exceeds stateRoundsCeiling (1000)")
	case l.MaxEncodedBytes > stateMaxEncodedBytesCeiling:
		return l, errors.New("weft: StateLimits.MaxEncodedBytes exceeds stateMaxEncodedBytesCeiling (1 MiB)")
	case l.MaxDecodedBytes > l.MaxEncodedBytes:
		return l, errors.New("weft: StateLimits.MaxDecodedBytes must not exceed MaxEncodedBytes")
	}
	return l, nil
}

// ItemKind names a catalog kind, for [Options.Visible].
type ItemKind uint8

// The catalog kinds.
const (
	KindTool ItemKind = iota + 1
	KindPrompt
	KindResource
	KindResourceTemplate
)

// Server is an MCP server: a catalog of tools, prompts and resources and the
// request pipeline that serves them over Streamable HTTP ([Server.ServeHTTP])
// and stdio ([Server.ServeStdio]). It is safe for concurrent use; the catalog
// may change while serving, and open subscriptions are told.
type Server struct {
	impl   Implementation
	opts   Options
	search *toolSearch // Options.ToolSearch resolved; nil when off
	limits Limits
	state  StateLimits
	log    *slog.Logger
	now    func() time.Time

	mu         sync.RWMutex
	tools      catalog[*toolEntry]
	prompts    catalog[*promptEntry]
	resources  catalog[*resourceEntry]
	templates  catalog[*templateEntry]
	protector  seal.Protector
	ephemeral  bool
	tasks      *taskEngine
	custom     map[string]*customMethod
	builtin    map[string]Handler // the built-in methods, wrapped in the middleware (dispatch.go)
	taskStep   Handler            // a task step, wrapped in the middleware (tasks.go)
	gate       *gate
	extensions map[string]*extension               // EnableExtension
	extState   map[any]any                         // ExtensionState, created on first use
	visFilters atomic.Pointer[[]*visibilityFilter] // AddVisibilityFilter (proxy.go)
	scratch    sync.Pool                           // *stateScratch: request-state bindings and plaintexts (state.go)
	parsers    sync.Pool                           // *exactjson.Parser: request bodies (dispatch.go)
	wires      sync.Pool                           // *[]byte: response buffers back from the HTTP transport (result.go)
	digests    *digestcache.Cache                  // params digests of sealed state

	bus      *bus
	inflight sync.WaitGroup
	closing  atomic.Bool
	draining atomic.Bool // Drain was called (health.go)
	done     chan struct{}
	doneOnce sync.Once
	tel      *telemetry // weft: tracing, metrics and request logs (telemetry_*.go)
	// adapters serve the protocol eras besides 2026-07-28 (era.go): the
	// 2025-11-25 one (era2025_*.go) unless Options.Legacy.Disabled.
	adapters []eraAdapter
	// modern: the core serves 2026-07-28 messages without offering them to
	// the adapters (newAdapters).
	modern bool
	// encModern is s.encodeModern, made once.
	encModern encoder
}

// NewServer returns a server with the given implementation info and options
// (nil means defaults), or the options' configuration errors (a limit out of
// range, an invalid tool search, ...), all of them joined.
func NewServer(impl Implementation, opts *Options) (*Server, error) {
	s := &Server{digests: digestcache.New(), impl: impl, bus: newBus(), done: make(chan struct{}), extensions: map[string]*extension{}}
	s.encModern = s.encodeModern
	if opts != nil {
		s.opts = *opts
		s.opts.Middleware = slices.Clone(opts.Middleware)
	}
	s.builtin = s.builtinHandlers()
	s.taskStep = s.wrap(s.runTaskHandler)
	if s.impl.Name == "" {
		s.impl.Name = "weft-server"
	}
	if s.impl.Version == "" {
		s.impl.Version = "0.0.0"
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.now = s.opts.Now
	if s.now == nil {
		s.now = time.Now
	}
	var cfgErr, err error
	if s.limits, err = s.opts.Limits.withDefaults(); err != nil {
		cfgErr = err
	}
	if s.state, err = s.opts.State.withDefaults(); err != nil {
		cfgErr = errors.Join(cfgErr, err)
	}
	if s.opts.PageSize <= 0 {
		s.opts.PageSize = defaultPageSize
	}
	for _, c := range []struct {
		name string
		v    int64
		max  int64
	}{
		{"MaxConcurrent", int64(s.opts.MaxConcurrent), maxConcurrentCeiling},
		{"MaxQueue", int64(s.opts.MaxQueue), maxQueueCeiling},
		{"QueueTimeout", int64(s.opts.QueueTimeout), int64(maxTimeoutCeiling)},
		{"RequestTimeout", int64(s.opts.RequestTimeout), int64(maxTimeoutCeiling)},
		{"BodyTimeout", int64(s.opts.BodyTimeout), int64(maxTimeoutCeiling)},
		{"WriteTimeout", int64(s.opts.WriteTimeout), int64(maxTimeoutCeiling)},
	} {
		if c.v < 0 || c.v > c.max {
			cfgErr = errors.Join(cfgErr, fmt.Errorf("weft: Options.%s = %d is outside 0..%d (0 means the default)", c.name, c.v, c.max))
		}
	}
	if s.opts.MaxConcurrent <= 0 {
		s.opts.MaxConcurrent = defaultMaxConcurrent
	}
	if s.opts.MaxQueue <= 0 {
		s.opts.MaxQueue = defaultMaxQueue
	}
	if s.opts.QueueTimeout <= 0 {
		s.opts.QueueTimeout = defaultQueueTimeout
	}
	for _, c := range []struct {
		name      string
		v         *int
		total     int
		totalName string
		share     int
	}{
		{"MaxConcurrentPerIdentity", &s.opts.MaxConcurrentPerIdentity, s.opts.MaxConcurrent, "MaxConcurrent", 2},
		{"MaxQueuePerIdentity", &s.opts.MaxQueuePerIdentity, s.opts.MaxQueue, "MaxQueue", 4},
	} {
		switch {
		case *c.v < 0 || *c.v > c.total:
			cfgErr = errors.Join(cfgErr, fmt.Errorf("weft: Options.%s = %d is outside 0..%s (%d; 0 means the default)", c.name, *c.v, c.totalName, c.total))
			*c.v = c.total
		case *c.v == 0:
			*c.v = max(1, c.total/c.share)
		}
	}
	if s.opts.RequestTimeout <= 0 {
		s.opts.RequestTimeout = defaultRequestTimeout
	}
	s.gate = newGate(s.opts.MaxConcurrent, s.opts.MaxConcurrentPerIdentity, s.opts.MaxQueue, s.opts.MaxQueuePerIdentity, s.opts.QueueTimeout)
	if s.opts.WriteTimeout <= 0 {
		s.opts.WriteTimeout = defaultWriteTimeout
	}
	if s.opts.BodyTimeout <= 0 {
		s.opts.BodyTimeout = defaultBodyTimeout
	}
	if s.opts.KeepAlive <= 0 {
		s.opts.KeepAlive = defaultKeepAlive
	}
	if s.opts.KeepAlive >= s.opts.WriteTimeout {
		cfgErr = errors.Join(cfgErr, errors.New("weft: Options.KeepAlive must be shorter than Options.WriteTimeout"))
	}
	s.protector = s.opts.Protector
	s.bus.log = s.log
	if s.opts.Tasks != nil {
		cfgErr = errors.Join(cfgErr, s.opts.Tasks.check())
	}
	if s.adapters, s.modern, err = newAdapters(s.env(), &s.opts); err != nil {
		cfgErr = errors.Join(cfgErr, err)
	}
	if s.opts.ToolSearch != nil {
		if s.search, err = resolveToolSearch(s.opts.ToolSearch); err == nil {
			err = s.addToolSearch()
		}
		cfgErr = errors.Join(cfgErr, err)
	}
	if cfgErr != nil {
		return nil, cfgErr
	}
	// Telemetry registers its gauges with the MeterProvider, and the task
	// runner starts: only once the server is certain to be returned.
	s.tel = newTelemetry(s) // weft: telemetry hook (telemetry_*.go)
	if s.opts.Tasks != nil {
		if err := s.startTasks(*s.opts.Tasks); err != nil {
			return nil, err // unreachable: checked above
		}
	}
	if s.opts.Events != nil {
		s.bus.remote = s.opts.Events
		go s.bus.relay(s.done)
	}
	for _, a := range s.adapters {
		go a.run(s.done)
	}
	return s, nil
}

// CatalogVersion changes whenever this instance learns that its catalog
// changed: a tool, prompt, resource or template was added or removed, a
// resource was updated or the resource list changed, here or (with
// [Options.Events]) on another instance of the fleet. Caches of list and
// read results key on it (see the middleware package's Cache).
func (s *Server) CatalogVersion() uint64 { return s.bus.version.Load() }

// Implementation returns the server's implementation info.
func (s *Server) Implementation() Implementation { return s.impl }

// stateProtector returns the protector, creating the ephemeral development
// protector on first use.
func (s *Server) stateProtector() seal.Protector {
	s.mu.RLock()
	p := s.protector
	s.mu.RUnlock()
	if p != nil {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.protector == nil {
		s.protector = seal.NewEphemeralManager(&seal.ManagerOptions{MaxTokenBytes: s.state.MaxEncodedBytes})
		s.ephemeral = true
		s.log.Warn("weft: DEVELOPMENT ONLY: framework-protected request state is sealed with an ephemeral in-memory key; " +
			"state will not survive a restart or open on another instance. Configure Options.Protector with a keyring for production.")
	}
	return s.protector
}

// extension is an advertised extension: its settings and how many
// EnableExtension calls have not been undone.
type extension struct {
	settings exactjson.Value
	refs     int
}

// EnableExtension advertises an extension identifier in server/discover with
// the given settings object (null means {}); enabling it again replaces the
// settings. It stays advertised until every returned disable function has
// been called (each counts once; further calls do nothing), so that parts
// of a program that enable the same extension independently (a gateway's
// upstreams, say) withdraw it only when the last of them is gone. A caller
// that enables an extension for the life of the server ignores disable.
func (s *Server) EnableExtension(id string, settings exactjson.Value) (disable func()) {
	if settings.Kind() == exactjson.KindNull {
		settings = exactjson.Object()
	}
	s.mu.Lock()
	e := s.extensions[id]
	if e == nil {
		e = &extension{}
		s.extensions[id] = e
	}
	e.settings = settings
	e.refs++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if e.refs--; e.refs == 0 && s.extensions[id] == e {
				delete(s.extensions, id)
			}
		})
	}
}

// ExtensionState returns the value this server holds under key, calling
// create to make it the first time (under the server's lock: create must not
// call back into the server). Packages that extend a server, such as
// skills, keep their per-server state here rather than in package
// variables; key should be a value of an unexported type of the calling
// package, as with context keys.
func (s *Server) ExtensionState(key any, create func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.extState[key]; ok {
		return v
	}
	if s.extState == nil {
		s.extState = map[any]any{}
	}
	v := create()
	s.extState[key] = v
	return v
}

// catalog is an ordered, name-indexed list.
type catalog[T any] struct {
	order []string
	items map[string]T
}

func (c *catalog[T]) put(name string, v T) (replaced bool) {
	if c.items == nil {
		c.items = map[string]T{}
	}
	if _, ok := c.items[name]; ok {
		c.items[name] = v
		return true
	}
	c.items[name] = v
	c.order = append(c.order, name)
	return false
}

func (c *catalog[T]) remove(name string) bool {
	if _, ok := c.items[name]; !ok {
		return false
	}
	delete(c.items, name)
	for i, n := range c.order {
		if n == name {
			c.order = append(c.order[:i:i], c.order[i+1:]...)
			break
		}
	}
	return true
}

func (c *catalog[T]) get(name string) (T, bool) { v, ok := c.items[name]; return v, ok }

func (c *catalog[T]) list() []T {
	out := make([]T, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, c.items[n])
	}
	return out
}

func (c *catalog[T]) len() int { return len(c.order) }

// operation is what tools, prompts and resources share in the pipeline.
type operation struct {
	kind      ItemKind
	name      string
	inputs    []inputDecl
	stateMode StateMode
	// argsFingerprint identifies a tool's input schema (see
	// schemaFingerprint); "" for prompts and resources.
	argsFingerprint string
	// listBytes caches the item's encoded size in a list page, by era
	// (0: 2026-07-28, 1: 2025-11-25); 0 until a list first measures it.
	// Entries are replaced, never changed, on re-registration.
	listBytes [numEras]atomic.Int64
}

// NotifyResourceUpdated tells subscribers that the resource at uri changed.
func (s *Server) NotifyResourceUpdated(uri string) {
	s.bus.publish(event{kind: evResourceUpdated, uri: uri})
}

// NotifyResourcesChanged tells subscribers that the resource list changed.
func (s *Server) NotifyResourcesChanged() { s.bus.publish(event{kind: evResourcesListChanged}) }

// Visible reports whether [Options.Visible] and every filter added with
// [Proxy.AddVisibilityFilter] show the item to req (always true without
// a filter). Extensions that serve their own listings, such as
// skills, ask it so that one filter hides an item everywhere.
func (s *Server) Visible(ctx context.Context, req *Request, kind ItemKind, name string) bool {
	if s.opts.Visible != nil && !s.opts.Visible(ctx, req, kind, name) {
		return false
	}
	if !s.scopesShow(req, kind, name) { // scopes.go
		return false
	}
	return s.filtersShow(ctx, req, kind, name) // proxy.go
}

// Shutdown stops accepting requests (they get 503 with Retry-After), ends
// open subscriptions gracefully (each gets its closing result), stops the
// task runner (steps still running when its ShutdownTimeout passes are cut
// off and their leases released, so another instance takes them over at
// once) and waits until in-flight requests finish or ctx is done. Behind a
// load balancer, call [Server.Drain] first and Shutdown once the balancer
// has stopped sending requests; then shut the http.Server down. Listen
// streams detached from their HTTP/1.1 requests are no longer the
// http.Server's connections: Shutdown ends them, http.Server's Shutdown
// and Close do not.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.doneOnce.Do(func() { close(s.done) })
	if err := s.bus.endDetached(ctx); err != nil {
		// Those not ended in time are closed; the task runner still stops.
		err = fmt.Errorf("weft: shutdown: ending the listen streams: %w", err)
		if terr := s.stopTasks(ctx); terr != nil {
			err = errors.Join(err, fmt.Errorf("weft: shutdown: stopping the task runner: %w", terr))
		}
		return err
	}
	if err := s.stopTasks(ctx); err != nil {
		return fmt.Errorf("weft: shutdown: stopping the task runner: %w", err)
	}
	waited := make(chan struct{})
	go func() { s.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("weft: shutdown: %w", ctx.Err())
	}
}
