package uritemplate

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzTemplateSeeds = []string{
	"", "test://template/{id}/data", "file:///{path}", "file:///{+path}",
	"db://{schema}/{table}?x={y}", "search{?q,lang}", "{a}{b}", "{x}/{x}",
	"ü/{v}", "{/a,b}{.ext}", "{;a,b}", "{#f}", "{v:3}", "{+path:6}/here",
	"{?a}{&b}", "{?a}b", "{x,hello,y}", "X{.var:3}", "{&a*}", "%41{%41}",
	"{a.b}", "{a..b}", "{}", "{=x}", "{x:0}", "{x:10000}", "{x", "}", "a b",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzTemplateSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error %T %v is not a *ParseError", s, err, err)
			}
			if pe.Offset < 0 || pe.Offset > len(s) {
				t.Fatalf("Parse(%q) error offset %d out of range", s, pe.Offset)
			}
			return
		}
		if got := tp.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q", s, got)
		}
		tp2, err := Parse(tp.String())
		if err != nil || tp2.String() != s {
			t.Fatalf("re-Parse(%q) = %v, %v", s, tp2, err)
		}
		names := tp.Variables()
		if len(names) > MaxVariables {
			t.Fatalf("Parse(%q) has %d variables", s, len(names))
		}
		if tp.IsLiteral() != (len(names) == 0) {
			t.Fatalf("Parse(%q): IsLiteral = %v with %d variables", s, tp.IsLiteral(), len(names))
		}
		vars := make(map[string]string, len(names))
		for _, n := range names {
			vars[n] = "v"
		}
		out, err := tp.Expand(vars)
		if err != nil {
			t.Fatalf("Parse(%q).Expand error: %v", s, err)
		}
		if !utf8.ValidString(out) || strings.ContainsAny(out, " {}") {
			t.Fatalf("Parse(%q).Expand = %q is not a URI", s, out)
		}
		if _, ok := tp.Match(out); !ok && tp.Matchable() {
			t.Fatalf("Parse(%q): Match(Expand(all \"v\")) = %q does not match", s, out)
		}
		if _, err := tp.Expand(nil); err != nil {
			t.Fatalf("Parse(%q).Expand(nil) error: %v", s, err)
		}
	})
}

func FuzzMatch(f *testing.F) {
	uris := []string{
		"", "test://template/123/data", "file:///a/b", "db://public/users?x=5",
		"search?lang=en&q=go%20lang", "xyz", "a/a", "%C3%BC/1", "ü/1",
		"/x/y.tar.gz", ";a=1;b=2", "#a/b?c", "abcd", "%C3", "?a=1&b=2", "?a=1b",
	}
	for i, s := range fuzzTemplateSeeds {
		f.Add(s, uris[i%len(uris)])
	}
	f.Fuzz(func(t *testing.T, tmpl, uri string) {
		tp, err := Parse(tmpl)
		if err != nil {
			return
		}
		vals, ok := tp.Match(uri)
		if len(uri) <= 64 && tp.Matchable() {
			o := oracle{units: tp.units, uri: uri, memo: map[[2]int]bool{}}
			if want := o.match(0, 0); ok != want {
				t.Fatalf("Match(%q, %q) = %v, exhaustive oracle says %v", tmpl, uri, ok, want)
			}
		}
		if !ok {
			return
		}
		for k, v := range vals {
			if !utf8.ValidString(v) {
				t.Fatalf("Match(%q, %q): value %q=%q is not valid UTF-8", tmpl, uri, k, v)
			}
		}
		out, err := tp.Expand(vals)
		if err != nil {
			t.Fatalf("Match(%q, %q) = %v; Expand error: %v", tmpl, uri, vals, err)
		}
		vals2, ok := tp.Match(out)
		if !ok {
			t.Fatalf("Match(%q, %q) = %v; Expand = %q does not match", tmpl, uri, vals, out)
		}
		out2, err := tp.Expand(vals2)
		if err != nil || out2 != out {
			t.Fatalf("template %q: Expand(Match(%q)) = %q, %v; want fixed point", tmpl, out, out2, err)
		}
	})
}
