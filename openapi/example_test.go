package openapi_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/openapi"
)

const exampleDoc = `openapi: 3.1.0
info: {title: orders, version: "1"}
paths:
  /orders/{id}:
    get:
      operationId: getOrder
      summary: Get an order
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        '200':
          description: The order.
          content:
            application/json:
              schema:
                type: object
                properties:
                  id: {type: integer}
                  total: {type: number}
    delete:
      operationId: cancelOrder
      summary: Cancel an order
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses: {'204': {description: Cancelled.}}
`

// Serve an API's operations as tools: the upstream here is a loopback
// server, and the exact integer and decimal pass through untouched.
func ExampleNew() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%s,"total":12.50}`, strings.TrimPrefix(r.URL.Path, "/orders/"))
	}))
	defer upstream.Close()

	api, err := openapi.New([]byte(exampleDoc), &openapi.Options{BaseURL: upstream.URL, HTTPClient: upstream.Client()})
	if err != nil {
		log.Fatal(err)
	}
	s, err := weft.NewServer(weft.Implementation{Name: "orders", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := api.Register(s); err != nil {
		log.Fatal(err)
	}
	for _, op := range api.Operations() {
		fmt.Println(op.Name, op.Method, op.Path, "confirm:", op.Confirm)
	}
	mcp := httptest.NewServer(s)
	defer mcp.Close()
	c := client.New(client.NewHTTPTransport(mcp.URL, nil), nil)
	res, err := c.CallTool(context.Background(), "getOrder", exactjson.Object(exactjson.Field("id", exactjson.Uint(9007199254740993))))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.StructuredContent)
	// Output:
	// getOrder GET /orders/{id} confirm: false
	// cancelOrder DELETE /orders/{id} confirm: true
	// {"id":9007199254740993,"total":12.50}
}

// A definition too large for a tool schema's inline budget is summarised
// in the tool (its type and the resource's URI) and served once as a
// schema resource.
func ExampleAPI_SharedSchemas() {
	doc := `openapi: 3.1.0
info: {title: accounts, version: "1"}
paths:
  /account:
    get:
      operationId: getAccount
      responses:
        '200':
          description: The account.
          content:
            application/json:
              schema:
                type: object
                properties:
                  account: {$ref: '#/components/schemas/Account', description: The account.}
components:
  schemas:
    Account:
      type: object
      properties:
        id: {type: string, description: "` + strings.Repeat("The account's identifier. ", 10) + `"}
`
	api, err := openapi.New([]byte(doc), &openapi.Options{BaseURL: "https://api.example.com", MaxInlineSchemaBytes: 100})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(api.SharedSchemas(), api.SchemaTemplate())
	out := string(api.Operations()[0].OutputSchema)
	fmt.Println(out[strings.Index(out, `"account"`):])
	// Output:
	// [Account] openapi://schemas/{name}
	// "account":{"type":"object","description":"The account.\n\nAccount (not inlined here; its schema is the resource openapi://schemas/Account)"}}}
}
