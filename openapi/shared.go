package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	yaml "github.com/pb33f/go-yaml"
	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// SchemaResourceMIME is the media type of the schema resources.
const SchemaResourceMIME = "application/schema+json"

// sharedSchemas names the document's schemas that tool schemas summarise
// instead of copying (past Options.MaxInlineSchemaBytes), and serves each
// as the resource SCHEME://schemas/NAME: a standalone JSON Schema 2020-12
// document, itself bounded the same way, converted once when first read.
//
// New fills byRef and byName alone, before any handler exists; afterwards
// the resource handler converts under mu (a conversion may name more
// schemas).
type sharedSchemas struct {
	root   *yaml.Node
	v30    bool
	prefix string // SCHEME://schemas/
	budget int    // Options.MaxSchemaNodes
	inline int    // Options.MaxInlineSchemaBytes

	mu     sync.Mutex
	byRef  map[string]string // local reference -> name
	byName map[string]string // name -> local reference
	cache  map[string][]byte // name -> the converted document
	sizes  map[string]int    // local reference -> the bytes of its own schema (sizeOf)
}

func newSharedSchemas(root *yaml.Node, v30 bool, scheme string, budget, inline int) *sharedSchemas {
	return &sharedSchemas{root: root, v30: v30, prefix: scheme + "://schemas/", budget: budget, inline: inline,
		byRef: map[string]string{}, byName: map[string]string{}, cache: map[string][]byte{}, sizes: map[string]int{}}
}

// name returns the resource name of a local reference, registering it.
// Callers hold mu, or run inside New.
func (s *sharedSchemas) name(ref string) string {
	if n, ok := s.byRef[ref]; ok {
		return n
	}
	frag := strings.TrimPrefix(ref, "#")
	frag = strings.TrimPrefix(frag, "/components/schemas/")
	frag = strings.TrimPrefix(frag, "/")
	base := sanitize(strings.NewReplacer("~1", "_", "~0", "_", "/", ".").Replace(frag), 64)
	if base == "" {
		base = "schema"
	}
	n := base
	for i := 2; s.byName[n] != ""; i++ {
		n = base + "_" + strconv.Itoa(i)
	}
	s.byRef[ref], s.byName[n] = n, ref
	return n
}

// sizeOf returns about how many bytes the schema a reference points to
// writes by itself, the schemas it refers to summarised: a tool schema
// copies it only when that fits in what is left of its inline budget, so
// one large definition (Stripe's Account, 40 KB) is named rather than
// copied into every tool that returns it. Measured once per reference.
// Callers hold mu, or run inside New.
func (s *sharedSchemas) sizeOf(ref string, target *yaml.Node) int {
	if n, ok := s.sizes[ref]; ok {
		return n
	}
	c := newConverter(s.root, s.v30, s.budget)
	c.inline = 1 // every reference inside is summarised
	n := 0
	if _, err := c.schema(target, 1); err == nil {
		n = c.size
	}
	s.sizes[ref] = n
	return n
}

// URI returns the resource URI of the named schema.
func (s *sharedSchemas) uri(name string) string { return s.prefix + name }

// template is the URI template of the schema resources.
func (s *sharedSchemas) template() string { return s.prefix + "{name}" }

// stub summarises the schema a reference points to without copying it:
// its type when the document states one plainly (so an object stays an
// object), and a description naming the resource that holds it. It
// accepts any value of that type.
func (c *converter) stub(ref string, target *yaml.Node) exactjson.Value {
	name := c.defName(ref)
	where := "(not inlined: the tool's schema reached Options.MaxInlineSchemaBytes)"
	if c.shared != nil {
		name = c.shared.name(ref)
		where = "(not inlined here; its schema is the resource " + c.shared.uri(name) + ")"
	}
	var members []exactjson.Member
	if t, ok := c.plainType(target); ok {
		members = append(members, exactjson.Field("type", t))
	}
	members = append(members, exactjson.Field("description", exactjson.String(name+" "+where)))
	return exactjson.Object(members...)
}

// plainType returns the type keyword of a schema when it is a string or a
// list of strings, with null added for OpenAPI 3.0's nullable: true.
func (c *converter) plainType(n *yaml.Node) (exactjson.Value, bool) {
	t, ok := lookup(n, "type")
	if !ok {
		return exactjson.Value{}, false
	}
	t = deref(t)
	var types []exactjson.Value
	switch {
	case t.Kind == yaml.ScalarNode && t.ShortTag() == "!!str":
		types = append(types, exactjson.String(t.Value))
	case t.Kind == yaml.SequenceNode:
		for _, e := range t.Content {
			if e = deref(e); e == nil || e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" {
				return exactjson.Value{}, false
			}
			types = append(types, exactjson.String(e.Value))
		}
	default:
		return exactjson.Value{}, false
	}
	for _, x := range types {
		switch xs, _ := x.AsString(); xs {
		case "object", "array", "string", "number", "integer", "boolean", "null":
		default:
			return exactjson.Value{}, false
		}
	}
	if c.v30 {
		if nb, ok := lookup(n, "nullable"); ok {
			if nb = deref(nb); nb.Kind == yaml.ScalarNode && strings.EqualFold(nb.Value, "true") {
				types = append(types, exactjson.String("null"))
			}
		}
	}
	if len(types) == 1 {
		return types[0], true
	}
	return exactjson.Array(types...), true
}

// document converts the named schema into its resource: a standalone JSON
// Schema 2020-12 document, as the OpenAPI document defines it (readOnly and
// writeOnly properties kept, with those keywords).
func (s *sharedSchemas) document(name string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.cache[name]; ok {
		return b, true, nil
	}
	ref, ok := s.byName[name]
	if !ok {
		return nil, false, nil
	}
	target, err := pointer(s.root, ref)
	if err != nil {
		return nil, false, err
	}
	conv := newConverter(s.root, s.v30, s.budget)
	conv.inline, conv.shared = s.inline, s
	conv.idBase = "urn:weft:openapi:schemas:" + name + ":"
	// The schema's own recursive references land in $defs under its name.
	conv.names[ref] = name
	conv.taken[name] = true
	conv.defs = append(conv.defs, exactjson.Field(name, exactjson.Object()))
	v, err := conv.schema(target, 1)
	if err != nil {
		return nil, false, fmt.Errorf("openapi: schema %s: %w", name, err)
	}
	conv.defs[0] = exactjson.Field(name, v)
	doc := exactjson.Object(
		exactjson.Field("$schema", exactjson.String("https://json-schema.org/draft/2020-12/schema")),
		exactjson.Field("$ref", exactjson.String("#/$defs/"+name)))
	b, err := exactjson.Encode(conv.document(doc), 0)
	if err != nil {
		return nil, false, fmt.Errorf("openapi: schema %s: %w", name, err)
	}
	s.cache[name] = b
	return b, true, nil
}

// SchemaTemplate returns the URI template of the schema resources
// ("openapi://schemas/{name}"), which Register adds when a tool schema
// summarises a definition instead of copying it.
func (a *API) SchemaTemplate() string { return a.shared.template() }

// SharedSchemas returns the names of the definitions the tool schemas
// summarise (each the resource SchemaTemplate names), sorted.
func (a *API) SharedSchemas() []string {
	a.shared.mu.Lock()
	defer a.shared.mu.Unlock()
	out := make([]string, 0, len(a.shared.byName))
	for n := range a.shared.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// CatalogBytes returns about how many bytes the API's tool definitions
// take in tools/list, in all (the schemas as JSON, not base64 as
// encoding/json writes a weft.Tool's []byte fields).
func (a *API) CatalogBytes() int {
	n := 0
	for _, t := range a.Tools() {
		b, err := json.Marshal(struct {
			Name, Title, Description  string
			InputSchema, OutputSchema json.RawMessage `json:",omitempty"`
			Annotations               *weft.ToolAnnotations
		}{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations})
		if err == nil {
			n += len(b)
		}
	}
	return n
}

func (a *API) schemaHandler() weft.ResourceHandler {
	return func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
		name := req.URIParams()["name"]
		b, ok, err := a.shared.document(name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, weft.ResourceNotFound(req.Name)
		}
		return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, SchemaResourceMIME, string(b))}}, nil
	}
}
