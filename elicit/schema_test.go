package elicit

import (
	"errors"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func mustParse(t testing.TB, s string) exactjson.Value {
	t.Helper()
	v, err := exactjson.ParseString(s, exactjson.Limits{})
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

func wrap(props string, extra ...string) string {
	s := `{"type":"object","properties":{` + props + `}`
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

func TestParseSchemaAccepts(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		kinds  map[string]FieldKind
	}{
		{"empty", wrap(``), map[string]FieldKind{}},
		{"with $schema", wrap(``, `"$schema":"https://json-schema.org/draft/2020-12/schema"`), map[string]FieldKind{}},
		{"string", wrap(`"n":{"type":"string","title":"Name","description":"d","minLength":1,"maxLength":50,"default":"x"}`), map[string]FieldKind{"n": KindString}},
		{"string lengths as 3.0", wrap(`"n":{"type":"string","minLength":3.0,"maxLength":3E0}`), map[string]FieldKind{"n": KindString}},
		{"email", wrap(`"e":{"type":"string","format":"email","default":"user@example.com"}`), map[string]FieldKind{"e": KindString}},
		{"uri date date-time", wrap(`"u":{"type":"string","format":"uri"},"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"}`), map[string]FieldKind{"u": KindString, "d": KindString, "t": KindString}},
		{"number", wrap(`"a":{"type":"number","minimum":0,"maximum":100.5,"default":50}`), map[string]FieldKind{"a": KindNumber}},
		{"integer decimal bounds", wrap(`"a":{"type":"integer","minimum":0.5,"maximum":3.50,"default":2.0}`), map[string]FieldKind{"a": KindInteger}},
		{"equal bounds", wrap(`"a":{"type":"number","minimum":3.50,"maximum":3.5}`), map[string]FieldKind{"a": KindNumber}},
		{"boolean", wrap(`"b":{"type":"boolean","default":false}`), map[string]FieldKind{"b": KindBoolean}},
		{"enum", wrap(`"c":{"type":"string","enum":["Red","Green"],"default":"Red"}`), map[string]FieldKind{"c": KindSingleSelect}},
		{"legacy enumNames", wrap(`"c":{"type":"string","enum":["r","g"],"enumNames":["Red","Green"]}`), map[string]FieldKind{"c": KindSingleSelect}},
		{"oneOf", wrap(`"c":{"type":"string","oneOf":[{"const":"#f00","title":"Red"}],"default":"#f00"}`), map[string]FieldKind{"c": KindSingleSelect}},
		{"multi", wrap(`"m":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b","c"]},"default":["a","b"]}`), map[string]FieldKind{"m": KindMultiSelect}},
		{"titled multi", wrap(`"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},"default":[]}`), map[string]FieldKind{"m": KindMultiSelect}},
		{"titled multi with type", wrap(`"m":{"type":"array","items":{"type":"string","anyOf":[{"const":"a","title":"A"}]}}`), map[string]FieldKind{"m": KindMultiSelect}},
		{"maxItems above options", wrap(`"m":{"type":"array","maxItems":9,"items":{"type":"string","enum":["a"]}}`), map[string]FieldKind{"m": KindMultiSelect}},
		{"required", wrap(`"a":{"type":"string"},"b":{"type":"boolean"}`, `"required":["b","a"]`), map[string]FieldKind{"a": KindString, "b": KindBoolean}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSchema(mustParse(t, tt.schema))
			if err != nil {
				t.Fatalf("ParseSchema: %v", err)
			}
			if got := len(s.Fields()); got != len(tt.kinds) {
				t.Fatalf("%d fields, want %d", got, len(tt.kinds))
			}
			for name, k := range tt.kinds {
				f, ok := s.Field(name)
				if !ok || f.Kind != k {
					t.Errorf("field %q = %+v, %v; want kind %v", name, f, ok, k)
				}
			}
			if !exactjson.Equal(s.Value(), mustParse(t, tt.schema)) {
				t.Errorf("Value() = %s, want the input", s.Value())
			}
		})
	}
}

func TestParseSchemaRejects(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string // substring of the error
		secret bool
	}{
		{"not object", `[]`, "must be a JSON object", false},
		{"no type", `{"properties":{}}`, `missing "type"`, false},
		{"wrong type", `{"type":"array","properties":{}}`, `"type" must be "object"`, false},
		{"no properties", `{"type":"object"}`, `missing "properties"`, false},
		{"properties not object", `{"type":"object","properties":[]}`, `"properties" must be an object`, false},
		{"top-level extra", wrap(``, `"additionalProperties":false`), "unsupported top-level keyword", false},
		{"$schema not string", wrap(``, `"$schema":1`), `"$schema" must be a string`, false},
		{"required not array", wrap(`"a":{"type":"string"}`, `"required":"a"`), `"required" must be an array`, false},
		{"required non-string", wrap(`"a":{"type":"string"}`, `"required":[1]`), "only strings", false},
		{"required undeclared", wrap(`"a":{"type":"string"}`, `"required":["b"]`), "undeclared property", false},
		{"required twice", wrap(`"a":{"type":"string"}`, `"required":["a","a"]`), "twice", false},
		{"empty name", wrap(`"":{"type":"string"}`), "empty name", false},
		{"property not object", wrap(`"a":"string"`), "schema must be an object", false},
		{"missing type", wrap(`"a":{"title":"A"}`), `missing "type"`, false},
		{"type array", wrap(`"a":{"type":["string","null"]}`), "single string", false},
		{"nested object", wrap(`"a":{"type":"object","properties":{}}`), "unsupported type", false},
		{"null type", wrap(`"a":{"type":"null"}`), "unsupported type", false},
		{"unknown keyword", wrap(`"a":{"type":"string","pattern":"x"}`), `keyword "pattern" is not allowed`, false},
		{"min on string", wrap(`"a":{"type":"string","minimum":1}`), `keyword "minimum" is not allowed`, false},
		{"minLength on number", wrap(`"a":{"type":"number","minLength":1}`), `keyword "minLength" is not allowed`, false},
		{"title not string", wrap(`"a":{"type":"string","title":1}`), `"title" must be a string`, false},
		{"negative minLength", wrap(`"a":{"type":"string","minLength":-1}`), "integer from 0", false},
		{"fractional maxLength", wrap(`"a":{"type":"string","maxLength":1.5}`), "integer from 0", false},
		{"huge maxLength", wrap(`"a":{"type":"string","maxLength":1E+20}`), "integer from 0", false},
		{"min > max length", wrap(`"a":{"type":"string","minLength":5,"maxLength":4}`), "greater than maxLength", false},
		{"bad format", wrap(`"a":{"type":"string","format":"hostname"}`), `"format" must be`, false},
		{"min > max", wrap(`"a":{"type":"number","minimum":3.51,"maximum":3.5}`), "greater than maximum", false},
		{"minimum string", wrap(`"a":{"type":"number","minimum":"1"}`), `"minimum" must be a number`, false},
		{"enum empty", wrap(`"a":{"type":"string","enum":[]}`), "no options", false},
		{"enum dup", wrap(`"a":{"type":"string","enum":["x","x"]}`), "listed twice", false},
		{"enum non-string", wrap(`"a":{"type":"string","enum":["x",1]}`), "only strings", false},
		{"enum and oneOf", wrap(`"a":{"type":"string","enum":["x"],"oneOf":[{"const":"x","title":"X"}]}`), `both "enum" and "oneOf"`, false},
		{"enumNames length", wrap(`"a":{"type":"string","enum":["x","y"],"enumNames":["X"]}`), "enumNames", false},
		{"enum with minLength", wrap(`"a":{"type":"string","enum":["x"],"minLength":1}`), "not allowed", false},
		{"oneOf missing title", wrap(`"a":{"type":"string","oneOf":[{"const":"x"}]}`), "both", false},
		{"oneOf extra key", wrap(`"a":{"type":"string","oneOf":[{"const":"x","title":"X","description":"d"}]}`), "unsupported keyword", false},
		{"oneOf non-string const", wrap(`"a":{"type":"string","oneOf":[{"const":1,"title":"X"}]}`), "must be a string", false},
		{"oneOf dup", wrap(`"a":{"type":"string","oneOf":[{"const":"x","title":"X"},{"const":"x","title":"Y"}]}`), "listed twice", false},
		{"array no items", wrap(`"a":{"type":"array"}`), `needs "items"`, false},
		{"array of free strings", wrap(`"a":{"type":"array","items":{"type":"string"}}`), "not supported", false},
		{"array of objects", wrap(`"a":{"type":"array","items":{"type":"object"}}`), "not supported", false},
		{"items enum without type", wrap(`"a":{"type":"array","items":{"enum":["x"]}}`), `needs "type": "string"`, false},
		{"items enum number type", wrap(`"a":{"type":"array","items":{"type":"number","enum":["x"]}}`), `"items.type" must be "string"`, false},
		{"items extra key", wrap(`"a":{"type":"array","items":{"type":"string","enum":["x"],"minLength":1}}`), "not allowed", false},
		{"minItems > maxItems", wrap(`"a":{"type":"array","minItems":2,"maxItems":1,"items":{"type":"string","enum":["x","y"]}}`), "greater than maxItems", false},
		{"minItems > options", wrap(`"a":{"type":"array","minItems":3,"items":{"type":"string","enum":["x","y"]}}`), "more than the 2 options", false},
		{"default wrong type", wrap(`"a":{"type":"string","default":1}`), "default value is invalid", false},
		{"default too short", wrap(`"a":{"type":"string","minLength":3,"default":"ab"}`), "default value is invalid", false},
		{"default bad email", wrap(`"a":{"type":"string","format":"email","default":"nope"}`), "default value is invalid", false},
		{"default out of range", wrap(`"a":{"type":"number","maximum":3.5,"default":3.51}`), "default value is invalid", false},
		{"default not integer", wrap(`"a":{"type":"integer","default":2.5}`), "default value is invalid", false},
		{"default not option", wrap(`"a":{"type":"string","enum":["x"],"default":"y"}`), "default value is invalid", false},
		{"default multi dup", wrap(`"a":{"type":"array","items":{"type":"string","enum":["x"]},"default":["x","x"]}`), "default value is invalid", false},
		{"default null", wrap(`"a":{"type":"boolean","default":null}`), "default value is invalid", false},
		{"writeOnly", wrap(`"a":{"type":"string","writeOnly":true}`), "writeOnly", true},
		{"x-secret", wrap(`"a":{"type":"string","x-secret":true}`), "x-secret", true},
		{"x-sensitive", wrap(`"a":{"type":"number","x-sensitive":true}`), "x-sensitive", true},
		{"format password", wrap(`"a":{"type":"string","format":"password"}`), "password", true},
		{"writeOnly false is just unsupported", wrap(`"a":{"type":"string","writeOnly":false}`), "not allowed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSchema(mustParse(t, tt.schema))
			if err == nil {
				t.Fatal("ParseSchema succeeded")
			}
			if !errors.Is(err, ErrInvalidSchema) {
				t.Errorf("error %v does not match ErrInvalidSchema", err)
			}
			if got := errors.Is(err, ErrSecretField); got != tt.secret {
				t.Errorf("errors.Is(err, ErrSecretField) = %v, want %v (%v)", got, tt.secret, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseSchemaProgrammaticValues(t *testing.T) {
	str := exactjson.Object(exactjson.Field("type", exactjson.String("string")))
	tests := []struct {
		name string
		v    exactjson.Value
	}{
		{"duplicate property", exactjson.Object(
			exactjson.Field("type", exactjson.String("object")),
			exactjson.Field("properties", exactjson.Object(exactjson.Field("a", str), exactjson.Field("a", str))))},
		{"duplicate top-level", exactjson.Object(
			exactjson.Field("type", exactjson.String("object")),
			exactjson.Field("type", exactjson.String("object")),
			exactjson.Field("properties", exactjson.Object()))},
		{"invalid UTF-8 name", exactjson.Object(
			exactjson.Field("type", exactjson.String("object")),
			exactjson.Field("properties", exactjson.Object(exactjson.Field("a\xff", str))))},
		{"invalid UTF-8 title", exactjson.Object(
			exactjson.Field("type", exactjson.String("object")),
			exactjson.Field("properties", exactjson.Object(exactjson.Field("a", exactjson.Object(
				exactjson.Field("type", exactjson.String("string")),
				exactjson.Field("title", exactjson.String("\xff")))))))},
		{"null", exactjson.Null()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseSchema(tt.v); !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("ParseSchema = %v, want ErrInvalidSchema", err)
			}
		})
	}
}

func TestSchemaNil(t *testing.T) {
	var s *Schema
	if !s.Value().IsNull() || s.Fields() != nil {
		t.Fatal("nil schema accessors")
	}
	if _, ok := s.Field("a"); ok {
		t.Fatal("nil schema has a field")
	}
	if err := s.Validate(exactjson.Object()); err == nil {
		t.Fatal("nil schema validated content")
	}
}

func TestFieldInfo(t *testing.T) {
	s, err := ParseSchema(mustParse(t, wrap(
		`"c":{"type":"string","title":"Colour","description":"Pick one","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}],"default":"g"},`+
			`"l":{"type":"string","enum":["a","b"],"enumNames":["A","B"]},`+
			`"e":{"type":"string","format":"email"}`,
		`"required":["c"]`)))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Field("c")
	if c.Title != "Colour" || c.Description != "Pick one" || !c.Required || len(c.Options) != 2 ||
		c.Options[1] != (Option{Value: "g", Title: "Green"}) || !exactjson.Equal(c.Default, exactjson.String("g")) {
		t.Errorf("c = %+v", c)
	}
	c.Options[0].Value = "mutated"
	if again, _ := s.Field("c"); again.Options[0].Value != "r" {
		t.Error("FieldInfo.Options aliases the schema")
	}
	l, _ := s.Field("l")
	if l.Options[0] != (Option{Value: "a", Title: "A"}) || l.Required {
		t.Errorf("l = %+v", l)
	}
	e, _ := s.Field("e")
	if e.Format != FormatEmail || !e.Default.IsNull() {
		t.Errorf("e = %+v", e)
	}
	names := []string{}
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "c,l,e" {
		t.Errorf("field order %v", names)
	}
}
