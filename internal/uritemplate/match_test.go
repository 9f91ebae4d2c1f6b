package uritemplate

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

type kv = map[string]string

func TestMatch(t *testing.T) {
	tests := []struct {
		tmpl string
		uri  string
		want kv // nil means no match
	}{
		// MCP-style templates.
		{"test://template/{id}/data", "test://template/123/data", kv{"id": "123"}},
		{"test://template/{id}/data", "test://template//data", nil},
		{"test://template/{id}/data", "test://template/1/2/data", nil},
		{"test://template/{id}/data", "test://template/123/data/", nil},
		{"test://template/{id}/data", "test://template/123/dat", nil},
		{"test://template/{id}/data", "TEST://template/123/data", nil},
		{"test://template/{id}/data", "test://template/a%20b/data", kv{"id": "a b"}},
		{"test://template/{id}/data", "test://template/a%2Fb/data", kv{"id": "a/b"}},
		{"test://template/{id}/data", "test://template/%E6%97%A5/data", kv{"id": "日"}},
		{"test://template/{id}/data", "test://template/日/data", kv{"id": "日"}},
		{"test://template/{id}/data", "test://template/a%2/data", nil},
		{"test://template/{id}/data", "test://template/a%zz/data", nil},
		{"test://template/{id}/data", "test://template/%FF/data", nil},
		{"test://template/{id}/data", "test://template/%C3/data", nil},
		{"test://template/{id}/data", "test://template/%C0%AF/data", nil},
		{"test://template/{id}/data", "test://template/%ED%A0%80/data", nil},
		{"test://template/{id}/data", "test://template/\xff/data", nil},
		{"test://template/{id}/data", "test://template/a?b/data", nil},
		{"test://template/{id}/data", "test://template/a#b/data", nil},
		{"test://template/{id}/data", "test://template/a,b;c=d&e/data", kv{"id": "a,b;c=d&e"}},
		{"file:///{path}", "file:///README.md", kv{"path": "README.md"}},
		{"file:///{path}", "file:///src/main.go", nil},
		{"file:///{path}", "file:///", nil},
		{"file:///{+path}", "file:///src/main.go", kv{"path": "src/main.go"}},
		{"file:///{+path}", "file:///src/a%20b.go", kv{"path": "src/a%20b.go"}},
		{"file:///{+path}", "file:///src/a b.go", nil},
		{"file:///{+path}", "file:///src/main.go?x", nil},
		{"file:///{+path}", "file:///src/日.go", nil},
		{"file:///{+path}", "file:///a%", nil},
		{"db://{schema}/{table}?x={y}", "db://public/users?x=5", kv{"schema": "public", "table": "users", "y": "5"}},
		{"db://{schema}/{table}?x={y}", "db://public/users?x=", nil},
		{"db://{schema}/{table}?x={y}", "db://public/users?y=5", nil},
		{"db://{schema}/{table}?x={y}", "db://public/users", nil},

		// Literal templates.
		{"", "", kv{}},
		{"", "x", nil},
		{"test://static", "test://static", kv{}},
		{"test://static", "test://static/", nil},
		{"a%2Fb", "a%2Fb", kv{}},
		{"a%2Fb", "a%2fb", nil},
		{"a%2Fb", "a/b", nil},
		{"ü/{v}", "ü/1", kv{"v": "1"}},
		{"ü/{v}", "%C3%BC/1", kv{"v": "1"}},
		{"ü/{v}", "%c3%bc/1", kv{"v": "1"}},
		{"ü/{v}", "%C3\xbc/1", kv{"v": "1"}},
		{"%C3%BC/{v}", "ü/1", kv{"v": "1"}},
		{"%C3%BC/{v}", "%c3%bc/1", kv{"v": "1"}},
		{"%2F{v}", "%2f1", nil},
		{"ü/{v}", "u/1", nil},
		{"日本{v}", "日%E6%9C%ACx", kv{"v": "x"}},

		// Adjacent and ambiguous expressions: later expressions are
		// shortest.
		{"{a}{b}", "xyz", kv{"a": "xy", "b": "z"}},
		{"{a}-{b}", "x-y-z", kv{"a": "x-y", "b": "z"}},
		{"{a}{b}", "x", nil},
		{"{a}{b}", "x%41", kv{"a": "x", "b": "A"}},
		{"{a}{b}", "%C3%A9%C3%A9", kv{"a": "é", "b": "é"}},
		{"{a,b}", "1,2,3", kv{"a": "1,2", "b": "3"}},
		{"{a:2}{b}", "xyz", kv{"a": "xy", "b": "z"}},
		{"{a}{b:1}", "xyz", kv{"a": "xy", "b": "z"}},
		{"{a:1}{b:1}", "xyz", nil},
		{"{a:1}", "%C3%A9", kv{"a": "é"}},
		{"{a:3}", "abcd", nil},
		{"{a*}", "abcd", kv{"a": "abcd"}},

		// Operators.
		{"{+a}{b}", "x/y/z", kv{"a": "x/y/", "b": "z"}},
		{"{+a}/{b}", "x/y/z", kv{"a": "x/y", "b": "z"}},
		{"{+a}x{+b}", "axbxc", kv{"a": "axb", "b": "c"}},
		{"{+a:3}", "%41", kv{"a": "%41"}},
		{"{+a:2}", "%41", nil},
		{"x{#f}", "x#a/b?c", kv{"f": "a/b?c"}},
		{"x{#f}", "x#a#b", nil},
		{"x{#f}", "x", nil},
		{"x{#f,g}", "x#1,2", kv{"f": "1", "g": "2"}},
		{"{/a}", "/x", kv{"a": "x"}},
		{"{/a}", "/", nil},
		{"{/a}", "x", nil},
		{"{/a,b}", "/x/y", kv{"a": "x", "b": "y"}},
		{"{/a,b}", "/x", nil},
		{"a{/b}{/c}", "a/1/2", kv{"b": "1", "c": "2"}},
		{"file{.ext}", "file.tar.gz", kv{"ext": "tar.gz"}},
		{"{name}{.ext}", "file.tar.gz", kv{"name": "file.tar", "ext": "gz"}},
		{"{;a,b}", ";a=1;b=2", kv{"a": "1", "b": "2"}},
		{"{;a}", ";a", nil},
		{"{;a}", ";b=1", nil},

		// Query expressions.
		{"search{?q,lang}", "search?q=go&lang=en", kv{"q": "go", "lang": "en"}},
		{"search{?q,lang}", "search?lang=en&q=go", kv{"q": "go", "lang": "en"}},
		{"search{?q,lang}", "search?q=go", kv{"q": "go"}},
		{"search{?q,lang}", "search", kv{}},
		{"search{?q,lang}", "search?", nil},
		{"search{?q,lang}", "search?q=1&q=2", nil},
		{"search{?q,lang}", "search?q=1&x=2", nil},
		{"search{?q,lang}", "search?=1", nil},
		{"search{?q,lang}", "search?q=a%20b%26c", kv{"q": "a b&c"}},
		{"search{?q,lang}", "search?q=a+b", kv{"q": "a+b"}},
		{"search{?q,lang}", "search?q=a=b", kv{"q": "a=b"}},
		{"search{?q,lang}", "search?q=a?b", kv{"q": "a?b"}},
		{"search{?q,lang}", "search?q", kv{"q": ""}},
		{"search{?q,lang}", "search?q=", kv{"q": ""}},
		{"search{?q,lang}", "search?q=%zz", nil},
		{"search{?q,lang}", "search?q=%FF", nil},
		{"search{?q,lang}", "search?Q=1", nil},
		{"search{?q:2}", "search?q=ab", kv{"q": "ab"}},
		{"search{?q:2}", "search?q=abc", nil},
		{"search{?q}#top", "search?q=1#top", kv{"q": "1"}},
		{"search{?q}#top", "search#top", kv{}},
		{"search{?q}{&r}", "search?q=1&r=2", kv{"q": "1", "r": "2"}},
		{"search{?q}{&r}", "search&r=2", kv{"r": "2"}},
		{"search{?q}{&r}", "search?r=2", nil},
		{"search?fixed=1{&r}", "search?fixed=1&r=2", kv{"r": "2"}},
		{"search?fixed=1{&r}", "search?fixed=1", kv{}},
		{"{?a}b", "?a=1b", kv{"a": "1"}},
		{"{?a}b", "b", kv{}},
		{"{?a}{?b}", "?a=1?b=2", kv{"a": "1", "b": "2"}},
		{"{?a}&x=1", "?a=1&x=1", kv{"a": "1"}},
		{"{?%41}", "?%41=1", kv{"%41": "1"}},
		{"{?%41}", "?A=1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.tmpl+" "+tc.uri, func(t *testing.T) {
			tp, err := Parse(tc.tmpl)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.tmpl, err)
			}
			got, ok := tp.Match(tc.uri)
			if tc.want == nil {
				if ok {
					t.Fatalf("Match(%q) = %q, want no match", tc.uri, got)
				}
				if got != nil {
					t.Fatalf("Match(%q) returned a map without matching", tc.uri)
				}
				return
			}
			if !ok {
				t.Fatalf("Match(%q): no match, want %q", tc.uri, tc.want)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Match(%q) = %q, want %q", tc.uri, got, tc.want)
			}
		})
	}
}

func TestMatchRepeatedVariables(t *testing.T) {
	for _, s := range []string{"{x}/{x}", "{x,x}", "{?x}{&x}", "{x}{?x}", "{/x}{+x}"} {
		tp, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if tp.Matchable() {
			t.Errorf("Parse(%q).Matchable() = true", s)
		}
		out, err := tp.Expand(kv{"x": "1"})
		if err != nil {
			t.Fatalf("Expand: %v", err)
		}
		if _, ok := tp.Match(out); ok {
			t.Errorf("Parse(%q).Match(%q) matched", s, out)
		}
	}
}

// TestMatchRoundTrip expands templates with simple values and checks that
// Match recovers exactly those values.
func TestMatchRoundTrip(t *testing.T) {
	simpleValues := []string{
		"x", "123", "hello world", "a/b", "a?b#c", "50%", "%41", "日本語", "😀",
		"a,b", "a&b=c", "-._~", "'\"<>\\^`{|}", "\t\n", "=?base64?", ".", "..",
	}
	// Values for {+var} and {#var} must consist of characters reserved
	// expansion passes through, or they come back pct-encoded.
	reservedValues := []string{"x", "a/b/c", "a%20b", "!$&'()*+,;=:@[]", "-._~"}
	templates := []struct {
		tmpl     string
		reserved bool
	}{
		{"test://template/{id}/data", false},
		{"file:///{path}", false},
		{"db://{schema}/{table}?x={y}", false},
		{"{a}/{b}", false},
		{"{/a,b}", false},
		{"x{.a}", false},
		{"{;a,b}", false},
		{"search{?q,lang}", false},
		{"search{?q}{&lang}#f", false},
		{"ü{a}", false},
		{"file:///{+path}", true},
		{"{+a}/x/{+b}", true},
		{"x{#a}", true},
		{"{+a}{?q}", true},
	}
	for _, tc := range templates {
		tp, err := Parse(tc.tmpl)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.tmpl, err)
		}
		values := simpleValues
		if tc.reserved {
			values = reservedValues
		}
		names := tp.Variables()
		for i := range values {
			vars := kv{}
			for j, n := range names {
				v := values[(i+j)%len(values)]
				if strings.Contains(tc.tmpl, "{a}/{b}") || strings.Contains(tc.tmpl, "/x/") {
					// Keep the split unambiguous.
					v = strings.ReplaceAll(v, "/", "")
				}
				vars[n] = v
			}
			uri, err := tp.Expand(vars)
			if err != nil {
				t.Fatalf("Expand: %v", err)
			}
			got, ok := tp.Match(uri)
			if !ok {
				t.Errorf("template %q: Match(Expand(%q) = %q) failed", tc.tmpl, vars, uri)
				continue
			}
			if !reflect.DeepEqual(got, vars) {
				t.Errorf("template %q: Match(%q) = %q, want %q", tc.tmpl, uri, got, vars)
			}
		}
	}
}

// TestMatchAdversarial checks inputs that make naive backtracking matchers
// exponential: the work must stay within the budget and the answers must
// be right.
func TestMatchAdversarial(t *testing.T) {
	many := func(expr string, n int, sep string) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteString(sep)
			}
			sb.WriteString(strings.ReplaceAll(expr, "N", fmt.Sprint(i)))
		}
		return sb.String()
	}
	tests := []struct {
		name  string
		tmpl  string
		uri   string
		match bool
	}{
		{"adjacent simple, no match", many("{vN}", 32, "") + "!", strings.Repeat("a", 50000), false},
		{"adjacent simple, match", many("{vN}", 32, "") + "!", strings.Repeat("a", 50000) + "!", true},
		{"adjacent reserved", many("{+vN}", 32, "") + "?", strings.Repeat("a/", 25000), false},
		{"separated by a", many("{vN}", 32, "a"), strings.Repeat("a", 50000) + "/", false},
		{"separated by a, match", many("{vN}", 32, "a"), strings.Repeat("a", 50000), true},
		{"comma list", "{" + many("vN", 32, ",") + "}x", strings.Repeat(",", 50000), false},
		{"long literal after var", "{v}" + strings.Repeat("a", 4000) + "b", strings.Repeat("a", 50000), false},
		{"long literal after var, match", "{v}" + strings.Repeat("a", 4000) + "b", strings.Repeat("a", 10000) + "b", true},
		{"pct soup", many("{vN}", 32, "") + "!", strings.Repeat("%C3%A9%", 10000), false},
		{"broken utf8 soup", many("{vN}", 32, "") + "!", strings.Repeat("%C3%C3", 10000) + "!", false},
		{"queries", many("{?vN}", 32, ""), strings.Repeat("?v1=a&v2=b&", 5000), false},
		{"query continuations", many("{&vN}", 32, ""), strings.Repeat("&v1=a", 10000), false},
		{"prefix limits", many("{vN:1}", 32, ""), strings.Repeat("a", 10000), false},
		{"prefix limits, match", many("{vN:1}", 32, ""), strings.Repeat("a", 32), true},
		{"fragments", "x" + many("{#vN}", 32, ""), "x" + strings.Repeat("#a", 16) + strings.Repeat("#", 50000), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := Parse(tc.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			m := matcher{units: tp.units, vars: tp.vars, uri: tc.uri}
			_, ok := m.run()
			if ok != tc.match {
				t.Fatalf("match = %v, want %v", ok, tc.match)
			}
			if m.steps > MaxMatchSteps {
				t.Fatalf("used %d steps, budget %d", m.steps, MaxMatchSteps)
			}
			if _, ok2 := tp.Match(tc.uri); ok2 != ok {
				t.Fatalf("Match disagrees with matcher")
			}
		})
	}
}

// TestMatchLinear checks that the work grows linearly with the URI length
// on an input that is quadratic for a backtracking matcher.
func TestMatchLinear(t *testing.T) {
	tp, err := Parse("{a}{b}{c}{d}!")
	if err != nil {
		t.Fatal(err)
	}
	steps := func(n int) int {
		m := matcher{units: tp.units, vars: tp.vars, uri: strings.Repeat("a", n)}
		if _, ok := m.run(); ok {
			t.Fatal("unexpected match")
		}
		return m.steps
	}
	s1, s2 := steps(10000), steps(20000)
	if s2 > 2*s1+100 {
		t.Fatalf("steps(10000) = %d, steps(20000) = %d: not linear", s1, s2)
	}
}

func TestMatchBudget(t *testing.T) {
	// "{+a}" compiles to one unit, so a URI of n bytes costs 2*(n+1).
	tp, err := Parse("{+a}")
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.units) != 1 {
		t.Fatalf("got %d units", len(tp.units))
	}
	n := MaxMatchSteps/2 - 1
	uri := strings.Repeat("a", n+1)
	if v, ok := tp.Match(uri[:n]); !ok || len(v["a"]) != n {
		t.Fatalf("Match at the budget: ok = %v", ok)
	}
	if _, ok := tp.Match(uri); ok {
		t.Fatal("Match over the budget succeeded")
	}

	// Long literals are found with a linear scan, not by comparing at
	// every reachable position.
	tp, err = Parse("{v}" + strings.Repeat("a", 8000) + "b")
	if err != nil {
		t.Fatal(err)
	}
	m := matcher{units: tp.units, vars: tp.vars, uri: strings.Repeat("a", 200000) + "b"}
	if _, ok := m.run(); !ok {
		t.Fatal("long literal: no match")
	}
	if base := (len(tp.units) + 1) * (len(m.uri) + 1); m.steps != base {
		t.Fatalf("long literal: %d steps, want the base cost %d", m.steps, base)
	}

	// Query scanning is charged: a query expression that can start at
	// many positions, each followed by a long parameter, exhausts the
	// budget instead of running quadratically.
	tp, err = Parse("x{#f}{?a}!")
	if err != nil {
		t.Fatal(err)
	}
	small := "x#" + strings.Repeat("?a=", 300) + "!"
	if v, ok := tp.Match(small); !ok || v["a"] != "" {
		t.Fatalf("Match(small) = %v, %v", v, ok)
	}
	m = matcher{units: tp.units, vars: tp.vars, uri: "x#" + strings.Repeat("?a=", 20000) + "!"}
	if _, ok := m.run(); ok {
		t.Fatal("match succeeded despite exhausting the budget")
	}
	if m.steps > MaxMatchSteps+len(m.uri)+1 {
		t.Fatalf("matcher ran on to %d steps", m.steps)
	}
}

func TestConcurrentUse(t *testing.T) {
	tp, err := Parse("test://{a}/{+b}{?c,d}")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				vars := kv{"a": fmt.Sprint(g), "b": "x/y", "c": fmt.Sprint(i)}
				uri, err := tp.Expand(vars)
				if err != nil {
					t.Error(err)
					return
				}
				got, ok := tp.Match(uri)
				if !ok || !reflect.DeepEqual(got, vars) {
					t.Errorf("Match(%q) = %v, %v", uri, got, ok)
					return
				}
				_ = tp.Variables()
				_ = tp.String()
			}
		}()
	}
	wg.Wait()
}

func TestByteSets(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if got, want := inSet(b, rawLo, rawHi), isUnreserved(b) || isReserved(b); got != want {
			t.Errorf("raw set(%q) = %v, want %v", b, got, want)
		}
		if got, want := inSet(b, unreservedLo, unreservedHi), isUnreserved(b); got != want {
			t.Errorf("unreserved set(%q) = %v, want %v", b, got, want)
		}
	}
}
