package openapi_test

import (
	"strings"
	"testing"

	"github.com/weftmcp/weft/openapi"
)

// TestReadOnlyWriteOnly (issue 28, item 3): Galaxy's Planet.id is readOnly
// and required, so createPlanet required body.id and the upstream refused
// every request. Read-only properties are now out of input schemas (and out
// of their required lists), write-only ones out of output schemas, directly
// or through a reference.
func TestReadOnlyWriteOnly(t *testing.T) {
	up := echoUpstream(t)
	const doc = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /planets:
    post:
      operationId: createPlanet
      requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/Planet'}}}}
      responses: {'201': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Planet'}}}}}
components:
  schemas:
    Id: {type: integer, readOnly: true}
    Planet:
      type: object
      required: [id, name, secret]
      properties:
        id: {type: integer, readOnly: true}
        ref: {$ref: '#/components/schemas/Id'}
        name: {type: string}
        secret: {type: string, writeOnly: true}
`
	api, _, c := newServer(t, doc, openapi.Options{BaseURL: up.URL, NoOutputSchemas: false}, nil)
	op := api.Operations()[0]
	in, out := string(op.InputSchema), string(op.OutputSchema)
	for _, bad := range []string{`"id"`, `"ref"`} {
		if strings.Contains(in, bad) {
			t.Errorf("input schema has read-only %s: %s", bad, in)
		}
	}
	if !strings.Contains(in, `"required":["name","secret"]`) {
		t.Errorf("input schema's required: %s", in)
	}
	if strings.Contains(out, `"secret"`) || !strings.Contains(out, `"id"`) || !strings.Contains(out, `"required":["id","name"]`) {
		t.Errorf("output schema: %s", out)
	}
	s, res := call(t, c, "createPlanet", `{"body":{"name":"Mars","secret":"x"}}`)
	if res.IsError && !strings.Contains(res.Text(), "succeeded") {
		t.Fatalf("call refused: %s", res.Text())
	}
	_ = s
}
