package weft

import (
	"context"
	"testing"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/fastschema"
)

func TestFastSchema(t *testing.T) {
	const echo = `{"type":"object","properties":{"text":{"type":"string","description":"d"},"count":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"opt":{"type":["null","number"]}},"required":["text","count"],"additionalProperties":false}`
	for _, tc := range []struct {
		name, schema, instance string
		compiles, accepts      bool
	}{
		{"valid", echo, `{"text":"a","count":3}`, true, true},
		{"integer spelled 3.0", echo, `{"text":"a","count":3.0}`, true, true},
		{"integer spelled 1E+2", echo, `{"text":"a","count":1E+2}`, true, true},
		{"fraction is no integer", echo, `{"text":"a","count":3.5}`, true, false},
		{"missing required", echo, `{"text":"a"}`, true, false},
		{"extra member", echo, `{"text":"a","count":3,"x":1}`, true, false},
		{"wrong type", echo, `{"text":1,"count":3}`, true, false},
		{"array items", echo, `{"text":"a","count":3,"tags":["x","y"]}`, true, true},
		{"bad array item", echo, `{"text":"a","count":3,"tags":["x",2]}`, true, false},
		{"type list", echo, `{"text":"a","count":3,"opt":null}`, true, true},
		{"not an object", echo, `[]`, true, false},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"boolean"}}`, `{"a":true,"b":false}`, true, true},
		{"additionalProperties schema fails", `{"type":"object","additionalProperties":{"type":"boolean"}}`, `{"a":1}`, true, false},
		{"false schema", `{"type":"object","properties":{"a":false}}`, `{"a":1}`, true, false},
		{"true schema", `{"type":"object","properties":{"a":true}}`, `{"a":1}`, true, true},
		{"unmodelled keyword", `{"type":"object","properties":{"n":{"type":"integer","minimum":0}}}`, `{"n":1}`, false, false},
		{"$ref", `{"type":"object","$defs":{"x":{}},"properties":{"a":{"$ref":"#/$defs/x"}}}`, `{"a":1}`, false, false},
		{"unknown type name", `{"type":"object","properties":{"a":{"type":"float"}}}`, `{"a":1}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := fastschema.Compile(mustParse(t, tc.schema))
			if ok != tc.compiles {
				t.Fatalf("compiles = %v, want %v", ok, tc.compiles)
			}
			if !ok {
				return
			}
			inst := mustParse(t, tc.instance)
			if got := f.Accepts(inst); got != tc.accepts {
				t.Errorf("accepts = %v, want %v", got, tc.accepts)
			}
			c, err := compileSchema([]byte(tc.schema), "input", false)
			must(t, err)
			if f.Accepts(inst) && c.validator.Validate(inst.Any()) != nil {
				t.Errorf("the pre-check accepted what the full validator refuses")
			}
		})
	}
}

// TestFastSchemaForTypedTools: an input schema inferred from a Go type is
// in the modelled shape, so typed tools get the pre-check.
func TestFastSchemaForTypedTools(t *testing.T) {
	s, _ := newServer(t, nil)
	type in struct {
		Text  string   `json:"text" jsonschema:"the text"`
		Count int      `json:"count"`
		Tags  []string `json:"tags,omitempty"`
		Ptr   *float64 `json:"ptr,omitempty"`
		Inner struct {
			OK bool `json:"ok"`
		} `json:"inner"`
	}
	must(t, AddTool(s, Tool{Name: "typed", Description: "Typed."},
		func(ctx context.Context, req *Request, a in) (*CallToolResult, error) { return textResult("ok"), nil }))
	s.mu.RLock()
	e, _ := s.tools.get("typed")
	s.mu.RUnlock()
	if e.fastInput == nil {
		t.Fatalf("no pre-check for the inferred schema %s", e.tool.InputSchema)
	}
	if !e.fastInput.Accepts(mustParse(t, `{"text":"a","count":1,"tags":["x"],"ptr":1.5,"inner":{"ok":true}}`)) {
		t.Errorf("the pre-check refuses valid arguments for %s", e.tool.InputSchema)
	}
}

// FuzzFastSchema: whatever the pre-check accepts, the full validator
// accepts too.
func FuzzFastSchema(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"type":"object","properties":{"text":{"type":"string"},"count":{"type":"integer"}},"required":["text"],"additionalProperties":false}`, `{"text":"a","count":3}`},
		{`{"type":"object","properties":{"a":{"type":["null","array"],"items":{"type":"number"}}}}`, `{"a":[1,2.5,1E+400]}`},
		{`{"type":"object","additionalProperties":{"type":"object","properties":{"x":false}}}`, `{"k":{"y":1}}`},
		{`{"type":"integer"}`, `-0.0`},
		{`true`, `"s"`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, schema, instance string) {
		sv, err := exactjson.ParseString(schema, exactjson.Limits{})
		if err != nil {
			return
		}
		iv, err := exactjson.ParseString(instance, exactjson.Limits{})
		if err != nil {
			return
		}
		fast, ok := fastschema.Compile(sv)
		if !ok || !fast.Accepts(iv) {
			return
		}
		c, err := compileSchema([]byte(schema), "input", false)
		if err != nil {
			return // not a schema the server would accept at all
		}
		if err := c.validator.Validate(iv.Any()); err != nil {
			t.Fatalf("pre-check accepted %s under %s; the full validator says %v", instance, schema, err)
		}
	})
}
