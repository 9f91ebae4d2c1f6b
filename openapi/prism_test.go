package openapi_test

import (
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/internal/nodetest"
	"github.com/weftmcp/weft/internal/syncbuf"
	"github.com/weftmcp/weft/openapi"
)

// prism starts Stoplight Prism's validating mock (npm @stoplight/prism-cli,
// testdata/partners/package.json) on the OpenAPI document at spec, on a
// free loopback port, and returns its base URL and its log. Prism answers
// a request that breaks the document with 422 (400 for a body), and logs
// every violation it finds.
func prism(t *testing.T, spec string) (string, *syncbuf.Buffer) {
	t.Helper()
	dir := nodetest.Install(t, "testdata/partners")
	node := nodetest.Node(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	out := &syncbuf.Buffer{}
	cmd := exec.Command(node, filepath.Join(dir, "node_modules/@stoplight/prism-cli/dist/index.js"),
		"mock", spec, "-p", port, "-h", "127.0.0.1")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case <-done:
			t.Fatalf("prism exited:\n%s", out.String())
		default:
		}
		if strings.Contains(out.String(), "Prism is listening") {
			return "http://" + addr, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("prism did not start:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// prismStylesDoc has an operation for every parameter location, style and
// explode setting, and JSON and form bodies; the schemas are strict (typed
// items, minimum counts, required members, no others) so a value sent in
// the wrong form breaks them. Path parameters are scalars: Prism 5.16
// crashes on any array or object path value ("value.split is not a
// function"), so those encodings are held to the specification's examples
// by TestParameterStyles instead, as are spaceDelimited without explode
// (Prism splits the decoded value on the text "%20") and exploded arrays
// in form bodies (Prism keeps the last of repeated names; and it calls the
// comma between items a reserved character unless allowReserved). Object members
// are lower case: Prism lowercases query parameter names before it matches
// them to properties.
const prismStylesDoc = `openapi: 3.0.3
info: {title: styles, version: "1"}
servers: [{url: "http://127.0.0.1"}]
components:
  schemas:
    five: {type: integer, minimum: 5, maximum: 5}
    ids: {type: array, items: {type: integer}, minItems: 3, maxItems: 3}
    obj:
      type: object
      required: [role, name]
      additionalProperties: false
      properties:
        role: {type: string, enum: [admin]}
        name: {type: string, enum: [Alex]}
  responses:
    ok:
      description: ok
      content:
        application/json:
          schema: {type: object, properties: {ok: {type: boolean}}}
          example: {ok: true}
paths:
  /simple/{id}/{s}:
    get:
      operationId: pathSimple
      parameters:
        - {name: id, in: path, required: true, schema: {$ref: '#/components/schemas/five'}}
        - {name: s, in: path, required: true, schema: {type: string, enum: ["a b"]}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /simple-explode/{id}:
    get:
      operationId: pathSimpleExplode
      parameters:
        - {name: id, in: path, required: true, explode: true, schema: {$ref: '#/components/schemas/five'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /label/{id}:
    get:
      operationId: pathLabel
      parameters:
        - {name: id, in: path, required: true, style: label, schema: {$ref: '#/components/schemas/five'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /label-explode/{id}:
    get:
      operationId: pathLabelExplode
      parameters:
        - {name: id, in: path, required: true, style: label, explode: true, schema: {$ref: '#/components/schemas/five'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /matrix/{id}:
    get:
      operationId: pathMatrix
      parameters:
        - {name: id, in: path, required: true, style: matrix, schema: {$ref: '#/components/schemas/five'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /matrix-explode/{id}:
    get:
      operationId: pathMatrixExplode
      parameters:
        - {name: id, in: path, required: true, style: matrix, explode: true, schema: {$ref: '#/components/schemas/five'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /form:
    get:
      operationId: queryForm
      parameters:
        - {name: ids, in: query, required: true, schema: {$ref: '#/components/schemas/ids'}}
        - {name: n, in: query, required: true, schema: {type: integer, minimum: 5, maximum: 5}}
        - {name: s, in: query, required: true, schema: {type: string, enum: ["a b&c=d+e/é"]}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /form-object:
    get:
      operationId: queryFormObject
      parameters:
        - {name: obj, in: query, required: true, schema: {$ref: '#/components/schemas/obj'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /form-noexplode:
    get:
      operationId: queryFormNoExplode
      parameters:
        - {name: ids, in: query, required: true, explode: false, schema: {$ref: '#/components/schemas/ids'}}
        - {name: obj, in: query, required: true, explode: false, schema: {$ref: '#/components/schemas/obj'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /space-explode:
    get:
      operationId: querySpaceExplode
      parameters:
        - {name: ids, in: query, required: true, style: spaceDelimited, explode: true, schema: {$ref: '#/components/schemas/ids'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /pipe:
    get:
      operationId: queryPipe
      parameters:
        - {name: ids, in: query, required: true, style: pipeDelimited, explode: false, schema: {$ref: '#/components/schemas/ids'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /pipe-explode:
    get:
      operationId: queryPipeExplode
      parameters:
        - {name: ids, in: query, required: true, style: pipeDelimited, explode: true, schema: {$ref: '#/components/schemas/ids'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /deep:
    get:
      operationId: queryDeep
      parameters:
        - {name: obj, in: query, required: true, style: deepObject, explode: true, schema: {$ref: '#/components/schemas/obj'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /header:
    get:
      operationId: header
      parameters:
        - {name: X-Ids, in: header, required: true, schema: {$ref: '#/components/schemas/ids'}}
        - {name: X-Obj, in: header, required: true, schema: {$ref: '#/components/schemas/obj'}}
        - {name: X-Obj-Explode, in: header, required: true, explode: true, schema: {$ref: '#/components/schemas/obj'}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /cookie:
    get:
      operationId: cookie
      parameters:
        - {name: session, in: cookie, required: true, schema: {type: string, enum: [abc]}}
        - {name: n, in: cookie, required: true, schema: {type: integer, minimum: 7}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /json:
    post:
      operationId: jsonBody
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [ids, obj, nested]
              additionalProperties: false
              properties:
                ids: {$ref: '#/components/schemas/ids'}
                obj: {$ref: '#/components/schemas/obj'}
                nested: {type: object, required: [a], properties: {a: {type: object, required: [b], properties: {b: {type: number, multipleOf: 0.5}}}}}
      responses: {'200': {$ref: '#/components/responses/ok'}}
  /form-body:
    post:
      operationId: formBody
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            encoding:
              obj: {style: deepObject, explode: true}
              tags: {style: form, explode: false, allowReserved: true}
              expand: {style: deepObject, explode: true}
            schema:
              type: object
              required: [name, obj, tags]
              properties:
                name: {type: string, enum: ["a b+c"]}
                obj: {$ref: '#/components/schemas/obj'}
                tags: {type: array, items: {type: string, enum: [x, y]}, minItems: 2}
      responses: {'200': {$ref: '#/components/responses/ok'}}
`

// TestPrismStyles calls every tool of prismStylesDoc through Weft against
// Prism: Prism must accept each request Weft builds.
func TestPrismStyles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prism")
	}
	spec := filepath.Join(t.TempDir(), "styles.yaml")
	if err := os.WriteFile(spec, []byte(prismStylesDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	base, log := prism(t, spec)
	api, _, c := newServer(t, prismStylesDoc, openapi.Options{BaseURL: base, Strict: true}, nil)
	const ids, obj = `[3,4,5]`, `{"role":"admin","name":"Alex"}`
	args := map[string]string{
		"pathSimple":         `{"id":5,"s":"a b"}`,
		"pathSimpleExplode":  `{"id":5}`,
		"pathLabel":          `{"id":5}`,
		"pathLabelExplode":   `{"id":5}`,
		"pathMatrix":         `{"id":5}`,
		"pathMatrixExplode":  `{"id":5}`,
		"queryForm":          `{"ids":` + ids + `,"n":5,"s":"a b&c=d+e/é"}`,
		"queryFormObject":    `{"obj":` + obj + `}`,
		"queryFormNoExplode": `{"ids":` + ids + `,"obj":` + obj + `}`,
		"querySpaceExplode":  `{"ids":` + ids + `}`,
		"queryPipe":          `{"ids":` + ids + `}`,
		"queryPipeExplode":   `{"ids":` + ids + `}`,
		"queryDeep":          `{"obj":` + obj + `}`,
		"header":             `{"X-Ids":` + ids + `,"X-Obj":` + obj + `,"X-Obj-Explode":` + obj + `}`,
		"cookie":             `{"session":"abc","n":7}`,
		"jsonBody":           `{"body":{"ids":` + ids + `,"obj":` + obj + `,"nested":{"a":{"b":2.5}}}}`,
		"formBody":           `{"body":{"name":"a b+c","obj":` + obj + `,"tags":["x","y"]}}`,
	}
	callAll(t, c, api, args, log)
	// Prism does check styles: the same values in another style are refused.
	for _, u := range []string{"/pipe?ids=3,4,5", "/form-noexplode?ids=3&ids=4&ids=5&obj=role,admin,name,Alex", "/deep?role=admin&name=Alex"} {
		resp, err := http.Get(base + u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("GET %s: Prism answered %d, want 422", u, resp.StatusCode)
		}
	}
}

// callAll calls every tool of api (but those in skip) with args[name] and
// fails when Prism refuses a request or does not validate it, or a tool
// has no arguments.
func callAll(t *testing.T, c *client.Client, api *openapi.API, args map[string]string, log *syncbuf.Buffer, skip ...string) {
	t.Helper()
	for _, tool := range api.Tools() {
		if slices.Contains(skip, tool.Name) {
			continue
		}
		a, ok := args[tool.Name]
		if !ok {
			t.Errorf("no arguments for %s", tool.Name)
			continue
		}
		before := len(log.String())
		r := callRaw(t, c, tool.Name, a)
		// Prism logs its verdict as it answers: wait for it.
		var l string
		for range 50 {
			if l = log.String()[before:]; strings.Contains(l, "The request passed the validation rules") || strings.Contains(l, "did not pass") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		switch {
		case r.IsError && strings.Contains(r.Text(), "succeeded (HTTP 2") && strings.Contains(r.Text(), "does not match the documented output schema"):
			// Prism accepted the request; its generated answer breaks the
			// document's response schema (Prism logs the violation
			// itself, and cannot follow $dynamicRef): Weft says so.
			t.Logf("%s: Prism's answer does not match the output schema: %.300s", tool.Name, r.Text())
		case r.IsError:
			t.Errorf("%s %s: %s\nprism:\n%s", tool.Name, a, r.Text(), l)
			continue
		}
		if strings.Contains(l, "did not pass") || strings.Contains(l, "Violation: request") {
			t.Errorf("%s %s: Prism refused the request:\n%s", tool.Name, a, l)
		}
		if !strings.Contains(l, "The request passed the validation rules") {
			t.Errorf("%s %s: Prism did not validate the request:\n%s", tool.Name, a, l)
		}
	}
}

// TestPrismGalaxy calls every tool of Scalar's Galaxy (OpenAPI 3.1, from
// npm @scalar/galaxy) through Weft against Prism serving the same
// document, with arguments made from each tool's input schema (its
// examples first): Prism must accept every request.
func TestPrismGalaxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prism")
	}
	spec := filepath.Join(nodetest.Install(t, "testdata/partners"), "node_modules", "@scalar/galaxy/dist/3.1.yaml")
	doc, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	base, log := prism(t, spec)
	api, _, c := newServer(t, string(doc), openapi.Options{BaseURL: base, Strict: true,
		Authorize: openapi.StaticHeader("Authorization", "Bearer galaxy-token"),
		Confirm:   func(*openapi.Operation) bool { return false }}, nil)

	args := map[string]string{}
	for _, tool := range api.Tools() {
		var s any
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		root, _ := s.(map[string]any)
		b, err := json.Marshal(sample(root, root, 0))
		if err != nil {
			t.Fatal(err)
		}
		args[tool.Name] = string(b)
	}
	if len(args) < 10 {
		t.Fatalf("%d tools", len(args))
	}
	// Prism 5.16 requires the read-only, required id of a Planet inside
	// the oneOf of createCelestialBody's body, which OpenAPI says is not
	// sent in requests (Prism leaves it out of createPlanet's body, where
	// Planet is the body itself). Weft follows OpenAPI: the call is
	// refused for that id alone.
	known := args["createCelestialBody"]
	delete(args, "createCelestialBody")
	callAll(t, c, api, args, log, "createCelestialBody")
	r := callRaw(t, c, "createCelestialBody", known)
	if !r.IsError || !strings.Contains(r.Text(), `must have required property 'id'`) || strings.Contains(r.Text(), `"location":["body","name"]`) {
		t.Errorf("createCelestialBody: %s", r.Text())
	}
}

// sample makes a value a schema accepts: its first example, default,
// const or enum value, else one built from its type (required members
// only).
func sample(root map[string]any, s map[string]any, depth int) any {
	if depth > 20 || s == nil {
		return nil
	}
	if ex, ok := s["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	for _, k := range []string{"default", "const"} {
		if v, ok := s[k]; ok {
			return v
		}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if r, ok := s["$ref"].(string); ok {
		defs, _ := root["$defs"].(map[string]any)
		for name, d := range defs {
			dm, _ := d.(map[string]any)
			if r == "#/$defs/"+name || dm["$id"] == r {
				return sample(root, dm, depth+1)
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if l, ok := s[k].([]any); ok && len(l) > 0 {
			m, _ := l[0].(map[string]any)
			return sample(root, m, depth+1)
		}
	}
	if l, ok := s["allOf"].([]any); ok {
		out := map[string]any{}
		for _, x := range l {
			m, _ := x.(map[string]any)
			if v, ok := sample(root, m, depth+1).(map[string]any); ok {
				maps.Copy(out, v)
			}
		}
		return out
	}
	t, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		t, _ = ts[0].(string)
	}
	switch t {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			p, _ := props[name].(map[string]any)
			out[name] = sample(root, p, depth+1)
		}
		// Members with examples, a const or an enum are filled too: they
		// tell the branches of a oneOf apart (a planet's type).
		for name, p := range props {
			pm, _ := p.(map[string]any)
			if pm["examples"] != nil || pm["const"] != nil || pm["enum"] != nil {
				out[name] = sample(root, pm, depth+1)
			}
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		if n, _ := s["minItems"].(float64); n > 0 {
			return []any{sample(root, items, depth+1)}
		}
		return []any{}
	case "integer":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "string":
		switch s["format"] {
		case "email":
			return "marc@scalar.com"
		case "date-time":
			return "2024-01-01T00:00:00Z"
		case "uuid":
			return "123e4567-e89b-12d3-a456-426614174000"
		case "uri":
			return "https://example.com/"
		}
		return "Mars"
	}
	return nil
}
