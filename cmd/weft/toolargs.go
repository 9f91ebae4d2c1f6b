package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// param is one argument of a tool, as its input schema describes it.
type param struct {
	name, typ, desc string
	required        bool
}

// schemaParams lists the top-level properties of an input schema in the
// schema's order, required ones marked.
func schemaParams(schema exactjson.Value) []param {
	props, _ := schema.Get("properties")
	req, _ := schema.Get("required")
	var required []string
	for r := range req.Values() {
		if s, ok := r.AsString(); ok {
			required = append(required, s)
		}
	}
	var out []param
	for name, p := range props.All() {
		d, _ := p.Get("description")
		desc, _ := d.AsString()
		out = append(out, param{name: name, typ: schemaType(p), desc: desc, required: slices.Contains(required, name)})
	}
	return out
}

// schemaType names the JSON type a property takes: its "type" (the
// non-null one of a list), "enum" values, or "any".
func schemaType(p exactjson.Value) string {
	t, _ := p.Get("type")
	switch t.Kind() {
	case exactjson.KindString:
		s, _ := t.AsString()
		if s == "array" {
			if items, ok := p.Get("items"); ok {
				if it := schemaType(items); it != "any" {
					return it + "[]"
				}
			}
		}
		return s
	case exactjson.KindArray:
		var ts []string
		for v := range t.Values() {
			if s, _ := v.AsString(); s != "null" && s != "" {
				ts = append(ts, s)
			}
		}
		if len(ts) == 1 {
			return ts[0]
		}
		if len(ts) > 1 {
			return strings.Join(ts, "|")
		}
	}
	if e, ok := p.Get("enum"); ok && e.Len() > 0 {
		var vs []string
		for v := range e.Values() {
			vs = append(vs, v.String())
		}
		return strings.Join(vs, "|")
	}
	return "any"
}

// printParams writes a tool's arguments under its line in weft tools:
// name, type, * for required, description.
func printParams(w io.Writer, ps []param) {
	sigs := make([]string, len(ps))
	width := 0
	for i, p := range ps {
		star := ""
		if p.required {
			star = "*"
		}
		sigs[i] = p.name + star + ": " + p.typ
		width = max(width, len(sigs[i]))
	}
	for i, p := range ps {
		if p.desc == "" {
			fmt.Fprintf(w, "    %s\n", sigs[i])
			continue
		}
		fmt.Fprintf(w, "    %-*s  %s\n", width, sigs[i], oneLine(p.desc))
	}
}

// keyValueArgs turns NAME=VALUE words into tool arguments on top of base
// (the --args object). A value is taken as the schema types its property:
// a string as written, any other type as JSON (a number, true, an object,
// an array); where the schema says nothing, JSON when it parses as JSON
// and a string otherwise.
func keyValueArgs(base exactjson.Value, words []string, schema exactjson.Value) (exactjson.Value, error) {
	props, _ := schema.Get("properties")
	out := base
	for _, w := range words {
		name, value, err := splitArg(w)
		if err != nil {
			return exactjson.Value{}, err
		}
		typ := "any"
		if p, ok := props.Get(name); ok {
			typ = schemaType(p)
		}
		v, err := argValue(name, value, typ)
		if err != nil {
			return exactjson.Value{}, err
		}
		out = out.With(name, v)
	}
	return out, nil
}

// splitArg splits a NAME=VALUE word.
func splitArg(w string) (name, value string, err error) {
	name, value, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return "", "", fmt.Errorf("%q is not an argument NAME=VALUE", w)
	}
	return name, value, nil
}

// argValue is one NAME=VALUE's value for a property of type typ.
func argValue(name, value, typ string) (exactjson.Value, error) {
	if typ == "string" {
		return exactjson.String(value), nil
	}
	// Untyped, or one of several types: JSON when it parses, else a string.
	loose := typ == "any" || strings.Contains(typ, "|")
	v, err := exactjson.Parse([]byte(value), exactjson.Limits{})
	if err == nil && (loose || jsonKindFits(v.Kind(), typ)) {
		return v, nil
	}
	if loose {
		return exactjson.String(value), nil
	}
	return exactjson.Value{}, fmt.Errorf("argument %s is %s %s (written as JSON), not %q", name, article(typ), typ, value)
}

// jsonKindFits reports whether a JSON value of kind k is of schema type typ.
func jsonKindFits(k exactjson.Kind, typ string) bool {
	switch {
	case typ == "number" || typ == "integer":
		return k == exactjson.KindNumber
	case typ == "boolean":
		return k == exactjson.KindBool
	case typ == "object":
		return k == exactjson.KindObject
	case typ == "array" || strings.HasSuffix(typ, "[]"):
		return k == exactjson.KindArray
	case typ == "null":
		return k == exactjson.KindNull
	}
	return true
}

func article(typ string) string {
	if strings.ContainsAny(typ[:1], "aeiou") {
		return "an"
	}
	return "a"
}
