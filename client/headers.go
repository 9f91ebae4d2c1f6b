package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/hdr"
)

// toolHeaders is what the client keeps of a listed tool: its x-mcp-header
// mirrors, or why its definition was rejected.
type toolHeaders struct {
	mirrors []mirror
	invalid error
}

// mirror is one x-mcp-header annotation: header Mcp-Param-<header> carries
// arguments.<path...>.
type mirror struct {
	header string
	path   []string
	typ    string
}

// headers returns the Mcp-Param-* headers for args. Absent and null
// arguments produce no header.
func (th *toolHeaders) headers(args exactjson.Value) http.Header {
	var h http.Header
	for _, m := range th.mirrors {
		v := args
		present := true
		for _, p := range m.path {
			if v, present = v.Get(p); !present {
				break
			}
		}
		if !present || v.IsNull() {
			continue
		}
		val, ok := headerValue(v)
		if !ok {
			continue // not a primitive: the server reports the mismatch
		}
		if h == nil {
			h = http.Header{}
		}
		h.Set("Mcp-Param-"+m.header, val)
	}
	return h
}

// headerValue renders an argument for a header: strings as they are
// (Base64 sentinel when needed), integers in decimal, booleans as
// true/false.
func headerValue(v exactjson.Value) (string, bool) {
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

// Keywords whose values are subschemas (maps, arrays or single schemas).
// An x-mcp-header below any of them is not statically reachable.
var (
	schemaMapKeywords    = []string{"$defs", "definitions", "patternProperties", "dependentSchemas"}
	schemaArrayKeywords  = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaSingleKeywords = []string{"items", "additionalProperties", "additionalItems", "not", "if", "then", "else",
		"contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)

// findMirrors collects the x-mcp-header annotations of an input schema and
// validates them per SEP-2243: a non-empty HTTP token, case-insensitively
// unique, on a string, integer or boolean property reachable from the root
// through "properties" alone.
func findMirrors(schema exactjson.Value) ([]mirror, error) {
	var out []mirror
	seen := map[string]bool{}
	var walk func(node exactjson.Value, path []string, reachable bool) error
	walk = func(node exactjson.Value, path []string, reachable bool) error {
		if node.Kind() != exactjson.KindObject {
			return nil
		}
		if hv, ok := node.Get("x-mcp-header"); ok {
			name, isStr := hv.AsString()
			where := strings.Join(path, ".")
			switch {
			case !reachable || len(path) == 0:
				return fmt.Errorf("x-mcp-header at %q is not reachable through properties alone", where)
			case !isStr || !hdr.IsToken(name):
				return fmt.Errorf("x-mcp-header of %q is not a valid header name", where)
			case seen[strings.ToLower(name)]:
				return fmt.Errorf("x-mcp-header %q is declared twice", name)
			}
			typ := str(node, "type")
			if typ != "string" && typ != "integer" && typ != "boolean" {
				return fmt.Errorf("x-mcp-header %q is on a property of type %q (want string, integer or boolean)", name, typ)
			}
			seen[strings.ToLower(name)] = true
			out = append(out, mirror{header: name, path: path, typ: typ})
		}
		if props, ok := node.Get("properties"); ok {
			for k, sub := range props.All() {
				p := append(append([]string(nil), path...), k)
				if err := walk(sub, p, reachable); err != nil {
					return err
				}
			}
		}
		for _, kw := range schemaMapKeywords {
			m, _ := node.Get(kw)
			for _, sub := range m.All() {
				if err := walk(sub, path, false); err != nil {
					return err
				}
			}
		}
		for _, kw := range schemaArrayKeywords {
			a, _ := node.Get(kw)
			for sub := range a.Values() {
				if err := walk(sub, path, false); err != nil {
					return err
				}
			}
		}
		for _, kw := range schemaSingleKeywords {
			sub, _ := node.Get(kw)
			for e := range sub.Values() { // draft-7 style array "items"
				if err := walk(e, path, false); err != nil {
					return err
				}
			}
			if err := walk(sub, path, false); err != nil {
				return err
			}
		}
		return nil
	}
	if schema.IsNull() {
		return nil, nil
	}
	if err := walk(schema, nil, true); err != nil {
		return nil, errors.New("invalid tool definition: " + err.Error())
	}
	return out, nil
}
