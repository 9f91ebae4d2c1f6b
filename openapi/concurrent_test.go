package openapi

import (
	"os"
	"sync"
	"testing"
)

// New may run concurrently (the parser keeps caches of its own; make test
// runs this under the race detector), and each load gives the same tools.
func TestNewConcurrent(t *testing.T) {
	b, _ := os.ReadFile("../examples/openapi/petstore.yaml")
	g, _ := os.ReadFile("testdata/github-trimmed.json")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			doc := b
			if i == 0 {
				doc = g
			}
			var first string
			for range 2 {
				api, err := New(doc, nil)
				if err != nil {
					t.Error(err)
					return
				}
				var all string
				for _, op := range api.Operations() {
					all += op.Name + string(op.InputSchema) + string(op.OutputSchema)
				}
				if first == "" {
					first = all
				} else if all != first {
					t.Error("two loads of one document made different tools")
				}
			}
		}()
	}
	wg.Wait()
}
