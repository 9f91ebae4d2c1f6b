package uritemplate

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// rfcVars are the string-valued variables of RFC 6570 sections 1.2 and 3.2.
var rfcVars = map[string]string{
	"var":   "value",
	"hello": "Hello World!",
	"path":  "/foo/bar",
	"empty": "",
	"x":     "1024",
	"y":     "768",
	"semi":  ";",
	"dub":   "me/too",
	"base":  "http://example.com/home/",
	"v":     "6",
	"half":  "50%",
	"who":   "fred",
}

func TestExpandRFC6570(t *testing.T) {
	tests := []struct{ tmpl, want string }{
		// Section 1.2, level 1.
		{"{var}", "value"},
		{"{hello}", "Hello%20World%21"},
		// Level 2.
		{"{+var}", "value"},
		{"{+hello}", "Hello%20World!"},
		{"{+path}/here", "/foo/bar/here"},
		{"here?ref={+path}", "here?ref=/foo/bar"},
		{"X{#var}", "X#value"},
		{"X{#hello}", "X#Hello%20World!"},
		// Level 3.
		{"map?{x,y}", "map?1024,768"},
		{"{x,hello,y}", "1024,Hello%20World%21,768"},
		{"{+x,hello,y}", "1024,Hello%20World!,768"},
		{"{+path,x}/here", "/foo/bar,1024/here"},
		{"{#x,hello,y}", "#1024,Hello%20World!,768"},
		{"{#path,x}/here", "#/foo/bar,1024/here"},
		{"X{.var}", "X.value"},
		{"X{.x,y}", "X.1024.768"},
		{"{/var}", "/value"},
		{"{/var,x}/here", "/value/1024/here"},
		{"{;x,y}", ";x=1024;y=768"},
		{"{;x,y,empty}", ";x=1024;y=768;empty"},
		{"{?x,y}", "?x=1024&y=768"},
		{"{?x,y,empty}", "?x=1024&y=768&empty="},
		{"?fixed=yes{&x}", "?fixed=yes&x=1024"},
		{"{&x,y,empty}", "&x=1024&y=768&empty="},
		// Level 4, string values.
		{"{var:3}", "val"},
		{"{var:30}", "value"},
		{"{+path:6}/here", "/foo/b/here"},
		{"{#path:6}/here", "#/foo/b/here"},
		{"X{.var:3}", "X.val"},
		{"{/var:1,var}", "/v/value"},
		{"{;hello:5}", ";hello=Hello"},
		{"{?var:3}", "?var=val"},
		{"{&var:3}", "&var=val"},
		{"{var*}", "value"},
		{"{/var*}", "/value"},
		{"{?var*}", "?var=value"},

		// Section 3.2.2, simple string expansion.
		{"{half}", "50%25"},
		{"O{empty}X", "OX"},
		{"O{undef}X", "OX"},
		{"?{x,empty}", "?1024,"},
		{"?{x,undef}", "?1024"},
		{"?{undef,y}", "?768"},
		// Section 3.2.3, reserved expansion.
		{"{+half}", "50%25"},
		{"{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"},
		{"{+base}index", "http://example.com/home/index"},
		{"O{+empty}X", "OX"},
		{"O{+undef}X", "OX"},
		{"up{+path}{var}/here", "up/foo/barvalue/here"},
		// Section 3.2.4, fragment expansion.
		{"{#var}", "#value"},
		{"{#hello}", "#Hello%20World!"},
		{"{#half}", "#50%25"},
		{"foo{#empty}", "foo#"},
		{"foo{#undef}", "foo"},
		// Section 3.2.5, label expansion.
		{"{.who}", ".fred"},
		{"{.who,who}", ".fred.fred"},
		{"{.half,who}", ".50%25.fred"},
		{"X{.empty}", "X."},
		{"X{.undef}", "X"},
		// Section 3.2.6, path segment expansion.
		{"{/who}", "/fred"},
		{"{/who,who}", "/fred/fred"},
		{"{/half,who}", "/50%25/fred"},
		{"{/who,dub}", "/fred/me%2Ftoo"},
		{"{/var,empty}", "/value/"},
		{"{/var,undef}", "/value"},
		// Section 3.2.7, path-style parameter expansion.
		{"{;who}", ";who=fred"},
		{"{;half}", ";half=50%25"},
		{"{;empty}", ";empty"},
		{"{;v,empty,who}", ";v=6;empty;who=fred"},
		{"{;v,bar,who}", ";v=6;who=fred"},
		{"{;x,y,undef}", ";x=1024;y=768"},
		// Section 3.2.8, form-style query expansion.
		{"{?who}", "?who=fred"},
		{"{?half}", "?half=50%25"},
		{"{?x,y,undef}", "?x=1024&y=768"},
		// Section 3.2.9, form-style query continuation.
		{"{&who}", "&who=fred"},
		{"{&half}", "&half=50%25"},

		// Literals and MCP-style templates.
		{"", ""},
		{"test://template/{var}/data", "test://template/value/data"},
		{"file:///{+path}", "file:////foo/bar"},
		{"db://{x}/{y}?x={var}", "db://1024/768?x=value"},
		{"ü/{var}", "%C3%BC/value"},
		{"a%2Fb{var}", "a%2Fbvalue"},
		{"{undef}", ""},
		{"{?undef}", ""},
		{"{+semi}{semi}", ";%3B"},
	}
	for _, tc := range tests {
		t.Run(tc.tmpl, func(t *testing.T) {
			tp, err := Parse(tc.tmpl)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.tmpl, err)
			}
			got, err := tp.Expand(rfcVars)
			if err != nil {
				t.Fatalf("Expand: %v", err)
			}
			if got != tc.want {
				t.Errorf("Parse(%q).Expand() = %q, want %q", tc.tmpl, got, tc.want)
			}
		})
	}
}

func TestExpandEncoding(t *testing.T) {
	tests := []struct {
		tmpl, value, want string
	}{
		{"{v}", "héllo wörld", "h%C3%A9llo%20w%C3%B6rld"},
		{"{+v}", "héllo/wörld", "h%C3%A9llo/w%C3%B6rld"},
		{"{v}", "a%2Fb", "a%252Fb"},
		{"{+v}", "a%2Fb", "a%2Fb"},
		{"{+v}", "a%2", "a%252"},
		{"{+v}", "100%", "100%25"},
		{"{#v}", "a%zzb", "#a%25zzb"},
		{"{v}", "-._~", "-._~"},
		{"{v}", ":/?#[]@!$&'()*+,;=", "%3A%2F%3F%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D"},
		{"{+v}", ":/?#[]@!$&'()*+,;=", ":/?#[]@!$&'()*+,;="},
		{"{v}", "\"<>\\^`{|} \x00\x7f", "%22%3C%3E%5C%5E%60%7B%7C%7D%20%00%7F"},
		{"{v:2}", "日本語", "%E6%97%A5%E6%9C%AC"},
		{"{v:1}", "😀x", "%F0%9F%98%80"},
		{"{?v}", "a&b=c", "?v=a%26b%3Dc"},
	}
	for _, tc := range tests {
		tp, err := Parse(tc.tmpl)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.tmpl, err)
		}
		got, err := tp.Expand(map[string]string{"v": tc.value})
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q).Expand(v=%q) = %q, %v; want %q", tc.tmpl, tc.value, got, err, tc.want)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	tp, err := Parse("x/{v}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.Expand(map[string]string{"v": "\xff"}); err == nil || !strings.Contains(err.Error(), `"v"`) {
		t.Errorf("Expand with invalid UTF-8 value: error = %v, want one naming the variable", err)
	}
	// Unused variables are not inspected.
	if got, err := tp.Expand(map[string]string{"v": "ok", "other": "\xff"}); err != nil || got != "x/ok" {
		t.Errorf("Expand with unused invalid value = %q, %v", got, err)
	}
	var nilT *Template
	if _, err := nilT.Expand(nil); err == nil {
		t.Error("Expand on nil template: no error")
	}
	if _, ok := nilT.Match(""); ok {
		t.Error("Match on nil template matched")
	}
	if nilT.String() != "" || nilT.Variables() != nil || !nilT.IsLiteral() || nilT.Matchable() {
		t.Error("nil template accessors misbehave")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		tmpl   string
		offset int
		msg    string
	}{
		{"{", 0, "unclosed expression"},
		{"{x", 0, "unclosed expression"},
		{"a{x,", 1, "unclosed expression"},
		{"a{x}b{", 5, "unclosed expression"},
		{"}", 0, "unmatched '}'"},
		{"a{x}}", 4, "unmatched '}'"},
		{"{}", 0, "empty expression"},
		{"{x,}", 3, "expected a variable name"},
		{"{+}", 0, "empty expression"},
		{"{{x}}", 1, "expected a variable name"},
		{"{x{y}}", 2, "unexpected '{'"},
		{"{x y}", 2, "unexpected ' '"},
		{"{x-y}", 2, "unexpected '-'"},
		{"{é}", 1, "found 'é'"},
		{"{\xff}", 1, "byte 0xff"},
		{"{=x}", 1, "reserved"},
		{"{,x}", 1, "reserved"},
		{"{!x}", 1, "reserved"},
		{"{@x}", 1, "reserved"},
		{"{|x}", 1, "reserved"},
		{"{..x}", 2, "expected a variable name"},
		{"{x.}", 2, "'.' must be followed"},
		{"{x..y}", 2, "'.' must be followed"},
		{"{a.b.}", 4, "'.' must be followed"},
		{"{x:}", 3, "must be followed by a length"},
		{"{x:0}", 3, "between 1 and 9999"},
		{"{x:01}", 3, "between 1 and 9999"},
		{"{x:10000}", 3, "exceeds 9999"},
		{"{x:3*}", 4, "at most one modifier"},
		{"{x*:3}", 3, "at most one modifier"},
		{"{x**}", 3, "at most one modifier"},
		{"{%4}", 1, "'%' not followed"},
		{"{a%2}", 2, "unexpected '%'"},
		{"%", 0, "'%' not followed"},
		{"ab%4", 2, "'%' not followed"},
		{"%zz", 0, "'%' not followed"},
		{"a b", 1, "not allowed in a template literal"},
		{"\"", 0, "not allowed"},
		{"'", 0, "not allowed"},
		{"<>", 0, "not allowed"},
		{"\\", 0, "not allowed"},
		{"^", 0, "not allowed"},
		{"`", 0, "not allowed"},
		{"|", 0, "not allowed"},
		{"a\x00", 1, "not allowed"},
		{"\x7f", 0, "not allowed"},
		{"\t", 0, "not allowed"},
		{"ab\xff", 2, "invalid UTF-8"},
		{"\ufffe", 0, "U+FFFE"},
		{"\u0085", 0, "U+0085"},
		{"\U000E0001", 0, "U+E0001"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.tmpl)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error = %v, want *ParseError", tc.tmpl, err)
			continue
		}
		if pe.Offset != tc.offset || !strings.Contains(pe.Msg, tc.msg) {
			t.Errorf("Parse(%q) = %q at %d, want %q at %d", tc.tmpl, pe.Msg, pe.Offset, tc.msg, tc.offset)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("offset %d", tc.offset)) {
			t.Errorf("Parse(%q) error %q does not mention the offset", tc.tmpl, err)
		}
	}
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		tmpl    string
		vars    []string
		literal bool
	}{
		{"", nil, true},
		{"test://static/resource", nil, true},
		{"a%2Fb", nil, true},
		{"ü\u00a0\ud7ff\U0001F600\U000F0000\U0010FFFD", nil, true},
		{"test://template/{id}/data", []string{"id"}, false},
		{"db://{schema}/{table}?x={y}", []string{"schema", "table", "y"}, false},
		{"{a}{b}{a}", []string{"a", "b"}, false},
		{"{a.b,a_b,%41,A9}", []string{"a.b", "a_b", "%41", "A9"}, false},
		{"{+a}{#b}{.c}{/d}{;e}{?f}{&g}", []string{"a", "b", "c", "d", "e", "f", "g"}, false},
		{"{a*,b:1,c:9999}", []string{"a", "b", "c"}, false},
		{"!#$&()*+,-./09:;=?@AZ[]_az~", nil, true},
	}
	for _, tc := range tests {
		tp, err := Parse(tc.tmpl)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.tmpl, err)
			continue
		}
		if got := tp.Variables(); !reflect.DeepEqual(got, tc.vars) {
			t.Errorf("Parse(%q).Variables() = %q, want %q", tc.tmpl, got, tc.vars)
		}
		if got := tp.IsLiteral(); got != tc.literal {
			t.Errorf("Parse(%q).IsLiteral() = %v", tc.tmpl, got)
		}
		if got := tp.String(); got != tc.tmpl {
			t.Errorf("Parse(%q).String() = %q", tc.tmpl, got)
		}
	}
	// Variables returns a copy.
	tp, _ := Parse("{a}")
	tp.Variables()[0] = "changed"
	if tp.Variables()[0] != "a" {
		t.Error("Variables exposes internal state")
	}
}

func TestLimits(t *testing.T) {
	name := func(n int) string { return strings.Repeat("n", n) }
	vars := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("{v%d}", i)
		}
		return strings.Join(parts, "/")
	}
	tests := []struct {
		name    string
		tmpl    string
		wantErr string
	}{
		{"template at limit", strings.Repeat("a", MaxTemplateBytes), ""},
		{"template over limit", strings.Repeat("a", MaxTemplateBytes+1), "8193 bytes, limit is 8192"},
		{"expression template at limit", "{" + name(MaxVariableNameBytes) + "}" + strings.Repeat("a", MaxTemplateBytes-MaxVariableNameBytes-2), ""},
		{"variables at limit", vars(MaxVariables), ""},
		{"variables over limit", vars(MaxVariables + 1), "more than 32 variables"},
		{"variables over limit in one expression", "{" + strings.Repeat("a,", MaxVariables) + "a}", "more than 32 variables"},
		{"repeated references count", strings.Repeat("{a}", MaxVariables+1), "more than 32 variables"},
		{"name at limit", "{" + name(MaxVariableNameBytes) + "}", ""},
		{"name over limit", "{" + name(MaxVariableNameBytes+1) + "}", "129 bytes, limit is 128"},
		{"pct name at limit", "{" + strings.Repeat("%41", 42) + "nn}", ""},
		{"pct name over limit", "{" + strings.Repeat("%41", 43) + "}", "129 bytes"},
		{"dotted name over limit", "{" + strings.Repeat("a.", 64) + "a}", "129 bytes"},
		{"prefix at limit", "{x:9999}", ""},
		{"prefix over limit", "{x:10000}", "exceeds 9999"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.tmpl)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
