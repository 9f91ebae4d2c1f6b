package openapi

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	yaml "github.com/pb33f/go-yaml"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/weftmcp/weft/exactjson"
)

// param is one parameter and how its argument is serialized.
type param struct {
	name     string // as in the document
	in       string // path, query, header, cookie
	arg      string // argument name in the tool's input
	style    string
	explode  bool
	reserved bool // allowReserved
	required bool
	json     bool   // content: application/json: the value is sent as JSON text
	typ      string // the schema's scalar type when known: string, integer, number, boolean, array, object
}

// bodyKind is how the request body is encoded.
type bodyKind uint8

const (
	bodyJSON bodyKind = iota + 1
	bodyForm
	bodyMultipart
	bodyText
	bodyBinary
)

type body struct {
	arg      string
	media    string
	kind     bodyKind
	required bool
	// encoding says how each member of a form body is written (the media
	// type's Encoding Object); members not named use the defaults.
	encoding map[string]formEncoding
}

// formEncoding is one member of a form body's Encoding Object.
type formEncoding struct {
	style   string // form (default), spaceDelimited, pipeDelimited, deepObject
	explode bool   // default true for form
	json    bool   // contentType application/json: the member is JSON text
}

// formEncodings reads a form media type's encoding map.
func formEncodings(media *yaml.Node) (map[string]formEncoding, error) {
	out := map[string]formEncoding{}
	encs, ok := lookup(media, "encoding")
	if !ok {
		return out, nil
	}
	encs = deref(encs)
	if encs.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: encoding must be a map", encs.Line)
	}
	for i := 0; i+1 < len(encs.Content); i += 2 {
		k, e := deref(encs.Content[i]), deref(encs.Content[i+1])
		fe := formEncoding{style: "form"}
		if s, ok := lookup(e, "style"); ok {
			fe.style = deref(s).Value
		}
		switch fe.style {
		case "form", "spaceDelimited", "pipeDelimited", "deepObject":
		default:
			return nil, fmt.Errorf("encoding of %q: style %q is not form, spaceDelimited, pipeDelimited or deepObject", k.Value, fe.style)
		}
		fe.explode = fe.style == "form"
		if x, ok := lookup(e, "explode"); ok {
			b, err := yamlBool(deref(x).Value)
			if err != nil {
				return nil, fmt.Errorf("encoding of %q: explode: %w", k.Value, err)
			}
			fe.explode = b
		}
		if ct, ok := lookup(e, "contentType"); ok && isJSON(deref(ct).Value) {
			fe.json = true
		}
		out[k.Value] = fe
	}
	return out, nil
}

// plan is how a call is built and its response read.
type plan struct {
	method, path string
	params       []param
	body         *body
	input        []byte
	output       []byte
	wrap         bool // the 2xx JSON response is structuredContent.result
	outValidator *jsonschema.Schema
	jsonOut      bool   // a 2xx JSON response is documented
	accept       string // the media type of the first documented 2xx response
}

// reservedHeaders are header parameters OpenAPI says to ignore.
var reservedHeaders = map[string]bool{"accept": true, "content-type": true, "authorization": true}

// transportHeader reports whether a header belongs to the HTTP transport,
// a proxy or the host rather than to the API: hop-by-hop headers (RFC 9110
// section 7.6.1), framing (Content-Length, Transfer-Encoding), routing (Host),
// proxy credentials, client-address headers a proxy writes (Forwarded,
// X-Forwarded-*, X-Real-IP, Via) and Cookie (cookie parameters have their
// own location). A tool argument must not set any of them: a header
// parameter so named is dropped when the document is loaded, with a warning.
func transportHeader(name string) bool {
	switch n := strings.ToLower(name); n {
	case "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
		"te", "trailer", "transfer-encoding", "upgrade", "host", "content-length", "expect",
		"forwarded", "via", "x-real-ip", "max-forwards", "cookie", "content-encoding":
		return true
	default:
		return strings.HasPrefix(n, "x-forwarded-") || strings.HasPrefix(n, "proxy-")
	}
}

func (a *API) buildPlan(conv *converter, method, p string, item *v3.PathItem, o *v3.Operation, warn func(string)) (*plan, error) {
	pl := &plan{method: method, path: p}
	// Operation parameters override path-item ones with the same name and location.
	var all []*v3.Parameter
	all = append(all, o.Parameters...)
	for _, ip := range item.Parameters {
		if ip == nil {
			continue
		}
		if !slices.ContainsFunc(o.Parameters, func(x *v3.Parameter) bool { return x != nil && x.Name == ip.Name && x.In == ip.In }) {
			all = append(all, ip)
		}
	}
	var props []exactjson.Member
	var required []exactjson.Value
	used := map[string]bool{}
	count := map[string]int{}
	for _, prm := range all {
		if prm == nil {
			return nil, fmt.Errorf("a parameter is empty")
		}
		count[prm.Name]++
	}
	for _, prm := range all {
		if prm == nil || prm.Name == "" {
			return nil, fmt.Errorf("a parameter has no name")
		}
		switch prm.In {
		case "path", "query", "header", "cookie":
		default:
			return nil, fmt.Errorf("parameter %q: location %q is not path, query, header or cookie", prm.Name, prm.In)
		}
		if prm.In == "header" && reservedHeaders[strings.ToLower(prm.Name)] {
			continue // OpenAPI: such header parameters are ignored
		}
		if prm.In == "header" && transportHeader(prm.Name) {
			warn(fmt.Sprintf("header parameter %q is dropped: the HTTP transport, not a tool argument, sets that header", prm.Name))
			continue
		}
		pm := param{name: prm.Name, in: prm.In, reserved: prm.AllowReserved}
		pm.required = prm.In == "path" || (prm.Required != nil && *prm.Required)
		pm.style = prm.Style
		if pm.style == "" {
			pm.style = map[string]string{"path": "simple", "query": "form", "header": "simple", "cookie": "form"}[prm.In]
		}
		if !validStyle(prm.In, pm.style) {
			return nil, fmt.Errorf("parameter %q: style %q is not allowed in %s", prm.Name, pm.style, prm.In)
		}
		pm.explode = pm.style == "form"
		if prm.Explode != nil {
			pm.explode = *prm.Explode
		}
		raw := prm.GoLow().RootNode
		schemaNode, hasSchema := lookup(raw, "schema")
		if !hasSchema {
			content, ok := lookup(raw, "content")
			content = deref(content)
			if !ok || content.Kind != yaml.MappingNode || len(content.Content) != 2 {
				return nil, fmt.Errorf("parameter %q needs a schema or a content map with one media type", prm.Name)
			}
			if isJSON(deref(content.Content[0]).Value) {
				pm.json = true
			}
			schemaNode, _ = lookup(content.Content[1], "schema")
		}
		s, err := conv.schema(schemaNode, 1)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", prm.Name, err)
		}
		pm.typ = schemaType(conv, s)
		s, err = annotate(conv, s, raw, prm.Description, prm.Deprecated)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", prm.Name, err)
		}
		pm.arg = prm.Name
		if count[prm.Name] > 1 || prm.Name == "body" {
			pm.arg = prm.Name + "__" + prm.In
		}
		if used[pm.arg] {
			return nil, fmt.Errorf("parameter %q in %s is declared twice", prm.Name, prm.In)
		}
		used[pm.arg] = true
		props = append(props, exactjson.Field(pm.arg, s))
		if pm.required {
			required = append(required, exactjson.String(pm.arg))
		}
		pl.params = append(pl.params, pm)
	}
	for _, seg := range templateVars(p) {
		if !slices.ContainsFunc(pl.params, func(x param) bool { return x.in == "path" && x.name == seg }) {
			return nil, fmt.Errorf("path variable {%s} has no path parameter", seg)
		}
	}
	if rb := o.RequestBody; rb != nil {
		raw := rb.GoLow().RootNode
		content, _ := lookup(raw, "content")
		media, mnode := pickMedia(deref(content))
		if media != "" {
			b := &body{arg: "body", media: media, kind: kindOf(media), required: rb.Required != nil && *rb.Required}
			if b.kind == bodyForm {
				var err error
				if b.encoding, err = formEncodings(mnode); err != nil {
					return nil, fmt.Errorf("request body: %w", err)
				}
			}
			schemaNode, _ := lookup(mnode, "schema")
			s, err := conv.schema(schemaNode, 1)
			if err != nil {
				return nil, fmt.Errorf("request body: %w", err)
			}
			switch b.kind {
			case bodyText:
				s = exactjson.Object(exactjson.Field("type", exactjson.String("string")))
			case bodyBinary:
				s = exactjson.Object(exactjson.Field("type", exactjson.String("string")),
					exactjson.Field("contentEncoding", exactjson.String("base64")))
			}
			if s, err = annotate(conv, s, mnode, rb.Description, false); err != nil {
				return nil, fmt.Errorf("request body: %w", err)
			}
			props = append(props, exactjson.Field(b.arg, s))
			if b.required {
				required = append(required, exactjson.String(b.arg))
			}
			pl.body = b
		}
	}
	in := exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(props...)))
	if len(required) > 0 {
		in = in.With("required", exactjson.Array(required...))
	}
	in = in.With("additionalProperties", exactjson.Bool(false))
	var err error
	if pl.input, err = exactjson.Encode(conv.document(in), 0); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if err := a.outputPlan(pl, o, conv); err != nil {
		return nil, err
	}
	return pl, nil
}

// outputPlan derives the output schema from the 2xx responses: only when
// every documented 2xx response is JSON with a schema, so a successful call
// always has structured content to give.
func (a *API) outputPlan(pl *plan, o *v3.Operation, in *converter) error {
	if o.Responses == nil {
		return nil
	}
	var schemaNode *yaml.Node
	n2xx := 0
	for code, r := range o.Responses.Codes.FromOldest() {
		if !strings.HasPrefix(code, "2") {
			continue
		}
		if r == nil {
			return nil
		}
		n2xx++
		content, _ := lookup(r.GoLow().RootNode, "content")
		media, mnode := pickMedia(deref(content))
		if pl.accept == "" && media != "" && !strings.ContainsAny(media, "*\r\n") {
			pl.accept = media
		}
		if !isJSON(media) {
			return nil
		}
		pl.jsonOut = true
		s, ok := lookup(mnode, "schema")
		if !ok {
			return nil
		}
		if schemaNode == nil {
			schemaNode = s
		}
	}
	if n2xx != 1 || schemaNode == nil {
		return nil // several 2xx answers (or none): no single output schema
	}
	conv := a.newConverter(in.root, in.v30)
	conv.omit = "writeOnly"
	conv.warn = in.warn
	conv.idBase = strings.TrimSuffix(in.idBase, "input:") + "output:"
	s, err := conv.schema(schemaNode, 1)
	if err != nil {
		return fmt.Errorf("response schema: %w", err)
	}
	// A top-level reference to an object schema is inlined at the root (its
	// definition stays in $defs for recursive uses).
	for range 8 {
		r, ok := s.Get("$ref")
		if !ok || s.Len() != 1 {
			break
		}
		rs, _ := r.AsString()
		next, found := conv.def(strings.TrimPrefix(rs, "#/$defs/"))
		if !found {
			break
		}
		s = next
	}
	if s.Has("$defs") || !isObjectSchema(conv, s, 0) {
		pl.wrap = true
		s = exactjson.Object(
			exactjson.Field("type", exactjson.String("object")),
			exactjson.Field("properties", exactjson.Object(exactjson.Field("result", s))),
			exactjson.Field("required", exactjson.Array(exactjson.String("result"))))
	}
	if pl.output, err = exactjson.Encode(conv.document(s), 0); err != nil {
		return fmt.Errorf("output schema: %w", err)
	}
	return nil
}

// isObjectSchema reports whether every value s accepts is an object: its
// type is "object", or one of its allOf members (or its $ref) is such a
// schema.
func isObjectSchema(conv *converter, s exactjson.Value, depth int) bool {
	if depth > 8 {
		return false
	}
	if t, ok := s.Get("type"); ok {
		return isStr(t, "object")
	}
	if r, ok := s.Get("$ref"); ok {
		rs, _ := r.AsString()
		if d, found := conv.def(strings.TrimPrefix(rs, "#/$defs/")); found && isObjectSchema(conv, d, depth+1) {
			return true
		}
	}
	if all, ok := s.Get("allOf"); ok {
		for m := range all.Values() {
			if isObjectSchema(conv, m, depth+1) {
				return true
			}
		}
	}
	return false
}

func isStr(v exactjson.Value, s string) bool { x, ok := v.AsString(); return ok && x == s }

func validStyle(in, style string) bool {
	switch in {
	case "path":
		return style == "simple" || style == "label" || style == "matrix"
	case "query":
		return style == "form" || style == "spaceDelimited" || style == "pipeDelimited" || style == "deepObject"
	case "header":
		return style == "simple"
	case "cookie":
		return style == "form"
	}
	return false
}

// templateVars returns the {names} of a path template.
func templateVars(p string) []string {
	var out []string
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, p[i+1:i+j])
		p = p[i+j+1:]
	}
}

// annotate adds a parameter's or body's description, deprecation and
// examples to its schema.
func annotate(conv *converter, s exactjson.Value, raw *yaml.Node, description string, deprecated bool) (exactjson.Value, error) {
	if s.Kind() != exactjson.KindObject {
		if b, _ := s.AsBool(); b {
			s = exactjson.Object()
		} else {
			return s, nil
		}
	}
	if description = strings.TrimSpace(description); description != "" && !s.Has("description") {
		s = s.With("description", exactjson.String(description))
	}
	if deprecated {
		s = s.With("deprecated", exactjson.Bool(true))
	}
	var examples []exactjson.Value
	if ex, ok := lookup(raw, "example"); ok {
		v, err := conv.data(ex, 1)
		if err != nil {
			return s, err
		}
		examples = append(examples, v)
	}
	if exs, ok := lookup(raw, "examples"); ok {
		exs = deref(exs)
		if exs.Kind == yaml.MappingNode {
			for i := 1; i < len(exs.Content); i += 2 {
				e := deref(exs.Content[i])
				if r, ok := lookup(e, "$ref"); ok {
					t, err := pointer(conv.root, deref(r).Value)
					if err != nil {
						return s, err
					}
					e = t
				}
				if val, ok := lookup(e, "value"); ok {
					v, err := conv.data(val, 1)
					if err != nil {
						return s, err
					}
					examples = append(examples, v)
				}
			}
		}
	}
	if len(examples) > 0 && !s.Has("examples") {
		s = s.With("examples", exactjson.Array(examples...))
	}
	return s, nil
}

// schemaType is the type of a converted schema when it is one JSON type
// (possibly with null), following a top-level $ref into $defs.
func schemaType(conv *converter, s exactjson.Value) string {
	for range 8 {
		r, ok := s.Get("$ref")
		if !ok {
			break
		}
		rs, _ := r.AsString()
		var found bool
		if s, found = conv.def(strings.TrimPrefix(rs, "#/$defs/")); !found {
			return ""
		}
	}
	t, ok := s.Get("type")
	if !ok {
		return ""
	}
	if ts, ok := t.AsString(); ok {
		return ts
	}
	var types []string
	for x := range t.Values() {
		if xs, _ := x.AsString(); xs != "null" {
			types = append(types, xs)
		}
	}
	if len(types) == 1 {
		return types[0]
	}
	return ""
}

// pickMedia chooses the media type of a content map: JSON first, then
// form, multipart, text, then the first listed.
func pickMedia(content *yaml.Node) (string, *yaml.Node) {
	if content == nil || content.Kind != yaml.MappingNode || len(content.Content) < 2 {
		return "", nil
	}
	best, bestRank := -1, 99
	for i := 0; i+1 < len(content.Content); i += 2 {
		m := strings.ToLower(deref(content.Content[i]).Value)
		rank := 5
		switch kindOf(m) {
		case bodyJSON:
			rank = 0
		case bodyForm:
			rank = 1
		case bodyMultipart:
			rank = 2
		case bodyText:
			rank = 3
		}
		if rank < bestRank {
			best, bestRank = i, rank
		}
	}
	return deref(content.Content[best]).Value, deref(content.Content[best+1])
}

func isJSON(media string) bool {
	mt, _, err := mime.ParseMediaType(media)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(media))
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func kindOf(media string) bodyKind {
	mt, _, err := mime.ParseMediaType(media)
	if err != nil {
		mt = strings.ToLower(media)
	}
	switch {
	case isJSON(mt):
		return bodyJSON
	case mt == "application/x-www-form-urlencoded":
		return bodyForm
	case mt == "multipart/form-data":
		return bodyMultipart
	case strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+xml") || mt == "application/xml":
		return bodyText
	}
	return bodyBinary
}

// resourceKind says whether a GET operation fits a resource (no
// parameters) or a resource template (path and query parameters of scalar
// types, no body, headers or cookies).
func (pl *plan) resourceKind(method string) (Kind, bool) {
	if method != http.MethodGet || pl.body != nil {
		return 0, false
	}
	if len(pl.params) == 0 {
		return KindResource, true
	}
	for _, p := range pl.params {
		if (p.in != "path" && p.in != "query") || p.json {
			return 0, false
		}
		switch p.typ {
		case "string", "integer", "number", "boolean":
		default:
			return 0, false
		}
		if p.in == "path" && p.style != "simple" || !varName(p.arg) {
			return 0, false
		}
	}
	return KindResourceTemplate, true
}

// varName reports whether s can be an RFC 6570 variable name.
func varName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

// resourceURI is the resource URI, or the RFC 6570 template
// scheme://name/{p1}/{p2}{?q1,q2}.
func (pl *plan) resourceURI(scheme, name string) string {
	var b strings.Builder
	b.WriteString(scheme + "://" + name)
	var q []string
	for _, p := range pl.params {
		if p.in == "path" {
			b.WriteString("/{" + p.arg + "}")
		} else {
			q = append(q, p.arg)
		}
	}
	if len(q) > 0 {
		b.WriteString("{?" + strings.Join(q, ",") + "}")
	}
	return b.String()
}

func (pl *plan) resourceMIME() string {
	if pl.jsonOut {
		return "application/json"
	}
	return ""
}
