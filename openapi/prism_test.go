package openapi_test

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/nodetest"
	"github.com/weftmcp/weft/openapi"
	"github.com/weftmcp/weft/wefttest"
)

// syncBuffer collects a process's output for the test to read while it
// runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// prism starts Stoplight Prism's validating mock (npm @stoplight/prism-cli,
// testdata/partners/package.json) on the OpenAPI document at spec, on a
// free loopback port, and returns its base URL and its log. Prism answers
// a request that breaks the document with 422 (400 for a body), and logs
// every violation it finds.
func prism(t *testing.T, spec string) (string, *syncBuffer) {
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
	out := &syncBuffer{}
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
	api, _, c := newServer(t, prismStylesDoc, openapi.Options{BaseURL: base, Strict: true})
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

// callAll calls every tool of api with args[name] and fails on a tool
// error (Prism's refusal) or a tool without arguments.
func callAll(t *testing.T, c *wefttest.Client, api *openapi.API, args map[string]string, log *syncBuffer) {
	t.Helper()
	for _, tool := range api.Tools() {
		a, ok := args[tool.Name]
		if !ok {
			t.Errorf("no arguments for %s", tool.Name)
			continue
		}
		before := len(log.String())
		r := callRaw(t, c, tool.Name, a)
		if r.IsError {
			t.Errorf("%s %s: %s\nprism:\n%s", tool.Name, a, r.Text(), log.String()[before:])
			continue
		}
		if l := log.String()[before:]; strings.Contains(strings.ToLower(l), "violation") || strings.Contains(l, "did not pass") {
			t.Errorf("%s %s: prism logged a violation:\n%s", tool.Name, a, l)
		}
	}
}
