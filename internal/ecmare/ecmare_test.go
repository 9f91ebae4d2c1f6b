package ecmare

import (
	"regexp"
	"strings"
	"testing"
)

// TestTranslate holds ecmaPattern to ECMA-262's u-mode grammar: valid
// patterns pass unchanged, patterns another dialect allows are translated
// to what they meant there, and the rest are refused with the reason.
func TestTranslate(t *testing.T) {
	tests := []struct {
		in, want, goWant string
		err, goErr       string
	}{
		{in: `^[a-z0-9-]+$`, want: `^[a-z0-9-]+$`},
		{in: `^\d{3}-\d{4}$`, want: `^\d{3}-\d{4}$`},
		{in: `^(?:a|b)*?c+$`, want: `^(?:a|b)*?c+$`},
		{in: `\/v1\/[\w.]+`, want: `\/v1\/[\w.]+`, goWant: `\x{2f}v1\x{2f}[\w.]+`},
		// DigitalOcean's "\:" and other escapes of punctuation that needs none.
		{in: `^[a-z]+\:[0-9]+$`, want: `^[a-z]+:[0-9]+$`},
		{in: `^\#\"\'\@$`, want: `^#"'@$`},
		{in: `[\w\-\.]+`, want: `[\w\-\.]+`}, // \- is allowed in a class
		{in: `a\-b`, want: `a-b`},
		// Lone braces and brackets mean themselves elsewhere.
		{in: `^{id}$`, want: `^\{id\}$`},
		{in: `^a]$`, want: `^a\]$`},
		{in: `x{2,3}`, want: `x{2,3}`},
		// Unicode escapes: ECMA's spelling in the schema, Go's for the server.
		{in: `^\u00e9\u{1F600}$`, want: `^\u00e9\u{1F600}$`, goWant: `^\x{e9}\x{1f600}$`},
		{in: `^\p{L}+$`, want: `^\p{L}+$`},
		{in: `[\b]`, want: `[\b]`, goWant: `[\x08]`},
		// Valid ECMA that RE2 cannot run: kept, with the reason.
		{in: `^(?=.*\d).+$`, want: `^(?=.*\d).+$`, goErr: "invalid or unsupported Perl syntax"},
		{in: `(a)\1`, want: `(a)\1`, goErr: "escape sequence"},
		{in: `(?<y>\d)\k<y>`, want: `(?<y>\d)\k<y>`, goErr: "escape sequence"},
		// Refused.
		{in: `(?i)abc`, err: "not ECMA-262"},
		{in: `\e`, err: "not an ECMA-262 escape"},
		{in: `\Aabc\z`, err: "not an ECMA-262 escape"},
		{in: `[z-a]`, err: "out of order"},
		{in: `[\d-z]`, err: "class escape"},
		{in: `(ab`, err: "unterminated group"},
		{in: `ab)`, err: "unbalanced"},
		{in: `*a`, err: "follows nothing"},
		{in: `a{3,2}`, err: "out of order"},
		{in: `(?=a)*`, err: "follows nothing it can repeat"},
		{in: `\1(a)(b)(c)\4`, err: "does not exist"},
		{in: `\k<x>`, err: "names no group"},
		{in: `a\`, err: `ends with \`},
		{in: `\01`, err: "octal"},
		{in: `[abc`, err: "unterminated character class"},
		{in: "\xff", err: "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			e, g, goErr, err := Translate(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e != tc.want {
				t.Errorf("ECMA %q, want %q", e, tc.want)
			}
			goWant := tc.goWant
			if goWant == "" {
				goWant = tc.want
			}
			if g != goWant {
				t.Errorf("Go %q, want %q", g, goWant)
			}
			if tc.goErr == "" && goErr != nil || tc.goErr != "" && (goErr == nil || !strings.Contains(goErr.Error(), tc.goErr)) {
				t.Errorf("Go error %v, want %q", goErr, tc.goErr)
			}
		})
	}
}

// TestCompile: the engine runs ECMA patterns by their Go spelling, keeps
// Go-only patterns as Go reads them, and lets what RE2 cannot run pass.
func TestCompile(t *testing.T) {
	tests := []struct {
		pattern, in string
		match       bool
	}{
		{`^\u00e9+$`, "éé", true},
		{`^\u00e9+$`, "e", false},
		{`^a\:b$`, "a:b", true},
		{`(?i)^abc$`, "ABC", true}, // not ECMA-262: Go's reading
		{`^(?=x)y$`, "anything", true},
	}
	for _, tc := range tests {
		re, err := Compile(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if got := re.MatchString(tc.in); got != tc.match {
			t.Errorf("%s on %q: %v, want %v", tc.pattern, tc.in, got, tc.match)
		}
	}
	if _, err := Compile(`(`); err == nil {
		t.Error("( compiled")
	}
}

// FuzzTranslate: ecmaPattern never panics, its translation is accepted
// as it is (translating twice changes nothing), and the Go spelling it
// reports compilable compiles.
func FuzzTranslate(f *testing.F) {
	f.Add(`^[a-z]+\:[0-9]+$`)
	f.Add(`^{id}\u{1F600}[\w\-]`)
	f.Fuzz(func(t *testing.T, p string) {
		e, g, goErr, err := Translate(p)
		if err != nil {
			return
		}
		e2, g2, _, err := Translate(e)
		if err != nil {
			t.Fatalf("%q became %q, which is refused: %v", p, e, err)
		}
		if e2 != e || g2 != g {
			t.Fatalf("%q became %q, then %q", p, e, e2)
		}
		if goErr == nil {
			if _, err := regexp.Compile(g); err != nil {
				t.Fatalf("%q: Go spelling %q does not compile: %v", p, g, err)
			}
		}
	})
}
