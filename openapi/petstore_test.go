package openapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/petstore"
	"github.com/weftmcp/weft/openapi"
	"github.com/weftmcp/weft/wefttest"
)

func petstoreDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../examples/openapi/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The example document against the demo upstream, over loopback.
func TestPetstore(t *testing.T) {
	store := petstore.New("s3cret")
	up := httptest.NewServer(store)
	t.Cleanup(up.Close)
	api, _, c := newServer(t, petstoreDoc(t), openapi.Options{BaseURL: up.URL, Authorize: openapi.StaticHeader("Authorization", "Bearer s3cret")}, nil)
	ctx := context.Background()

	kinds := map[string]string{}
	for _, op := range api.Operations() {
		kinds[op.Name] = op.Kind.String()
		if op.Name == "deletePet" && !op.Confirm {
			t.Error("deletePet does not ask for confirmation")
		}
	}
	if len(kinds) != 6 {
		t.Errorf("operations: %v", kinds)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Name == "getPet" {
			if !strings.Contains(tool.Raw.String(), `"readOnlyHint":true`) || !strings.Contains(tool.Raw.String(), `"outputSchema":{`) {
				t.Errorf("getPet: %s", tool.Raw)
			}
		}
		if tool.Name == "deletePet" && !strings.Contains(tool.Raw.String(), `"destructiveHint":true`) {
			t.Errorf("deletePet: %s", tool.Raw)
		}
	}

	res := callRaw(t, c, "createPet", `{"body":{"name":"Kit","tag":"cat","price":19.90}}`)
	if res.IsError || res.StructuredContent.String() != `{"id":4,"name":"Kit","tag":"cat","price":19.90}` {
		t.Fatalf("createPet: %v %s %s", res.IsError, res.StructuredContent, res.Text())
	}
	res = callRaw(t, c, "listPets", `{"tag":["cat"],"limit":5}`)
	if res.IsError || res.StructuredContent.String() != `{"result":[{"id":2,"name":"Tom","tag":"cat","price":80},{"id":4,"name":"Kit","tag":"cat","price":19.90}]}` {
		t.Errorf("listPets: %v %s", res.IsError, res.StructuredContent)
	}
	res = callRaw(t, c, "getPet", `{"petId":3}`)
	if res.IsError || res.StructuredContent.String() != `{"id":3,"name":"Nemo","tag":"fish","price":9007199254740993}` {
		t.Errorf("getPet: %v %s", res.IsError, res.StructuredContent)
	}
	res = callRaw(t, c, "getPet", `{"petId":99}`)
	if !res.IsError || !strings.Contains(res.Text(), "HTTP 404") {
		t.Errorf("getPet 99: %v %s", res.IsError, res.Text())
	}
	res = callRaw(t, c, "health", `{}`)
	if res.IsError || res.Text() != "ok\n" {
		t.Errorf("health: %q", res.Text())
	}
	// Without the upstream credential the upstream refuses, and the result
	// says so without echoing anything of the MCP request's credentials.
	_, _, bare := newServer(t, petstoreDoc(t), openapi.Options{BaseURL: up.URL}, nil)
	res = callRaw(t, bare, "health", `{}`)
	if !res.IsError || !strings.Contains(res.Text(), "HTTP 401") {
		t.Errorf("unauthorized health: %s", res.Text())
	}
}

// The confirmation round of a DELETE with the in-memory client: decline
// sends nothing; accept sends the request once.
func TestConfirmDelete(t *testing.T) {
	store := petstore.New("")
	var deletes atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			deletes.Add(1)
		}
		store.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	_, s, c := newServer(t, petstoreDoc(t), openapi.Options{BaseURL: up.URL},
		&wefttest.Options{Client: client.Options{Capabilities: weft.ClientCapabilities(weft.Form(weft.ConditionalCapability))}})
	var asked atomic.Int32
	answer := func(f wefttest.ElicitFunc) *client.Client {
		return wefttest.NewClient(t, s, &wefttest.Options{Client: client.Options{Handlers: client.Handlers{
			Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
				asked.Add(1)
				return f(ctx, params)
			}}}})
	}
	ctx := context.Background()
	args := exactjson.Object(exactjson.Field("petId", exactjson.Int(1)))

	first, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("deletePet")), exactjson.Field("arguments", args)))
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := first.Get("resultType"); rt.String() != `"input_required"` || deletes.Load() != 0 {
		t.Fatalf("first round: %s, %d deletes", first, deletes.Load())
	}
	final, err := answer(wefttest.Decline()).CallTool(ctx, "deletePet", args)
	if err != nil {
		t.Fatal(err)
	}
	if !final.IsError || !strings.Contains(final.Text(), "was not sent") || deletes.Load() != 0 {
		t.Fatalf("declined: %v %s, %d deletes", final.IsError, final.Text(), deletes.Load())
	}
	final, err = answer(wefttest.AcceptForm(map[string]any{"confirm": false})).CallTool(ctx, "deletePet", args)
	if err != nil {
		t.Fatal(err)
	}
	if !final.IsError || deletes.Load() != 0 {
		t.Fatalf("answered no: %v %s, %d deletes", final.IsError, final.Text(), deletes.Load())
	}
	asked.Store(0)
	final, err = answer(wefttest.AcceptForm(map[string]any{"confirm": true})).CallTool(ctx, "deletePet", args)
	if err != nil {
		t.Fatal(err)
	}
	if final.IsError || asked.Load() != 1 || deletes.Load() != 1 || len(store.Pets()) != 2 {
		t.Fatalf("confirmed: %v %s, asked %d times, %d deletes, %d pets", final.IsError, final.Text(), asked.Load(), deletes.Load(), len(store.Pets()))
	}
	// A client without form elicitation cannot get the DELETE sent.
	_, _, noForm := newServer(t, petstoreDoc(t), openapi.Options{BaseURL: up.URL}, nil)
	if _, err := noForm.CallTool(ctx, "deletePet", exactjson.Object(exactjson.Field("petId", exactjson.Int(2)))); err == nil || deletes.Load() != 1 {
		t.Errorf("without elicitation: err %v, %d deletes", err, deletes.Load())
	}
}

// The same round with the Go client over real HTTP: its multi-round loop
// answers the form, and the retry carries the sealed state back.
func TestConfirmDeleteGoClient(t *testing.T) {
	store := petstore.New("")
	up := httptest.NewServer(store)
	t.Cleanup(up.Close)
	_, s, _ := newServer(t, petstoreDoc(t), openapi.Options{BaseURL: up.URL}, nil)
	mcp := httptest.NewServer(s)
	t.Cleanup(mcp.Close)
	var asked atomic.Int32
	var message string
	c := client.New(client.NewHTTPTransport(mcp.URL, &client.HTTPOptions{Client: mcp.Client()}), &client.Options{Handlers: client.Handlers{
		Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
			asked.Add(1)
			m, _ := params.Get("message")
			message, _ = m.AsString()
			return exactjson.ParseString(`{"action":"accept","content":{"confirm":true}}`, exactjson.Limits{})
		}}})

	defer c.Close()
	res, err := c.CallTool(context.Background(), "deletePet", map[string]any{"petId": 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || asked.Load() != 1 || !strings.Contains(message, "DELETE /pets/{petId}") || !strings.Contains(message, `{"petId":2}`) {
		t.Fatalf("%v %q, asked %d: %s", res.IsError, res.Text(), asked.Load(), message)
	}
	for _, p := range store.Pets() {
		if p.ID == 2 {
			t.Error("pet 2 is still there")
		}
	}
}

// Routes turn GET operations into resources and templates.
func TestRoutesToResources(t *testing.T) {
	store := petstore.New("")
	up := httptest.NewServer(store)
	t.Cleanup(up.Close)
	api, _, c := newServer(t, petstoreDoc(t), openapi.Options{BaseURL: up.URL, Routes: []openapi.Route{
		{Methods: []string{"get"}, Paths: []string{"/pets/*", "/health"}, Kind: openapi.KindResourceTemplate},
		{Tags: []string{"ops"}, Kind: openapi.KindExcluded},
	}}, nil)

	got := map[string]string{}
	for _, op := range api.Operations() {
		got[op.Name] = op.Kind.String() + " " + op.URI
	}
	want := map[string]string{
		"listPets": "tool ", "createPet": "tool ", "deletePet": "tool ",
		"getPet": "resource template openapi://getPet/{petId}", "health": "resource openapi://health",
		"getPetPhoto": "tool ", // /pets/{petId}/photo does not match /pets/*
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	ctx := context.Background()
	r, err := c.ReadResource(ctx, "openapi://getPet/1")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Contents) != 1 || r.Contents[0].MimeType != "application/json" || !strings.Contains(r.Contents[0].Text, `"name":"Rex"`) {
		t.Errorf("%+v", r.Contents)
	}
	if _, err := c.ReadResource(ctx, "openapi://getPet/42"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing pet: %v", err)
	}
	if _, err := c.ReadResource(ctx, "openapi://getPet/x"); err == nil {
		t.Error("a non-integer petId was read")
	}
	r, err = c.ReadResource(ctx, "openapi://health")
	if err != nil || r.Contents[0].Text != "ok\n" {
		t.Errorf("health: %v %+v", err, r)
	}
}

// Selection and renaming.
func TestSelection(t *testing.T) {
	tests := []struct {
		name string
		opts openapi.Options
		want string // the served names, in document order
	}{
		{"all", openapi.Options{}, "listPets createPet getPet deletePet getPetPhoto health"},
		{"include tag", openapi.Options{IncludeTags: []string{"ops"}}, "health"},
		{"exclude operation", openapi.Options{ExcludeOperations: []string{"deletePet", "createPet"}}, "listPets getPet getPetPhoto health"},
		{"include path", openapi.Options{IncludePaths: []string{"/pets/*"}}, "getPet deletePet"},
		{"include and exclude", openapi.Options{IncludeTags: []string{"pets"}, ExcludePaths: []string{"/pets/*/*"}}, "listPets createPet getPet deletePet"},
		{"rename", openapi.Options{IncludeOperations: []string{"getPet"}, Rename: map[string]string{"getPet": "pets.get"}}, "pets.get"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.BaseURL = "http://127.0.0.1:1"
			api, err := openapi.New([]byte(petstoreDoc(t)), &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range api.Tools() {
				names = append(names, tool.Name)
			}
			if got := strings.Join(names, " "); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// BearerPassThrough forwards the MCP caller's bearer token, and nothing
// else of the MCP request reaches the upstream.
func TestBearerPassThrough(t *testing.T) {
	up := echoUpstream(t)
	_, _, c := newServer(t, stylesDoc, openapi.Options{BaseURL: up.URL, Authorize: openapi.BearerPassThrough()},
		&wefttest.Options{Header: http.Header{"Authorization": {"Bearer caller-token"}, "X-Secret": {"mcp-only"}}})
	s, res := call(t, c, "queryForm", `{"id":1}`)
	if res.IsError || s.Headers["Authorization"] != "Bearer caller-token" || s.Headers["X-Secret"] != "" {
		t.Errorf("%v %s: %v", res.IsError, res.Text(), s.Headers)
	}
	_, _, anon := newServer(t, stylesDoc, openapi.Options{BaseURL: up.URL, Authorize: openapi.BearerPassThrough()}, nil)
	res = callRaw(t, anon, "queryForm", `{"id":1}`)
	if !res.IsError || !strings.Contains(res.Text(), "no bearer token") {
		t.Errorf("anonymous: %s", res.Text())
	}
}

// x-mcp-confirm asks for (or waives) confirmation whatever the method, and
// Options.Confirm replaces the policy.
func TestConfirmPolicy(t *testing.T) {
	const doc = `openapi: 3.1.0
info: {title: t, version: "1"}
servers: [{url: "http://127.0.0.1:1"}]
paths:
  /a:
    post: {operationId: transfer, x-mcp-confirm: true, responses: {'200': {description: ok}}}
    delete: {operationId: purgeCache, x-mcp-confirm: false, responses: {'204': {description: ok}}}
    put: {operationId: replace, responses: {'200': {description: ok}}}
  /b:
    delete: {operationId: remove, responses: {'204': {description: ok}}}
`
	tests := []struct {
		name string
		opts openapi.Options
		want string
	}{
		{"default", openapi.Options{}, "transfer remove"},
		{"custom", openapi.Options{Confirm: func(op *openapi.Operation) bool { return op.Method != "POST" }}, "replace purgeCache remove"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, err := openapi.New([]byte(doc), &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range api.Tools() {
				if len(tool.Inputs) == 1 && tool.StateMode == weft.StateFramework {
					got = append(got, tool.Name)
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("confirming %v, want %s", got, tc.want)
			}
		})
	}
}

// A GET with scalar path and query parameters becomes a template with a
// query expansion; the variables reach the upstream typed and escaped.
func TestResourceTemplateQuery(t *testing.T) {
	const doc = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /users/{login}/repos:
    get:
      operationId: userRepos
      parameters:
        - {name: login, in: path, required: true, schema: {type: string}}
        - {name: per_page, in: query, schema: {type: integer}}
        - {name: sort, in: query, schema: {type: string}}
      responses: {'200': {description: ok, content: {application/json: {schema: {type: object}}}}}
`
	up := echoUpstream(t)
	api, _, c := newServer(t, doc, openapi.Options{BaseURL: up.URL, ResourceScheme: "gh",
		Routes: []openapi.Route{{Methods: []string{"GET"}, Kind: openapi.KindResourceTemplate}}}, nil)

	if op := api.Operations()[0]; op.Kind != openapi.KindResourceTemplate || op.URI != "gh://userRepos/{login}{?per_page,sort}" {
		t.Fatalf("%s %s", op.Kind, op.URI)
	}
	r, err := c.ReadResource(context.Background(), "gh://userRepos/a%20b?per_page=5&sort=new")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Contents[0].Text, `"path":"/users/a%20b/repos","query":"per_page=5\u0026sort=new"`) ||
		!strings.Contains(r.Contents[0].Text, `"Accept":"application/json"`) {
		t.Errorf("%s", r.Contents[0].Text)
	}
	if _, err := c.ReadResource(context.Background(), "gh://userRepos/a?per_page=many"); err == nil {
		t.Error("a non-integer per_page was read")
	}
}
