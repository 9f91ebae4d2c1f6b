package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/openapi"
)

// genericDoc is Galaxy's generic PaginatedResource (issue 28, item 4): a
// template with $dynamicAnchor itemType (bound to nothing, not: {}), and a
// response schema binding itemType to Planet. Two schemas declare the same
// anchor, so they must stay two schema resources.
const genericDoc = `openapi: 3.1.0
info: {title: galaxy, version: "1"}
paths:
  /planets:
    get:
      operationId: getAllData
      responses:
        '200':
          description: OK
          content:
            application/json:
              schema:
                $id: 'https://galaxy.scalar.com/schemas/PaginatedPlanets'
                $defs:
                  itemType:
                    $dynamicAnchor: itemType
                    $ref: '#/components/schemas/Planet'
                $ref: '#/components/schemas/PaginatedResource'
  /planets/{id}:
    put:
      operationId: updatePlanet
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Planet'}
      responses: {'204': {description: ok}}
components:
  schemas:
    Planet:
      type: object
      required: [name]
      properties:
        id: {type: integer, readOnly: true}
        name: {type: string}
        moons: {type: array, items: {$ref: '#/components/schemas/Moon'}}
    Moon:
      $anchor: moon
      type: object
      required: [name]
      properties:
        name: {type: string}
    PaginatedResource:
      $id: 'https://galaxy.scalar.com/schemas/PaginatedResource'
      $defs:
        itemType:
          $dynamicAnchor: itemType
          not: {}
      type: object
      properties:
        data:
          type: array
          items:
            $dynamicRef: '#itemType'
        meta: {type: object}
`

// TestDynamicAnchorBinding: the response schema loads, is valid 2020-12,
// and binds PaginatedResource's items to Planet: a page of planets passes,
// a page whose planet has no name fails (with the template's not: {} both
// would fail; with the binding lost both would pass).
func TestDynamicAnchorBinding(t *testing.T) {
	api, err := openapi.New([]byte(genericDoc), &openapi.Options{BaseURL: "http://127.0.0.1:1", Strict: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var out, in []byte
	for _, op := range api.Operations() {
		switch op.Name {
		case "getAllData":
			out = op.OutputSchema
		case "updatePlanet":
			in = op.InputSchema
		}
	}
	openapi.CheckSchema(t, "getAllData output", out)
	openapi.CheckSchema(t, "updatePlanet input", in)
	s, err := openapi.CompileSchema(out)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		instance string
		valid    bool
	}{
		{`{"result":{"data":[{"id":1,"name":"Mars","moons":[{"name":"Phobos"}]}],"meta":{}}}`, true},
		{`{"result":{"data":[],"meta":{}}}`, true},
		{`{"result":{"data":[{"id":1}],"meta":{}}}`, false},
		{`{"result":{"data":[{"name":"Mars","moons":[{}]}]}}`, false},
		{`{"result":{"data":[7]}}`, false},
	}
	for _, tc := range tests {
		var v any
		if err := json.Unmarshal([]byte(tc.instance), &v); err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); (err == nil) != tc.valid {
			t.Errorf("%s: valid = %v, want %v (%v)\n%s", tc.instance, err == nil, tc.valid, err, out)
		}
	}
	// The input schema keeps Moon's $anchor in Moon's own resource.
	if !strings.Contains(string(in), `"$anchor":"moon"`) || !strings.Contains(string(in), `"$id":"urn:weft:openapi:updatePlanet:input:Moon"`) {
		t.Errorf("input schema: %s", in)
	}
}

// bigDoc has n operations whose bodies reach the large schema Big through
// a small inline part: past MaxInlineSchemaBytes each tool names Big
// instead of copying it.
func bigDoc(n int) string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: big, version: '1'}\npaths:\n")
	for i := range n {
		fmt.Fprintf(&b, "  /things/%d:\n    post:\n      operationId: op%d\n      requestBody:\n        content:\n          application/json:\n            schema:\n              type: object\n              properties:\n                note: {type: string, description: %q}\n                big: {$ref: '#/components/schemas/Big'}\n                small: {$ref: '#/components/schemas/Small'}\n      responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Big'}}}}}\n",
			i, i, strings.Repeat("a note ", 40))
	}
	b.WriteString("components:\n  schemas:\n    Small: {type: string, enum: [x, y]}\n    Big:\n      type: object\n      nullable: true\n      required: [p0]\n      properties:\n")
	for j := range 200 {
		fmt.Fprintf(&b, "        p%d: {type: string, description: %q}\n", j, strings.Repeat("the description of a property ", 5))
	}
	return b.String()
}

// TestSharedDefinitions (issue 28, item 1): a large schema reached by every
// operation is written once, as the resource openapi://schemas/Big; each
// tool's schema keeps its own part, the small definitions it reaches, and
// a summary of Big (its type and the resource's URI).
func TestSharedDefinitions(t *testing.T) {
	const n = 40
	up := echoUpstream(t)
	api, _, c := newServer(t, bigDoc(n), openapi.Options{BaseURL: up.URL, MaxInlineSchemaBytes: 1000}, nil)
	if got := api.SharedSchemas(); len(got) != 1 || got[0] != "Big" {
		t.Fatalf("SharedSchemas = %v", got)
	}
	ctx := context.Background()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != n {
		t.Fatalf("%d tools", len(tools))
	}
	catalog := 0
	for _, tool := range tools {
		b, err := exactjson.Encode(tool.Raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		catalog += len(b)
		inb, err := exactjson.Encode(tool.InputSchema, 0)
		if err != nil {
			t.Fatal(err)
		}
		in := string(inb)
		if strings.Contains(in, `"p199"`) || !strings.Contains(in, `"Small":{"type":"string","enum":["x","y"]}`) {
			t.Fatalf("%s input schema: %s", tool.Name, in)
		}
		stub := `"big":{"type":["object","null"],"description":"Big (not inlined here; its schema is the resource openapi://schemas/Big)"}`
		if !strings.Contains(in, stub) {
			t.Fatalf("%s input schema has no summary of Big: %s", tool.Name, in)
		}
	}
	res, err := c.ReadResource(ctx, "openapi://schemas/Big")
	if err != nil {
		t.Fatal(err)
	}
	big := res.Text()
	openapi.CheckSchema(t, "Big", []byte(big))
	if !strings.Contains(big, `"p199"`) || res.Contents[0].MimeType != openapi.SchemaResourceMIME {
		t.Errorf("resource: %s %s", res.Contents[0].MimeType, big)
	}
	// Big is written once: all the tools together are smaller than n
	// copies of it.
	if catalog > n*len(big)/4 {
		t.Errorf("the catalog is %d bytes for %d tools; Big alone is %d", catalog, n, len(big))
	}
	if _, err := c.ReadResource(ctx, "openapi://schemas/Nope"); err == nil {
		t.Error("an unknown schema was read")
	}
	// A summarised part is still sent: the upstream checks it.
	s, r := call(t, c, "op3", `{"body":{"note":"n","big":{"p0":"v","p1":"w"},"small":"x"}}`)
	if r.IsError || s.Body != `{"note":"n","big":{"p0":"v","p1":"w"},"small":"x"}` {
		t.Errorf("call: %s %s", r.Text(), s.Body)
	}
}

// TestPatternTranslated (issue 28, item 5): DigitalOcean's "\:" is an error
// in the ECMA-262 u mode clients check patterns with; the tool schema has
// the pattern's ECMA spelling, and New says so. A pattern no dialect fix
// can save is left out with a warning.
func TestPatternTranslated(t *testing.T) {
	const doc = `openapi: 3.0.3
info: {title: p, version: '1'}
paths:
  /tags/{name}:
    get:
      operationId: getTag
      parameters:
        - {name: name, in: path, required: true, schema: {type: string, pattern: '^[a-zA-Z0-9_\-\:]+$'}}
        - {name: q, in: query, schema: {type: string, pattern: '(?i)^abc$'}}
        - {name: u, in: query, schema: {type: string, pattern: '^\u00e9+$'}}
      responses: {'200': {description: ok}}
`
	up := echoUpstream(t)
	api, _, c := newServer(t, doc, openapi.Options{BaseURL: up.URL}, nil)
	in := string(api.Operations()[0].InputSchema)
	if !strings.Contains(in, `"pattern":"^[a-zA-Z0-9_\\-:]+$"`) || strings.Contains(in, "(?i)") || !strings.Contains(in, `"pattern":"^\\u00e9+$"`) {
		t.Errorf("input schema: %s", in)
	}
	var ws []string
	for _, w := range api.Warnings() {
		ws = append(ws, w.String())
	}
	all := strings.Join(ws, "\n")
	if !strings.Contains(all, `is sent as "^[a-zA-Z0-9_\\-:]+$"`) || !strings.Contains(all, `pattern "(?i)^abc$" is left out`) {
		t.Errorf("warnings:\n%s", all)
	}
	// The server checks the translated pattern, \u escapes included.
	if _, r := call(t, c, "getTag", `{"name":"a:b","u":"éé"}`); r.IsError {
		t.Errorf("valid arguments refused: %s", r.Text())
	}
	for _, args := range []string{`{"name":"a b"}`, `{"name":"a","u":"e"}`} {
		if _, r := call(t, c, "getTag", args); !r.IsError {
			t.Errorf("%s accepted", args)
		}
	}
}

// TestFormBodyNested (issue 28, item 4): a form body with nested objects
// and arrays is written as Stripe reads it, following the media type's
// Encoding Object.
func TestFormBodyNested(t *testing.T) {
	const doc = `openapi: 3.0.3
info: {title: f, version: '1'}
paths:
  /v1/checkout/sessions:
    post:
      operationId: PostCheckoutSessions
      requestBody:
        content:
          application/x-www-form-urlencoded:
            encoding:
              expand: {explode: true, style: deepObject}
              line_items: {explode: true, style: deepObject}
              metadata: {explode: true, style: deepObject}
              tags: {style: form, explode: false}
              pipes: {style: pipeDelimited, explode: false}
              filter: {contentType: application/json}
            schema:
              type: object
              properties:
                mode: {type: string}
                expand: {type: array, items: {type: string}}
                line_items: {type: array, items: {type: object}}
                metadata: {type: object}
                tags: {type: array, items: {type: string}}
                pipes: {type: array, items: {type: string}}
                repeated: {type: array, items: {type: string}}
                filter: {type: object}
                plain: {type: object}
      responses: {'200': {description: ok}}
`
	up := echoUpstream(t)
	_, _, c := newServer(t, doc, openapi.Options{BaseURL: up.URL}, nil)
	tests := []struct{ args, body string }{
		{`{"mode":"payment a+b"}`, "mode=payment%20a%2Bb"},
		{`{"expand":["line_items","customer"]}`, "expand%5B0%5D=line_items&expand%5B1%5D=customer"},
		{`{"line_items":[{"price":"price_1","quantity":2,"adjustable_quantity":{"enabled":true}}]}`,
			"line_items%5B0%5D%5Bprice%5D=price_1&line_items%5B0%5D%5Bquantity%5D=2&line_items%5B0%5D%5Badjustable_quantity%5D%5Benabled%5D=true"},
		{`{"metadata":{"order id":"7"}}`, "metadata%5Border%20id%5D=7"},
		{`{"tags":["a","b c"]}`, "tags=a,b%20c"},
		{`{"pipes":["a","b"]}`, "pipes=a|b"},
		{`{"repeated":["a","b"]}`, "repeated=a&repeated=b"},
		{`{"filter":{"n":1}}`, "filter=%7B%22n%22%3A1%7D"},
		{`{"plain":{"a":{"b":1}}}`, "plain%5Ba%5D%5Bb%5D=1"},
	}
	for _, tc := range tests {
		s, r := call(t, c, "PostCheckoutSessions", `{"body":`+tc.args+`}`)
		if r.IsError {
			t.Errorf("%s: %s", tc.args, r.Text())
			continue
		}
		if s.Body != tc.body || s.ContentType != "application/x-www-form-urlencoded" {
			t.Errorf("%s: sent %s (%s), want %s", tc.args, s.Body, s.ContentType, tc.body)
		}
	}
}
