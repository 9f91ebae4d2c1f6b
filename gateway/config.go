package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftmcp/weft"
	"go.yaml.in/yaml/v3"
)

// Config is a gateway configuration: the upstreams it fronts and the bounds
// of the calls parked while a client answers an upstream's input request.
// It is read from JSON or YAML by [LoadConfig] or [ParseConfig].
type Config struct {
	// Upstreams are the servers fronted, in priority order: when two expose
	// the same name, the first keeps it.
	Upstreams []UpstreamConfig `json:"upstreams"`
	// Input bounds the era translation of 2025-era upstreams.
	Input InputConfig `json:"input,omitzero"`
	// ToolSearch, when set, puts the gateway's tools behind a search tool
	// (progressive discovery for large aggregated catalogs; Listed patterns
	// such as "github_*" keep an upstream's prefix listed). `weft gateway`
	// sets [weft.Options.ToolSearch] of the server it creates from it; a
	// program calling [New] sets that option on its server (New does not
	// read this field).
	ToolSearch *weft.ToolSearch `json:"toolSearch,omitempty"`

	// Auth authenticates the callers (read by `weft gateway`; see
	// [AuthConfig]).
	Auth *AuthConfig `json:"auth,omitempty"`
	// Policy restricts who sees and uses which upstream, tool, prompt and
	// resource (see [PolicyRule]); [New] applies it.
	Policy []PolicyRule `json:"policy,omitempty"`
	// Limits are quotas per caller and item (see [LimitRule]); [New]
	// applies them, in Options.Quotas.
	Limits []LimitRule `json:"limits,omitempty"`
	// Audit configures the audit log of calls (see [AuditConfig]); `weft
	// gateway` opens the file, [New] writes to Options.Audit.
	Audit *AuditConfig `json:"audit,omitempty"`
}

// UpstreamConfig describes one upstream MCP server: a command speaking
// stdio (Command, Args, Env, Dir) or a Streamable HTTP endpoint (URL,
// Headers). Exactly one of Command and URL is set.
type UpstreamConfig struct {
	// Name identifies the upstream in logs and errors: 1-64 characters of
	// [A-Za-z0-9_.-].
	Name string `json:"name"`

	// Command is the program to start (looked up in PATH).
	Command string `json:"command,omitempty"`
	// Args are its arguments.
	Args []string `json:"args,omitempty"`
	// Env adds variables to its environment; values may refer to the
	// gateway's own environment as ${VAR}.
	Env map[string]string `json:"env,omitempty"`
	// CleanEnv starts the command with Env only instead of the gateway's
	// environment plus Env.
	CleanEnv bool `json:"cleanEnv,omitempty"`
	// Dir is its working directory. LoadConfig resolves a relative Dir
	// against the configuration file's directory and makes that directory
	// the default, so that a relative Command or Args mean paths beside
	// the file (ParseConfig: the gateway's working directory).
	Dir string `json:"dir,omitempty"`
	// StdoutNoise says what a line the command writes on its stdout that
	// is no MCP message (a banner, a warning, a log line) does: "fail" (or
	// "", the default) breaks the connection, as the spec allows nothing
	// else there; "log" skips the line and logs it at Warn (the first 10 of
	// a process, then a count), and errors about the upstream quote the
	// last few. A malformed JSON-RPC message breaks the connection either
	// way (see client.StdioOptions.Noise for what counts as noise).
	StdoutNoise string `json:"stdoutNoise,omitempty"`

	// URL is the MCP endpoint (http or https).
	URL string `json:"url,omitempty"`
	// Headers are sent on every request; values may refer to the gateway's
	// environment as ${VAR} (keep tokens out of the file).
	Headers map[string]string `json:"headers,omitempty"`
	// Authorization is "" (send Headers only) or "passthrough": forward the
	// downstream request's Authorization header (2026-07-28 HTTP upstreams).
	Authorization string `json:"authorization,omitempty"`
	// OAuth authorizes the gateway itself at an upstream that requires
	// OAuth (service credentials; upstream_oauth.go).
	OAuth *UpstreamOAuth `json:"oauth,omitempty"`

	// Protocol pins the revision spoken upstream: "2026-07-28",
	// "2025-11-25" or "2025-06-18". Empty: server/discover is tried first,
	// then initialize.
	Protocol string `json:"protocol,omitempty"`

	// Prefix is prepended to the names of the upstream's tools and prompts
	// (for example "github_").
	Prefix string `json:"prefix,omitempty"`
	// ResourcePrefix is inserted after the scheme of the upstream's
	// resource URIs and resource template URIs: with "github",
	// repo://issues/1 is exposed as repo://github/issues/1 (and mapped back
	// on the way upstream). nil derives it from Prefix without its trailing
	// "_", "." and "-" ("github_" gives "github"), so that one prefix keeps
	// two upstreams' names and URIs apart; "" exposes URIs unchanged.
	ResourcePrefix *string `json:"resourcePrefix,omitempty"`
	// Include, when not empty, keeps only the tools and prompts whose
	// upstream name matches one of these path.Match patterns.
	Include []string `json:"include,omitempty"`
	// Exclude drops the tools and prompts whose upstream name matches one of
	// these patterns (after Include).
	Exclude []string `json:"exclude,omitempty"`
	// Rename maps an upstream tool or prompt name to the exposed name (the
	// Prefix is not added to a renamed item).
	Rename map[string]string `json:"rename,omitempty"`

	// Inputs names the input requests the upstream's operations may make
	// of the client: "form" and "url" (elicitation), "sampling", "roots".
	// Empty means all. Requests of other kinds are refused upstream.
	Inputs []string `json:"inputs,omitempty"`

	// URLElicitation is the policy of the URLs the upstream's URL
	// elicitations may send clients to (nil: Options.URLElicitation of
	// the gateway when set, else the upstream's own origin for an https
	// URL upstream, else none). See docs/gateway.md.
	URLElicitation *URLElicitationConfig `json:"urlElicitation,omitempty"`

	// Roots answer the upstream's roots/list (file:// URIs): outside a
	// call always (none: an empty list), and during a call instead of
	// asking the call's client when set.
	Roots []Root `json:"roots,omitempty"`

	// MaxProcesses bounds the processes of a 2025-era command upstream
	// (default 8). Each process carries the calls of one caller at a time,
	// of which one runs while the others wait for their clients' input
	// (see docs/gateway.md); a call finding no process it may use waits
	// for one, within CallTimeout.
	MaxProcesses int `json:"maxProcesses,omitempty"`
	// MaxCallsPerCaller bounds the processes the calls of one caller
	// (weft.Request.Caller and the rate key) of a 2025-era command
	// upstream run or wait on at once (default half of MaxProcesses, at
	// least 1): the others keep a share. A caller's calls waiting for
	// input share the processes it holds.
	MaxCallsPerCaller int `json:"maxCallsPerCaller,omitempty"`
	// OneCallPerProcess keeps a 2025-era command upstream's process to one
	// call from its start to its end, waiting for its client's input
	// included, instead of letting the caller's other calls run on it
	// meanwhile. For servers that handle one request at a time (the
	// parked call's question would block the next call's answer); each
	// waiting call then holds a process of its caller's share.
	OneCallPerProcess bool `json:"oneCallPerProcess,omitempty"`
	// MaxParkedCalls bounds the calls of a 2025-era upstream waiting for
	// their client's input on one gateway instance (default 64); they hold
	// no process of their own. MaxParkedPerCaller bounds one caller's
	// (default 8; below MaxParkedCalls).
	MaxParkedCalls     int `json:"maxParkedCalls,omitempty"`
	MaxParkedPerCaller int `json:"maxParkedPerCaller,omitempty"`

	// CallTimeout bounds one upstream call (default 60s; a parked call is
	// bounded by Input.Lifetime instead).
	CallTimeout Duration `json:"callTimeout,omitzero"`
	// ConnectTimeout bounds starting and initializing the upstream
	// (default 20s).
	ConnectTimeout Duration `json:"connectTimeout,omitzero"`
	// ShutdownTimeout is how long a command gets to exit after its stdin is
	// closed, and again after SIGTERM, before SIGKILL (default 5s).
	ShutdownTimeout Duration `json:"shutdownTimeout,omitzero"`
}

// Root is a root an upstream is told of (roots/list).
type Root struct {
	// URI is a file:// URI.
	URI string `json:"uri"`
	// Name is its display name (optional).
	Name string `json:"name,omitempty"`
}

// InputConfig bounds the calls of 2025-era upstreams that wait ("parked")
// for the answers of a 2026-07-28 client's retry.
type InputConfig struct {
	// MaxRounds bounds the input rounds of one call (default 10).
	MaxRounds int `json:"maxRounds,omitempty"`
	// MaxParked bounds the parked calls of the whole store (default 10,000).
	MaxParked int `json:"maxParked,omitempty"`
	// MaxParkedPerPartition bounds the parked calls of one authorization
	// partition (default 100).
	MaxParkedPerPartition int `json:"maxParkedPerPartition,omitempty"`
	// Lifetime bounds a call that asks for input, from its start: a call
	// whose client has not retried by then is cancelled upstream
	// (default 10m, at most 24h).
	Lifetime Duration `json:"lifetime,omitzero"`
	// Lease is how long the record of a parked call outlives the instance
	// holding the call when that instance stops without removing it (a
	// crash, a kill): the instance renews the records of its parked calls
	// every Lease/3, and a retry finds a record that was not renewed for
	// Lease gone, at once or, already waiting, within Lease, and gets a
	// clear error instead of waiting for an answer that cannot come
	// (default 15s, 1s..5m, at most Lifetime).
	Lease Duration `json:"lease,omitzero"`
}

// Values of UpstreamConfig.StdoutNoise.
const (
	StdoutNoiseFail = "fail"
	StdoutNoiseLog  = "log"
)

// InputKinds returns the names UpstreamConfig.Inputs may hold.
func InputKinds() []string { return []string{"form", "url", "sampling", "roots"} }

// Defaults and ceilings of the configuration.
const (
	DefaultCallTimeout           = 60 * time.Second
	DefaultConnectTimeout        = 20 * time.Second
	DefaultShutdownTimeout       = 5 * time.Second
	DefaultMaxProcesses          = 8
	DefaultMaxRounds             = 10
	DefaultMaxParked             = 10000
	DefaultMaxParkedPerPartition = 100
	DefaultMaxCallsPerCaller     = DefaultMaxProcesses / 2 // half of MaxProcesses when that is set
	DefaultMaxParkedCalls        = 64
	DefaultMaxParkedPerCaller    = 8
	DefaultLifetime              = 10 * time.Minute
	MaxLifetime                  = 24 * time.Hour
	DefaultLease                 = 15 * time.Second
	MinLease                     = time.Second
	MaxLease                     = 5 * time.Minute
	// Ceilings: larger values are configuration errors.
	MaxProcessesCeiling = 1000
	MaxRoundsCeiling    = 1000
	MaxParkedCeiling    = 1_000_000 // of MaxParked and MaxParkedPerPartition
)

func (u *UpstreamConfig) callTimeout() time.Duration {
	return or(u.CallTimeout.D(), DefaultCallTimeout)
}
func (u *UpstreamConfig) maxProcesses() int {
	if u.MaxProcesses > 0 {
		return u.MaxProcesses
	}
	return DefaultMaxProcesses
}
func (u *UpstreamConfig) maxCallsPerCaller() int {
	switch {
	case u.MaxCallsPerCaller > 0:
		return u.MaxCallsPerCaller
	case u.MaxProcesses > 0:
		return max(1, u.MaxProcesses/2)
	}
	return DefaultMaxCallsPerCaller
}
func (u *UpstreamConfig) maxParkedCalls() int {
	if u.MaxParkedCalls > 0 {
		return u.MaxParkedCalls
	}
	return DefaultMaxParkedCalls
}
func (u *UpstreamConfig) maxParkedPerCaller() int {
	if u.MaxParkedPerCaller > 0 {
		return u.MaxParkedPerCaller
	}
	return min(DefaultMaxParkedPerCaller, max(1, u.maxParkedCalls()/2))
}
func (u *UpstreamConfig) connectTimeout() time.Duration {
	return or(u.ConnectTimeout.D(), DefaultConnectTimeout)
}
func (u *UpstreamConfig) shutdownTimeout() time.Duration {
	return or(u.ShutdownTimeout.D(), DefaultShutdownTimeout)
}

func (c InputConfig) withDefaults() InputConfig {
	if c.MaxRounds <= 0 {
		c.MaxRounds = DefaultMaxRounds
	}
	if c.MaxParked <= 0 {
		c.MaxParked = DefaultMaxParked
	}
	if c.MaxParkedPerPartition <= 0 {
		c.MaxParkedPerPartition = DefaultMaxParkedPerPartition
	}
	if c.Lifetime <= 0 {
		c.Lifetime = Duration(DefaultLifetime)
	}
	if c.Lease <= 0 {
		c.Lease = Duration(min(DefaultLease, c.Lifetime.D()))
	}
	return c
}

// heartbeat is how often an instance renews the records of its parked
// calls: three times per lease, so that a renewal late by up to two
// periods (a slow store) loses nothing.
func (c InputConfig) heartbeat() time.Duration { return max(c.Lease.D()/3, time.Millisecond) }

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Duration is a time.Duration written as a Go duration string ("30s",
// "5m") in configuration files.
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// LoadConfig reads a JSON (.json) or YAML (.yaml, .yml) configuration file.
// Relative Dir entries are resolved against the file's directory.
func LoadConfig(file string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	format := "json"
	switch strings.ToLower(filepath.Ext(file)) {
	case ".yaml", ".yml":
		format = "yaml"
	}
	c, err := ParseConfig(b, format)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", file, err)
	}
	// Relative paths are the file's: a command runs in the file's
	// directory unless dir says otherwise (relative to the file too), so a
	// relative command or argument means the same wherever the gateway
	// starts.
	base, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", file, err)
	}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		if u.Command == "" {
			continue
		}
		switch {
		case u.Dir == "":
			u.Dir = base
		case !filepath.IsAbs(u.Dir):
			u.Dir = filepath.Join(base, u.Dir)
		}
	}
	return c, nil
}

// maxConfigBytes bounds a configuration document.
const maxConfigBytes = 1 << 20

// ParseConfig parses and validates a configuration in format "json" or
// "yaml". Unknown fields are errors.
func ParseConfig(data []byte, format string) (*Config, error) {
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("configuration is larger than %d bytes", maxConfigBytes)
	}
	var lines func(err error) string // the line an error of the decoder is about ("": unknown)
	switch format {
	case "json":
		lines = func(err error) string { return jsonLine(data, err) }
	case "yaml":
		var node yaml.Node
		if err := yaml.Unmarshal(data, &node); err != nil {
			return nil, fmt.Errorf("YAML: %w", err)
		}
		keepDates(&node)
		var doc any
		if err := node.Decode(&doc); err != nil {
			return nil, fmt.Errorf("YAML: %w", err)
		}
		j, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("YAML: %w (keys must be strings)", err)
		}
		data = j
		lines = func(err error) string { return yamlLine(&node, err) }
	default:
		return nil, fmt.Errorf("unknown configuration format %q (want json or yaml)", format)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("configuration: %s%s", lines(err), decodeError(err))
	}
	if dec.More() {
		return nil, errors.New("configuration: trailing data after the document")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// decodeError describes an error of the JSON decoder in the words of the
// configuration (the same for YAML, which is decoded as JSON).
func decodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: a %s cannot be a %s", te.Field, te.Value, te.Type)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// errorKey is the configuration key an error of the JSON decoder is about
// ("" when it names none).
func errorKey(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		f := te.Field
		return f[strings.LastIndex(f, ".")+1:]
	}
	if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if s, err := strconv.Unquote(k); err == nil {
			return s
		}
	}
	return ""
}

// jsonLine returns "line N: " for an error of the decoder of the JSON
// document data: at the error's offset, else at the first occurrence of
// the key it names.
func jsonLine(data []byte, err error) string {
	off := int64(-1)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te) && te.Field != "":
		off = te.Offset
	}
	if k := errorKey(err); off < 0 && k != "" {
		if i := bytes.Index(data, []byte(strconv.Quote(k)+":")); i >= 0 {
			off = int64(i) + 1
		} else if i := bytes.Index(data, []byte(strconv.Quote(k))); i >= 0 {
			off = int64(i) + 1
		}
	}
	if off < 0 || off > int64(len(data)) {
		return ""
	}
	return fmt.Sprintf("line %d: ", 1+bytes.Count(data[:max(off-1, 0)], []byte("\n")))
}

// keepDates makes the plain scalars YAML would read as timestamps strings as
// written, so that an unquoted protocol revision (protocol: 2025-11-25) is
// the revision, not midnight of that day.
func keepDates(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Style == 0 && n.ShortTag() == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		keepDates(c)
	}
}

// yamlLine returns "line N: " for an error of the decoder of the YAML
// document node: the line of the first key named like the key the error
// is about.
func yamlLine(node *yaml.Node, err error) string {
	k := errorKey(err)
	if k == "" {
		return ""
	}
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					return n.Content[i].Line
				}
			}
		}
		for _, c := range n.Content {
			if l := find(c); l > 0 {
				return l
			}
		}
		return 0
	}
	if l := find(node); l > 0 {
		return fmt.Sprintf("line %d: ", l)
	}
	return ""
}

// Validate reports the first problem of the configuration.
func (c *Config) Validate() error {
	if len(c.Upstreams) == 0 {
		return errors.New("configuration: no upstreams")
	}
	seen := map[string]bool{}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		if err := u.validate(); err != nil {
			if u.Name != "" {
				return fmt.Errorf("upstream %q: %w", u.Name, err)
			}
			return fmt.Errorf("upstream %d: %w", i+1, err)
		}
		if seen[u.Name] {
			return fmt.Errorf("upstream %q: the name is used twice", u.Name)
		}
		seen[u.Name] = true
	}
	in := c.Input
	switch {
	case in.MaxRounds < 0 || in.MaxRounds > MaxRoundsCeiling:
		return fmt.Errorf("input.maxRounds = %d is outside 0..%d", in.MaxRounds, MaxRoundsCeiling)
	case in.MaxParked < 0 || in.MaxParked > MaxParkedCeiling:
		return fmt.Errorf("input.maxParked = %d is outside 0..%d", in.MaxParked, MaxParkedCeiling)
	case in.MaxParkedPerPartition < 0 || in.MaxParkedPerPartition > MaxParkedCeiling:
		return fmt.Errorf("input.maxParkedPerPartition = %d is outside 0..%d", in.MaxParkedPerPartition, MaxParkedCeiling)
	case in.Lifetime < 0 || in.Lifetime.D() > MaxLifetime:
		return fmt.Errorf("input.lifetime = %s is outside 0..%s", in.Lifetime.D(), MaxLifetime)
	case in.Lease < 0 || in.Lease != 0 && (in.Lease.D() < MinLease || in.Lease.D() > MaxLease):
		return fmt.Errorf("input.lease = %s is outside %s..%s", in.Lease.D(), MinLease, MaxLease)
	case in.Lease.D() > in.withDefaults().Lifetime.D():
		return fmt.Errorf("input.lease = %s exceeds input.lifetime (%s)", in.Lease.D(), in.withDefaults().Lifetime.D())
	}
	return c.validateCallers()
}

func validName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func (u *UpstreamConfig) validate() error {
	if !validName(u.Name, 64) {
		return fmt.Errorf("name %q must be 1-64 characters of A-Z a-z 0-9 _ . -", u.Name)
	}
	switch {
	case u.Command == "" && u.URL == "":
		return errors.New("set command (stdio) or url (Streamable HTTP)")
	case u.Command != "" && u.URL != "":
		return errors.New("set command or url, not both")
	case u.URL != "":
		p, err := url.Parse(u.URL)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("url %q is not an http or https URL", u.URL)
		}
		if len(u.Args) > 0 || len(u.Env) > 0 || u.Dir != "" || u.CleanEnv || u.StdoutNoise != "" {
			return errors.New("args, env, dir, cleanEnv and stdoutNoise apply to command upstreams only")
		}
	case u.Command != "":
		if len(u.Headers) > 0 || u.Authorization != "" {
			return errors.New("headers and authorization apply to url upstreams only")
		}
	}
	switch u.StdoutNoise {
	case "", StdoutNoiseFail, StdoutNoiseLog:
	default:
		return fmt.Errorf("stdoutNoise %q: want %q or %q", u.StdoutNoise, StdoutNoiseFail, StdoutNoiseLog)
	}
	switch u.Authorization {
	case "":
	case "passthrough":
		if u.Protocol != "" && u.Protocol != Version20260728 {
			return errors.New(`authorization "passthrough" needs a 2026-07-28 upstream (a 2025 session is bound to one identity)`)
		}
		if _, ok := u.Headers["Authorization"]; ok {
			return errors.New(`authorization "passthrough" and an Authorization header exclude each other`)
		}
	default:
		return fmt.Errorf(`authorization %q: want "" or "passthrough"`, u.Authorization)
	}
	if err := u.OAuth.validate(u); err != nil {
		return err
	}
	if u.Protocol != "" && u.Protocol != Version20260728 && !slices.Contains(legacyVersions[:2], u.Protocol) {
		return fmt.Errorf("protocol %q: want %s, %s or %s", u.Protocol, Version20260728, Version20251125, Version20250618)
	}
	if u.Prefix != "" && !validName(u.Prefix, 64) {
		return fmt.Errorf("prefix %q must be 1-64 characters of A-Z a-z 0-9 _ . -", u.Prefix)
	}
	if p := u.ResourcePrefix; p != nil && *p != "" && !validName(*p, 64) {
		return fmt.Errorf("resourcePrefix %q must be empty or 1-64 characters of A-Z a-z 0-9 _ . -", *p)
	}
	for _, p := range append(slices.Clone(u.Include), u.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	if u.MaxProcesses < 0 || u.MaxProcesses > MaxProcessesCeiling {
		return fmt.Errorf("maxProcesses = %d is outside 0..%d", u.MaxProcesses, MaxProcessesCeiling)
	}
	if u.URLElicitation != nil {
		if err := u.URLElicitation.validate(); err != nil {
			return err
		}
	}
	for i, r := range u.Roots {
		if !strings.HasPrefix(r.URI, "file://") {
			return fmt.Errorf("roots[%d].uri = %q is not a file:// URI", i, r.URI)
		}
		if _, err := url.Parse(r.URI); err != nil {
			return fmt.Errorf("roots[%d].uri = %q: %w", i, r.URI, err)
		}
	}
	if u.MaxCallsPerCaller < 0 || u.MaxCallsPerCaller > u.maxProcesses() {
		return fmt.Errorf("maxCallsPerCaller = %d is outside 0..maxProcesses (%d)", u.MaxCallsPerCaller, u.maxProcesses())
	}
	if u.MaxCallsPerCaller > 0 && u.Command == "" {
		return errors.New("maxCallsPerCaller applies to command upstreams only")
	}
	if u.OneCallPerProcess && u.Command == "" {
		return errors.New("oneCallPerProcess applies to command upstreams only")
	}
	if u.MaxParkedCalls < 0 || u.MaxParkedCalls > MaxParkedCeiling {
		return fmt.Errorf("maxParkedCalls = %d is outside 0..%d", u.MaxParkedCalls, MaxParkedCeiling)
	}
	if u.MaxParkedPerCaller < 0 || u.MaxParkedPerCaller > 0 && u.MaxParkedPerCaller >= u.maxParkedCalls() {
		return fmt.Errorf("maxParkedPerCaller = %d must be below maxParkedCalls (%d), so that one caller cannot fill it", u.MaxParkedPerCaller, u.maxParkedCalls())
	}
	if u.MaxProcesses > 0 && u.Command == "" {
		return errors.New("maxProcesses applies to command upstreams only")
	}
	for _, k := range u.Inputs {
		if !slices.Contains(InputKinds(), k) {
			return fmt.Errorf("inputs: %q is not one of %s", k, strings.Join(InputKinds(), ", "))
		}
	}
	for from, to := range u.Rename {
		if !validName(to, 128) {
			return fmt.Errorf("rename %q: %q must be 1-128 characters of A-Z a-z 0-9 _ . -", from, to)
		}
	}
	return nil
}

// expand replaces ${VAR} and $VAR with the gateway's environment.
func expand(s string) string { return os.ExpandEnv(s) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// exposedName maps an upstream item name to the name the gateway exposes,
// and reports false when the rules leave it out.
func (u *UpstreamConfig) exposedName(name string) (string, bool) {
	if len(u.Include) > 0 && !matchAny(u.Include, name) {
		return "", false
	}
	if matchAny(u.Exclude, name) {
		return "", false
	}
	if to, ok := u.Rename[name]; ok {
		return to, true
	}
	return u.Prefix + name, true
}

// uris returns the mapping of the upstream's resource URIs (see uriMap).
func (u *UpstreamConfig) uris() uriMap {
	if u.ResourcePrefix != nil {
		return uriMap{prefix: *u.ResourcePrefix}
	}
	return uriMap{prefix: strings.TrimRight(u.Prefix, "_.-")}
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
