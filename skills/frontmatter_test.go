package skills

import (
	"errors"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// The expected values were checked against the YAML 1.2 parser hosts use
// (the yaml npm package, core schema), which is what a host compares an
// entry's frontmatter with.
var parseCases = []struct{ in, want string }{
	{"name: pdf\ndescription: Extract text", `{"name":"pdf","description":"Extract text"}`},
	{"a: >-\n  Draft notes\n  from changes.\n\n  Second para.\n", `{"a":"Draft notes from changes.\nSecond para."}`},
	{"a: |\n  line1\n  line2\n", `{"a":"line1\nline2\n"}`},
	{"a: |\n  line1\n  line2", `{"a":"line1\nline2\n"}`}, // end of input ends the last line
	{"a: |-\n  x\n\n\nb: 1", `{"a":"x","b":1}`},
	{"a: |+\n  x\n\n\nb: 1", `{"a":"x\n\n\n","b":1}`},
	{"a: >\n  a\n  b\n\n  c\n\n\n  d\ne: 1", `{"a":"a b\nc\n\nd\n","e":1}`},
	{"a: >\n\n  x\n  y", `{"a":"\nx y\n"}`},
	{"a: |\n  # not a comment\n  b", `{"a":"# not a comment\nb\n"}`},
	{"a: | # comment\n  x\n", `{"a":"x\n"}`},
	{"a: |\n  x  \n  y ", `{"a":"x  \ny \n"}`},
	{"a: |\n", `{"a":""}`},
	{"m:\n  a: b\n  c: \"d\"\n  e: 'f''g'", `{"m":{"a":"b","c":"d","e":"f'g"}}`},
	{"l:\n- a\n- b\nn: 1", `{"l":["a","b"],"n":1}`},
	{"l:\n  - a\n  - b: c\n    d: e\n  -\n    x: y\n  -\n  - - ", ""},
	{"l:\n  - a\n  - b: c\n    d: e\n  -\n    x: y\n  -", `{"l":["a",{"b":"c","d":"e"},{"x":"y"},null]}`},
	{"l:\n  - |\n    lit\n  - >\n    fold\n    ed\n  - x", `{"l":["lit\n","fold ed\n","x"]}`},
	{"n: 1\nf: 1.5\ne: 1e3\nh: 0x1F\no: 0o17\nb: true\nc: False\nz: ~\nnn: null\nx: 007\ny: +5\nw: .5\nv: 1.\nu: -2.5E-3\nbig: 9007199254740992",
		`{"n":1,"f":1.5,"e":1000,"h":31,"o":15,"b":true,"c":false,"z":null,"nn":null,"x":7,"y":5,"w":0.5,"v":1,"u":-0.0025,"big":9007199254740992}`},
	{"s: 1_000\nt: 0b101\nu: 1.2.3\nv: yes\nw: no\nx: on\ny: nULL\nz: tRUE\nq: 0X1F", `{"s":"1_000","t":"0b101","u":"1.2.3","v":"yes","w":"no","x":"on","y":"nULL","z":"tRUE","q":"0X1F"}`},
	{`s: "a\tb\u00e9\x41\U0001F600\/\N\_\L\P"`, `{"s":"a\tbéA😀/\u0085\u00a0\u2028\u2029"}`},
	{"s: a #comment\nt: b#c\nu: x # y # z", `{"s":"a","t":"b#c","u":"x"}`},
	{"s: plain multi\n  line value\n\n  with blank\n", `{"s":"plain multi line value\nwith blank"}`},
	{"s:\n  plain on\n  next line", `{"s":"plain on next line"}`},
	{"f: [a, \"b\", 'c', 1, true, null, ~, -x, .5]", `{"f":["a","b","c",1,true,null,null,"-x",0.5]}`},
	{"f: []\ng: {}\nh: [ ]", `{"f":[],"g":{},"h":[]}`},
	{"\"quoted key\": 1\n'single': 2\n\"\": 3", `{"quoted key":1,"single":2,"":3}`},
	{"a b: c\na:b: c\nx: y:z", `{"a b":"c","a:b":"c","x":"y:z"}`},
	{"a: 'it''s'\nb: ''\nc: \"\"\nd: '#'", `{"a":"it's","b":"","c":"","d":"#"}`},
	{"  a: 1\n  b: 2", `{"a":1,"b":2}`},
	{"a:\n  b:\n    c:\n      d: 1", `{"a":{"b":{"c":{"d":1}}}}`},
	{"a:\n  - 1\n  -   x: 1\n      y: 2", `{"a":[1,{"x":1,"y":2}]}`},
	{"a:\n\n  b: 1\n\n# trailing comment\n", `{"a":{"b":1}}`},
	{"a: x\r\nb: |\r\n  y\r\n", `{"a":"x","b":"y\n"}`},
	{"a: é -a ?b :c", `{"a":"é -a ?b :c"}`},
	{"a: \"x\" # c\nb: [1] # c", `{"a":"x","b":[1]}`},
	{"a:\n  #c\n  b: 1", `{"a":{"b":1}}`},
	{"a: 1e-400\nb: 0.1e1\nc: 1e21", `{"a":0,"b":1,"c":1E+21}`},
}

func TestParseFrontmatter(t *testing.T) {
	for _, c := range parseCases {
		v, err := ParseFrontmatter([]byte(c.in))
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: want an error, got %s", c.in, v)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		want, err := exactjson.ParseString(c.want, exactjson.Limits{})
		if err != nil {
			t.Fatalf("bad want %s: %v", c.want, err)
		}
		if !exactjson.Equal(v, want) {
			t.Errorf("%q:\n got %s\nwant %s", c.in, v, want)
		}
	}
}

// Each of these is rejected (several are valid YAML that the strict subset
// refuses rather than risk reading differently from a host's parser).
var rejectCases = []struct{ in, why string }{
	{"", "empty"},
	{"# only a comment\n", "empty"},
	{"- a\n- b", "must be a mapping"},
	{"a", "must be a mapping"},
	{"a: b: c", "': ' inside a plain scalar"},
	{"a: - b", "cannot start with '-'"},
	{"a: -", "cannot start with '-'"},
	{"a: &x 1\nb: *x", "anchors"},
	{"a: *x", "anchors"},
	{"a: !!str 1", "tags"},
	{"? a\n: b", "must be a mapping"},
	{"a: \"multi\n  line\"", "unterminated double-quoted"},
	{"a: 'multi\n  line'", "unterminated single-quoted"},
	{"a: 1\na: 2", "duplicate key"},
	{"a:\tb", "not a tab"},
	{"a: b\t", "tab in a plain scalar"},
	{"\ta: b", "tab in indentation"},
	{"a: |2\n   x", "indentation indicators"},
	{"a: >\n  x\n    more\n  y", "more-indented lines"},
	{"a: |+\n  ", "keep (+)"},
	{"1: a", "not a string"},
	{"true: a", "not a string"},
	{"null: a", "not a string"},
	{"<<: a", "merge keys"},
	{"__proto__: a", "__proto__"},
	{"a: [a, b, ]", "trailing comma"},
	{"a: [a, [b]]", "starting with '['"},
	{"a: [x: y]", "':' ends a flow sequence item"},
	{"a: [a, b", "unterminated flow sequence"},
	{"a: {b: c}", "flow mappings"},
	{"a: x\n  # c\nb: y", "comment line inside a multi-line plain scalar"},
	{"a:\n#c\n  foo\nv: 1", "comment between a key and its value"},
	{"a: x\n  - y", "continuation line of a plain scalar starts with '-'"},
	{"a: 12345678901234567890", "not exactly representable"},
	{"a: 0x20000000000001", "not exactly representable"},
	{"a: -0", "negative zero"},
	{"a: .inf", "infinity or NaN"},
	{"a: .NaN", "infinity or NaN"},
	{"a: 1e400", "out of range"},
	{"a: %x", "cannot start with '%'"},
	{"a: @x", "cannot start with '@'"},
	{"a: \"\\ud800\"", "invalid \\u escape"},
	{"a: \"\\q\"", "invalid escape"},
	{"a: \"x\"y", "unexpected text"},
	{"a: 'x'# c", "unexpected text"},
	{"a: 1\n b: 2", "': ' inside a plain scalar"},
	{"a:\n  b: 1\n c: 2", "unexpected indentation"},
	{"a:\n  - 1\n  b: 2", "unexpected indentation"},
	{"a: 1\n- b", "mapping key was expected"},
	{"a: |\n    x\n  y", "less indented"},
	{"a: |\n  x\n   \n  y", "whitespace-only line indented past"},
	{"a:\n  - - x", "compact nested sequences"},
	{"a\x00: b", "not allowed"},
	{"a: b\u2028c", "not allowed"},
	{"a: \u0085", "not allowed"},
	{"a: x\rb: y", "carriage return"},
	{"a: \xff", "not valid UTF-8"},
	{"[a]: b", "must be a mapping"},
	{"a[b]: c", "flow indicator"},
	{"a: |x", "after a block scalar indicator"},
	{"a:\n  |\n  x", "must follow its key"},
	{strings.Repeat("k", MaxKeyBytes+1) + ": v", "longer than"},
}

func TestParseFrontmatterRejects(t *testing.T) {
	for _, c := range rejectCases {
		v, err := ParseFrontmatter([]byte(c.in))
		if err == nil {
			t.Errorf("%q: want an error (%s), got %s", c.in, c.why, v)
			continue
		}
		var fe *FrontmatterError
		if !errors.As(err, &fe) {
			t.Errorf("%q: error %T is not a *FrontmatterError", c.in, err)
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Errorf("%q: error %q does not mention %q", c.in, err, c.why)
		}
	}
}

func TestParseFrontmatterLimits(t *testing.T) {
	big := "a: " + strings.Repeat("x", DefaultMaxFrontmatterBytes)
	if _, err := ParseFrontmatter([]byte(big)); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("oversized front matter: %v", err)
	}
	deep := ""
	for i := range DefaultMaxFrontmatterDepth {
		deep += strings.Repeat(" ", i) + "k:\n"
	}
	deep += strings.Repeat(" ", DefaultMaxFrontmatterDepth) + "k: v\n"
	if _, err := ParseFrontmatter([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nesting deeper") {
		t.Errorf("deep front matter: %v", err)
	}
	ok := strings.Join(strings.Split(deep, "\n")[1:], "\n") // one level less
	if _, err := ParseFrontmatter([]byte(ok)); err != nil {
		t.Errorf("front matter at the depth limit: %v", err)
	}
	seq := ""
	for i := range DefaultMaxFrontmatterDepth + 1 {
		seq += strings.Repeat(" ", 2*i) + "-\n"
	}
	if _, err := ParseFrontmatter([]byte("a:\n" + seq)); err == nil || !strings.Contains(err.Error(), "nesting deeper") {
		t.Errorf("deep sequences: %v", err)
	}
}

func TestSplitFrontmatter(t *testing.T) {
	cases := []struct {
		in, fm, body string
		ok           bool
	}{
		{"---\nname: a\n---\nbody", "name: a", "body", true},
		{"\ufeff---\nname: a\n---\n", "name: a", "", true},
		{"---\r\nname: a\r\n---\r\nbody\r\n", "name: a", "body\r\n", true},
		{"---\nname: a\n--- \t\nbody", "name: a", "body", true},
		{"---\nname: a\n---", "name: a", "", true},
		{"---\na: 1\n---x\nb: 2\n---\nbody", "a: 1\n---x\nb: 2", "body", true},
		{"---\n\n---\n", "", "", true},
		{"---\n---\n", "", "", true}, // empty front matter (then rejected for lacking name and description)
		{"---\n---\n\n---", "", "\n---", true},
		{"---\r\n---\r\nbody", "", "body", true},
		{"--- \nname: a\n---\n", "", "", false},
		{"name: a\n---\n", "", "", false},
		{"---\nname: a\n", "", "", false},
		{"\n---\nname: a\n---\n", "", "", false},
	}
	for _, c := range cases {
		fm, body, err := SplitFrontmatter([]byte(c.in))
		if !c.ok {
			if !errors.Is(err, ErrNoFrontmatter) {
				t.Errorf("%q: want ErrNoFrontmatter, got %v (%q)", c.in, err, fm)
			}
			continue
		}
		if err != nil || string(fm) != c.fm || string(body) != c.body {
			t.Errorf("%q: got %q, %q, %v; want %q, %q", c.in, fm, body, err, c.fm, c.body)
		}
	}
}
