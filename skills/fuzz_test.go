package skills

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
)

// FuzzParseFrontmatter checks that the front-matter parser never panics,
// terminates, and on success returns a JSON object within the limits that
// encodes, re-parses to the same value, and is deterministic. Seeds are in
// testdata/fuzz/FuzzParseFrontmatter besides the unit-test cases.
func FuzzParseFrontmatter(f *testing.F) {
	for _, c := range parseCases {
		f.Add([]byte(c.in))
	}
	for _, c := range rejectCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseFrontmatter(data)
		if err != nil {
			if _, ok := err.(*FrontmatterError); !ok {
				t.Fatalf("error %T is not a *FrontmatterError: %v", err, err)
			}
			return
		}
		if v.Kind() != exactjson.KindObject {
			t.Fatalf("top level is %s, want an object", v.Kind())
		}
		if d := depth(v); d > DefaultMaxFrontmatterDepth {
			t.Fatalf("depth %d exceeds the limit", d)
		}
		enc, err := exactjson.Encode(v, 0)
		if err != nil {
			t.Fatalf("result does not encode: %v (%s)", err, v)
		}
		back, err := exactjson.Parse(enc, exactjson.Limits{})
		if err != nil || !exactjson.Equal(back, v) {
			t.Fatalf("result does not round-trip: %v: %s", err, enc)
		}
		again, err := ParseFrontmatter(data)
		if err != nil || !exactjson.Equal(again, v) {
			t.Fatal("parsing is not deterministic")
		}
		// Every string the parser built from the source is valid UTF-8.
		if !utf8.Valid(enc) {
			t.Fatal("invalid UTF-8 in the result")
		}
	})
}

// FuzzSplitFrontmatter checks the delimiting of SKILL.md.
func FuzzSplitFrontmatter(f *testing.F) {
	f.Add([]byte("---\nname: a\ndescription: b\n---\nbody"))
	f.Add([]byte("\ufeff---\r\nname: a\r\n--- \r\n"))
	f.Add([]byte("---\n---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, body, err := SplitFrontmatter(data)
		if err != nil {
			return
		}
		s := bytes.TrimPrefix(data, []byte("\ufeff"))
		if !bytes.HasPrefix(s, []byte("---\n")) && !bytes.HasPrefix(s, []byte("---\r\n")) {
			t.Fatalf("accepted input without an opening line: %q", data)
		}
		if !bytes.Contains(s, fm) || !bytes.HasSuffix(s, body) {
			t.Fatalf("front matter or body is not part of the input")
		}
		if bytes.Contains(append([]byte("\n"), fm...), []byte("\n---\n")) {
			t.Fatalf("front matter %q holds a closing line", fm)
		}
	})
}

func depth(v exactjson.Value) int {
	d := 0
	switch v.Kind() {
	case exactjson.KindObject:
		for _, x := range v.All() {
			d = max(d, depth(x))
		}
		return d + 1
	case exactjson.KindArray:
		for x := range v.Values() {
			d = max(d, depth(x))
		}
		return d + 1
	}
	return 0
}
