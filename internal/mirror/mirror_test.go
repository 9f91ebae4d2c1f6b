package mirror

import (
	"slices"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func parse(t *testing.T, doc string) exactjson.Value {
	t.Helper()
	v, err := exactjson.ParseString(doc, exactjson.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   []string // header=path:type
	}{
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer","x-mcp-header":"B"}}},"c":{"type":"boolean","x-mcp-header":"C"}},"$defs":{"d":{"type":"object","properties":{"e":{"type":"string"}}}}}`,
			[]string{"B=a.b:integer", "C=c:boolean"}},
		{`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}`, []string{"Region=r:string"}},
		// Data and annotations are not schemas: an x-mcp-header member in
		// them is just data.
		{`{"type":"object","default":{"x-mcp-header":"D"},"examples":[{"x-mcp-header":"E"}],"properties":{"a":{"type":"string","const":{"x-mcp-header":1}}}}`, nil},
		{`null`, nil},
	} {
		ms, err := Find(parse(t, tc.schema))
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.Header+"="+strings.Join(m.Path, ".")+":"+m.Type)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: mirrors %v, want %v", tc.schema, got, tc.want)
		}
	}
	for _, bad := range []string{
		`{"type":"object","x-mcp-header":"Root"}`,
		`{"type":"object","properties":{"a":{"x-mcp-header":"A"}}}`,
		`{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
		`{"type":"object","properties":{"a":{"type":["string","null"],"x-mcp-header":"A"}}}`,
		`{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"D"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"a b"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}`,
		`{"type":"object","if":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`,
		`{"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`,
		`{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string","x-mcp-header":"A"}]}}}`,
		`{"type":"object","properties":{"a":{"type":"object","additionalProperties":{"type":"string","x-mcp-header":"A"}}}}`,
	} {
		if _, err := Find(parse(t, bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestHeaderValueAndLookup(t *testing.T) {
	args := parse(t, `{"s":"eu-west","u":"é","n":-42,"f":1.5,"b":false,"z":null,"o":{"p":"x"},"a":[1]}`)
	for _, tc := range []struct {
		path []string
		want string
		ok   bool
	}{
		{[]string{"s"}, "eu-west", true},
		{[]string{"u"}, "=?base64?w6k=?=", true},
		{[]string{"n"}, "-42", true},
		{[]string{"f"}, "1.5", true},
		{[]string{"b"}, "false", true},
		{[]string{"o", "p"}, "x", true},
		{[]string{"o"}, "", false},
		{[]string{"a"}, "", false},
	} {
		v, present := Mirror{Path: tc.path}.Lookup(args)
		if !present {
			t.Fatalf("%v: absent", tc.path)
		}
		if got, ok := HeaderValue(v); got != tc.want || ok != tc.ok {
			t.Errorf("%v: HeaderValue = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
	for _, p := range [][]string{{"z"}, {"missing"}, {"o", "q"}, {"s", "deeper"}} {
		if _, present := (Mirror{Path: p}).Lookup(args); present {
			t.Errorf("%v: present", p)
		}
	}
}

// FuzzFind: Find never panics on any schema document, and what it accepts
// keeps the rules: distinct header names (case-insensitively), each an HTTP
// token on a string, integer or boolean property whose path Lookup walks.
func FuzzFind(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc string) {
		v, err := exactjson.ParseString(doc, exactjson.Limits{})
		if err != nil {
			return
		}
		ms, err := Find(v)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, m := range ms {
			h := strings.ToLower(m.Header)
			if seen[h] || m.Header == "" || len(m.Path) == 0 {
				t.Fatalf("accepted %s with mirror %+v", doc, m)
			}
			seen[h] = true
			if m.Type != "string" && m.Type != "integer" && m.Type != "boolean" {
				t.Fatalf("accepted type %q", m.Type)
			}
			node := v
			for _, p := range m.Path {
				props, _ := node.Get("properties")
				node, _ = props.Get(p)
			}
			if h, _ := node.Get("x-mcp-header"); !exactjson.Equal(h, exactjson.String(m.Header)) {
				t.Fatalf("mirror %+v does not lead to its annotation in %s", m, doc)
			}
		}
	})
}
