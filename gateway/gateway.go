package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/client/oauth"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway/usertoken"
	"github.com/weftmcp/weft/internal/mirror"
	"github.com/weftmcp/weft/quota"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/skills"
	"go.opentelemetry.io/otel/metric"
)

// Options configure a [Gateway]. The zero value is usable.
type Options struct {
	// Store holds the mailboxes of parked calls (see [InputConfig]). A
	// fleet shares one (sessionstore/pgstore, with its own table prefix);
	// nil means an in-process store bounded by the configuration's Input.
	Store sessionstore.Store
	// HTTPClient carries requests to URL upstreams (default: a client of
	// its own whose transport keeps up to 256 idle connections per upstream,
	// where http.DefaultTransport keeps 2: with more concurrent calls than
	// idle connections, every call beyond them would open a connection).
	HTTPClient *http.Client
	// Logger receives upstream events (default: discard).
	Logger *slog.Logger
	// ListAuthorization is the Authorization header the lists of
	// "passthrough" upstreams (every mounted server) are read with: an
	// identity that sees every item the server may show (default: none, so
	// what an anonymous caller sees). A mount then shows each caller, in
	// the lists, only the items the child lists for the caller's own
	// Authorization header.
	ListAuthorization string
	// ResourcePrefix is, for [Mount] only, the mounted server's
	// UpstreamConfig.ResourcePrefix (nil: derived from the name prefix).
	ResourcePrefix *string

	// URLElicitation is the URL policy of the upstreams without their own
	// UpstreamConfig.URLElicitation (an https URL upstream's own origin is
	// added). nil: the server's weft.Options.URLElicitation decides, but
	// for an https URL upstream's own origin. See docs/gateway.md.
	URLElicitation *elicit.URLPolicy

	// UserAuthorization serves the upstreams with per-user authorization
	// (oauth.perUser); required when there are any. See peruser.go and
	// docs/gateway.md.
	UserAuthorization *UserAuthorization

	// Quotas counts the calls against Config.Limits (default: in memory,
	// one instance); a fleet shares one: quota.OpenPostgres.
	Quotas quota.Store
	// Audit receives the audit log (Config.Audit), one JSON object per
	// line; nil: none. `weft gateway` opens Config.Audit.File.
	Audit io.Writer
	// MeterProvider, when set, counts and times the calls of the
	// upstreams' items by upstream, method and outcome
	// (weft.gateway.calls, weft.gateway.call.duration); pass the server's.
	MeterProvider metric.MeterProvider

	callerLists bool // Mount: filter the lists per caller (visible.go)
}

// Gateway fronts the configured upstream MCP servers on a [weft.Server]:
// their tools, prompts, resources and resource templates are registered on
// the server (tools and prompts renamed by the rules of each upstream,
// resource and template URIs under its resource prefix), with the MCP Apps
// and skills of 2026-07-28 upstreams, and every operation is forwarded to
// the upstream that owns it. A 2025-era
// upstream's input requests become input_required results for 2026-07-28
// clients (see [InputConfig]); 2025-era clients of the server are served by
// its own legacy bridge.
type Gateway struct {
	srv   *weft.Server
	log   *slog.Logger
	hc    *http.Client
	ownHC bool // hc is defaultHTTPClient's: its idle connections close with the gateway
	park  *parker
	// urlDefault is Options.URLElicitation.
	urlDefault *elicit.URLPolicy
	ups        []*upstream
	// pol applies Config.Policy, Limits and Audit (policy.go).
	pol      *policy
	unpolicy func() // removes the visibility filter of pol; nil when none
	// userAuth is Options.UserAuthorization with defaults (nil: no
	// upstream has per-user authorization).
	userAuth *UserAuthorization
	// signIn signs browsers in at the gateway's authorization server
	// (userAuth.SignIn; nil without).
	signIn *oauth.Authorizer

	mu     sync.Mutex
	owners map[string]*upstream // exposed tool/prompt name or resource URI -> owner (kind-prefixed)
	wg     sync.WaitGroup
	stop   chan struct{}
	closed bool
}

// New connects to every upstream of cfg, registers what they offer on srv
// and keeps it current (an upstream's list_changed notifications, a
// reconnection). It fails when an upstream cannot be reached; nothing is
// left running then.
func New(ctx context.Context, srv *weft.Server, cfg *Config, o *Options) (*Gateway, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := cfg.Input.withDefaults()
	store := opts.Store
	if store == nil {
		store = sessionstore.NewMemory(&sessionstore.MemoryOptions{Limits: sessionstore.Limits{
			MaxSessions: in.MaxParked, MaxPerIdentity: in.MaxParkedPerPartition}})

	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	g := &Gateway{srv: srv, log: log, hc: hc, ownHC: opts.HTTPClient == nil, park: newParker(store, in, log), urlDefault: opts.URLElicitation,
		owners: map[string]*upstream{}, stop: make(chan struct{})}
	g.pol = newPolicy(cfg, &opts, log)
	if g.pol.callerRules && srv != nil {
		g.unpolicy = srv.Proxy().AddVisibilityFilter(g.policyShow)
	}
	var vault *usertoken.Vault
	for i := range cfg.Upstreams {
		u := &upstream{g: g, cfg: cfg.Upstreams[i], kick: make(chan struct{}, 1), reg: newRegistry()}
		var err error
		if u.hc, err = upstreamHTTPClient(&u.cfg, hc); err != nil { // upstream_oauth.go
			return nil, err
		}
		if u.cfg.OAuth != nil && u.cfg.OAuth.PerUser != nil { // peruser.go
			if g.userAuth == nil {
				if g.userAuth, err = opts.UserAuthorization.withDefaults(); err != nil {
					return nil, fmt.Errorf("gateway: upstream %q: %w", u.cfg.Name, err)
				}
				vault = usertoken.NewVault(g.userAuth.Store, g.userAuth.Protector)
				if g.userAuth.SignIn != nil {
					if srv == nil {
						return nil, fmt.Errorf("gateway: upstream %q: UserAuthorization.SignIn admits the browser's token with the server's Admission: New needs the server", u.cfg.Name)
					}
					g.signIn = newSignIn(g, g.userAuth)
				}
			}
			u.users = newUserAuthz(u, g.userAuth, vault)
		}
		u.uris = u.cfg.uris()
		u.pool = newProcPool(u)
		u.relisten = make(chan struct{}, 1)
		if u.cfg.Authorization == "passthrough" {
			u.listAuth = opts.ListAuthorization
		}
		if opts.callerLists {
			u.callers = &callerLists{u: u, now: time.Now, views: map[viewKey]*callerView{}}
		}
		g.ups = append(g.ups, u)
	}
	for _, u := range g.ups {
		if _, err := u.get(ctx); err != nil {
			g.Close()
			return nil, err
		}
		if err := u.refresh(ctx); err != nil {
			g.Close()
			return nil, err
		}
		if u.callers != nil && srv != nil {
			u.unfilter = srv.Proxy().AddVisibilityFilter(u.callers.show)
		}
		if c, err := u.get(ctx); err == nil {
			if c.modern() {
				u.awaitListen(ctx, c)
			}
			// A per-user upstream's tasks belong to its users: following
			// them needs each user's connection, which the task relay does
			// not have, so its calls run in line (peruser.go).
			if (offersTasks(c) || offersLegacyTasks(c)) && u.users == nil {
				if err := u.registerTasks(); err != nil {
					g.Close()
					return nil, err
				}
			}
			u.registerApps(c)
			if err := u.registerSkills(c); err != nil {
				g.Close()
				return nil, err
			}
		}
	}
	for _, u := range g.ups {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			u.refreshLoop(g.stop)
		}()
	}
	return g, nil
}

// maxIdleConnsPerUpstream bounds the idle connections the default HTTP
// client keeps to one upstream.
const maxIdleConnsPerUpstream = 256

// defaultHTTPClient is the HTTP client of a gateway without
// Options.HTTPClient. Its responses may stream (SSE): no overall timeout.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0 // no overall bound; per host below
	tr.MaxIdleConnsPerHost = maxIdleConnsPerUpstream
	return &http.Client{Transport: tr}
}

// Close stops the refreshers, cancels the parked calls of this instance
// (upstream too) and shuts the upstreams down (stdio commands are stopped).
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.stop)
	g.mu.Unlock()
	g.park.close()
	var errs []error
	for _, u := range g.ups {
		errs = append(errs, u.closeConn())
	}
	g.wg.Wait()
	for _, u := range g.ups {
		u.unregister()
	}
	if g.unpolicy != nil {
		g.unpolicy()
	}
	if g.ownHC {
		g.hc.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

// unregister removes what the upstream registered on the server.
func (u *upstream) unregister() {
	u.regMu.Lock()
	defer u.regMu.Unlock()
	srv := u.g.srv
	if srv == nil {
		return
	}
	for name := range u.reg.tools {
		srv.RemoveTool(name)
	}
	for name := range u.reg.prompts {
		srv.RemovePrompt(name)
	}
	for uri := range u.reg.resources {
		srv.RemoveResource(uri)
	}
	for tpl := range u.reg.templates {
		srv.RemoveResourceTemplate(tpl)
	}
	u.reg = newRegistry()
	if u.unfilter != nil {
		u.unfilter()
		u.unfilter = nil
	}
	if u.unapps != nil {
		u.unapps()
		u.unapps = nil
	}
	if u.unskills != nil {
		u.unskills()
		u.unskills = nil
	}
	u.skillsMu.Lock()
	u.skills = nil
	u.skillsMu.Unlock()
	if u.unrelay != nil {
		u.tasksOn.Store(false)
		u.unrelay()
		u.unrelay = nil
	}
}

func (g *Gateway) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Parked returns the number of upstream calls parked on this instance.
func (g *Gateway) Parked() int { return int(g.park.active.Load()) }

// Refresh lists every upstream again and updates the registrations.
func (g *Gateway) Refresh(ctx context.Context) error {
	var errs []error
	for _, u := range g.ups {
		errs = append(errs, u.refresh(ctx))
	}
	return errors.Join(errs...)
}

// claim records owner as the owner of key, reporting false when another
// upstream owns it.
func (g *Gateway) claim(key string, u *upstream) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o, ok := g.owners[key]; ok && o != u {
		return false
	}
	g.owners[key] = u
	return true
}

func (g *Gateway) release(key string, u *upstream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owners[key] == u {
		delete(g.owners, key)
	}
}

// upstream is one configured upstream and what it registered.
type upstream struct {
	g    *Gateway
	cfg  UpstreamConfig
	uris uriMap // the upstream's resource URIs <-> the exposed ones
	kick chan struct{}

	relisten chan struct{} // the registered resources changed: reopen the listen stream

	// hc is g.hc, or g.hc authorizing as the gateway (cfg.OAuth): the one
	// source of the HTTP client of the upstream's connections (dial).
	hc *http.Client

	mu        sync.Mutex // guards c; held while connecting
	c         *conn
	connected bool // a connection was made before

	regMu   sync.Mutex
	reg     *registry
	unrelay func()      // removes the task relay (gateway/tasks.go); nil when none
	tasksOn atomic.Bool // unrelay is set
	// legacy are the tasks of a 2025-era upstream this instance drives
	// (tasks_legacy.go).
	legacy legacyTasks
	// listAuth is Options.ListAuthorization for a passthrough upstream;
	// callers and unfilter the per-caller lists of a mount (visible.go).
	listAuth string
	callers  *callerLists
	unfilter func()
	unapps   func() // removes the filter of ui:// items and withdraws the extension (apps.go)
	// skills are the upstream's skill entries, URIs mapped (guarded by
	// skillsMu, so that serving them never waits for a refresh); unskills
	// removes its skills source (skills.go).
	skillsMu sync.Mutex
	skills   []exactjson.Value
	unskills func()

	// pool holds the processes of a 2025-era command upstream (pool.go).
	pool *procPool
	// users is the per-user authorization of the upstream (peruser.go);
	// nil when it has none.
	users *userAuthz
	// parked counts the calls of the upstream parked on this instance, in
	// all and by caller (parkedMu; see admitParked).
	parkedMu sync.Mutex
	parked   int
	parkedBy map[string]int
}

type registry struct {
	tools, prompts, resources, templates map[string]string // exposed name -> definition fingerprint
}

func newRegistry() *registry {
	return &registry{tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{}}
}

type authKey struct{}

// headerKey carries the extra request headers of one call (Mcp-Param-*).
type headerKey struct{}

func withHeader(ctx context.Context, h http.Header) context.Context {
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, headerKey{}, h)
}

// headers adds the configured headers and, for passthrough, the
// downstream Authorization header carried by ctx.
func (u *upstream) headers(ctx context.Context, h http.Header) error {
	for _, k := range sortedKeys(u.cfg.Headers) {
		h.Set(k, expand(u.cfg.Headers[k]))
	}
	if u.cfg.Authorization == "passthrough" {
		if a, _ := ctx.Value(authKey{}).(string); a != "" {
			h.Set("Authorization", a)
		}
	}
	return nil
}

// get returns the live connection, connecting (again) when needed.
func (u *upstream) get(ctx context.Context) (*conn, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.g.isClosed() {
		return nil, fmt.Errorf("gateway: upstream %q: the gateway is closed", u.cfg.Name)
	}
	if u.c != nil && u.c.retired.Load() {
		u.c = nil // the process pool closes it (pool.go)
	}
	if u.c != nil {
		select {
		case <-u.c.done():
			u.g.log.Warn("gateway: upstream connection lost; reconnecting", "upstream", u.cfg.Name, "err", u.c.err())
			_ = u.c.close()
			u.c = nil
		default:
			return u.c, nil
		}
	}
	c, err := dial(context.WithoutCancel(ctx), &u.cfg, u.hc, u.headers, u.unrouted, u.outsideCall, u.g.log)
	if err != nil {
		return nil, err
	}
	u.g.log.Info("gateway: upstream connected", "upstream", u.cfg.Name, "protocol", c.version)
	if u.connected {
		u.kickRefresh() // a reconnection: the lists may have changed
	}
	u.c, u.connected = c, true
	if c.modern() {
		u.g.wg.Add(1)
		go func() {
			defer u.g.wg.Done()
			c.listen(u.unrouted, u.resourceURIs, u.relisten, u.g.log.Info)
		}()
	} else if c.ct != nil {
		u.g.wg.Add(1)
		go func() {
			defer u.g.wg.Done()
			u.sessionStream(c)
		}()
	}
	return c, nil
}

// sessionStream holds the GET stream of a 2025 HTTP session open, on which
// its upstream sends what belongs to no call (list changes, resource
// updates, requests outside a call), until the connection ends. A server
// without one (405) is left alone; one that fails to open it is asked
// again after a pause (doubling up to a minute); the client reopens a
// broken one. Each (re)opening refreshes the lists: what changed while
// none was open was sent to nobody. An upstream that no longer knows the
// session ends the connection: the next call, or the refresh this asks
// for, opens another.
func (u *upstream) sessionStream(c *conn) {
	lost := func(err error) {
		u.g.log.Warn("gateway: the upstream no longer knows the session of its GET stream (it restarted or expired it); opening another",
			"upstream", u.cfg.Name, "answer", err)
		c.expire()
		u.kickRefresh()
	}
	pause := time.Second
	for {
		ended := make(chan struct{})
		err := c.ct.OpenSessionStream(client.SessionStreamHandlers{
			Notify:  func(n client.Notification) { u.unrouted(n.Method, n.Params) },
			Request: c.serverRequests(nil),
			Opened:  u.kickRefresh,
			Ended: func(err error) {
				if errors.Is(err, client.ErrSessionExpired) {
					lost(err)
				}
				close(ended)
			},
		})
		var he *client.HTTPError
		switch {
		case err == nil:
			<-ended // c.close stops the stream
			return
		case errors.Is(err, client.ErrSessionExpired):
			lost(err)
			return
		case errors.As(err, &he) && he.StatusCode == http.StatusMethodNotAllowed:
			u.g.log.Debug("gateway: the upstream's session has no GET stream (HTTP 405); its changes are seen on calls' streams only", "upstream", u.cfg.Name)
			return
		}
		select {
		case <-c.done():
			return
		default:
		}
		u.g.log.Info("gateway: cannot open the GET stream of the upstream's session; trying again", "upstream", u.cfg.Name, "err", err, "in", pause)
		select {
		case <-c.done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Minute)
	}
}

func (u *upstream) closeConn() error {
	u.mu.Lock()
	c := u.c
	u.c = nil
	u.mu.Unlock()
	errs := u.pool.close()
	if u.users != nil {
		errs = append(errs, u.users.close()...)
	}
	if c != nil {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// unrouted receives the notifications of no call: list changes and
// resource updates (relayed to the server's subscribers).
func (u *upstream) unrouted(method string, params exactjson.Value) {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed",
		"notifications/subscriptions/acknowledged":
		u.kickRefresh()
	case "notifications/resources/updated":
		if uri, ok := u.uris.out(str(params, "uri")); ok && uri != "" && u.g.srv != nil {
			u.g.srv.NotifyResourceUpdated(uri)
		}
	case "notifications/elicitation/complete":
		// See invoke: 2026-07-28 clients learn the outcome by retrying.
		u.g.log.Debug("gateway: an upstream's URL elicitation completed; 2026-07-28 clients learn it by retrying", "upstream", u.cfg.Name, "elicitationId", str(params, "elicitationId"))
	default:
		u.g.log.Debug("gateway: an upstream notification of no call is not relayed", "upstream", u.cfg.Name, "method", method)
	}
}

// awaitListen waits, bounded by the call timeout, until c's listen stream
// is acknowledged for the resources the server now offers, so that what
// the upstream announces once a client can see them reaches it. A stream
// that cannot be opened is logged; the gateway serves without it.
func (u *upstream) awaitListen(ctx context.Context, c *conn) {
	want := u.resourceURIs()
	want = want[:min(len(want), maxResourceSubscriptions)]
	ctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
	defer cancel()
	if err := c.listening.wait(ctx, want); err != nil {
		u.g.log.Warn("gateway: the upstream's subscriptions/listen stream is not acknowledged; its list changes and resource updates are not relayed until it is",
			"upstream", u.cfg.Name, "err", err)
	}
}

// resourceURIs returns the upstream's URIs of its registered resources.
func (u *upstream) resourceURIs() []string {
	u.regMu.Lock()
	defer u.regMu.Unlock()
	out := make([]string, 0, len(u.reg.resources))
	for uri := range u.reg.resources {
		if up, ok := u.uris.in(uri); ok {
			out = append(out, up)
		}
	}
	slices.Sort(out)
	return out
}

func (u *upstream) kickRefresh() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

func (u *upstream) refreshLoop(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-u.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), u.cfg.callTimeout())
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := u.refresh(ctx); err != nil {
			select {
			case <-stop: // the gateway is closing: the upstream went with it
			default:
				u.g.log.Warn("gateway: cannot refresh an upstream's lists", "upstream", u.cfg.Name, "err", err)
			}
		}
		cancel()
	}
}

// do sends a request on c; when the upstream forgot the 2025 session (HTTP
// 404: it restarted, or expired the session), the request was not run, so
// it is sent once more on a new session.
func (u *upstream) do(ctx context.Context, c *conn, method string, params exactjson.Value, o callOpts) (exactjson.Value, error) {
	res, err := c.do(ctx, method, params, o)
	if !errors.Is(err, errSessionExpired) {
		return res, err
	}
	// Once per request: the request was not run, and a server forgetting
	// the new session at once too is failing, not restarting.
	u.g.log.Warn("gateway: the upstream no longer knows the session (it restarted or expired it); opening another and sending the request once more",
		"upstream", u.cfg.Name, "method", method, "answer", err)
	c2, gerr := u.get(ctx)
	if gerr != nil {
		return exactjson.Value{}, gerr
	}
	return c2.do(ctx, method, params, o)
}

// listAll pages through a list method of the upstream.
// caps are the client capabilities sent to a 2026-07-28 upstream (null:
// allInputCapabilities).
func (u *upstream) listAll(ctx context.Context, c *conn, method, member string, caps exactjson.Value) ([]exactjson.Value, error) {
	var out []exactjson.Value
	params := exactjson.Object()
	seen := map[string]bool{}
	for {
		res, err := u.do(ctx, c, method, params, callOpts{caps: caps})
		var re *client.RPCError
		if len(seen) == 0 && errors.As(err, &re) && re.Code == client.CodeMethodNotFound {
			// A capability declared without every list of it (servers of
			// older SDKs declare resources without templates/list): an
			// empty list, as the server has none to show.
			u.g.log.Debug("gateway: upstream does not implement a list method of a capability it declares; taken as empty",
				"upstream", u.cfg.Name, "method", method)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("gateway: upstream %q: %s: %w", u.cfg.Name, method, err)
		}
		items, _ := res.Get(member)
		out = append(out, items.Elements()...)
		cur := str(res, "nextCursor")
		if cur == "" {
			return out, nil
		}
		if seen[cur] || len(seen) > 1000 {
			return nil, fmt.Errorf("gateway: upstream %q: %s: pagination does not end", u.cfg.Name, method)
		}
		seen[cur] = true
		params = exactjson.Object(exactjson.Field("cursor", exactjson.String(cur)))
	}
}

func fingerprint(v exactjson.Value, extra string) string {
	b, _ := exactjson.Encode(v, 0)
	h := sha256.Sum256(append(b, extra...))
	return hex.EncodeToString(h[:8])
}

// refresh lists the upstream's tools, prompts, resources and templates and
// brings the registrations on the server up to date.
func (u *upstream) refresh(ctx context.Context) error {
	if u.listAuth != "" {
		ctx = context.WithValue(ctx, authKey{}, u.listAuth)
	}
	if u.callers != nil {
		defer u.callers.invalidate()
	}
	c, err := u.get(ctx)
	if err != nil {
		return err
	}
	caps := c.caps
	lcaps := listCaps(c, true)
	u.regMu.Lock()
	defer u.regMu.Unlock()
	var errs []error
	if caps.Has("tools") {
		items, err := u.listAll(ctx, c, "tools/list", "tools", lcaps)
		if err != nil {
			errs = append(errs, err)
		} else {
			u.syncTools(items, c)
		}
	}
	if caps.Has("prompts") {
		items, err := u.listAll(ctx, c, "prompts/list", "prompts", lcaps)
		if err != nil {
			errs = append(errs, err)
		} else {
			u.syncPrompts(items, c)
		}
	}
	if caps.Has("resources") {
		items, err := u.listAll(ctx, c, "resources/list", "resources", lcaps)
		if err != nil {
			errs = append(errs, err)
		} else {
			u.syncResources(items, c)
		}
		tmpl, err := u.listAll(ctx, c, "resources/templates/list", "resourceTemplates", lcaps)
		if err != nil {
			errs = append(errs, err)
		} else {
			u.syncTemplates(tmpl, c)
		}
	}
	if ok, _ := offersSkills(c); ok {
		items, err := u.listAll(ctx, c, skills.MethodList, "skills", lcaps)
		if err != nil {
			errs = append(errs, err)
		} else {
			u.syncSkills(items)
		}
	}
	return errors.Join(errs...)
}

func (u *upstream) syncTools(items []exactjson.Value, c *conn) {
	srv := u.g.srv
	keep := map[string]bool{}
	for _, it := range items {
		upName := str(it, "name")
		name, ok := u.cfg.exposedName(upName)
		if !ok {
			continue
		}
		ts := ""
		if !c.modern() {
			ts = taskSupport(it)
			if ts == "required" && !offersLegacyTasks(c) {
				// Every call of such a tool would fail ("requires task
				// augmentation"): the gateway runs tasks of upstreams
				// advertising capabilities.tasks.requests.tools.call.
				u.g.log.Warn("gateway: a tool of a 2025-era upstream that requires task augmentation is not exposed: the upstream does not advertise tasks for tools/call",
					"upstream", u.cfg.Name, "tool", upName)
				continue
			}
		}
		if !u.g.claim("tool:"+name, u) {
			u.g.log.Warn("gateway: tool name taken by another upstream; not exposed", "upstream", u.cfg.Name, "tool", upName, "name", name)
			continue
		}
		keep[name] = true
		fp := fingerprint(it, c.version)
		if u.reg.tools[name] == fp {
			continue
		}
		t, err := toolDef(it, name, u.uris)
		if err == nil {
			t.Inputs = proxyInputs(u.cfg.Inputs)
			t.StateMode = modernStateMode
			if !c.modern() {
				t.StateMode = legacyStateMode
			}
			var mirrors []mirror.Mirror
			if in, ok := it.Get("inputSchema"); ok {
				mirrors, err = mirror.Find(in)
			}
			if err == nil {
				t.Scopes = u.g.pol.scopes(u.cfg.Name, name)
				err = srv.AddTool(t, u.guardTool(name, u.toolHandler(upName, mirrors, ts)))
			}
		}
		if err != nil {
			u.g.log.Warn("gateway: an upstream tool cannot be exposed", "upstream", u.cfg.Name, "tool", upName, "err", err)
			delete(keep, name)
			if _, had := u.reg.tools[name]; had {
				srv.RemoveTool(name)
				delete(u.reg.tools, name)
			}
			u.g.release("tool:"+name, u)
			continue
		}
		u.reg.tools[name] = fp
	}
	u.prune(u.reg.tools, keep, "tool", srv.RemoveTool)
}

// prune drops the registrations of reg that keep lacks: from the server
// (remove), from the registry and from the gateway's name claims.
func (u *upstream) prune(reg map[string]string, keep map[string]bool, kind string, remove func(string) bool) {
	for name := range reg {
		if !keep[name] {
			remove(name)
			delete(reg, name)
			u.g.release(kind+":"+name, u)
		}
	}
}

func (u *upstream) syncPrompts(items []exactjson.Value, c *conn) {
	srv := u.g.srv
	keep := map[string]bool{}
	for _, it := range items {
		upName := str(it, "name")
		name, ok := u.cfg.exposedName(upName)
		if !ok || !u.g.claim("prompt:"+name, u) {
			continue
		}
		keep[name] = true
		fp := fingerprint(it, c.version)
		if u.reg.prompts[name] == fp {
			continue
		}
		p := promptDef(it, name)
		p.Inputs = proxyInputs(u.cfg.Inputs)
		p.StateMode = modernStateMode
		if !c.modern() {
			p.StateMode = legacyStateMode
		}
		if c.caps.Has("completions") {
			p.Complete = u.completer(exactjson.Object(exactjson.Field("type", exactjson.String("ref/prompt")), exactjson.Field("name", exactjson.String(upName))))
		}
		p.Scopes = u.g.pol.scopes(u.cfg.Name, name)
		if err := srv.AddPrompt(p, u.guardPrompt(name, u.promptHandler(upName))); err != nil {
			u.g.log.Warn("gateway: an upstream prompt cannot be exposed", "upstream", u.cfg.Name, "prompt", upName, "err", err)
			delete(keep, name)
			u.g.release("prompt:"+name, u)
			continue
		}
		u.reg.prompts[name] = fp
	}
	u.prune(u.reg.prompts, keep, "prompt", srv.RemovePrompt)
}

func (u *upstream) syncResources(items []exactjson.Value, c *conn) {
	srv := u.g.srv
	keep := map[string]bool{}
	before := len(u.reg.resources)
	added := false
	defer func() {
		if added || len(u.reg.resources) != before {
			select {
			case u.relisten <- struct{}{}:
			default:
			}
		}
		if !c.modern() {
			u.subscribeLegacy(c)
		}
	}()
	for _, it := range items {
		upURI := str(it, "uri")
		uri, ok := u.exposeURI(upURI, "resource", "uri")
		if !ok {
			continue
		}
		keep[uri] = true
		fp := fingerprint(it, c.version)
		if u.reg.resources[uri] == fp {
			continue
		}
		r := weft.Resource{ResourceInfo: resourceInfo(it), Inputs: proxyInputs(u.cfg.Inputs), StateMode: modernStateMode}
		r.URI = uri
		if !c.modern() {
			r.StateMode = legacyStateMode
		}
		r.Scopes = u.g.pol.scopes(u.cfg.Name, uri)
		if err := srv.AddResource(r, u.guardRead(uri, u.readHandler())); err != nil {
			u.g.log.Warn("gateway: an upstream resource cannot be exposed", "upstream", u.cfg.Name, "uri", uri, "err", err)
			delete(keep, uri)
			u.g.release("resource:"+uri, u)
			continue
		}
		if _, had := u.reg.resources[uri]; !had {
			added = true
		}
		u.reg.resources[uri] = fp
	}
	u.prune(u.reg.resources, keep, "resource", srv.RemoveResource)
}

// subscribeLegacy sends resources/subscribe for the registered resources
// a 2025 session is not yet subscribed to, when the upstream offers
// subscriptions (its updates then arrive as notifications). Failures are
// logged.
func (u *upstream) subscribeLegacy(c *conn) {
	res, _ := c.caps.Get("resources")
	if s, _ := res.Get("subscribe"); !isTrue(s) {
		return
	}
	for exposed := range u.reg.resources {
		uri, ok := u.uris.in(exposed)
		if !ok || c.subscribed[uri] {
			continue
		}
		if len(c.subscribed) >= maxResourceSubscriptions {
			u.g.log.Warn("gateway: too many upstream resources to subscribe to; updates of the others are not relayed", "upstream", u.cfg.Name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), u.cfg.callTimeout())
		_, err := c.do(ctx, "resources/subscribe", exactjson.Object(exactjson.Field("uri", exactjson.String(uri))), callOpts{})
		cancel()
		if err != nil {
			u.g.log.Warn("gateway: resources/subscribe failed upstream", "upstream", u.cfg.Name, "uri", uri, "err", err)
			continue
		}
		if c.subscribed == nil {
			c.subscribed = map[string]bool{}
		}
		c.subscribed[uri] = true
	}
}

func isTrue(v exactjson.Value) bool {
	b, ok := v.AsBool()
	return ok && b
}

// exposeURI maps an upstream resource URI or template (field names it in
// logs) to the one the gateway exposes and claims it for u under kind
// ("resource" or "template"); false, logged, when it is empty, cannot carry
// the resource prefix or another upstream has it.
func (u *upstream) exposeURI(up, kind, field string) (string, bool) {
	if up == "" {
		return "", false
	}
	exposed, ok := u.uris.out(up)
	if !ok {
		u.g.log.Warn("gateway: an upstream "+kind+" URI cannot carry the resource prefix; not exposed", "upstream", u.cfg.Name, field, up)
		return "", false
	}
	if !u.g.claim(kind+":"+exposed, u) {
		u.g.log.Warn("gateway: "+kind+" URI taken by another upstream; not exposed", "upstream", u.cfg.Name, field, exposed)
		return "", false
	}
	return exposed, true
}

func (u *upstream) syncTemplates(items []exactjson.Value, c *conn) {
	srv := u.g.srv
	keep := map[string]bool{}
	for _, it := range items {
		upTpl := str(it, "uriTemplate")
		tpl, ok := u.exposeURI(upTpl, "template", "uriTemplate")
		if !ok {
			continue
		}
		keep[tpl] = true
		fp := fingerprint(it, c.version)
		if u.reg.templates[tpl] == fp {
			continue
		}
		rt := weft.ResourceTemplate{URITemplate: tpl, Name: str(it, "name"), Title: str(it, "title"),
			Description: str(it, "description"), MimeType: str(it, "mimeType"), Inputs: proxyInputs(u.cfg.Inputs), StateMode: modernStateMode}
		if a, ok := it.Get("annotations"); ok {
			rt.Annotations = annotations(a)
		}
		rt.Meta, _ = it.Get("_meta")
		if !c.modern() {
			rt.StateMode = legacyStateMode
		}
		if c.caps.Has("completions") {
			rt.Complete = u.completer(exactjson.Object(exactjson.Field("type", exactjson.String("ref/resource")), exactjson.Field("uri", exactjson.String(upTpl))))
		}
		rt.Scopes = u.g.pol.scopes(u.cfg.Name, tpl)
		if err := srv.AddResourceTemplate(rt, u.guardRead(tpl, u.readHandler())); err != nil {
			u.g.log.Warn("gateway: an upstream resource template cannot be exposed", "upstream", u.cfg.Name, "uriTemplate", tpl, "err", err)
			delete(keep, tpl)
			u.g.release("template:"+tpl, u)
			continue
		}
		u.reg.templates[tpl] = fp
	}
	u.prune(u.reg.templates, keep, "template", srv.RemoveResourceTemplate)
}

// toolHandler forwards tools/call. mirrors are the x-mcp-header
// annotations of the tool's input schema: an HTTP upstream of 2026-07-28
// gets the Mcp-Param-{Name} headers it checks. taskSupport is a 2025-era
// tool's execution.taskSupport: "optional" or "required" run as a task for
// a client declaring the tasks extension (tasks_legacy.go); "required"
// refuses the others (-32021).
func (u *upstream) toolHandler(upName string, mirrors []mirror.Mirror, taskSupport string) weft.ToolHandler {
	return func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		args := req.Arguments()
		params := exactjson.Object(exactjson.Field("name", exactjson.String(upName)), exactjson.Field("arguments", args))
		var header http.Header
		for _, m := range mirrors {
			if v, ok := m.Lookup(args); ok {
				if s, ok := mirror.HeaderValue(v); ok {
					if header == nil {
						header = http.Header{}
					}
					header.Set("Mcp-Param-"+m.Header, s)
				}
			}
		}
		var res exactjson.Value
		var err error
		switch {
		case (taskSupport == "optional" || taskSupport == "required") && declaresTasks(req.ClientCapabilities):
			res, err = u.callAsTask(ctx, req, params)
		case taskSupport == "required":
			return nil, weft.Proxy{}.MissingCapabilities(tasksRequired())
		default:
			res, err = u.invoke(withHeader(ctx, header), req, "tools/call", params)
		}
		if err != nil {
			return nil, err
		}
		out, err := toolResult(res, u.uris)
		if err != nil {
			return nil, u.g.unavailable(u, err)
		}
		return out, nil
	}
}

func (u *upstream) promptHandler(upName string) weft.PromptHandler {
	return func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
		am := make([]exactjson.Member, 0, len(args))
		for _, k := range sortedKeys(args) {
			am = append(am, exactjson.Field(k, exactjson.String(args[k])))
		}
		params := exactjson.Object(exactjson.Field("name", exactjson.String(upName)), exactjson.Field("arguments", exactjson.Object(am...)))
		res, err := u.invoke(ctx, req, "prompts/get", params)
		if err != nil {
			return nil, err
		}
		out, err := promptResult(res, u.uris)
		if err != nil {
			return nil, u.g.unavailable(u, err)
		}
		return out, nil
	}
}

func (u *upstream) readHandler() weft.ResourceHandler {
	return func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
		uri, ok := u.uris.in(str(req.Params, "uri"))
		if !ok {
			return nil, weft.ResourceNotFound(str(req.Params, "uri"))
		}
		params := exactjson.Object(exactjson.Field("uri", exactjson.String(uri)))
		res, err := u.invoke(ctx, req, "resources/read", params)
		if err != nil {
			return nil, err
		}
		out, err := readResult(res, u.uris)
		if err != nil {
			return nil, u.g.unavailable(u, err)
		}
		return out, nil
	}
}

// completer forwards completion/complete for the prompt or template ref.
func (u *upstream) completer(ref exactjson.Value) weft.CompletionHandler {
	return func(ctx context.Context, req *weft.Request, cr weft.CompletionRequest) (weft.Completion, error) {
		params := exactjson.Object(exactjson.Field("ref", ref), exactjson.Field("argument", exactjson.Object(
			exactjson.Field("name", exactjson.String(cr.Argument)), exactjson.Field("value", exactjson.String(cr.Value)))))
		if len(cr.Context) > 0 {
			m := make([]exactjson.Member, 0, len(cr.Context))
			for _, k := range sortedKeys(cr.Context) {
				m = append(m, exactjson.Field(k, exactjson.String(cr.Context[k])))
			}
			params = params.With("context", exactjson.Object(exactjson.Field("arguments", exactjson.Object(m...))))
		}
		c, err := u.get(ctx)
		if err != nil {
			return weft.Completion{}, u.g.unavailable(u, err)
		}
		tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
		defer cancel()
		res, err := u.do(tctx, c, "completion/complete", params, callOpts{caps: req.ClientCapabilities})
		if err != nil {
			var re *client.RPCError
			if errors.As(err, &re) {
				return weft.Completion{}, upstreamError(u.cfg.Name, re)
			}
			return weft.Completion{}, u.g.unavailable(u, err)
		}
		cv, _ := res.Get("completion")
		var out weft.Completion
		vals, _ := cv.Get("values")
		for v := range vals.Values() {
			if s, ok := v.AsString(); ok {
				out.Values = append(out.Values, s)
			}
		}
		if t, ok := cv.Get("total"); ok {
			if n, ok := t.AsNumber(); ok {
				i, _ := n.Int64()
				out.Total = int(i)
			}
		}
		if hm, ok := cv.Get("hasMore"); ok {
			out.HasMore, _ = hm.AsBool()
		}
		return out, nil
	}
}

// partitionDigest names the authorization partition of req in the store
// (the per-partition bound of parked calls).
func partitionDigest(req *weft.Request) string {
	h := sha256.Sum256([]byte(req.Identity.Partition))
	return "gateway:" + hex.EncodeToString(h[:16])
}

// invoke forwards one operation and returns the upstream's complete result,
// or an error for the server to send (an *weft.InputRequired included).
func (u *upstream) invoke(ctx context.Context, req *weft.Request, method string, params exactjson.Value) (exactjson.Value, error) {
	if u.users != nil {
		return u.users.invoke(ctx, req, method, params) // peruser.go
	}
	return u.invokeOn(ctx, req, method, params, nil)
}

// invokeOn is invoke on uc, a caller's own connection (nil: the
// upstream's).
func (u *upstream) invokeOn(ctx context.Context, req *weft.Request, method string, params exactjson.Value, uc *conn) (exactjson.Value, error) {
	g := u.g
	// The gateway emits only input requests the client supports (a 2025
	// upstream's others are refused upstream; a 2026-07-28 upstream gets
	// the client's capabilities): progress and logs may stream.
	releaseOutput(req)
	notify := func(method string, p exactjson.Value) {
		switch method {
		case "notifications/progress":
			if req.CanReportProgress() {
				_ = req.Progress(num(p, "progress"), num(p, "total"), str(p, "message"))
			}
		case "notifications/message":
			data, _ := p.Get("data")
			_, _ = req.Log(weft.LogLevel(str(p, "level")), str(p, "logger"), data)
		case "notifications/elicitation/complete":
			// A 2025-era client was given the upstream's elicitationId
			// (askInputs) and is told; 2026-07-28 has no completion
			// signal: the client learns the outcome of a URL interaction
			// by retrying (its answer to the relayed URL request already
			// went upstream).
			if sent, _ := req.ElicitationComplete(str(p, "elicitationId")); !sent {
				g.log.Debug("gateway: an upstream's URL elicitation completed; 2026-07-28 clients learn it by retrying", "upstream", u.cfg.Name, "elicitationId", str(p, "elicitationId"))
			}
		default:
			g.log.Debug("gateway: an upstream notification of a call is not relayed", "upstream", u.cfg.Name, "method", method)
		}
	}
	st, retry := parkedState(req)
	if retry && st.Has(urlRetryState) {
		// The retry of a translated -32042 (urlrequired.go): the call again.
		if err := u.urlDeclined(req); err != nil {
			return exactjson.Value{}, err
		}
		retry = false
	}
	if retry {
		// A retry of a call parked on some instance of the fleet.
		id := str(st, "p")
		rn, _ := st.Get("r")
		n, _ := rn.AsNumber()
		r, _ := n.Int64()
		// The parked call's next outcome is due within callTimeout, like
		// any stretch of an upstream call; wherever the call runs (its
		// instance may be gone), the retry does not wait longer.
		tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
		defer cancel()
		o, err := g.park.resume(tctx, id, int(r), inputResponses(req, u.ownInputKey()), notify)
		if err != nil {
			if errors.Is(err, errParkedGone) {
				return exactjson.Value{}, weft.InvalidParams("Invalid request state: " + err.Error())
			}
			if ctx.Err() != nil {
				return exactjson.Value{}, ctx.Err()
			}
			return exactjson.Value{}, g.unavailable(u, err)
		}
		return g.fromOutcome(u, req, id, int(r)+1, o)
	}
	if a := req.Header.Get("Authorization"); a != "" && u.cfg.Authorization == "passthrough" {
		ctx = context.WithValue(ctx, authKey{}, a)
	}
	c := uc
	var err error
	if c == nil {
		if c, err = u.get(ctx); err != nil {
			return exactjson.Value{}, g.unavailable(u, err)
		}
	}
	if c.modern() {
		return u.invokeModern(ctx, req, c, method, params, notify)
	}
	// A 2025-era upstream: the call may park. Over stdio it takes a turn
	// on one of the upstream's processes (pool.go): the upstream's requests
	// are routed to the call attending there, a parked call leaves the
	// process to its caller's other calls until its answers arrive, and a
	// call that ends unanswered taints the process.
	caller := callerKey(req)
	var t *turn
	if u.cfg.Command != "" {
		if t, err = u.pool.acquire(ctx, c, caller); err != nil {
			return exactjson.Value{}, g.unavailable(u, err)
		}
		c = t.p.c
	}
	supports := func(m string, p exactjson.Value) bool {
		return allowed(u.cfg.Inputs, m, p) && clientSupports(req, m, p)
	}
	// What a stdio upstream prints on stdout instead of answering.
	noise := c.stdoutNoise()
	before := noise.count()
	po := parkOpts{digest: partitionDigest(req), supports: supports, notify: notify,
		admit: func() (func(), error) { return u.admitParked(caller) }, check: u.checkURL}
	if t != nil && !u.cfg.OneCallPerProcess {
		po.onPark, po.onResume = t.park, t.resume
	}
	pc, err := g.park.start(po, func(pctx context.Context, s *sink) (res exactjson.Value, err error) {
		defer func() { t.done(answered(err)) }()
		if t != nil {
			s.attending = t.attends
		}
		if len(u.cfg.Roots) > 0 { // the configured roots, not the client's
			ask := s.request
			s.request = func(ctx context.Context, m string, p exactjson.Value) (exactjson.Value, *client.RPCError) {
				if m == "roots/list" {
					return u.cfg.rootsResult(), nil
				}
				return ask(ctx, m, p)
			}
		}
		return u.do(pctx, c, method, params, callOpts{sink: s})
	})
	if err != nil {
		t.done(true) // never sent
		return exactjson.Value{}, g.unavailable(u, err)
	}
	defer pc.listen(nil) // the handler returns: its request closes
	// Until the upstream asks for input, the call is bounded like any.
	tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
	defer cancel()
	o, err := pc.awaitFirst(tctx)
	if err != nil {
		if ctx.Err() != nil {
			return exactjson.Value{}, ctx.Err()
		}
		return exactjson.Value{}, g.unavailable(u, noise.explain(fmt.Errorf("no answer within %s: %w", u.cfg.callTimeout(), err), before))
	}
	return g.fromOutcome(u, req, pc.id, 0, o)
}

// fromOutcome turns a parked call's outcome after round r into the result
// or error of the operation.
func (g *Gateway) fromOutcome(u *upstream, req *weft.Request, id string, r int, o outcome) (exactjson.Value, error) {
	switch {
	case !o.requests.IsNull():
		ir, err := askInputs(o.requests, u.urlPolicy, legacyClient(req))
		if err != nil {
			return exactjson.Value{}, g.unavailable(u, err)
		}
		return exactjson.Value{}, withParkedState(ir, exactjson.Object(
			exactjson.Field("p", exactjson.String(id)), exactjson.Field("r", exactjson.Int(int64(r)))))
	case o.err != nil:
		if ir, ok := u.urlRequired(req, o.err); ok {
			return exactjson.Value{}, ir
		}
		return exactjson.Value{}, upstreamError(u.cfg.Name, o.err)
	case o.fail != "":
		return exactjson.Value{}, g.unavailable(u, o.error())
	}
	return o.result, nil
}

func (u *upstream) invokeModern(ctx context.Context, req *weft.Request, c *conn, method string, params exactjson.Value, notify func(string, exactjson.Value)) (exactjson.Value, error) {
	if rs := inputResponses(req, u.ownInputKey()); rs.Len() > 0 {
		params = params.With("inputResponses", rs)
	}
	if st, ok := upstreamState(req); ok {
		params = params.With("requestState", exactjson.String(st))
	}
	// Tasks are relayed for tools/call of an upstream offering them
	// (gateway/tasks.go); elsewhere the upstream must answer in line.
	caps := req.ClientCapabilities
	relayTasks := method == "tools/call" && u.relaysTasks()
	if ext, ok := caps.Get("extensions"); ok && ext.Has(client.TasksExtension) && !relayTasks {
		caps = caps.With("extensions", ext.Without(client.TasksExtension))
	}
	if caps.Kind() != exactjson.KindObject {
		caps = exactjson.Object()
	}
	tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
	defer cancel()
	res, err := u.do(tctx, c, method, params, callOpts{caps: caps, sink: &sink{notify: notify}})
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
	switch rt := str(res, "resultType"); rt {
	case "", "complete":
		return res, nil
	case "input_required":
		reqs, _ := res.Get("inputRequests")
		for key, r := range reqs.All() {
			p, _ := r.Get("params")
			m := str(r, "method")
			if !allowed(u.cfg.Inputs, m, p) {
				return exactjson.Value{}, u.g.unavailable(u, fmt.Errorf("input request %q: %s is not among the upstream's configured inputs", key, m))
			}
			if err := u.checkURL(m, p); err != nil {
				return exactjson.Value{}, u.g.unavailable(u, fmt.Errorf("input request %q: %w", key, err))
			}
		}
		ir, err := askInputs(reqs, u.urlPolicy, false)
		if err != nil {
			return exactjson.Value{}, u.g.unavailable(u, err)
		}
		if st := str(res, "requestState"); st != "" {
			ir = withUpstreamState(ir, st)
		}
		return exactjson.Value{}, ir
	case "task":
		if !relayTasks || !declaresTasks(req.ClientCapabilities) {
			return exactjson.Value{}, u.g.unavailable(u, errors.New("the upstream answered with a task the client did not ask for"))
		}
		rec, err := taskRecord(res)
		if err != nil {
			return exactjson.Value{}, u.g.unavailable(u, err)
		}
		return exactjson.Value{}, weft.Proxy{}.RelayedTask(u.relayName(), rec)
	default:
		return exactjson.Value{}, u.g.unavailable(u, fmt.Errorf("the upstream answered resultType %q, which the gateway does not relay", rt))
	}
}

// Error codes of the gateway (application range).
const (
	// CodeUpstreamUnavailable: the upstream could not be reached, broke,
	// answered something unusable or did not answer in time.
	CodeUpstreamUnavailable = -31050
	// CodeUpstreamError: the upstream answered a JSON-RPC error with a
	// reserved code the gateway cannot re-emit as such; data carries it.
	CodeUpstreamError = -31051
)

// unavailable logs a local failure and returns the error its client sees.
func (g *Gateway) unavailable(u *upstream, err error) error {
	g.log.Warn("gateway: upstream call failed", "upstream", u.cfg.Name, "err", err)
	reason := "it failed (see the gateway log)"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		reason = "it did not answer in time"
	case errors.Is(err, errUpstreamClosed):
		reason = "the connection to it broke"
	case errors.Is(err, client.ErrProtocol):
		reason = "it broke the protocol (see the gateway log)"
	}
	return weft.NewError(CodeUpstreamUnavailable, fmt.Sprintf("Upstream %q is unavailable: %s", u.cfg.Name, reason)).
		WithData(exactjson.Object(exactjson.Field("upstream", exactjson.String(u.cfg.Name))))
}

// upstreamError relays an upstream's JSON-RPC error.
func upstreamError(name string, e *client.RPCError) error {
	switch {
	case e.Code == client.CodeInvalidParams:
		return weft.InvalidParams(e.Message)
	case e.Code == client.CodeMissingRequiredClientCapability:
		req, _ := e.Data.Get("requiredCapabilities")
		if req.Kind() != exactjson.KindObject {
			req = exactjson.Object()
		}
		return weft.Proxy{}.MissingCapabilities(req)
	case e.Code >= -32768 && e.Code <= -32000:
		data := exactjson.Object(exactjson.Field("upstream", exactjson.String(name)), exactjson.Field("code", exactjson.Int(int64(e.Code))))
		if !e.Data.IsNull() {
			data = data.With("data", e.Data)
		}
		return weft.NewError(CodeUpstreamError, fmt.Sprintf("Upstream %q: %s", name, e.Message)).WithData(data)
	}
	return weft.NewError(weft.Code(e.Code), e.Message).WithData(e.Data)
}

func num(v exactjson.Value, name string) float64 {
	m, _ := v.Get(name)
	n, ok := m.AsNumber()
	if !ok {
		return 0
	}
	return n.Float64()
}
