package openapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/ecmare"
)

// Defaults of [Options].
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	DefaultMaxErrorBytes    = 2048
	DefaultMaxDocumentBytes = 16 << 20
	DefaultMaxSchemaNodes   = 200_000
	// DefaultMaxInlineSchemaBytes bounds (roughly) the bytes of one tool
	// schema after which references not yet copied are summarised.
	DefaultMaxInlineSchemaBytes = 4 << 10
	// DefaultMaxDocumentDepth bounds the nesting the document's flow
	// collections ({...} and [...]) can build, two levels per collection
	// (see MaxDocumentDepth): room for schemas nested 128 levels (two
	// collections each: the schema and its properties) under the
	// document's own levels.
	DefaultMaxDocumentDepth = 600
	DefaultResourceScheme   = "openapi"
	// ConfirmExtension is the operation extension that asks for (true) or
	// waives (false) a confirmation round, whatever the method.
	ConfirmExtension = "x-mcp-confirm"
)

// Kind says what an operation becomes on the MCP server.
type Kind uint8

// The kinds.
const (
	KindTool             Kind = iota + 1 // a tool (the default)
	KindResource                         // a resource (GET without parameters)
	KindResourceTemplate                 // a resource template (GET with path and query parameters of scalar types)
	KindExcluded                         // not served
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindTool:
		return "tool"
	case KindResource:
		return "resource"
	case KindResourceTemplate:
		return "resource template"
	case KindExcluded:
		return "excluded"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Route maps matching operations to a kind, as FastMCP's route maps do.
// Every non-empty criterion must match; the first matching route of
// [Options.Routes] wins. A route to KindResource or KindResourceTemplate
// only applies to GET operations that fit it (see [Kind]); others stay tools.
type Route struct {
	Methods []string // HTTP methods, any case; empty: all
	Paths   []string // path.Match patterns over the path template ("/pets/*"); empty: all
	Tags    []string // at least one of these tags; empty: all
	Kind    Kind
}

// Authorizer adds the upstream credentials to an outgoing request. It sees
// the MCP request (its verified [weft.Identity], and its headers) and the
// upstream request it may change. An error fails the call with a tool error
// that shows only the error's text.
type Authorizer func(ctx context.Context, req *weft.Request, upstream *http.Request) error

// Options configure [New]. The zero value serves every operation as a tool
// against the document's first server with [http.DefaultClient].
type Options struct {
	// BaseURL of the upstream API; empty means the document's first server
	// URL (with its variables' defaults), which must then be absolute.
	BaseURL string
	// HTTPClient sends the upstream requests (default http.DefaultClient).
	HTTPClient *http.Client
	// Timeout bounds one upstream request, response body included
	// (default 30s).
	Timeout time.Duration
	// MaxResponseBytes bounds an upstream response body; a larger one fails
	// the call (default 1 MiB).
	MaxResponseBytes int64
	// MaxErrorBytes bounds the part of a non-2xx body shown in the tool
	// error (default 2 KiB).
	MaxErrorBytes int
	// MaxDocumentBytes bounds the OpenAPI document (default 16 MiB).
	MaxDocumentBytes int
	// MaxSchemaNodes bounds the nodes of one operation's converted schemas
	// (default 200,000).
	MaxSchemaNodes int
	// MaxDocumentDepth bounds the nesting of the document's flow
	// collections ({...} and [...], all of a JSON document's nesting),
	// checked in one pass over the bytes before anything parses them.
	// Each collection counts two levels, since YAML may wrap it in an
	// implicit mapping as a key (default 600: 300 nested collections).
	MaxDocumentDepth int
	// MaxInlineSchemaBytes: once one tool schema (input or output) has
	// copied about this many bytes, a referenced schema not yet in its
	// $defs is summarised instead (its type, and a description naming the
	// resource SCHEME://schemas/NAME that holds it), so a document whose
	// schemas all reach each other (Stripe) makes tools of bounded size and
	// writes a widely shared definition once (default 4 KiB).
	MaxInlineSchemaBytes int

	// Authorize adds upstream credentials; nil sends none. See
	// [StaticHeader], [BearerPassThrough] and docs/openapi.md on the
	// confused-deputy risk.
	Authorize Authorizer

	// IncludeTags, IncludeOperations (operationIds) and IncludePaths
	// (path.Match patterns) select operations: when any is set an
	// operation must match one of them. The Exclude lists then remove
	// operations.
	IncludeTags, IncludeOperations, IncludePaths []string
	ExcludeTags, ExcludeOperations, ExcludePaths []string
	// Rename maps an operationId (or, for an operation without one, the
	// generated name) to the tool or resource name to use.
	Rename map[string]string
	// Routes turn operations into resources or templates, or exclude them.
	Routes []Route
	// ResourceScheme is the URI scheme of resources (default "openapi").
	ResourceScheme string

	// Confirm decides which tools ask the user to confirm before the
	// request is sent (form elicitation with framework-protected state);
	// nil means [DefaultConfirm]. The server needs a Protector.
	Confirm func(op *Operation) bool
	// NoOutputSchemas leaves output schemas out of the tools.
	NoOutputSchemas bool
	// Strict refuses the whole document when one selected operation cannot
	// be served. By default such an operation is left out (Kind
	// KindExcluded, its Problem set) with a warning naming it and why.
	Strict bool
}

// Warning is something New did not serve as the document says: an
// operation left out, or a parameter dropped.
type Warning struct {
	// Operation names the operation: "operationId (METHOD /path)".
	Operation string
	// Message says what was not served and why.
	Message string
}

// String renders the warning as one line.
func (w Warning) String() string { return w.Operation + ": " + w.Message }

// DefaultConfirm asks for confirmation before DELETE operations and before
// any operation whose x-mcp-confirm extension is true; x-mcp-confirm: false
// waives it.
func DefaultConfirm(op *Operation) bool {
	if v, ok := op.Extensions[ConfirmExtension]; ok {
		b, isBool := v.AsBool()
		return isBool && b
	}
	return op.Method == http.MethodDelete
}

// Operation describes one operation of the document and what it became.
type Operation struct {
	Method      string // upper case
	Path        string // the path template, as written
	OperationID string
	Summary     string
	Description string
	Tags        []string
	Deprecated  bool
	// Extensions are the operation's x- members.
	Extensions map[string]exactjson.Value

	// Name is the tool or resource name.
	Name string
	Kind Kind
	// URI is the resource URI or URI template (resources only).
	URI string
	// Confirm: the tool asks the user before sending the request.
	Confirm bool
	// InputSchema and OutputSchema are the tool's JSON Schema 2020-12
	// documents (OutputSchema may be empty).
	InputSchema  []byte
	OutputSchema []byte
	// Problem says why a selected operation is not served (Kind is then
	// KindExcluded); empty for served operations and for those the
	// selection options excluded.
	Problem string

	plan *plan
}

// API is an OpenAPI document mapped to MCP tools and resources.
type API struct {
	opts         Options
	version      string
	base         *url.URL
	ops          []*Operation
	warnings     []Warning
	shared       *sharedSchemas
	noted        map[string]bool // schema notes already warned
	confirmInput weft.TypedFormInput[confirmation]
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// New reads an OpenAPI 3.0 or 3.1 document (JSON or YAML) and maps its
// operations. It never fetches anything: references must be local to the
// document.
func New(doc []byte, o *Options) (*API, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	opts = opts.withDefaults()
	if len(doc) > opts.MaxDocumentBytes {
		return nil, fmt.Errorf("openapi: document is %d bytes, more than MaxDocumentBytes (%d)", len(doc), opts.MaxDocumentBytes)
	}
	// The YAML parser's and libopenapi's cost grows with nesting times
	// size: refuse a deep document before either sees it.
	if _, err := flowDepth(doc, opts.MaxDocumentDepth); err != nil {
		return nil, err
	}
	d, err := libopenapi.NewDocumentWithConfiguration(doc, &datamodel.DocumentConfiguration{
		IgnorePolymorphicCircularReferences: true,
		IgnoreArrayCircularReferences:       true,
		// Problems come back as errors; the parser's own log stays quiet.
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	v := d.GetVersion()
	if !strings.HasPrefix(v, "3.0") && !strings.HasPrefix(v, "3.1") {
		return nil, fmt.Errorf("openapi: version %q is not supported (3.0 and 3.1 are)", v)
	}
	m, err := d.BuildV3Model()
	if m == nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if err != nil && !onlyCircular(err) {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	root := d.GetSpecInfo().RootNode
	a := &API{opts: opts, version: v, noted: map[string]bool{}}
	a.shared = newSharedSchemas(root, strings.HasPrefix(v, "3.0"), opts.ResourceScheme, opts.MaxSchemaNodes, opts.MaxInlineSchemaBytes)
	if a.base, err = baseURL(opts.BaseURL, m.Model.Servers); err != nil {
		return nil, err
	}
	a.confirmInput = newConfirmInput(a.base.Host)
	if err := a.confirmInput.Err(); err != nil {
		return nil, fmt.Errorf("openapi: confirmation form: %w", err)
	}
	names := map[string]bool{}
	if m.Model.Paths != nil {
		for p, item := range m.Model.Paths.PathItems.FromOldest() {
			if item == nil {
				continue
			}
			for _, method := range methods {
				o := operationOf(item, method)
				if o == nil {
					continue
				}
				op, err := a.operation(root, strings.HasPrefix(v, "3.0"), p, strings.ToUpper(method), item, o, names)
				if err != nil {
					if opts.Strict {
						return nil, err
					}
					// Leave the operation out, saying which and why.
					op = &Operation{Method: strings.ToUpper(method), Path: p, OperationID: o.OperationId, Tags: o.Tags,
						Kind: KindExcluded}
					op.Problem = strings.TrimPrefix(err.Error(), "openapi: "+where(op)+": ")
					a.warnings = append(a.warnings, Warning{Operation: where(op), Message: "left out: " + op.Problem})
				}
				a.ops = append(a.ops, op)
			}
		}
	}
	return a, nil
}

// onlyCircular reports whether a model-building error lists only circular
// references, which the converter handles through $defs.
func onlyCircular(err error) bool {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if !strings.Contains(strings.ToLower(e.Error()), "circular") {
			return false
		}
	}
	return true
}

func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxErrorBytes <= 0 {
		o.MaxErrorBytes = DefaultMaxErrorBytes
	}
	if o.MaxDocumentBytes <= 0 {
		o.MaxDocumentBytes = DefaultMaxDocumentBytes
	}
	if o.MaxSchemaNodes <= 0 {
		o.MaxSchemaNodes = DefaultMaxSchemaNodes
	}
	if o.MaxInlineSchemaBytes <= 0 {
		o.MaxInlineSchemaBytes = DefaultMaxInlineSchemaBytes
	}
	if o.MaxDocumentDepth <= 0 {
		o.MaxDocumentDepth = DefaultMaxDocumentDepth
	}
	if o.ResourceScheme == "" {
		o.ResourceScheme = DefaultResourceScheme
	}
	if o.Confirm == nil {
		o.Confirm = DefaultConfirm
	}
	return o
}

func baseURL(override string, servers []*v3.Server) (*url.URL, error) {
	raw := override
	if raw == "" {
		if len(servers) == 0 {
			return nil, errors.New("openapi: the document has no servers: set Options.BaseURL")
		}
		s := servers[0]
		raw = s.URL
		for name, v := range s.Variables.FromOldest() {
			raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openapi: base URL %q must be an absolute http or https URL (set Options.BaseURL)", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("openapi: base URL %q must have no query or fragment", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return u, nil
}

func operationOf(item *v3.PathItem, method string) *v3.Operation {
	switch method {
	case "get":
		return item.Get
	case "put":
		return item.Put
	case "post":
		return item.Post
	case "delete":
		return item.Delete
	case "options":
		return item.Options
	case "head":
		return item.Head
	case "patch":
		return item.Patch
	case "trace":
		return item.Trace
	}
	return nil
}

// operation maps one operation.
func (a *API) operation(root *yaml.Node, v30 bool, p, method string, item *v3.PathItem, o *v3.Operation, names map[string]bool) (*Operation, error) {
	op := &Operation{Method: method, Path: p, OperationID: o.OperationId, Summary: strings.TrimSpace(o.Summary),
		Description: strings.TrimSpace(o.Description), Tags: o.Tags, Extensions: map[string]exactjson.Value{}}
	if o.Deprecated != nil {
		op.Deprecated = *o.Deprecated
	}
	conv := a.newConverter(root, v30)
	conv.omit = "readOnly"
	for k, n := range o.Extensions.FromOldest() {
		v, err := conv.data(n, 0)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s %s: extension %s: %w", method, p, k, err)
		}
		op.Extensions[k] = v
	}
	where := where(op)
	warn := func(msg string) { a.warnings = append(a.warnings, Warning{Operation: where, Message: msg}) }
	// A note on a schema (a pattern translated) is given once, for the
	// first operation that reaches it: shared schemas would repeat it.
	conv.warn = func(msg string) {
		if !a.noted[msg] {
			a.noted[msg] = true
			warn(msg)
		}
	}
	if !a.selected(op) {
		op.Kind = KindExcluded
		return op, nil
	}
	name := sanitize(op.OperationID, 128)
	if name == "" {
		name = sanitize(strings.ToLower(method)+"_"+strings.NewReplacer("{", "", "}", "").Replace(p), 128)
	}
	key := op.OperationID
	if key == "" {
		key = name
	}
	if r, ok := a.opts.Rename[key]; ok {
		name = r
	}
	base := name
	for i := 2; names[name]; i++ {
		suffix := "_" + strconv.Itoa(i)
		name = base[:min(len(base), 128-len(suffix))] + suffix
	}
	names[name] = true
	op.Name = name

	conv.idBase = "urn:weft:openapi:" + name + ":input:"
	pl, err := a.buildPlan(conv, method, p, item, o, warn)
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", where, err)
	}
	op.plan = pl
	op.InputSchema = pl.input
	if !a.opts.NoOutputSchemas {
		op.OutputSchema = pl.output
	}
	op.Kind = a.route(op)
	if op.Kind == KindTool {
		op.Confirm = a.opts.Confirm(op)
	} else {
		op.URI = pl.resourceURI(a.opts.ResourceScheme, name)
	}
	// The document's schemas are copied as written, so a keyword with a
	// wrong value (maximum: null) would make an invalid tool: refuse it here,
	// with the operation's name.
	if _, err := compile(op.InputSchema); err != nil {
		return nil, fmt.Errorf("openapi: %s: the input schema is not valid JSON Schema 2020-12 (exclude the operation or fix the document): %w", where, err)
	}
	if op.Kind == KindTool && len(op.OutputSchema) > 0 {
		if pl.outValidator, err = compile(op.OutputSchema); err != nil {
			return nil, fmt.Errorf("openapi: %s: output schema: %w", where, err)
		}
	}
	return op, nil
}

func (a *API) selected(op *Operation) bool {
	o := a.opts
	match := func(ops, tags, paths []string) bool {
		if slices.Contains(ops, op.OperationID) && op.OperationID != "" {
			return true
		}
		for _, t := range op.Tags {
			if slices.Contains(tags, t) {
				return true
			}
		}
		return pathMatch(paths, op.Path)
	}
	if len(o.IncludeTags)+len(o.IncludeOperations)+len(o.IncludePaths) > 0 && !match(o.IncludeOperations, o.IncludeTags, o.IncludePaths) {
		return false
	}
	return !match(o.ExcludeOperations, o.ExcludeTags, o.ExcludePaths)
}

func pathMatch(patterns []string, p string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
	}
	return false
}

func (a *API) route(op *Operation) Kind {
	for _, r := range a.opts.Routes {
		if len(r.Methods) > 0 && !slices.ContainsFunc(r.Methods, func(m string) bool { return strings.EqualFold(m, op.Method) }) {
			continue
		}
		if len(r.Paths) > 0 && !pathMatch(r.Paths, op.Path) {
			continue
		}
		if len(r.Tags) > 0 && !slices.ContainsFunc(op.Tags, func(t string) bool { return slices.Contains(r.Tags, t) }) {
			continue
		}
		switch r.Kind {
		case KindExcluded:
			return KindExcluded
		case KindResource, KindResourceTemplate:
			if k, ok := op.plan.resourceKind(op.Method); ok {
				return k
			}
			return KindTool
		}
		return KindTool
	}
	return KindTool
}

// where names an operation in errors and warnings.
func where(op *Operation) string {
	w := op.Method + " " + op.Path
	if op.OperationID != "" {
		w = op.OperationID + " (" + w + ")"
	}
	return w
}

// Warnings returns what New did not serve as the document says, in
// document order: operations left out (unless Options.Strict) and
// parameters dropped.
func (a *API) Warnings() []Warning { return slices.Clone(a.warnings) }

// Operations returns every operation of the document in document order,
// excluded ones included (with Kind KindExcluded). They are copies:
// changing them changes nothing served.
func (a *API) Operations() []*Operation {
	out := make([]*Operation, len(a.ops))
	for i, op := range a.ops {
		c := *op
		c.Tags = slices.Clone(op.Tags)
		c.Extensions = maps.Clone(op.Extensions)
		c.InputSchema = slices.Clone(op.InputSchema)
		c.OutputSchema = slices.Clone(op.OutputSchema)
		out[i] = &c
	}
	return out
}

// BaseURL returns the upstream base URL requests are sent to.
func (a *API) BaseURL() string { return a.base.String() }

// Version returns the document's OpenAPI version.
func (a *API) Version() string { return a.version }

// newConverter makes a converter for one tool schema.
func (a *API) newConverter(root *yaml.Node, v30 bool) *converter {
	c := newConverter(root, v30, a.opts.MaxSchemaNodes)
	c.inline, c.shared = a.opts.MaxInlineSchemaBytes, a.shared
	return c
}

// Register adds the API's tools, resources and resource templates to s,
// and the template of the schema resources when a tool schema summarises
// a definition ([API.SchemaTemplate]).
func (a *API) Register(s *weft.Server) error {
	if len(a.SharedSchemas()) > 0 {
		for _, op := range a.ops {
			if (op.Kind == KindResource || op.Kind == KindResourceTemplate) && op.Name == "schemas" {
				return fmt.Errorf("openapi: the resource %q takes the name of the schema resources (%s): rename the operation (Options.Rename)", op.URI, a.shared.template())
			}
		}
		err := s.AddResourceTemplate(weft.ResourceTemplate{URITemplate: a.shared.template(), Name: "schemas",
			Title:       "Schemas of the API",
			Description: "The definitions tool schemas summarise instead of copying, one JSON Schema 2020-12 document each.",
			MimeType:    SchemaResourceMIME}, a.schemaHandler())
		if err != nil {
			return fmt.Errorf("openapi: schema resources: %w", err)
		}
	}
	for _, op := range a.ops {
		var err error
		switch op.Kind {
		case KindTool:
			err = s.AddTool(a.tool(op), a.toolHandler(op))
		case KindResource:
			err = s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: op.URI, Name: op.Name,
				Title: op.Summary, Description: describe(op), MimeType: op.plan.resourceMIME()}}, a.resourceHandler(op))
		case KindResourceTemplate:
			err = s.AddResourceTemplate(weft.ResourceTemplate{URITemplate: op.URI, Name: op.Name, Title: op.Summary,
				Description: describe(op), MimeType: op.plan.resourceMIME()}, a.resourceHandler(op))
		}
		if err != nil {
			return fmt.Errorf("openapi: %s: %w", op.Name, err)
		}
	}
	return nil
}

// Tools returns the tool definitions Register adds.
func (a *API) Tools() []weft.Tool {
	var out []weft.Tool
	for _, op := range a.ops {
		if op.Kind == KindTool {
			out = append(out, a.tool(op))
		}
	}
	return out
}

func describe(op *Operation) string {
	var parts []string
	if op.Summary != "" {
		parts = append(parts, op.Summary)
	}
	if op.Description != "" && op.Description != op.Summary {
		parts = append(parts, op.Description)
	}
	if len(parts) == 0 {
		parts = append(parts, op.Method+" "+op.Path)
	}
	if op.Deprecated {
		parts = append([]string{"Deprecated."}, parts...)
	}
	return strings.Join(parts, "\n\n")
}

func (a *API) tool(op *Operation) weft.Tool {
	t := weft.Tool{Name: op.Name, Title: op.Summary, Description: describe(op), InputSchema: op.InputSchema,
		OutputSchema: op.OutputSchema, Annotations: annotations(op)}
	if op.Confirm {
		t.Inputs = []weft.Input{a.confirmInput}
		t.StateMode = weft.StateFramework
	}
	return t
}

func annotations(op *Operation) *weft.ToolAnnotations {
	yes, no := true, false
	an := &weft.ToolAnnotations{Title: op.Summary, OpenWorldHint: &yes}
	switch op.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		an.ReadOnlyHint, an.IdempotentHint, an.DestructiveHint = &yes, &yes, &no
	case http.MethodPut:
		an.ReadOnlyHint, an.IdempotentHint = &no, &yes
	case http.MethodDelete:
		an.ReadOnlyHint, an.IdempotentHint, an.DestructiveHint = &no, &yes, &yes
	default:
		an.ReadOnlyHint = &no
	}
	return an
}

// compile compiles a generated schema as JSON Schema 2020-12.
func compile(schema []byte) (*jsonschema.Schema, error) {
	v, err := exactjson.Parse(schema, exactjson.Limits{})
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseRegexpEngine(ecmare.Compile)
	c.UseLoader(denyLoader{})
	const loc = "weft:///openapi.json"
	if err := c.AddResource(loc, v.Any()); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

type denyLoader struct{}

func (denyLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not loaded", u)
}
