package openapi

import (
	"os"

	"strings"
	"testing"

	yaml "github.com/pb33f/go-yaml"

	"github.com/weftmcp/weft/exactjson"
)

// FuzzMapping feeds arbitrary documents to the document-to-tools mapping:
// it must never panic, and every tool it makes must have an object input
// schema that compiles as JSON Schema 2020-12 (as must any output schema),
// with a valid tool name.
//
// Under go test -fuzz this target often pauses for long stretches between
// executions (a target that only calls libopenapi.NewDocument and
// BuildV3Model pauses the same way), so FuzzSchema fuzzes the converter,
// this package's own reader of the document's schemas, at full speed.
func FuzzMapping(f *testing.F) {
	for _, p := range []string{"../examples/openapi/petstore.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "http://127.0.0.1:1"}]
paths:
  /a/{id}:
    get:
      parameters: [{name: id, in: path, required: true, style: label, schema: {type: array, items: {$ref: '#/components/schemas/A'}}}]
      requestBody: {content: {application/json: {schema: {nullable: true, allOf: [{$ref: '#/components/schemas/A'}]}}}}
      responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/A'}}}}}
components:
  schemas:
    A: {type: object, properties: {a: {$ref: '#/components/schemas/A'}, n: {type: number, maximum: 1e400, exclusiveMaximum: true}}}
`))
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"t","version":"1"},"servers":[{"url":"http://x"}],"paths":{"/{a}":{"parameters":[{"name":"a","in":"path","required":true,"content":{"application/json":{"schema":true}}}],"post":{"operationId":"a b/c","requestBody":{"content":{"text/plain":{}}},"responses":{"201":{"description":"x","content":{"application/json":{"schema":{"type":["array","null"],"prefixItems":[{"const":9007199254740993}]}}}}}}}}}`))
	f.Add([]byte("openapi: 3.1.0\ninfo: {title: t, version: '1'}\nservers: [{url: 'http://x'}]\npaths:\n  /a:\n    get:\n      parameters: [{name: q, in: query, schema: &a {type: object, properties: {x: *a}}}]\n      responses: {}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		api, err := New(doc, &Options{MaxSchemaNodes: 20_000})
		if err != nil {
			return
		}
		for _, op := range api.Operations() {
			if op.Kind == KindExcluded {
				continue
			}
			if op.Name == "" || len(op.Name) > 128 || strings.Trim(op.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != "" {
				t.Fatalf("tool name %q", op.Name)
			}
			v, err := exactjson.Parse(op.InputSchema, exactjson.Limits{})
			if err != nil {
				t.Fatalf("%s: input schema is not JSON: %v", op.Name, err)
			}
			if ty, _ := v.Get("type"); !isStr(ty, "object") {
				t.Fatalf("%s: input schema root is not an object schema: %s", op.Name, op.InputSchema)
			}
			if _, err := compile(op.InputSchema); err != nil {
				t.Fatalf("%s: input schema does not compile: %v\n%s", op.Name, err, op.InputSchema)
			}
			if len(op.OutputSchema) > 0 {
				if _, err := compile(op.OutputSchema); err != nil {
					t.Fatalf("%s: output schema does not compile: %v\n%s", op.Name, err, op.OutputSchema)
				}
			}
		}
	})
}

// FuzzSchema feeds arbitrary YAML to the schema converter, under both the
// 3.0 and the 3.1 rules: it must never panic, its output must be strict
// JSON, and the output must compile unless the meta-schema refuses a
// keyword value (so every $ref it writes resolves in the $defs it writes).
func FuzzSchema(f *testing.F) {
	f.Add([]byte("type: object\nproperties:\n  a: {$ref: '#/b'}\n  n: {type: number, maximum: 0x10, exclusiveMaximum: true, nullable: true}\nb: {items: [{$ref: '#'}], example: 1.50}\n"), true)
	f.Add([]byte("allOf: [{$ref: '#/components/schemas/A~1B'}]\ncomponents: {schemas: {A/B: {enum: [1, null], nullable: true, $ref: '#/x'}}}\nx: true\n"), false)
	f.Add([]byte("&a {properties: {x: *a}, anyOf: [*a]}"), false)
	f.Fuzz(func(t *testing.T, doc []byte, v30 bool) {
		var root yaml.Node
		if err := yaml.Unmarshal(doc, &root); err != nil {
			return
		}
		c := newConverter(&root, v30, 5000)
		c.idBase = "urn:weft:fuzz:" // definitions become resources when a schema declares an anchor
		s, err := c.schema(&root, 1)
		if err != nil {
			return
		}
		// As in a tool's input schema: the converted schema is a property.
		wrapped := exactjson.Object(exactjson.Field("type", exactjson.String("object")),
			exactjson.Field("properties", exactjson.Object(exactjson.Field("x", s))))
		out, err := exactjson.Encode(c.document(wrapped), 0)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		if _, err := exactjson.Parse(out, exactjson.Limits{MaxDepth: 256}); err != nil {
			t.Fatalf("the converted schema is not strict JSON: %v\n%s", err, out)
		}
		// Keyword values are copied as written, so the meta-schema may
		// refuse them (New then refuses the operation); anything else the
		// compiler refuses, a dangling reference above all, is a bug.
		// Anchors are copied as written too: one declared twice in a
		// definition, or a $dynamicRef to none, is the document's error.
		if _, err := compile(out); err != nil && !strings.Contains(err.Error(), "is not valid against metaschema") &&
			!strings.Contains(err.Error(), "anchor") && !strings.Contains(err.Error(), "$dynamicRef") {
			t.Fatalf("%v\n%s", err, out)
		}
	})
}
