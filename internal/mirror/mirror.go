// Package mirror reads the x-mcp-header annotations of a tool's input schema
// (SEP-2243), which mirror arguments into Mcp-Param-{Name} HTTP headers, and
// renders argument values for those headers. The server (authoring rules
// and request checks), the client and wefttest share it.
package mirror

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/hdr"
)

// Mirror is one x-mcp-header annotation: header Mcp-Param-{Header} carries
// the argument at Path (property names from the arguments object down).
type Mirror struct {
	Header string
	Path   []string
	Type   string // "string", "integer" or "boolean"
}

// Keywords whose values are subschemas (maps, arrays or single schemas). An
// x-mcp-header below any of them is not statically reachable; other
// keywords ("default", "examples", "const", "enum", unknown ones) hold data
// or annotations and are not searched.
var (
	schemaMapKeywords    = []string{"$defs", "definitions", "patternProperties", "dependentSchemas"}
	schemaArrayKeywords  = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaSingleKeywords = []string{"items", "additionalProperties", "additionalItems", "not", "if", "then", "else",
		"contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)

// Find collects the x-mcp-header annotations of an input schema and checks
// them per SEP-2243: each a non-empty HTTP token, unique without regard to
// case, on a string, integer or boolean property reachable from the root
// through "properties" alone. A null schema has none.
func Find(schema exactjson.Value) ([]Mirror, error) {
	if schema.IsNull() {
		return nil, nil
	}
	f := finder{seen: map[string]bool{}}
	if err := f.walk(schema, nil, true); err != nil {
		return nil, err
	}
	return f.out, nil
}

type finder struct {
	out  []Mirror
	seen map[string]bool
}

func (f *finder) walk(node exactjson.Value, path []string, reachable bool) error {
	if node.Kind() != exactjson.KindObject {
		return nil
	}
	if hv, ok := node.Get("x-mcp-header"); ok {
		name, isStr := hv.AsString()
		where := strings.Join(path, ".")
		switch {
		case !reachable || len(path) == 0:
			return fmt.Errorf("x-mcp-header at %q is not reachable through \"properties\" alone", where)
		case !isStr || !hdr.IsToken(name):
			return fmt.Errorf("x-mcp-header of %q must be a non-empty HTTP token", where)
		case f.seen[strings.ToLower(name)]:
			return fmt.Errorf("x-mcp-header %q is declared twice", name)
		}
		t, _ := node.Get("type")
		typ, _ := t.AsString()
		if typ != "string" && typ != "integer" && typ != "boolean" {
			return fmt.Errorf("x-mcp-header %q must be on a string, integer or boolean property (not %s)", name, t)
		}
		f.seen[strings.ToLower(name)] = true
		f.out = append(f.out, Mirror{Header: name, Path: path, Type: typ})
	}
	if props, ok := node.Get("properties"); ok {
		for k, sub := range props.All() {
			if err := f.walk(sub, append(path[:len(path):len(path)], k), reachable); err != nil {
				return err
			}
		}
	}
	for _, kw := range schemaMapKeywords {
		m, _ := node.Get(kw)
		for _, sub := range m.All() {
			if err := f.walk(sub, path, false); err != nil {
				return err
			}
		}
	}
	for _, kw := range schemaArrayKeywords {
		a, _ := node.Get(kw)
		for sub := range a.Values() {
			if err := f.walk(sub, path, false); err != nil {
				return err
			}
		}
	}
	for _, kw := range schemaSingleKeywords {
		sub, _ := node.Get(kw)
		for e := range sub.Values() { // draft-7 style array "items"
			if err := f.walk(e, path, false); err != nil {
				return err
			}
		}
		if err := f.walk(sub, path, false); err != nil {
			return err
		}
	}
	return nil
}

// HeaderValue renders an argument for its Mcp-Param header: strings as they
// are (in the Base64 sentinel form when they need it), integers in decimal,
// booleans as true/false, other numbers as written (the server then finds
// the argument invalid for its integer property). It reports false for
// null, objects and arrays.
func HeaderValue(v exactjson.Value) (string, bool) {
	switch v.Kind() {
	case exactjson.KindString:
		s, _ := v.AsString()
		return hdr.Encode(s), true
	case exactjson.KindBool:
		b, _ := v.AsBool()
		return hdr.FormatBool(b), true
	case exactjson.KindNumber:
		n, _ := v.AsNumber()
		if i, ok := n.Int64(); ok {
			return hdr.FormatInteger(i), true
		}
		return hdr.Encode(n.String()), true
	}
	return "", false
}

// Lookup returns the argument a mirror carries, and whether it is present
// and not null.
func (m Mirror) Lookup(args exactjson.Value) (exactjson.Value, bool) {
	v := args
	for _, p := range m.Path {
		var ok bool
		if v, ok = v.Get(p); !ok {
			return exactjson.Value{}, false
		}
	}
	return v, !v.IsNull()
}

// Check verifies the Mcp-Param-* headers of a tools/call against the
// arguments they mirror: each mirrored argument that is present needs its
// header with an equal value (numbers compared as exact decimals), and an
// absent one must not have a header. The error says which header fails.
func Check(h http.Header, mirrors []Mirror, args exactjson.Value) error {
	for _, m := range mirrors {
		v, present := m.Lookup(args)
		name := "Mcp-Param-" + m.Header
		hv, hok, err := hdr.Value(h, name)
		switch {
		case err != nil:
			return err
		case !present && hok:
			return errors.New(name + " is sent but the argument is absent")
		case !present:
		case !hok:
			return errors.New(name + " header is required")
		case !equal(v, hv):
			return errors.New(name + " differs from the argument")
		}
	}
	return nil
}

func equal(v exactjson.Value, hv string) bool {
	switch v.Kind() {
	case exactjson.KindString:
		s, _ := v.AsString()
		return s == hv
	case exactjson.KindBool:
		b, _ := v.AsBool()
		return strconv.FormatBool(b) == hv
	case exactjson.KindNumber:
		n, _ := v.AsNumber()
		hn, err := exactjson.ParseNumber(hv)
		return err == nil && n.Cmp(hn) == 0
	}
	return false
}
