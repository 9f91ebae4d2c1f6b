package openapi_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/openapi"
)

// bodiesDoc is an OpenAPI 3.0 JSON document: request bodies of every
// encoding, through component references.
const bodiesDoc = `{
  "openapi": "3.0.3",
  "info": {"title": "bodies", "version": "1"},
  "paths": {
    "/json": {"post": {"operationId": "postJSON", "requestBody": {"$ref": "#/components/requestBodies/Order"},
      "responses": {"200": {"description": "ok"}}}},
    "/form": {"post": {"operationId": "postForm", "requestBody": {"content": {"application/x-www-form-urlencoded":
      {"schema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "array", "items": {"type": "integer"}}}}}}},
      "responses": {"200": {"description": "ok"}}}},
    "/multipart": {"post": {"operationId": "postMultipart", "requestBody": {"content": {"multipart/form-data":
      {"schema": {"type": "object", "properties": {"note": {"type": "string"}}}}}},
      "responses": {"200": {"description": "ok"}}}},
    "/text": {"put": {"operationId": "putText", "requestBody": {"required": true, "content": {"text/plain": {"schema": {"type": "string"}}}},
      "responses": {"200": {"description": "ok"}}}},
    "/blob": {"put": {"operationId": "putBlob", "requestBody": {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
      "responses": {"200": {"description": "ok"}}}}
  },
  "components": {
    "requestBodies": {"Order": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Order"}}}}},
    "schemas": {
      "Order": {"type": "object", "required": ["amount"], "properties": {
        "amount": {"type": "number", "multipleOf": 0.01, "example": 3.50},
        "id": {"type": "integer", "maximum": 9007199254740993},
        "note": {"type": "string", "nullable": true},
        "lines": {"type": "array", "items": {"$ref": "#/components/schemas/Order"}}}}
    }
  }
}`

func TestRequestBodies(t *testing.T) {
	up := echoUpstream(t)
	_, _, c := newServer(t, bodiesDoc, openapi.Options{BaseURL: up.URL}, nil)
	tests := []struct {
		name, tool, args string
		ctype, body      string
	}{
		{"json exact", "postJSON", `{"body":{"amount":3.50,"id":9007199254740993,"note":null,"lines":[{"amount":1E+2}]}}`,
			"application/json", `{"amount":3.50,"id":9007199254740993,"note":null,"lines":[{"amount":1E+2}]}`},
		{"form", "postForm", `{"body":{"q":"a b&c","n":[1,2]}}`, "application/x-www-form-urlencoded", "q=a%20b%26c&n=1&n=2"},
		{"text", "putText", `{"body":"hello\nworld"}`, "text/plain", "hello\nworld"},
		{"binary", "putBlob", `{"body":"` + base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255}) + `"}`, "application/octet-stream", "hex:000102ff"},
		{"no optional body", "putBlob", `{}`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, res := call(t, c, tc.tool, tc.args)
			if res.IsError {
				t.Fatalf("tool error: %s", res.Text())
			}
			body := s.Body
			if strings.HasPrefix(tc.body, "hex:") {
				body = "hex:" + s.BodyHex
			}
			if s.ContentType != tc.ctype || body != tc.body {
				t.Errorf("sent %q %q, want %q %q", s.ContentType, s.Body, tc.ctype, tc.body)
			}
		})
	}
	t.Run("multipart", func(t *testing.T) {
		s, res := call(t, c, "postMultipart", `{"body":{"note":"hi"}}`)
		if res.IsError {
			t.Fatal(res.Text())
		}
		if !strings.HasPrefix(s.ContentType, "multipart/form-data; boundary=") ||
			!strings.Contains(s.Body, "Content-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n") {
			t.Errorf("multipart: %q %q", s.ContentType, s.Body)
		}
	})
	t.Run("schema refused", func(t *testing.T) {
		// 3.0 nullable maps to type [string, null]; a number is still refused,
		// and the required body is required.
		for _, args := range []string{`{"body":{"amount":1,"note":5}}`, `{}`, `{"body":{"amount":1},"extra":1}`} {
			_, res := call(t, c, "postJSON", args)
			if !res.IsError {
				t.Errorf("%s accepted", args)
			}
		}
	})
}

// The 3.0 schema conversion, checked on the generated input schema.
func TestSchemaConversion30(t *testing.T) {
	api, err := openapi.New([]byte(bodiesDoc), &openapi.Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	var schema string
	for _, op := range api.Operations() {
		if op.Name == "postJSON" {
			schema = string(op.InputSchema)
		}
	}
	for _, want := range []string{
		`"body":{"$ref":"#/$defs/Order"}`,
		`"$defs":{"Order":{`,
		`"multipleOf":0.01,"examples":[3.50]`, // the literal is kept, example becomes examples
		`"maximum":9007199254740993`,
		`"note":{"type":["string","null"]}`, // nullable
		`"items":{"$ref":"#/$defs/Order"}`,  // recursion through $defs
		`"required":["body"]`,
		`"additionalProperties":false`,
	} {
		if !strings.Contains(schema, want) {
			t.Errorf("input schema lacks %s:\n%s", want, schema)
		}
	}
}

// responsesDoc (3.1 YAML) answers in every way the result mapping knows.
const responsesDoc = `openapi: 3.1.0
info: {title: responses, version: "1"}
paths:
  /obj:
    get:
      operationId: getObject
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}
  /list:
    get:
      operationId: getList
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {type: array, items: {$ref: '#/components/schemas/Thing'}}}}
  /drift:
    get:
      operationId: getDrift
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}
  /text:
    get:
      operationId: getText
      responses: {'200': {description: ok, content: {text/plain: {schema: {type: string}}}}}
  /image:
    get:
      operationId: getImage
      responses: {'200': {description: ok, content: {image/png: {}}}}
  /zip:
    get:
      operationId: getZip
      responses: {'200': {description: ok, content: {application/zip: {}}}}
  /missing:
    get:
      operationId: getMissing
      responses: {'404': {description: gone}}
  /boom:
    get:
      operationId: getBoom
      responses: {'500': {description: boom}}
  /big:
    get:
      operationId: getBig
      responses: {'200': {description: ok}}
  /slow:
    get:
      operationId: getSlow
      responses: {'200': {description: ok}}
  /badjson:
    get:
      operationId: getBadJSON
      responses: {'200': {description: ok, content: {application/json: {schema: {type: object}}}}}
components:
  schemas:
    Thing:
      type: object
      required: [id]
      properties:
        id: {type: integer}
        price: {type: number}
        parent: {$ref: '#/components/schemas/Thing', description: the parent thing}
`

func responsesUpstream(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	js := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
	mux.HandleFunc("/obj", func(w http.ResponseWriter, r *http.Request) {
		js(w, 200, `{"id":9007199254740993,"price":120.50,"parent":{"id":1}}`)
	})
	mux.HandleFunc("/list", func(w http.ResponseWriter, r *http.Request) { js(w, 200, `[{"id":1},{"id":2}]`) })
	mux.HandleFunc("/drift", func(w http.ResponseWriter, r *http.Request) { js(w, 200, `{"id":"not a number"}`) })
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("plain words"))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\nxx"))
	})
	mux.HandleFunc("/zip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write([]byte("PK\x03\x04\xff"))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Set-Cookie", "upstream=secret")
		js(w, 404, `{"message":"no such thing"}`)
	})
	mux.HandleFunc("/boom", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(500)
		_, _ = w.Write([]byte(strings.Repeat("é", 3000)))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		js(w, 200, `"`+strings.Repeat("x", 5000)+`"`)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/badjson", func(w http.ResponseWriter, r *http.Request) { js(w, 200, `{"a":1,"a":2}`) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestResponses(t *testing.T) {
	up := responsesUpstream(t)
	api, _, c := newServer(t, responsesDoc, openapi.Options{BaseURL: up.URL, MaxResponseBytes: 4096, MaxErrorBytes: 100,
		Timeout: 200 * time.Millisecond}, nil)

	outputs := map[string]string{}
	for _, op := range api.Operations() {
		outputs[op.Name] = string(op.OutputSchema)
	}
	if !strings.HasPrefix(outputs["getObject"], `{"type":"object","required":["id"]`) {
		t.Errorf("object output schema not inlined at the root: %s", outputs["getObject"])
	}
	if !strings.Contains(outputs["getList"], `"properties":{"result":{"type":"array"`) {
		t.Errorf("array output schema not wrapped: %s", outputs["getList"])
	}
	if outputs["getText"] != "" || outputs["getMissing"] != "" {
		t.Errorf("output schemas for non-JSON answers: %q %q", outputs["getText"], outputs["getMissing"])
	}

	get := func(tool string) (*client.ToolResult, string) {
		res := callRaw(t, c, tool, `{}`)
		return res, res.Text()
	}
	t.Run("object", func(t *testing.T) {
		res, text := get("getObject")
		if res.IsError || res.StructuredContent.String() != `{"id":9007199254740993,"price":120.50,"parent":{"id":1}}` ||
			text != `{"id":9007199254740993,"price":120.50,"parent":{"id":1}}` {
			t.Errorf("%v %s / %s", res.IsError, res.StructuredContent, text)
		}
	})
	t.Run("array wrapped", func(t *testing.T) {
		res, _ := get("getList")
		if res.IsError || res.StructuredContent.String() != `{"result":[{"id":1},{"id":2}]}` {
			t.Errorf("%v %s", res.IsError, res.StructuredContent)
		}
	})
	t.Run("schema drift", func(t *testing.T) {
		res, text := get("getDrift")
		if !res.IsError || !strings.Contains(text, "GET /drift succeeded (HTTP 200), but its response does not match the documented output schema") ||
			!strings.Contains(text, `{"id":"not a number"}`) {
			t.Errorf("%v %s", res.IsError, text)
		}
	})
	t.Run("text", func(t *testing.T) {
		res, text := get("getText")
		if res.IsError || text != "plain words" {
			t.Errorf("%v %q", res.IsError, text)
		}
	})
	t.Run("image", func(t *testing.T) {
		res, _ := get("getImage")
		if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "image" || res.Content[0].MimeType != "image/png" {
			t.Errorf("%+v", res.Content)
		}
	})
	t.Run("embedded resource", func(t *testing.T) {
		res, _ := get("getZip")
		if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "resource" {
			t.Fatalf("%+v", res.Content)
		}
		b, _ := json.Marshal(res.Content[0])
		if !strings.Contains(string(b), `"mimeType":"application/zip"`) || !strings.Contains(string(b), up.URL+"/zip") {
			t.Errorf("%s", b)
		}
	})
	t.Run("404", func(t *testing.T) {
		res, text := get("getMissing")
		if !res.IsError || !strings.Contains(text, "HTTP 404 Not Found") || !strings.Contains(text, "no such thing") ||
			res.StructuredContent.String() != `{"status":404,"body":{"message":"no such thing"}}` || strings.Contains(text, "secret") {
			t.Errorf("%v %s %s", res.IsError, text, res.StructuredContent)
		}
	})
	t.Run("500 bounded", func(t *testing.T) {
		res, text := get("getBoom")
		if !res.IsError || !strings.Contains(text, "HTTP 500") || !strings.Contains(text, "more bytes)") || len(text) > 300 {
			t.Errorf("%v %d %s", res.IsError, len(text), text)
		}
	})
	t.Run("too large", func(t *testing.T) {
		res, text := get("getBig")
		if !res.IsError || !strings.Contains(text, "exceeds 4096 bytes") {
			t.Errorf("%v %s", res.IsError, text)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		res, text := get("getSlow")
		if !res.IsError || !strings.Contains(text, "did not answer within 200ms") {
			t.Errorf("%v %s", res.IsError, text)
		}
	})
	t.Run("invalid JSON", func(t *testing.T) {
		res, text := get("getBadJSON")
		if !res.IsError || !strings.Contains(text, "invalid JSON") {
			t.Errorf("%v %s", res.IsError, text)
		}
	})
}

// An unreachable upstream is a tool error, not a protocol failure.
func TestUpstreamDown(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	url := up.URL
	up.Close()
	_, _, c := newServer(t, responsesDoc, openapi.Options{BaseURL: url, Authorize: openapi.StaticQuery("api_key", "k3y")}, nil)
	res := callRaw(t, c, "getObject", `{}`)
	if !res.IsError || !strings.Contains(res.Text(), "upstream request failed") || strings.Contains(res.Text(), "k3y") {
		t.Errorf("%v %s", res.IsError, res.Text())
	}
}

// StaticQuery adds its parameter after the operation's own.
func TestStaticQuery(t *testing.T) {
	up := echoUpstream(t)
	_, _, c := newServer(t, stylesDoc, openapi.Options{BaseURL: up.URL, Authorize: openapi.StaticQuery("api key", "a&b")}, nil)
	for args, want := range map[string]string{`{"id":1}`: "id=1&api%20key=a%26b", `{}`: "api%20key=a%26b"} {
		s, res := call(t, c, "queryForm", args)
		if res.IsError || s.Query != want {
			t.Errorf("%s: %q, want %q (%s)", args, s.Query, want, res.Text())
		}
	}
}

// With a client that follows no redirects, a 3xx is an error result that
// names the status; the Location is not followed with the credentials.
func TestRedirectNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	}))
	t.Cleanup(up.Close)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, _, c := newServer(t, responsesDoc, openapi.Options{BaseURL: up.URL, HTTPClient: hc,
		Authorize: openapi.StaticHeader("Authorization", "Bearer k")}, nil)

	res := callRaw(t, c, "getText", `{}`)
	if !res.IsError || !strings.Contains(res.Text(), "HTTP 302 Found") || elsewhere.Load() != 0 {
		t.Errorf("%v %s, %d requests elsewhere", res.IsError, res.Text(), elsewhere.Load())
	}
}
