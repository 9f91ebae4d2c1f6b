package openapi

import (
	"runtime"
	"strings"
	"testing"

	yaml "github.com/pb33f/go-yaml"
)

// nestedDoc is a document whose one query parameter has a schema of n
// object levels written in flow style, about 33 bytes a level.
func nestedDoc(n int) []byte {
	s := "{type: string}"
	for range n {
		s = "{type: object, properties: {a: " + s + "}}"
	}
	return []byte(`openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "http://127.0.0.1:1"}]
paths:
  /a:
    get:
      parameters: [{name: q, in: query, schema: ` + s + `}]
      responses: {'200': {description: ok}}
`)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDeepDocumentCost (D5 of issue 25): a 132 KB document of schemas
// nested 4,000 levels in flow style allocated 882 MB (and took 14 s) in the
// YAML parser and libopenapi before the converter's 128-level limit
// refused it. It is now refused by a one-pass scan, before any parser,
// with no allocation beyond the error: the bound holds whatever the depth.
func TestDeepDocumentCost(t *testing.T) {
	for _, n := range []int{500, 1000, 4000} {
		doc := nestedDoc(n)
		var err error
		got := allocated(func() { _, err = New(doc, nil) })
		if got > 64<<10 {
			t.Errorf("depth %d (%d bytes): refusing it allocated %d bytes, want at most 64 KiB", n, len(doc), got)
		}
		if err == nil || !strings.Contains(err.Error(), "MaxDocumentDepth") {
			t.Errorf("depth %d: New = %v, want the MaxDocumentDepth error", n, err)
		}
	}
}

// TestFlowDepth: the scan counts what YAML nests and nothing else.
func TestFlowDepth(t *testing.T) {
	tests := []struct {
		doc  string
		want int
	}{
		{`{"a": [{"b": "[[[{{{"}]}`, 6},
		{"a: [1, [2, {b: c}]]\n", 6},
		{"pattern: ^[a-z]+$\nx: a [b\ny: it's [\n", 0},
		{"# [[[[\na: 'x[[''y' # {{\nb: \"\\\"[[\"\n", 0},
		{"a: |\n  [[[[\n  {{{\n\n  ]\nb: [c]\n", 2},
		{"- >-\n   [[[\n- [x]\n- &a [y, *a]\n- !!seq [z]\n", 2},
		{"a: {b: [c,\n  {d: [e]}]}\n", 8},
		{"? [a]\n: {b: c}\n", 2},
		{"a: b: [c]\n", 2},
		{"[]:", 2}, // a flow key of an implicit mapping nests two levels (FuzzFlowDepth)
		// In flow context a quote inside a plain scalar is text ("0:\"" is
		// one scalar: ':' ends it only before a blank, ',', ']' or '}'), so
		// the brackets after it nest (FuzzFlowDepth, issue 41).
		{"{0:\", [{}]}", 6},
		{"{a: \"[[\", b:'c', 'd':\"]]\"}", 2},
		{"[:\"a, [b]]", 4},
		{"[a,#\"\n[b]]", 4},
		{"[a #[[\n, b#c, [d]]", 4},
		{"[&x [a], !t {b: c}, *x]", 4},
	}
	for _, tc := range tests {
		got, err := flowDepth([]byte(tc.doc), 100)
		if err != nil || got != tc.want {
			t.Errorf("flowDepth(%q) = %d, %v; want %d", tc.doc, got, err, tc.want)
		}
	}
	if _, err := flowDepth([]byte("a: [[[[b]]]]"), 7); err == nil {
		t.Error("depth 8 passed a limit of 7")
	}
}

// yamlFlowDepth is the nesting of the flow-style collections of a parsed
// document (block-style nesting needs an indentation per level, so the
// document's size bounds it, and the scan leaves it out).
func yamlFlowDepth(n *yaml.Node) int {
	d := 0
	for _, c := range n.Content {
		d = max(d, yamlFlowDepth(c))
	}
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle != 0 {
		d++
	}
	return d
}

// FuzzFlowDepth: the scan never counts less than the YAML parser nests
// in flow style (it may count more), so no document deeper than the limit
// reaches the parser. Block-style levels (the mapping of "[]: x", say) are
// bounded by the document's size and left out of both sides; the check
// runs on documents that start with a bracket.
func FuzzFlowDepth(f *testing.F) {
	f.Add([]byte(`{"a": [{"b": "[[[{{{"}]}`))
	f.Add([]byte("{a: 'x[[', b: [c, {d: e}], f: \"]]\"}"))
	f.Add([]byte("[a, [b, [c, # ]]\n d]]]"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := flowDepth(doc, 1000)
		if err != nil || len(doc) == 0 || (doc[0] != '{' && doc[0] != '[') {
			return
		}
		var n yaml.Node
		if yaml.Unmarshal(doc, &n) != nil {
			return
		}
		if want := yamlFlowDepth(&n); got < want {
			t.Fatalf("flowDepth = %d, the parser nests %d: %q", got, want, doc)
		}
	})
}
