package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/middleware"
	"github.com/weftmcp/weft/quota"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// policy applies the configuration's Policy, Limits and Audit to the
// calls of the upstreams' items (see PolicyRule, LimitRule, AuditConfig).
type policy struct {
	rules  []PolicyRule
	limits []LimitRule
	quotas quota.Store
	audit  *slog.Logger // nil: no audit log
	args   bool         // audit the arguments
	// callerRules is set when a rule has conditions on the caller beyond
	// scopes (principals, partitions, claims): the lists are filtered.
	callerRules bool
	log         *slog.Logger
	// calls and seconds count and time the calls per upstream, method and
	// outcome (Options.MeterProvider; nil without).
	calls   metric.Int64Counter
	seconds metric.Float64Histogram
}

func newPolicy(cfg *Config, o *Options, log *slog.Logger) *policy {
	p := &policy{rules: cfg.Policy, limits: cfg.Limits, quotas: o.Quotas, log: log}
	if len(p.limits) > 0 && p.quotas == nil {
		p.quotas = quota.NewMemory(nil)
	}
	if o.Audit != nil {
		p.audit = slog.New(slog.NewJSONHandler(o.Audit, nil))
		p.args = cfg.Audit != nil && cfg.Audit.Arguments
	}
	for _, r := range p.rules {
		if len(r.Principals)+len(r.Partitions)+len(r.Claims) > 0 {
			p.callerRules = true
		}
	}
	if mp := o.MeterProvider; mp != nil {
		m := mp.Meter("github.com/weftmcp/weft/gateway")
		var err error
		if p.calls, err = m.Int64Counter("weft.gateway.calls", metric.WithDescription("Calls of the upstreams' tools, prompts and resources, by upstream, method and outcome."),
			metric.WithUnit("{call}")); err != nil {
			log.Warn("gateway: no call metrics", "err", err)
		}
		if p.seconds, err = m.Float64Histogram("weft.gateway.call.duration", metric.WithDescription("Duration of the calls of the upstreams' items, by upstream, method and outcome."),
			metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)); err != nil || p.calls == nil {
			p.calls, p.seconds = nil, nil
			log.Warn("gateway: no call metrics", "err", err)
		}
	}
	return p
}

// selects reports whether a rule's Upstream and Items select an item.
func selects(upPat string, items []string, upstream, item string) bool {
	if upPat != "" {
		if ok, _ := path.Match(upPat, upstream); !ok {
			return false
		}
	}
	return len(items) == 0 || matchAny(items, item)
}

// scopes returns the scopes the rules applying to an item need, for its
// registration (weft.Tool.Scopes and the like): admission then refuses a
// token without them with 403 insufficient_scope, and lists hide the item.
func (p *policy) scopes(upstream, item string) []string {
	var out []string
	for _, r := range p.rules {
		if selects(r.Upstream, r.Items, upstream, item) {
			for _, s := range r.Scopes {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// allows reports whether the caller satisfies every rule applying to an
// item, scopes included.
func (p *policy) allows(id weft.Identity, upstream, item string) bool {
	for i := range p.rules {
		r := &p.rules[i]
		if !selects(r.Upstream, r.Items, upstream, item) {
			continue
		}
		for _, s := range r.Scopes {
			if !slices.Contains(id.Scopes, s) {
				return false
			}
		}
		if len(r.Principals) > 0 && (id.Principal == "" || !matchAny(r.Principals, id.Principal)) {
			return false
		}
		if len(r.Partitions) > 0 && (id.Partition == "" || !matchAny(r.Partitions, id.Partition)) {
			return false
		}
		if len(r.Claims) > 0 && !claimsMatch(id, r.Claims) {
			return false
		}
	}
	return true
}

// claimsMatch reports whether each claim of want holds one of its values
// in the caller's token (a string equal to one, or an array holding one).
func claimsMatch(id weft.Identity, want map[string][]string) bool {
	c, ok := auth.ClaimsOf(id)
	if !ok {
		return false
	}
	for name, vals := range want {
		raw, ok := c.Raw[name]
		if !ok {
			return false
		}
		var one string
		var many []string
		switch {
		case json.Unmarshal(raw, &one) == nil:
			many = []string{one}
		case json.Unmarshal(raw, &many) == nil:
		default:
			return false
		}
		if !slices.ContainsFunc(many, func(v string) bool { return slices.Contains(vals, v) }) {
			return false
		}
	}
	return true
}

// deniedArgument returns the name of an argument a rule applying to the
// tool refuses, or "".
func (p *policy) deniedArgument(upstream, item string, args exactjson.Value) string {
	for i := range p.rules {
		r := &p.rules[i]
		if len(r.DenyArguments) == 0 || !selects(r.Upstream, r.Items, upstream, item) {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(r.DenyArguments)) {
			v, ok := args.Get(name)
			if !ok {
				continue
			}
			if s, ok := v.AsString(); ok && matchAny(r.DenyArguments[name], s) {
				return name
			}
		}
	}
	return ""
}

// quotaKey is the caller a quota counts: its principal, else its
// partition, else its address.
func quotaKey(req *weft.Request) string {
	switch id := req.Identity; {
	case id.Principal != "":
		return "u:" + id.Principal
	case id.Partition != "":
		return "p:" + id.Partition
	}
	return "a:" + req.Caller()
}

// take counts a call against every quota applying to it; it returns the
// refusal of the first that is used up.
func (p *policy) take(ctx context.Context, req *weft.Request, upstream, item string) (string, error) {
	for i := range p.limits {
		l := &p.limits[i]
		if !selects(l.Upstream, l.Items, upstream, item) {
			continue
		}
		id := req.Identity
		if len(l.Principals) > 0 && !matchAny(l.Principals, id.Principal) || len(l.Partitions) > 0 && !matchAny(l.Partitions, id.Partition) {
			continue
		}
		key := l.Name + "|*"
		if !l.Shared {
			key = l.Name + "|" + quotaKey(req)
		}
		d, err := p.quotas.Take(ctx, key, quota.Limit{Calls: l.Calls, Per: l.per(), Burst: l.burst()})
		if err != nil {
			// Fail closed: a quota that cannot be counted is not granted.
			p.log.Error("gateway: quota store failed; the call is refused", "quota", l.Name, "err", err)
			return l.Name, fmt.Errorf("gateway: quota %q: %w", l.Name, err)
		}
		if !d.Allowed {
			return l.Name, weft.RateLimited(d.RetryAfter)
		}
	}
	return "", nil
}

// unknownItem is the refusal of a call the policy hides from the caller:
// the same as for an item that does not exist.
func unknownItem(method, item string) error {
	switch method {
	case "resources/read":
		return weft.ResourceNotFound(item)
	case "prompts/get":
		return weft.InvalidParams("Unknown prompt")
	}
	return weft.InvalidParams("Unknown tool")
}

// call is one call of an upstream's item passing the guard: enter runs
// the policy and the quotas, finish records the outcome (metrics, audit).
// It is handed around by value: the guard allocates nothing.
type call struct {
	p         *policy
	req       *weft.Request
	upstream  string
	refusedBy string
	start     time.Time
}

// enter runs the policy and the quotas for a call of item (the
// registration's name, URI or URI template) of upstream.
func (p *policy) enter(ctx context.Context, req *weft.Request, upstream, item string) (call, error) {
	c := call{p: p, req: req, upstream: upstream, start: time.Now()}
	if !p.allows(req.Identity, upstream, item) {
		c.refusedBy = "policy"
		return c, unknownItem(req.Method, req.Name)
	}
	if req.Method == "tools/call" && len(p.rules) > 0 {
		if a := p.deniedArgument(upstream, item, req.Arguments()); a != "" {
			c.refusedBy = "policy"
			return c, weft.InvalidParams("Argument " + strconv.Quote(a) + " has a value the gateway's policy refuses")
		}
	}
	if q, err := p.take(ctx, req, upstream, item); err != nil {
		c.refusedBy = "quota:" + q
		return c, err
	}
	return c, nil
}

// finish records the call's outcome.
func (c call) finish(ctx context.Context, res weft.Result, err error) {
	p := c.p
	if p.audit == nil && p.calls == nil {
		return
	}
	d := time.Since(c.start)
	outcome, code := middleware.Outcome(res, err)
	if p.calls != nil {
		attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("upstream", c.upstream), attribute.String("method", c.req.Method),
			attribute.String("outcome", outcome)))
		p.calls.Add(ctx, 1, attrs)
		p.seconds.Record(ctx, d.Seconds(), attrs)
	}
	if p.audit != nil {
		p.record(ctx, c.req, c.upstream, c.refusedBy, outcome, code, d)
	}
}

// record writes one audit line.
func (p *policy) record(ctx context.Context, req *weft.Request, upstream, refusedBy, outcome string, code weft.Code, d time.Duration) {
	id := req.Identity
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("principal", id.Principal),
		slog.String("partition", id.Partition),
		slog.String("caller", req.Caller()),
		slog.String("method", req.Method),
		slog.String("name", req.Name),
		slog.String("upstream", upstream),
		slog.String("outcome", outcome))
	if code != 0 {
		attrs = append(attrs, slog.Int("code", int(code)))
	}
	if refusedBy != "" {
		attrs = append(attrs, slog.String("refusedBy", refusedBy))
	}
	attrs = append(attrs, slog.Float64("durationMs", float64(d.Microseconds())/1000), slog.String("protocol", req.ProtocolVersion))
	if p.args {
		switch req.Method {
		case "tools/call", "prompts/get":
			if b, err := req.Arguments().MarshalJSON(); err == nil && len(b) > 0 {
				attrs = append(attrs, slog.Any("arguments", json.RawMessage(b)))
			}
		}
	}
	p.audit.LogAttrs(ctx, slog.LevelInfo, "call", attrs...)
}

// show is the visibility filter of rules with conditions on the caller:
// an item the caller may not use is not listed either.
func (g *Gateway) policyShow(ctx context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
	key, ok := ownerKey(kind, name)
	if !ok {
		return true
	}
	g.mu.Lock()
	u := g.owners[key]
	g.mu.Unlock()
	if u == nil || req == nil {
		return true
	}
	if g.pol.allows(req.Identity, u.cfg.Name, name) {
		return true
	}
	// The server refuses an operation on a hidden item as on an unknown
	// one before any handler runs: the audit line is written here.
	if g.pol.audit != nil && req.Name == name && operationOf(kind) == req.Method {
		outcome, code := middleware.Outcome(nil, unknownItem(req.Method, name))
		g.pol.record(ctx, req, u.cfg.Name, "policy", outcome, code, 0)
	}
	return false
}

// ownerKey is the key of Gateway.owners of an item (false for kinds the
// gateway does not register).
func ownerKey(kind weft.ItemKind, name string) (string, bool) {
	switch kind {
	case weft.KindTool:
		return "tool:" + name, true
	case weft.KindPrompt:
		return "prompt:" + name, true
	case weft.KindResource:
		return "resource:" + name, true
	case weft.KindResourceTemplate:
		return "template:" + name, true
	}
	return "", false
}

// operationOf is the method that operates on an item of kind.
func operationOf(kind weft.ItemKind) string {
	switch kind {
	case weft.KindTool:
		return "tools/call"
	case weft.KindPrompt:
		return "prompts/get"
	}
	return "resources/read"
}

// Guards of the registered handlers: the policy and quotas before the
// call, the audit line after it.

func (u *upstream) guardTool(item string, h weft.ToolHandler) weft.ToolHandler {
	return func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return guarded(ctx, u, item, req, func() (*weft.CallToolResult, error) { return h(ctx, req) })
	}
}

func (u *upstream) guardPrompt(item string, h weft.PromptHandler) weft.PromptHandler {
	return func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
		return guarded(ctx, u, item, req, func() (*weft.GetPromptResult, error) { return h(ctx, req, args) })
	}
}

func (u *upstream) guardRead(item string, h weft.ResourceHandler) weft.ResourceHandler {
	return func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
		return guarded(ctx, u, item, req, func() (*weft.ReadResourceResult, error) { return h(ctx, req) })
	}
}

// guarded runs a call of item through the policy and the quotas, then
// run, and records its outcome.
func guarded[T any, P interface {
	*T
	weft.Result
}](ctx context.Context, u *upstream, item string, req *weft.Request, run func() (P, error)) (P, error) {
	u.traceUpstream(ctx)
	c, err := u.g.pol.enter(ctx, req, u.cfg.Name, item)
	if err != nil {
		c.finish(ctx, nil, err)
		return nil, err
	}
	res, err := run()
	c.finish(ctx, resultOf(res), err)
	return res, err
}

// traceUpstream names the upstream on the request's span (the server's
// trace of the operation, when tracing is on).
func (u *upstream) traceUpstream(ctx context.Context) {
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		sp.SetAttributes(attribute.String("weft.gateway.upstream", u.cfg.Name))
	}
}

// resultOf is a typed result as a weft.Result, nil for a nil pointer.
func resultOf[T any, P interface {
	*T
	weft.Result
}](r P) weft.Result {
	if r == nil {
		return nil
	}
	return r
}

// OpenAudit opens an AuditConfig's file for appending (mode 0600), or
// returns standard error for "-"; close it after the gateway.
func OpenAudit(c *AuditConfig, stderr io.Writer) (io.Writer, func() error, error) {
	if c.File == "-" {
		return stderr, func() error { return nil }, nil
	}
	f, err := openAppend(c.File)
	if err != nil {
		return nil, nil, fmt.Errorf("gateway: audit file: %w", err)
	}
	return f, f.Close, nil
}

func openAppend(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// RecordRefusal writes the audit line of an operation on one of the
// gateway's items that the server's admission refused (no token, an
// invalid one, or one lacking a scope a policy rule requires): the server
// answers those 401 or 403 before any handler runs. Call it from the
// server's Admission when it fails; it does nothing for other requests or
// without an audit log. The caller is not known then: the line has the
// client address, the HTTP status and refusedBy "admission".
func (g *Gateway) RecordRefusal(ctx context.Context, r *weft.AdmissionRequest, err error) {
	if g.pol.audit == nil || err == nil {
		return
	}
	var kind weft.ItemKind
	switch r.Method {
	case "tools/call":
		kind = weft.KindTool
	case "prompts/get":
		kind = weft.KindPrompt
	case "resources/read":
		kind = weft.KindResource
	default:
		return
	}
	key, _ := ownerKey(kind, r.Name)
	g.mu.Lock()
	u := g.owners[key]
	g.mu.Unlock()
	if u == nil {
		return
	}
	status := 0
	var ae *weft.AdmissionError
	if errors.As(err, &ae) {
		status = ae.Status
	}
	g.pol.audit.LogAttrs(ctx, slog.LevelInfo, "call",
		slog.String("principal", ""),
		slog.String("remote", r.RemoteAddr),
		slog.String("method", r.Method),
		slog.String("name", r.Name),
		slog.String("upstream", u.cfg.Name),
		slog.String("outcome", "refused"),
		slog.Int("status", status),
		slog.String("refusedBy", "admission"))
}
