// Package fastschema pre-checks tool arguments against the JSON Schema
// shapes most tools use (object properties, required, additionalProperties,
// items and type lists), without the full validator: Accepts is never true
// where the full validator refuses, and a schema with a construct it does
// not model does not compile (the full validator then decides alone).
package fastschema

import "github.com/weftmcp/weft/exactjson"

// Schema is a pre-check for the common shape of tool input schemas
// (types, properties, required, additionalProperties, items, annotations),
// run before the full JSON Schema validator. It only ever accepts: when it
// accepts, the arguments are valid under the full validator too
// (FuzzFastSchema checks that), and anything it does not accept - invalid
// arguments, or a construct it does not model - goes to the full validator,
// which decides and writes the error message. Schemas using any other
// keyword get no Schema at all.
type Schema struct {
	never      bool   // the schema false
	types      uint16 // allowed kinds (fastType bits); 0 = any
	props      []fastProp
	required   []string
	addlFalse  bool    // additionalProperties: false
	addl       *Schema // additionalProperties as a schema (nil = any)
	items      *Schema // items (nil = any)
	properties bool    // "properties" present
}

type fastProp struct {
	name   string
	schema *Schema
}

const (
	fastNull uint16 = 1 << iota
	fastBool
	fastNumber
	fastInteger
	fastString
	fastArray
	fastObject
)

// fastKeywordIsAnnotation lists the keywords that never affect validity.
func fastKeywordIsAnnotation(k string) bool {
	switch k {
	case "description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly":
		return true
	}
	return false
}

// Compile builds the pre-check for schema, or reports false when
// the schema uses anything it does not model.
func Compile(schema exactjson.Value) (*Schema, bool) {
	return compileFast(schema, 0)
}

func compileFast(v exactjson.Value, depth int) (*Schema, bool) {
	if depth > 32 {
		return nil, false
	}
	switch v.Kind() {
	case exactjson.KindBool:
		b, _ := v.AsBool()
		return &Schema{never: !b}, true
	case exactjson.KindObject:
	default:
		return nil, false
	}
	f := &Schema{}
	for k, m := range v.All() {
		switch {
		case k == "type":
			t, ok := fastTypes(m)
			if !ok {
				return nil, false
			}
			f.types = t
		case k == "properties":
			if m.Kind() != exactjson.KindObject {
				return nil, false
			}
			f.properties = true
			for name, ps := range m.All() {
				p, ok := compileFast(ps, depth+1)
				if !ok {
					return nil, false
				}
				f.props = append(f.props, fastProp{name, p})
			}
		case k == "required":
			if m.Kind() != exactjson.KindArray {
				return nil, false
			}
			for r := range m.Values() {
				s, ok := r.AsString()
				if !ok {
					return nil, false
				}
				f.required = append(f.required, s)
			}
		case k == "additionalProperties":
			if b, ok := m.AsBool(); ok && !b {
				f.addlFalse = true
				continue
			}
			a, ok := compileFast(m, depth+1)
			if !ok {
				return nil, false
			}
			f.addl = a
		case k == "items":
			it, ok := compileFast(m, depth+1)
			if !ok {
				return nil, false
			}
			f.items = it
		case fastKeywordIsAnnotation(k):
		default:
			return nil, false
		}
	}
	return f, true
}

func fastTypes(v exactjson.Value) (uint16, bool) {
	one := func(s string) uint16 {
		switch s {
		case "null":
			return fastNull
		case "boolean":
			return fastBool
		case "number":
			return fastNumber
		case "integer":
			return fastInteger
		case "string":
			return fastString
		case "array":
			return fastArray
		case "object":
			return fastObject
		}
		return 0
	}
	if s, ok := v.AsString(); ok {
		t := one(s)
		return t, t != 0
	}
	if v.Kind() != exactjson.KindArray || v.Len() == 0 {
		return 0, false
	}
	var t uint16
	for e := range v.Values() {
		s, ok := e.AsString()
		if !ok || one(s) == 0 {
			return 0, false
		}
		t |= one(s)
	}
	return t, true
}

// accepts reports whether v is certainly valid (false: let the full
// validator decide).
func (f *Schema) Accepts(v exactjson.Value) bool {
	if f.never {
		return false
	}
	if f.types != 0 && !f.typeOK(v) {
		return false
	}
	switch v.Kind() {
	case exactjson.KindObject:
		for _, r := range f.required {
			if !v.Has(r) {
				return false
			}
		}
		for i := range v.Len() {
			m := v.Member(i)
			if p, ok := f.prop(m.Name); ok {
				if !p.Accepts(m.Value) {
					return false
				}
				continue
			}
			if f.addlFalse {
				return false
			}
			if f.addl != nil && !f.addl.Accepts(m.Value) {
				return false
			}
		}
	case exactjson.KindArray:
		if f.items != nil {
			for e := range v.Values() {
				if !f.items.Accepts(e) {
					return false
				}
			}
		}
	}
	return true
}

func (f *Schema) prop(name string) (*Schema, bool) {
	for i := range f.props {
		if f.props[i].name == name {
			return f.props[i].schema, true
		}
	}
	return nil, false
}

func (f *Schema) typeOK(v exactjson.Value) bool {
	switch v.Kind() {
	case exactjson.KindNull:
		return f.types&fastNull != 0
	case exactjson.KindBool:
		return f.types&fastBool != 0
	case exactjson.KindString:
		return f.types&fastString != 0
	case exactjson.KindArray:
		return f.types&fastArray != 0
	case exactjson.KindObject:
		return f.types&fastObject != 0
	case exactjson.KindNumber:
		if f.types&fastNumber != 0 {
			return true
		}
		if f.types&fastInteger != 0 {
			n, _ := v.AsNumber()
			return n.IsInteger()
		}
	}
	return false
}
