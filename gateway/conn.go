package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// Protocol revisions an upstream may speak.
const (
	Version20260728 = "2026-07-28"
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
)

// legacyVersions are the initialize-era revisions the gateway accepts in
// initialize: the 2025 ones, and 2024-11-05, which many stdio servers on
// older SDKs still answer (@modelcontextprotocol/server-postgres, ...).
var legacyVersions = []string{Version20251125, Version20250618, "2025-03-26", "2024-11-05"}

// conn is one established connection to an upstream: a 2026-07-28 one
// (stateless requests carrying _meta) or a 2025-era session.
type conn struct {
	name    string
	version string // the negotiated revision
	w       wire   // stdio (both eras)
	// ct is an HTTP upstream's transport, both eras; in the 2025 era it
	// holds the session (Mcp-Session-Id) and its GET stream.
	ct      *client.HTTPTransport
	ctDone  chan struct{}
	endOnce sync.Once
	expired atomic.Bool // a 2025 session the upstream no longer knows
	// unrouted and outside take what a 2025 HTTP session sends outside a
	// call, or during a call that has no sink for it.
	unrouted func(method string, params exactjson.Value)
	outside  outsideFunc
	nextID   atomic.Int64
	info     exactjson.Value // serverInfo
	caps     exactjson.Value // server capabilities
	instr    string
	// subscribed are the resources a 2025 session subscribed to (guarded
	// by the upstream's regMu).
	subscribed map[string]bool
	// answer is set by the tests' 2025 client (export_test.go).
	answer func(method string, params exactjson.Value) exactjson.Value
	// retired is set when the process pool closes the upstream's primary
	// connection, tainted by a call the server did not answer (pool.go).
	retired atomic.Bool
	// listening is what a 2026-07-28 upstream's listen stream covers.
	listening listenState
}

// modern reports a 2026-07-28 upstream.
func (c *conn) modern() bool { return c.version == Version20260728 }

func (c *conn) done() <-chan struct{} {
	if c.w != nil {
		return c.w.done()
	}
	return c.ctDone
}

// err says why the connection ended.
func (c *conn) err() error {
	if c.w != nil {
		return c.w.err()
	}
	if c.expired.Load() {
		return fmt.Errorf("%w: %w: upstream %q", errUpstreamClosed, errSessionExpired, c.name)
	}
	return fmt.Errorf("%w: upstream %q", errUpstreamClosed, c.name)
}

// end marks an HTTP connection ended.
func (c *conn) end() { c.endOnce.Do(func() { close(c.ctDone) }) }

// expire ends a 2025 HTTP session the upstream no longer knows: the next
// call opens another (upstream.get).
func (c *conn) expire() {
	c.expired.Store(true)
	c.end()
}

func (c *conn) close() error {
	if c.w != nil {
		return c.w.close()
	}
	c.end()
	if c.expired.Load() {
		c.ct.ResetSession() // nothing to DELETE
	}
	return c.ct.Close() // a 2025 session: DELETE, best effort
}

// errSessionExpired marks a request the upstream refused for an unknown
// 2025 session (client.ErrSessionExpired): it was not run.
var errSessionExpired = errors.New("the session expired")

// clientInfo is how the gateway introduces itself upstream.
var clientInfo = exactjson.Object(exactjson.Field("name", exactjson.String("weft-gateway")), exactjson.Field("version", exactjson.String("1")))

// allInputCapabilities are the client capabilities the gateway declares to a
// 2025 session: it can relay every input request to its own clients.
var allInputCapabilities = exactjson.Object(
	exactjson.Field("elicitation", exactjson.Object(exactjson.Field("form", exactjson.Object()), exactjson.Field("url", exactjson.Object()))),
	exactjson.Field("sampling", exactjson.Object()),
	exactjson.Field("roots", exactjson.Object()))

// callOpts are the per-call inputs of do.
type callOpts struct {
	// caps are the downstream client's capabilities, forwarded to a
	// 2026-07-28 upstream (null: allInputCapabilities).
	caps exactjson.Value
	sink *sink
}

// do sends one request upstream. A JSON-RPC error is *client.RPCError.
func (c *conn) do(ctx context.Context, method string, params exactjson.Value, o callOpts) (exactjson.Value, error) {
	if params.Kind() != exactjson.KindObject {
		params = exactjson.Object()
	}
	if c.modern() {
		caps := o.caps
		if caps.Kind() != exactjson.KindObject {
			caps = allInputCapabilities
		}
		meta, _ := params.Get("_meta")
		if meta.Kind() != exactjson.KindObject {
			meta = exactjson.Object()
		}
		meta = meta.With("io.modelcontextprotocol/protocolVersion", exactjson.String(Version20260728)).
			With("io.modelcontextprotocol/clientCapabilities", caps).
			With("io.modelcontextprotocol/clientInfo", clientInfo)
		params = params.With("_meta", meta)
	}
	if c.w != nil {
		return c.w.call(ctx, method, params, o.sink)
	}
	id := c.nextID.Add(1)
	params = withProgressToken(params, id, o.sink)
	h, _ := ctx.Value(headerKey{}).(http.Header)
	req := &client.Request{ID: id, Method: method, Params: params, Header: h}
	var notify func(client.Notification)
	switch {
	case !c.modern():
		// A 2025 session: the call's stream carries the upstream's
		// requests and notifications for it.
		req.OnServerRequest = c.serverRequests(o.sink)
		notify = func(n client.Notification) {
			if strings.HasSuffix(n.Method, "/list_changed") || o.sink == nil || o.sink.notify == nil {
				if c.unrouted != nil {
					c.unrouted(n.Method, n.Params)
				}
				return
			}
			o.sink.notify(n.Method, n.Params)
		}
	case o.sink != nil && o.sink.notify != nil:
		notify = func(n client.Notification) { o.sink.notify(n.Method, n.Params) }
	}
	resp, err := c.ct.Do(ctx, req, notify)
	if err != nil {
		if ctx.Err() != nil {
			return exactjson.Value{}, ctx.Err()
		}
		if errors.Is(err, client.ErrSessionExpired) {
			c.expire()
			return exactjson.Value{}, fmt.Errorf("%w: %w: upstream %q: %w", errUpstreamClosed, errSessionExpired, c.name, err)
		}
		if errors.Is(err, client.ErrStreamEnded) {
			// The upstream stopped during the call, most likely.
			return exactjson.Value{}, fmt.Errorf("%w: upstream %q: %w", errUpstreamClosed, c.name, err)
		}
		return exactjson.Value{}, fmt.Errorf("gateway: upstream %q: %w", c.name, err)
	}
	if resp.Error != nil {
		return exactjson.Value{}, resp.Error
	}
	if resp.Result.Kind() != exactjson.KindObject {
		return exactjson.Value{}, fmt.Errorf("gateway: upstream %q: the result of %s is not an object", c.name, method)
	}
	return resp.Result, nil
}

// dial connects to an upstream and negotiates its revision. Its errors
// name the setting to change: connectTimeout when the upstream did not
// answer in time, stdoutNoise when a command printed something else than
// MCP on its stdout.
func dial(ctx context.Context, u *UpstreamConfig, hc *http.Client, headers func(context.Context, http.Header) error, unrouted func(string, exactjson.Value), outside outsideFunc, log *slog.Logger) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, u.connectTimeout())
	defer cancel()
	c, err := dialWithin(cctx, u, hc, headers, unrouted, outside, log)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, context.DeadlineExceeded) && cctx.Err() != nil && ctx.Err() == nil:
		return nil, fmt.Errorf("%w (the upstream did not answer within connectTimeout, %s: raise connectTimeout of upstream %q if it starts slowly)", err, u.connectTimeout(), u.Name)
	case u.Command != "" && u.StdoutNoise != StdoutNoiseLog && errors.Is(err, client.ErrProtocol) && strings.Contains(err.Error(), "not a JSON-RPC message"):
		return nil, fmt.Errorf("%w (if the server prints a banner or log lines on stdout, set stdoutNoise: log on upstream %q)", err, u.Name)
	}
	return nil, err
}

func dialWithin(ctx context.Context, u *UpstreamConfig, hc *http.Client, headers func(context.Context, http.Header) error, unrouted func(string, exactjson.Value), outside outsideFunc, log *slog.Logger) (*conn, error) {
	c := &conn{name: u.Name, unrouted: unrouted, outside: outside}
	if u.Command != "" {
		var noiseLog *slog.Logger // strict framing
		if u.StdoutNoise == StdoutNoiseLog {
			noiseLog = cmp.Or(log, slog.New(slog.DiscardHandler))
		}
		w, err := startStdio(u.Name, commandFor(u), u.shutdownTimeout(), unrouted, noiseLog)
		if err != nil {
			return nil, err
		}
		c.w = w
		serveOutside(c, outside) // before initialize: servers ask right after it
		if err := c.handshake(ctx, u); err != nil {
			_ = w.close()
			return nil, err
		}
		return c, nil
	}
	if u.Protocol == "" || u.Protocol == Version20260728 {
		c.ct = client.NewHTTPTransport(u.URL, &client.HTTPOptions{Client: hc, Header: headers})
		c.ctDone = make(chan struct{})
		c.version = Version20260728
		err := c.discover(ctx)
		if err == nil {
			return c, nil
		}
		_ = c.ct.Close()
		// The transport pages' fallback rule: an upstream that asks for
		// authorization or fails with 5xx is not taken for a 2025 one.
		if u.Protocol != "" || !client.LegacyProbeAnswer(err) {
			return nil, err
		}
		if u.Authorization == "passthrough" {
			return nil, fmt.Errorf("gateway: upstream %q: authorization \"passthrough\" needs a 2026-07-28 upstream, and server/discover failed (%w): a 2025 session is bound to one identity", u.Name, err)
		}
		c = &conn{name: u.Name, unrouted: unrouted, outside: outside}
	}
	c.ct = client.NewHTTPTransport(u.URL, &client.HTTPOptions{Client: hc, Header: headers})
	c.ctDone = make(chan struct{})
	if err := c.initialize(ctx, u); err != nil {
		_ = c.close()
		return nil, err
	}
	return c, nil
}

func (c *conn) handshake(ctx context.Context, u *UpstreamConfig) error {
	if u.Protocol == Version20260728 {
		c.version = Version20260728
		return c.discover(ctx)
	}
	if u.Protocol == "" {
		c.version = Version20260728
		dctx, cancel := context.WithTimeout(ctx, autoDetectTimeout)
		err := c.discover(dctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, errUpstreamClosed) {
			return err
		}
		c.version = ""
	}
	return c.initialize(ctx, u)
}

// autoDetectTimeout bounds the server/discover probe of an upstream whose
// revision is not configured.
const autoDetectTimeout = 5 * time.Second

func (c *conn) discover(ctx context.Context) error {
	res, err := c.do(ctx, "server/discover", exactjson.Object(), callOpts{})
	if err != nil {
		return fmt.Errorf("gateway: upstream %q: server/discover: %w", c.name, err)
	}
	sv, _ := res.Get("supportedVersions")
	ok := false
	for v := range sv.Values() {
		if isStr(v, Version20260728) {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("gateway: upstream %q: server/discover: %w: %s is not among its supportedVersions", c.name, client.ErrProtocol, Version20260728)
	}
	c.caps, _ = res.Get("capabilities")
	c.instr = str(res, "instructions")
	meta, _ := res.Get("_meta")
	c.info, _ = meta.Get("io.modelcontextprotocol/serverInfo")
	return nil
}

func (c *conn) initialize(ctx context.Context, u *UpstreamConfig) error {
	want := u.Protocol
	if want == "" || want == Version20260728 {
		want = Version20251125
	}
	res, err := c.do(ctx, "initialize", exactjson.Object(
		exactjson.Field("protocolVersion", exactjson.String(want)),
		exactjson.Field("capabilities", allInputCapabilities),
		exactjson.Field("clientInfo", clientInfo)), callOpts{})
	if err != nil {
		return fmt.Errorf("gateway: upstream %q: initialize: %w", c.name, err)
	}
	got := str(res, "protocolVersion")
	if !slices.Contains(legacyVersions, got) {
		return fmt.Errorf("gateway: upstream %q: initialize: the server answered protocolVersion %q, which the gateway does not speak", c.name, got)
	}
	if u.Protocol != "" && u.Protocol != Version20260728 && got != u.Protocol {
		return fmt.Errorf("gateway: upstream %q: initialize: pinned to %s but the server chose %s", c.name, u.Protocol, got)
	}
	c.version = got
	c.caps, _ = res.Get("capabilities")
	c.info, _ = res.Get("serverInfo")
	c.instr = str(res, "instructions")
	var nerr error
	if c.w != nil {
		nerr = c.w.notify(ctx, "notifications/initialized", exactjson.Object())
	} else {
		c.ct.SetProtocolVersion(got)
		nerr = c.ct.Notify(ctx, "notifications/initialized", exactjson.Object())
	}
	if err := nerr; err != nil {
		return fmt.Errorf("gateway: upstream %q: notifications/initialized: %w", c.name, err)
	}
	return nil
}

// listenOverlap is how long a listen stream stays open once its successor
// is acknowledged, for what it carried before the successor was subscribed.
const listenOverlap = time.Second

// maxResourceSubscriptions bounds the resource URIs a listen stream
// subscribes to.
const maxResourceSubscriptions = 256

// listen keeps a subscriptions/listen stream open on a 2026-07-28
// upstream for its list changes and the updates of the resources uris()
// returns, passing each notification's method and params to onChange, until
// the connection ends. A stream that fails is opened again after a pause.
// When reset fires a stream with the current resources is opened beside
// the acknowledged one, which relays until listenOverlap after the new one
// is acknowledged: no update falls between the two (one sent while both
// are open may be relayed twice). c.listening records what the
// acknowledged stream covers.
func (c *conn) listen(onChange func(method string, params exactjson.Value), uris func() []string, reset <-chan struct{}, log func(msg string, args ...any)) {
	ctx, cancel := context.WithCancel(context.Background())
	var streams sync.WaitGroup
	defer func() {
		cancel()
		streams.Wait()
	}()
	go func() {
		select {
		case <-c.done():
			cancel()
		case <-ctx.Done():
		}
	}()
	// prev ends the acknowledged stream kept open until its successor is
	// acknowledged.
	var prev context.CancelFunc
	pause := time.Second
open:
	for ctx.Err() == nil {
		filter := exactjson.Object(
			exactjson.Field("toolsListChanged", exactjson.Bool(true)),
			exactjson.Field("promptsListChanged", exactjson.Bool(true)),
			exactjson.Field("resourcesListChanged", exactjson.Bool(true)))
		us := uris()
		if len(us) > maxResourceSubscriptions {
			log("gateway: too many upstream resources to subscribe to; updates of the others are not relayed", "upstream", c.name, "resources", len(us))
			us = us[:maxResourceSubscriptions]
		}
		if len(us) > 0 {
			vs := make([]exactjson.Value, len(us))
			for i, u := range us {
				vs[i] = exactjson.String(u)
			}
			filter = filter.With("resourceSubscriptions", exactjson.Array(vs...))
		}
		sctx, scancel := context.WithCancel(ctx)
		acked := make(chan struct{})
		ended := make(chan error, 1)
		streams.Add(1)
		go func() {
			defer streams.Done()
			var once sync.Once
			_, err := c.do(sctx, "subscriptions/listen", exactjson.Object(exactjson.Field("notifications", filter)),
				callOpts{sink: &sink{notify: func(m string, p exactjson.Value) {
					switch m {
					case "notifications/subscriptions/acknowledged":
						once.Do(func() { close(acked) })
						onChange(m, p) // what changed while no stream was open is listed again
					case "notifications/tools/list_changed", "notifications/prompts/list_changed",
						"notifications/resources/list_changed", "notifications/resources/updated":
						onChange(m, p)
					}
				}}})
			ended <- err
		}()
		isAcked := false
		var err error
	wait:
		for {
			select {
			case <-acked:
				acked, isAcked = nil, true
				c.listening.report(us, nil)
				if prev != nil {
					// What the upstream sent on the old stream before
					// the new one was subscribed may still be on its
					// way: the old one ends a while later.
					time.AfterFunc(listenOverlap, prev)
					prev = nil
				}
				pause = time.Second
			case <-reset:
				if isAcked {
					prev = scancel // relays until its successor is acknowledged
				} else {
					scancel() // ask again with the current resources; prev still relays
				}
				continue open
			case err = <-ended:
				break wait
			}
		}
		scancel()
		if ctx.Err() != nil {
			return
		}
		if !isAcked {
			c.listening.report(nil, err)
		}
		log("gateway: the upstream's subscriptions/listen stream ended; reopening", "upstream", c.name, "err", err, "in", pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Minute)
	}
}

// listenState is what the acknowledged subscriptions/listen stream of a
// 2026-07-28 upstream covers.
type listenState struct {
	mu      sync.Mutex
	acked   bool
	covered []string      // the resources subscribed to, sorted
	err     error         // why the latest stream ended unacknowledged
	changed chan struct{} // closed, and replaced, on each report
}

// report records an acknowledged stream's resources (err nil) or why a
// stream ended before its acknowledgement.
func (s *listenState) report(uris []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.acked, s.covered, s.err = true, uris, nil
	} else {
		s.err = err
	}
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

// wait returns nil once an acknowledged stream covers every URI of want
// (sorted), the error of a stream that ended unacknowledged, or ctx's.
func (s *listenState) wait(ctx context.Context, want []string) error {
	for {
		s.mu.Lock()
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		done := s.acked && covers(s.covered, want)
		err, ch := s.err, s.changed
		s.mu.Unlock()
		switch {
		case done:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// covers reports whether the sorted have holds every element of want.
func covers(have, want []string) bool {
	for _, w := range want {
		if _, ok := slices.BinarySearch(have, w); !ok {
			return false
		}
	}
	return true
}
