package openapi_test

import (
	"strings"
	"testing"

	"github.com/weftmcp/weft/openapi"
)

// stylesDoc has one operation per parameter location, style and explode
// setting. The expected serializations below are the ones of the OpenAPI
// specification's style examples (3.1.1, "Style Examples").
const stylesDoc = `openapi: 3.1.0
info: {title: styles, version: "1"}
paths:
  /simple/{id}:
    get:
      operationId: pathSimple
      parameters: [{name: id, in: path, required: true, schema: {}}]
      responses: {'200': {description: ok}}
  /simple-explode/{id}:
    get:
      operationId: pathSimpleExplode
      parameters: [{name: id, in: path, required: true, explode: true, schema: {}}]
      responses: {'200': {description: ok}}
  /label/{id}:
    get:
      operationId: pathLabel
      parameters: [{name: id, in: path, required: true, style: label, schema: {}}]
      responses: {'200': {description: ok}}
  /label-explode/{id}:
    get:
      operationId: pathLabelExplode
      parameters: [{name: id, in: path, required: true, style: label, explode: true, schema: {}}]
      responses: {'200': {description: ok}}
  /matrix/{id}:
    get:
      operationId: pathMatrix
      parameters: [{name: id, in: path, required: true, style: matrix, schema: {}}]
      responses: {'200': {description: ok}}
  /matrix-explode/{id}:
    get:
      operationId: pathMatrixExplode
      parameters: [{name: id, in: path, required: true, style: matrix, explode: true, schema: {}}]
      responses: {'200': {description: ok}}
  /two/{a}/and/{b}.json:
    get:
      operationId: pathTwo
      parameters:
        - {name: a, in: path, required: true, schema: {type: string}}
        - {name: b, in: path, required: true, schema: {type: integer}}
      responses: {'200': {description: ok}}
  /query:
    get:
      operationId: queryForm
      parameters:
        - {name: id, in: query, schema: {}}
        - {name: flag, in: query, schema: {type: boolean}}
      responses: {'200': {description: ok}}
  /query-noexplode:
    get:
      operationId: queryFormNoExplode
      parameters: [{name: id, in: query, explode: false, schema: {}}]
      responses: {'200': {description: ok}}
  /query-space:
    get:
      operationId: querySpace
      parameters: [{name: id, in: query, style: spaceDelimited, explode: false, schema: {}}]
      responses: {'200': {description: ok}}
  /query-pipe:
    get:
      operationId: queryPipe
      parameters: [{name: id, in: query, style: pipeDelimited, explode: false, schema: {}}]
      responses: {'200': {description: ok}}
  /query-deep:
    get:
      operationId: queryDeep
      parameters: [{name: id, in: query, style: deepObject, explode: true, schema: {type: object}}]
      responses: {'200': {description: ok}}
  /query-deep-stripe:
    get:
      operationId: queryDeepStripe
      parameters:
        - {name: expand, in: query, style: deepObject, explode: true, schema: {type: array, items: {type: string}}}
        - name: created
          in: query
          style: deepObject
          explode: true
          schema: {anyOf: [{type: object, properties: {gt: {type: integer}, lte: {type: integer}}}, {type: integer}]}
        - {name: metadata, in: query, style: deepObject, explode: true, schema: {type: object, additionalProperties: {type: object}}}
      responses: {'200': {description: ok}}
  /query-reserved:
    get:
      operationId: queryReserved
      parameters:
        - {name: plain, in: query, schema: {type: string}}
        - {name: kept, in: query, allowReserved: true, schema: {type: string}}
      responses: {'200': {description: ok}}
  /query-content:
    get:
      operationId: queryContent
      parameters:
        - name: filter
          in: query
          content:
            application/json:
              schema: {type: object}
      responses: {'200': {description: ok}}
  /header:
    get:
      operationId: headerSimple
      parameters:
        - {name: X-Id, in: header, schema: {}}
        - {name: X-Obj, in: header, explode: true, schema: {type: object}}
        - {name: Authorization, in: header, schema: {type: string}}
      responses: {'200': {description: ok}}
  /cookie:
    get:
      operationId: cookieForm
      parameters:
        - {name: session, in: cookie, schema: {type: string}}
        - {name: ids, in: cookie, explode: false, schema: {type: array}}
      responses: {'200': {description: ok}}
  /same/{id}:
    get:
      operationId: sameName
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: id, in: query, schema: {type: string}}
      responses: {'200': {description: ok}}
`

func TestParameterSerialization(t *testing.T) {
	up := echoUpstream(t)
	_, _, c := newServer(t, stylesDoc, openapi.Options{BaseURL: up.URL + "/base"}, nil)
	const arr, obj = `[3,4,5]`, `{"role":"admin","firstName":"Alex"}`
	tests := []struct {
		name, tool, args string
		path, query      string            // want; "" query means none
		headers          map[string]string // want (subset)
		cookie           string
	}{
		{"simple primitive", "pathSimple", `{"id":5}`, "/base/simple/5", "", nil, ""},
		{"simple array", "pathSimple", `{"id":` + arr + `}`, "/base/simple/3,4,5", "", nil, ""},
		{"simple object", "pathSimple", `{"id":` + obj + `}`, "/base/simple/role,admin,firstName,Alex", "", nil, ""},
		{"simple object explode", "pathSimpleExplode", `{"id":` + obj + `}`, "/base/simple-explode/role=admin,firstName=Alex", "", nil, ""},
		{"label primitive", "pathLabel", `{"id":5}`, "/base/label/.5", "", nil, ""},
		{"label array", "pathLabel", `{"id":` + arr + `}`, "/base/label/.3,4,5", "", nil, ""},
		{"label array explode", "pathLabelExplode", `{"id":` + arr + `}`, "/base/label-explode/.3.4.5", "", nil, ""},
		{"label object", "pathLabel", `{"id":` + obj + `}`, "/base/label/.role,admin,firstName,Alex", "", nil, ""},
		{"label object explode", "pathLabelExplode", `{"id":` + obj + `}`, "/base/label-explode/.role=admin.firstName=Alex", "", nil, ""},
		{"matrix primitive", "pathMatrix", `{"id":5}`, "/base/matrix/;id=5", "", nil, ""},
		{"matrix array", "pathMatrix", `{"id":` + arr + `}`, "/base/matrix/;id=3,4,5", "", nil, ""},
		{"matrix array explode", "pathMatrixExplode", `{"id":` + arr + `}`, "/base/matrix-explode/;id=3;id=4;id=5", "", nil, ""},
		{"matrix object", "pathMatrix", `{"id":` + obj + `}`, "/base/matrix/;id=role,admin,firstName,Alex", "", nil, ""},
		{"matrix object explode", "pathMatrixExplode", `{"id":` + obj + `}`, "/base/matrix-explode/;role=admin;firstName=Alex", "", nil, ""},
		{"path escaping", "pathSimple", `{"id":"a/b c?d#e%f"}`, "/base/simple/a%2Fb%20c%3Fd%23e%25f", "", nil, ""},
		{"path dot-dot", "pathSimple", `{"id":".."}`, "/base/simple/%2E%2E", "", nil, ""},
		{"path non-ASCII", "pathSimple", `{"id":"é"}`, "/base/simple/%C3%A9", "", nil, ""},
		{"path exact integer", "pathSimple", `{"id":9007199254740993}`, "/base/simple/9007199254740993", "", nil, ""},
		{"path exact decimal", "pathSimple", `{"id":3.50}`, "/base/simple/3.50", "", nil, ""},
		{"two path params", "pathTwo", `{"a":"x,y","b":7}`, "/base/two/x%2Cy/and/7.json", "", nil, ""},
		{"form primitive", "queryForm", `{"id":5}`, "/base/query", "id=5", nil, ""},
		{"form boolean", "queryForm", `{"flag":true}`, "/base/query", "flag=true", nil, ""},
		{"form array explode", "queryForm", `{"id":` + arr + `}`, "/base/query", "id=3&id=4&id=5", nil, ""},
		{"form object explode", "queryForm", `{"id":` + obj + `}`, "/base/query", "role=admin&firstName=Alex", nil, ""},
		{"form array", "queryFormNoExplode", `{"id":` + arr + `}`, "/base/query-noexplode", "id=3,4,5", nil, ""},
		{"form object", "queryFormNoExplode", `{"id":` + obj + `}`, "/base/query-noexplode", "id=role,admin,firstName,Alex", nil, ""},
		{"form omitted", "queryForm", `{}`, "/base/query", "", nil, ""},
		{"form escaping", "queryForm", `{"id":"a b&c=d+e"}`, "/base/query", "id=a%20b%26c%3Dd%2Be", nil, ""},
		{"spaceDelimited array", "querySpace", `{"id":` + arr + `}`, "/base/query-space", "id=3%204%205", nil, ""},
		{"pipeDelimited array", "queryPipe", `{"id":` + arr + `}`, "/base/query-pipe", "id=3|4|5", nil, ""},
		{"deepObject", "queryDeep", `{"id":` + obj + `}`, "/base/query-deep", "id%5Brole%5D=admin&id%5BfirstName%5D=Alex", nil, ""},
		// Stripe's deviations (issue 28, item 2): deepObject on an array
		// and on an anyOf of an object and an integer, and nested values.
		{"deepObject array (Stripe)", "queryDeepStripe", `{"expand":["data.customer","data.invoice"]}`, "/base/query-deep-stripe", "expand%5B0%5D=data.customer&expand%5B1%5D=data.invoice", nil, ""},
		{"deepObject anyOf object (Stripe)", "queryDeepStripe", `{"created":{"gt":1,"lte":9}}`, "/base/query-deep-stripe", "created%5Bgt%5D=1&created%5Blte%5D=9", nil, ""},
		{"deepObject anyOf integer (Stripe)", "queryDeepStripe", `{"created":1700000000}`, "/base/query-deep-stripe", "created=1700000000", nil, ""},
		{"deepObject nested", "queryDeepStripe", `{"metadata":{"a":{"b":[1,"x y"]}}}`, "/base/query-deep-stripe", "metadata%5Ba%5D%5Bb%5D%5B0%5D=1&metadata%5Ba%5D%5Bb%5D%5B1%5D=x%20y", nil, ""},
		{"allowReserved", "queryReserved", `{"plain":"a/b:c","kept":"a/b:c"}`, "/base/query-reserved", "plain=a%2Fb%3Ac&kept=a/b:c", nil, ""},
		{"content JSON", "queryContent", `{"filter":{"n":9007199254740993}}`, "/base/query-content", "filter=%7B%22n%22%3A9007199254740993%7D", nil, ""},
		{"header primitive", "headerSimple", `{"X-Id":5}`, "/base/header", "", map[string]string{"X-Id": "5"}, ""},
		{"header array", "headerSimple", `{"X-Id":` + arr + `}`, "/base/header", "", map[string]string{"X-Id": "3,4,5"}, ""},
		{"header object", "headerSimple", `{"X-Id":` + obj + `}`, "/base/header", "", map[string]string{"X-Id": "role,admin,firstName,Alex"}, ""},
		{"header object explode", "headerSimple", `{"X-Obj":` + obj + `}`, "/base/header", "", map[string]string{"X-Obj": "role=admin,firstName=Alex"}, ""},
		{"cookie primitive", "cookieForm", `{"session":"abc 1;2"}`, "/base/cookie", "", nil, "session=abc%201%3B2"},
		{"cookie array", "cookieForm", `{"session":"s","ids":[3,4,5]}`, "/base/cookie", "", nil, "session=s; ids=3,4,5"},
		{"same name in two locations", "sameName", `{"id__path":"p","id__query":"q"}`, "/base/same/p", "id=q", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, res := call(t, c, tc.tool, tc.args)
			if res.IsError {
				t.Fatalf("tool error: %s", res.Text())
			}
			if s.Path != tc.path || s.Query != tc.query {
				t.Errorf("sent %s?%s, want %s?%s", s.Path, s.Query, tc.path, tc.query)
			}
			for k, v := range tc.headers {
				if s.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, s.Headers[k], v)
				}
			}
			if s.Cookie != tc.cookie {
				t.Errorf("Cookie = %q, want %q", s.Cookie, tc.cookie)
			}
			if s.Method != "GET" {
				t.Errorf("method %s", s.Method)
			}
		})
	}
}

// A header parameter named Authorization is ignored (OpenAPI says so): the
// model cannot choose the upstream credentials.
func TestAuthorizationHeaderParameterIgnored(t *testing.T) {
	up := echoUpstream(t)
	api, _, c := newServer(t, stylesDoc, openapi.Options{BaseURL: up.URL}, nil)
	for _, op := range api.Operations() {
		if op.Name == "headerSimple" && strings.Contains(string(op.InputSchema), "Authorization") {
			t.Errorf("the input schema offers Authorization: %s", op.InputSchema)
		}
	}
	_, res := call(t, c, "headerSimple", `{"Authorization":"Bearer stolen"}`)
	if !res.IsError || !strings.Contains(res.Text(), "Authorization") {
		t.Errorf("an Authorization argument was accepted: %s", res.Text())
	}
}

func TestHeaderInjectionRefused(t *testing.T) {
	up := echoUpstream(t)
	_, _, c := newServer(t, stylesDoc, openapi.Options{BaseURL: up.URL}, nil)
	_, res := call(t, c, "headerSimple", `{"X-Id":"a\r\nX-Evil: 1"}`)
	if !res.IsError || !strings.Contains(res.Text(), "control characters") {
		t.Errorf("header with CRLF: %v %s", res.IsError, res.Text())
	}
}
