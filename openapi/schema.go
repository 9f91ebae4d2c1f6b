package openapi

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"strconv"
	"strings"

	yaml "github.com/pb33f/go-yaml"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/ecmare"
)

// errBudget is returned when converting one operation's schemas would copy
// more nodes than Options.MaxSchemaNodes allows (YAML aliases can make a
// small document describe a huge tree).
var errBudget = errors.New("openapi: schema too large (Options.MaxSchemaNodes)")

// converter turns OpenAPI Schema Objects, read from the document's own YAML
// nodes (so every number keeps its literal spelling), into one JSON Schema
// 2020-12 document. Every local $ref becomes a reference into the output's
// $defs, so recursive schemas stay recursive and shared ones are written once.
type converter struct {
	root   *yaml.Node // the document's root mapping
	v30    bool       // OpenAPI 3.0 Schema Object rules (nullable, boolean exclusive bounds, $ref siblings ignored)
	budget int        // nodes left to copy
	chain  int        // definitions being converted, one inside the other
	names  map[string]string
	taken  map[string]bool
	defs   []exactjson.Member
	// omit names the keyword (readOnly for input schemas, writeOnly for
	// output schemas) whose properties are left out: OpenAPI says
	// read-only properties are not sent in requests, nor write-only ones
	// returned in responses.
	omit string
	// size approximates the bytes of JSON converted so far; once it
	// passes inline (Options.MaxInlineSchemaBytes; 0: never), a reference
	// not yet converted is written as a stub naming the shared definition
	// instead of being copied.
	size, inline int
	// shared names the definitions stubs point to (the schema resources);
	// nil only in tests of the converter alone.
	shared *sharedSchemas
	// warn reports a pattern translated or left out (nil: not reported).
	warn func(string)
	// identity is set when a converted schema declares $anchor or
	// $dynamicAnchor: anchors are scoped to a schema resource, so each
	// definition then becomes a resource of its own, $id idBase+NAME (a
	// URN unique to the tool schema), and references name it by that id.
	identity bool
	idBase   string
}

// pattern returns a schema pattern in the ECMA-262 u-mode dialect clients
// check it with, translated if need be (ecmaPattern), or false when it
// cannot be, after a warning: the keyword is then left out, and the upstream
// is left to check the value.
func (c *converter) pattern(p string) (string, bool) {
	e, _, goErr, err := ecmare.Translate(p)
	switch {
	case err != nil:
		c.note(fmt.Sprintf("pattern %q is left out: it is not a valid ECMA-262 (u mode) regular expression, which JSON Schema clients check patterns with: %v", p, err))
		return "", false
	case e != p:
		c.note(fmt.Sprintf("pattern %q is sent as %q, its ECMA-262 (u mode) spelling", p, e))
	}
	if goErr != nil {
		c.note(fmt.Sprintf("pattern %q is not checked by the server (Go's RE2 engine cannot run it: %v); clients and the upstream still check it", e, goErr))
	}
	return e, true
}

func (c *converter) note(msg string) {
	if c.warn != nil {
		c.warn(msg)
	}
}

func newConverter(root *yaml.Node, v30 bool, budget int) *converter {
	return &converter{root: root, v30: v30, budget: budget, names: map[string]string{}, taken: map[string]bool{}}
}

// maxDepth bounds nesting in one converted value, maxChain the references
// followed one inside the other (A's schema refers to B, whose refers to C...).
const (
	maxDepth = 128
	maxChain = 1000
)

// schema keywords whose value is a map of subschemas, a subschema, or an
// array of subschemas.
var (
	schemaMapKeywords   = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true}
	schemaKeywords      = map[string]bool{"items": true, "not": true, "additionalProperties": true, "contains": true, "if": true, "then": true, "else": true, "propertyNames": true, "unevaluatedProperties": true, "unevaluatedItems": true, "contentSchema": true, "additionalItems": true}
	schemaListKeywords  = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
	droppedKeywords     = map[string]bool{"discriminator": true, "xml": true, "externalDocs": true, "$schema": true, "$id": true}
	openapi30OnlyKeywds = map[string]bool{"nullable": true}
)

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n
}

func (c *converter) spend() error {
	c.budget--
	if c.budget < 0 {
		return errBudget
	}
	return nil
}

// schema converts one Schema Object.
func (c *converter) schema(n *yaml.Node, depth int) (exactjson.Value, error) {
	n = deref(n)
	if n == nil {
		return exactjson.Object(), nil
	}
	if depth > maxDepth {
		return exactjson.Value{}, errors.New("openapi: schema nested too deeply")
	}
	if err := c.spend(); err != nil {
		return exactjson.Value{}, err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!bool" {
			b, err := yamlBool(n.Value)
			if err != nil {
				return exactjson.Value{}, err
			}
			return exactjson.Bool(b), nil
		}
		return exactjson.Value{}, fmt.Errorf("openapi: line %d: a schema must be an object or a boolean, not %q", n.Line, n.Value)
	case yaml.MappingNode:
	default:
		return exactjson.Value{}, fmt.Errorf("openapi: line %d: a schema must be an object", n.Line)
	}
	if ref, ok := lookup(n, "$ref"); ok {
		target, err := c.ref(ref)
		if err != nil {
			return exactjson.Value{}, err
		}
		if c.v30 {
			// OpenAPI 3.0: a Reference Object's siblings are ignored.
			return target, nil
		}
		// 3.1: siblings apply next to the reference.
		rest, err := c.object(n, depth, "$ref")
		if err != nil {
			return exactjson.Value{}, err
		}
		r, isRef := target.Get("$ref")
		if !isRef {
			// A summary (stub) of the target: its members, then the
			// siblings, which win; a sibling description comes first and
			// the summary's, which names the schema resource, stays.
			out := target
			for _, m := range rest.Members() {
				if d, ok := out.Get("description"); ok && m.Name == "description" {
					ds, _ := d.AsString()
					if ms, isStr := m.Value.AsString(); isStr {
						m.Value = exactjson.String(ms + "\n\n" + ds)
					}
				}
				out = out.With(m.Name, m.Value)
			}
			return out, nil
		}
		members := append([]exactjson.Member{exactjson.Field("$ref", r)}, rest.Members()...)
		return exactjson.Object(members...), nil
	}
	return c.object(n, depth, "")
}

// object converts a Schema Object mapping, skipping the member named skip.
func (c *converter) object(n *yaml.Node, depth int, skip string) (exactjson.Value, error) {
	var members []exactjson.Member
	seen := map[string]bool{}
	nullable := false
	var exclMin, exclMax *bool
	var example *exactjson.Value
	var required *yaml.Node
	requiredAt := 0
	omitted := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode {
			return exactjson.Value{}, errors.New("openapi: schema member names must be strings")
		}
		name := k.Value
		if k.ShortTag() == "!!merge" {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: YAML merge keys (<<) are not supported", k.Line)
		}
		if seen[name] {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: duplicate schema member %q", k.Line, name)
		}
		seen[name] = true
		if name == skip || droppedKeywords[name] || strings.HasPrefix(name, "x-") {
			continue
		}
		c.size += len(name) + 4
		switch {
		case name == "nullable" && c.v30:
			b, err := c.boolValue(v)
			if err != nil {
				return exactjson.Value{}, err
			}
			nullable = b
			continue
		case openapi30OnlyKeywds[name]:
			continue // nullable in a 3.1 document means nothing
		case (name == "exclusiveMinimum" || name == "exclusiveMaximum") && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool":
			b, err := c.boolValue(v)
			if err != nil {
				return exactjson.Value{}, err
			}
			if name == "exclusiveMinimum" {
				exclMin = &b
			} else {
				exclMax = &b
			}
			continue
		case name == "example":
			x, err := c.data(v, depth+1)
			if err != nil {
				return exactjson.Value{}, err
			}
			example = &x
			continue
		}
		var val exactjson.Value
		var err error
		switch {
		case name == "properties" && c.omit != "" && v.Kind == yaml.MappingNode:
			var gone []string
			val, gone, err = c.properties(v, depth+1)
			for _, g := range gone {
				omitted[g] = true
			}
		case name == "required" && c.omit != "":
			required, requiredAt = v, len(members)
			val, err = exactjson.Null(), nil // filled in below
		case name == "$anchor" || name == "$dynamicAnchor":
			c.identity = true
			val, err = c.data(v, depth+1)
		case name == "pattern" && v.Kind == yaml.ScalarNode:
			p, ok := c.pattern(v.Value)
			if !ok {
				continue
			}
			c.size += len(p) + 3
			val = exactjson.String(p)
		case schemaMapKeywords[name]:
			val, err = c.schemaMap(v, depth+1)
			if name == "definitions" {
				name = "$defs"
			}
			if name == "patternProperties" && err == nil {
				var keep []exactjson.Member
				for k, sub := range val.All() {
					if p, ok := c.pattern(k); ok {
						keep = append(keep, exactjson.Field(p, sub))
					}
				}
				val = exactjson.Object(keep...)
			}
		case schemaKeywords[name]:
			if name == "items" && v.Kind == yaml.SequenceNode {
				val, err = c.schemaList(v, depth+1)
				name = "prefixItems"
			} else {
				val, err = c.schema(v, depth+1)
			}
		case schemaListKeywords[name]:
			val, err = c.schemaList(v, depth+1)
		default:
			val, err = c.data(v, depth+1)
		}
		if err != nil {
			return exactjson.Value{}, err
		}
		members = append(members, exactjson.Field(name, val))
	}
	if required != nil {
		// required, without the properties left out (a required read-only
		// property would make every request invalid).
		r, err := c.data(required, depth+1)
		if err != nil {
			return exactjson.Value{}, err
		}
		if r.Kind() == exactjson.KindArray {
			var keep []exactjson.Value
			for x := range r.Values() {
				if xs, ok := x.AsString(); !ok || !omitted[xs] {
					keep = append(keep, x)
				}
			}
			r = exactjson.Array(keep...)
		}
		members[requiredAt] = exactjson.Field("required", r)
	}
	out := exactjson.Object(members...)
	if example != nil && !out.Has("examples") {
		out = out.With("examples", exactjson.Array(*example))
	}
	// OpenAPI 3.0 boolean exclusive bounds become 2020-12 numeric ones.
	out = exclusive(out, "minimum", "exclusiveMinimum", exclMin)
	out = exclusive(out, "maximum", "exclusiveMaximum", exclMax)
	if nullable {
		out = addNull(out)
	}
	return out, nil
}

func exclusive(out exactjson.Value, bound, kw string, flag *bool) exactjson.Value {
	if flag == nil || !*flag {
		return out
	}
	if b, ok := out.Get(bound); ok {
		return out.Without(bound).With(kw, b)
	}
	return out
}

// addNull maps OpenAPI 3.0 "nullable: true" onto JSON Schema: null joins the
// type (and the enum, which would otherwise still refuse it).
func addNull(s exactjson.Value) exactjson.Value {
	null := exactjson.String("null")
	if e, ok := s.Get("enum"); ok && e.Kind() == exactjson.KindArray {
		has := false
		for x := range e.Values() {
			if x.IsNull() {
				has = true
			}
		}
		if !has {
			s = s.With("enum", exactjson.Array(append(e.Elements(), exactjson.Null())...))
		}
	}
	t, ok := s.Get("type")
	switch {
	case ok && t.Kind() == exactjson.KindString:
		if ts, _ := t.AsString(); ts != "null" {
			return s.With("type", exactjson.Array(t, null))
		}
		return s
	case ok && t.Kind() == exactjson.KindArray:
		for x := range t.Values() {
			if xs, _ := x.AsString(); xs == "null" {
				return s
			}
		}
		return s.With("type", exactjson.Array(append(t.Elements(), null)...))
	case s.Has("enum"):
		return s
	}
	// No type to widen (allOf, $ref, ...): either the schema or null.
	return exactjson.Object(exactjson.Field("anyOf", exactjson.Array(s, exactjson.Object(exactjson.Field("type", null)))))
}

func (c *converter) schemaMap(n *yaml.Node, depth int) (exactjson.Value, error) {
	if n.Kind != yaml.MappingNode {
		return exactjson.Value{}, fmt.Errorf("openapi: line %d: expected a map of schemas", n.Line)
	}
	var members []exactjson.Member
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			return exactjson.Value{}, errors.New("openapi: schema names must be strings")
		}
		if seen[k.Value] {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: duplicate name %q", k.Line, k.Value)
		}
		seen[k.Value] = true
		c.size += len(k.Value) + 4
		v, err := c.schema(n.Content[i+1], depth)
		if err != nil {
			return exactjson.Value{}, err
		}
		members = append(members, exactjson.Field(k.Value, v))
	}
	return exactjson.Object(members...), nil
}

// properties converts a properties map, leaving out the properties marked
// with c.omit (on the property's schema or on the schema it references),
// and returns their names.
func (c *converter) properties(n *yaml.Node, depth int) (exactjson.Value, []string, error) {
	var members []exactjson.Member
	var gone []string
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			return exactjson.Value{}, nil, errors.New("openapi: schema names must be strings")
		}
		if seen[k.Value] {
			return exactjson.Value{}, nil, fmt.Errorf("openapi: line %d: duplicate name %q", k.Line, k.Value)
		}
		seen[k.Value] = true
		c.size += len(k.Value) + 4
		if c.marked(n.Content[i+1]) {
			gone = append(gone, k.Value)
			continue
		}
		v, err := c.schema(n.Content[i+1], depth)
		if err != nil {
			return exactjson.Value{}, nil, err
		}
		members = append(members, exactjson.Field(k.Value, v))
	}
	return exactjson.Object(members...), gone, nil
}

// marked reports whether a property schema says c.omit: true, itself or
// through the references it is (a few, followed one after the other).
func (c *converter) marked(n *yaml.Node) bool {
	for range 8 {
		n = deref(n)
		if v, ok := lookup(n, c.omit); ok {
			if v = deref(v); v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" && strings.EqualFold(v.Value, "true") {
				return true
			}
		}
		r, ok := lookup(n, "$ref")
		if !ok || deref(r).Kind != yaml.ScalarNode || !strings.HasPrefix(deref(r).Value, "#") {
			return false
		}
		t, err := pointer(c.root, deref(r).Value)
		if err != nil {
			return false
		}
		n = t
	}
	return false
}

func (c *converter) schemaList(n *yaml.Node, depth int) (exactjson.Value, error) {
	if n.Kind != yaml.SequenceNode {
		return exactjson.Value{}, fmt.Errorf("openapi: line %d: expected a list of schemas", n.Line)
	}
	out := make([]exactjson.Value, 0, len(n.Content))
	for _, e := range n.Content {
		v, err := c.schema(e, depth)
		if err != nil {
			return exactjson.Value{}, err
		}
		out = append(out, v)
	}
	return exactjson.Array(out...), nil
}

// ref registers the target of a local reference in $defs (converting it once)
// and returns {"$ref": "#/$defs/NAME"}.
func (c *converter) ref(n *yaml.Node) (exactjson.Value, error) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return exactjson.Value{}, errors.New("openapi: $ref must be a string")
	}
	ref := n.Value
	name, ok := c.names[ref]
	if !ok {
		if !strings.HasPrefix(ref, "#") {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: reference %q points outside the document (only local references are followed)", n.Line, ref)
		}
		target, err := pointer(c.root, ref)
		if err != nil {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: %w", n.Line, err)
		}
		if c.inline > 0 && (c.size > c.inline || c.shared != nil && c.size+c.shared.sizeOf(ref, target) > c.inline) {
			// The tool's schema is large enough: a schema reached only
			// from here on is summarised and named, not copied, so no
			// tool carries a whole API's schemas (Stripe's reached 500 KB
			// each) and a definition many operations share is written
			// once, as a resource.
			return c.stub(ref, target), nil
		}
		if c.chain >= maxChain {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: more than %d schema references nested one inside the other", n.Line, maxChain)
		}
		name = c.defName(ref)
		c.names[ref] = name
		// Register the name before converting, so a recursive schema refers
		// to itself instead of recursing forever.
		idx := len(c.defs)
		c.defs = append(c.defs, exactjson.Field(name, exactjson.Object()))
		c.chain++
		v, err := c.schema(target, 1)
		c.chain--
		if err != nil {
			return exactjson.Value{}, err
		}
		c.defs[idx] = exactjson.Field(name, v)
	}
	return exactjson.Object(exactjson.Field("$ref", exactjson.String("#/$defs/"+name))), nil
}

// defName derives a $defs name from a reference: the component name for
// #/components/schemas/NAME, else the pointer's last tokens; made of
// [A-Za-z0-9_.-] (so it needs no escaping in a pointer) and unique.
func (c *converter) defName(ref string) string {
	frag := strings.TrimPrefix(ref, "#")
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	frag = strings.TrimPrefix(frag, "/components/schemas/")
	frag = strings.TrimPrefix(frag, "/")
	base := sanitize(strings.NewReplacer("~1", "_", "~0", "_", "/", ".").Replace(frag), 64)
	if base == "" {
		base = "schema"
	}
	name := base
	for i := 2; c.taken[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	c.taken[name] = true
	return name
}

// pointer resolves a local reference ("#/a/b~1c") against the document.
func pointer(root *yaml.Node, ref string) (*yaml.Node, error) {
	frag, err := url.PathUnescape(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return nil, fmt.Errorf("reference %q: %w", ref, err)
	}
	n := deref(root)
	if frag == "" {
		return n, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, fmt.Errorf("reference %q is not a JSON pointer (anchors are not followed)", ref)
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch {
		case n != nil && n.Kind == yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := deref(n.Content[i]); k != nil && k.Value == tok {
					next = n.Content[i+1]
					break
				}
			}
			n = deref(next)
		case n != nil && n.Kind == yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				n = nil
			} else {
				n = deref(n.Content[i])
			}
		default:
			n = nil
		}
		if n == nil {
			return nil, fmt.Errorf("reference %q does not resolve", ref)
		}
	}
	return n, nil
}

// lookup returns the value of a mapping member.
func lookup(n *yaml.Node, name string) (*yaml.Node, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k != nil && k.Value == name {
			return n.Content[i+1], true
		}
	}
	return nil, false
}

func (c *converter) boolValue(n *yaml.Node) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, fmt.Errorf("openapi: line %d: expected a boolean", n.Line)
	}
	return yamlBool(n.Value)
}

func yamlBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("openapi: %q is not a JSON boolean", s)
}

// data converts a YAML value that is data, not a schema (enum, default,
// examples, ...), keeping number literals exact.
func (c *converter) data(n *yaml.Node, depth int) (exactjson.Value, error) {
	n = deref(n)
	if n == nil {
		return exactjson.Null(), nil
	}
	if depth > maxDepth {
		return exactjson.Value{}, errors.New("openapi: value nested too deeply")
	}
	if err := c.spend(); err != nil {
		return exactjson.Value{}, err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		c.size += len(n.Value) + 3
		return scalar(n)
	case yaml.SequenceNode:
		out := make([]exactjson.Value, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.data(e, depth+1)
			if err != nil {
				return exactjson.Value{}, err
			}
			out = append(out, v)
		}
		return exactjson.Array(out...), nil
	case yaml.MappingNode:
		var members []exactjson.Member
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return exactjson.Value{}, errors.New("openapi: object member names must be plain strings")
			}
			if seen[k.Value] {
				return exactjson.Value{}, fmt.Errorf("openapi: line %d: duplicate member %q", k.Line, k.Value)
			}
			seen[k.Value] = true
			c.size += len(k.Value) + 4
			v, err := c.data(n.Content[i+1], depth+1)
			if err != nil {
				return exactjson.Value{}, err
			}
			members = append(members, exactjson.Field(k.Value, v))
		}
		return exactjson.Object(members...), nil
	}
	return exactjson.Value{}, fmt.Errorf("openapi: line %d: unsupported YAML value", n.Line)
}

// scalar converts a YAML scalar to JSON: numbers keep their literal when it
// is valid JSON (YAML spellings such as 0x1F or 1_000 are converted exactly).
func scalar(n *yaml.Node) (exactjson.Value, error) {
	switch n.ShortTag() {
	case "!!null":
		return exactjson.Null(), nil
	case "!!bool":
		b, err := yamlBool(n.Value)
		if err != nil {
			return exactjson.Value{}, err
		}
		return exactjson.Bool(b), nil
	case "!!int":
		if num, err := exactjson.ParseNumber(n.Value); err == nil {
			return exactjson.NumberValue(num), nil
		}
		i, ok := new(big.Int).SetString(strings.ReplaceAll(n.Value, "_", ""), 0)
		if !ok {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: integer %q is not valid", n.Line, n.Value)
		}
		num, err := exactjson.ParseNumber(i.String())
		if err != nil {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: %w", n.Line, err)
		}
		return exactjson.NumberValue(num), nil
	case "!!float":
		if num, err := exactjson.ParseNumber(n.Value); err == nil {
			return exactjson.NumberValue(num), nil
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return exactjson.Value{}, fmt.Errorf("openapi: line %d: number %q has no JSON form", n.Line, n.Value)
		}
		return exactjson.Float(f)
	}
	return exactjson.String(n.Value), nil
}

// sanitize keeps [A-Za-z0-9_.-] (others become _) and at most max bytes.
func sanitize(s string, max int) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < max; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' {
			b = append(b, c)
		} else if len(b) == 0 || b[len(b)-1] != '_' {
			b = append(b, '_')
		}
	}
	return strings.Trim(string(b), "_")
}

// document builds the final schema: root members plus the collected $defs.
//
// When a definition declares an anchor (c.identity), every definition is
// its own schema resource: two definitions may declare the same anchor
// (Galaxy's generic PaginatedResource and the schema binding its
// $dynamicAnchor itemType to Planet), which in one resource is an error,
// and $dynamicRef resolves through the resources it passes. Each
// definition then has the $id idBase+NAME and every reference to it uses
// that id (a reference "#/$defs/NAME" inside another resource would
// resolve against that resource).
func (c *converter) document(root exactjson.Value) exactjson.Value {
	if len(c.defs) == 0 {
		return root
	}
	if !c.identity || c.idBase == "" {
		return root.With("$defs", exactjson.Object(c.defs...))
	}
	defs := make([]exactjson.Member, len(c.defs))
	for i, m := range c.defs {
		v := m.Value
		if v.Kind() != exactjson.KindObject {
			if b, _ := v.AsBool(); b {
				v = exactjson.Object()
			} else {
				v = exactjson.Object(exactjson.Field("not", exactjson.Object()))
			}
		}
		v = c.rewriteRefs(v, 0)
		defs[i] = exactjson.Field(m.Name, exactjson.Object(append([]exactjson.Member{
			exactjson.Field("$id", exactjson.String(c.idBase+m.Name))}, v.Members()...)...))
	}
	return c.rewriteRefs(root, 0).With("$defs", exactjson.Object(defs...))
}

// rewriteRefs replaces every reference "#/$defs/NAME" with idBase+NAME.
func (c *converter) rewriteRefs(v exactjson.Value, depth int) exactjson.Value {
	if depth > 2*maxDepth+8 {
		return v
	}
	switch v.Kind() {
	case exactjson.KindObject:
		ms := v.Members()
		out := make([]exactjson.Member, len(ms))
		for i, m := range ms {
			if s, ok := m.Value.AsString(); ok && m.Name == "$ref" && strings.HasPrefix(s, "#/$defs/") {
				m.Value = exactjson.String(c.idBase + strings.TrimPrefix(s, "#/$defs/"))
			} else {
				m.Value = c.rewriteRefs(m.Value, depth+1)
			}
			out[i] = m
		}
		return exactjson.Object(out...)
	case exactjson.KindArray:
		es := v.Elements()
		out := make([]exactjson.Value, len(es))
		for i, e := range es {
			out[i] = c.rewriteRefs(e, depth+1)
		}
		return exactjson.Array(out...)
	}
	return v
}

// def returns the converted definition named name.
func (c *converter) def(name string) (exactjson.Value, bool) {
	for _, m := range c.defs {
		if m.Name == name {
			return m.Value, true
		}
	}
	return exactjson.Value{}, false
}
