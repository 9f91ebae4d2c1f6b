package exactjson

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestEncodeStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"abc", `"abc"`},
		{`"`, `"\""`},
		{`\`, `"\\"`},
		{"/", `"/"`},
		{"<>&", `"<>&"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"\x0b\x1b", `"\u000b\u001b"`},
		{"\x7f", "\"\x7f\""},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"é中😀", `"é中😀"`},
		{"\uFFFD", "\"\uFFFD\""},
		{"a\"b\\c\nd", `"a\"b\\c\nd"`},
	}
	for _, tt := range tests {
		for _, enc := range []func([]byte, Value) ([]byte, error){AppendJSON, AppendCanonical} {
			got, err := enc(nil, String(tt.in))
			if err != nil || string(got) != tt.want {
				t.Errorf("encode(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
		}
		// Round trip through the parser.
		v := mustParse(t, tt.want)
		if s, _ := v.AsString(); s != tt.in {
			t.Errorf("Parse(%s) = %q, want %q", tt.want, s, tt.in)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name  string
		v     Value
		is    error
		limit string
	}{
		{"invalid utf8 string", String("a\xffb"), ErrInvalidUTF8, ""},
		{"invalid utf8 surrogate", String("\xed\xa0\x80"), ErrInvalidUTF8, ""},
		{"invalid utf8 name", Object(Field("\xff", Null())), ErrInvalidUTF8, ""},
		{"nested invalid utf8", Array(Array(String("\xc0"))), ErrInvalidUTF8, ""},
		{"duplicate names", Object(Field("a", Int(1)), Field("a", Int(2))), ErrDuplicateName, ""},
		{"nested duplicate", Array(Object(Field("b", Null()), Field("a", Null()), Field("b", Null()))), ErrDuplicateName, ""},
		{"huge positive scale", NumberValue(NumberFromDecimal(big.NewInt(1), -100001)), ErrLimit, "MaxExponent"},
		{"huge negative scale", NumberValue(NumberFromDecimal(big.NewInt(1), 100001)), ErrLimit, "MaxExponent"},
		{"extreme scale", NumberValue(NumberFromDecimal(big.NewInt(5), -2147483648)), ErrLimit, "MaxExponent"},
		{"long literal", NumberValue(NumberFromDecimal(new(big.Int).Exp(big.NewInt(7), big.NewInt(6000), nil), 0)), ErrLimit, "MaxNumberLength"},
		{"too deep", deepArray(MaxDepthCeiling + 1), ErrLimit, "MaxDepth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, enc := range map[string]func([]byte, Value) ([]byte, error){"AppendJSON": AppendJSON, "AppendCanonical": AppendCanonical} {
				dst := []byte("prefix")
				got, err := enc(dst, tt.v)
				if !errors.Is(err, tt.is) {
					t.Fatalf("%s error = %v, want %v", name, err, tt.is)
				}
				if string(got) != "prefix" {
					t.Errorf("%s modified dst on error: %q", name, got)
				}
				var le *LimitError
				if tt.limit != "" && (!errors.As(err, &le) || le.Limit != tt.limit || le.Offset >= 0) {
					t.Errorf("%s error = %#v, want LimitError %s without offset", name, err, tt.limit)
				}
			}
			if _, err := tt.v.MarshalJSON(); !errors.Is(err, tt.is) {
				t.Errorf("MarshalJSON error = %v", err)
			}
			_ = tt.v.String() // never fails
		})
	}
	// At the ceilings it still encodes.
	for _, v := range []Value{
		deepArray(MaxDepthCeiling),
		NumberValue(NumberFromDecimal(big.NewInt(1), -100000)),
		NumberValue(NumberFromDecimal(big.NewInt(1), 100000)),
	} {
		if _, err := AppendJSON(nil, v); err != nil {
			t.Errorf("AppendJSON at ceiling: %v", err)
		}
		if _, err := Canonical(v); err != nil {
			t.Errorf("Canonical at ceiling: %v", err)
		}
	}
}

func deepArray(depth int) Value {
	v := Array()
	for range depth - 1 {
		v = Array(v)
	}
	return v
}

func TestEncodeOutputLimit(t *testing.T) {
	v := Array(String("abcdef"), Int(12345)) // ["abcdef",12345] = 16 bytes
	if b, err := Encode(v, 16); err != nil || string(b) != `["abcdef",12345]` {
		t.Fatalf("Encode at limit = %s, %v", b, err)
	}
	_, err := Encode(v, 15)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxOutputBytes" || le.Max != 15 {
		t.Fatalf("Encode past limit = %v", err)
	}
	if !strings.Contains(err.Error(), "output exceeds MaxOutputBytes (15)") {
		t.Errorf("message %q", err)
	}
	// Parsed compact values take the raw fast path and are limited too.
	p := mustParse(t, `["abcdef",12345]`)
	if _, err := Encode(p, 15); !errors.Is(err, ErrLimit) {
		t.Errorf("Encode parsed past limit = %v", err)
	}
	if _, err := Encode(v, -1); err == nil {
		t.Error("Encode accepted negative maxBytes")
	}
	big := String(strings.Repeat("x", DefaultMaxOutputBytes))
	if _, err := Encode(big, 0); !errors.Is(err, ErrLimit) {
		t.Errorf("Encode default limit = %v", err)
	}
}

func TestCanonicalTable(t *testing.T) {
	tests := []struct{ in, want string }{
		{`null`, `null`},
		{` true `, `true`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"a":{"d":[3,2,1],"c":null},"B":0}`, `{"B":0,"a":{"c":null,"d":[3,2,1]}}`},
		{`{"é":1,"z":2,"Z":3,"":4,"aa":5,"a":6}`, `{"":4,"Z":3,"a":6,"aa":5,"z":2,"é":1}`},
		{`{"\ud83d\ude00":1,"\uffff":2}`, "{\"\uffff\":2,\"😀\":1}"}, // byte order, not UTF-16 order
		{`[100, 1.2E3, 0.0000001, -12300, 1.50, 0.0, -0, 0E+5, 1.5, 0.000001, 123.45, -2]`, `[1E+2,1.2E+3,1E-7,-1.23E+4,1.5,0,0,0,1.5,0.000001,123.45,-2]`},
		{`"\u002F\/\u003c\u2028\u0007"`, "\"//<\u2028\\u0007\""},
		{`{"id":7,"id2":"7"}`, `{"id":7,"id2":"7"}`},
	}
	for _, tt := range tests {
		v := mustParse(t, tt.in)
		got, err := Canonical(v)
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestCanonicalGolden reads testdata/canonical.input (one JSON text per
// line; blank lines and lines starting with # are skipped) and compares
// the canonical form of each with the same line of testdata/canonical.golden
// ("error" for inputs that must be rejected). Run with -update to rewrite.
func TestCanonicalGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "canonical.input"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(in))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := Parse([]byte(line), Limits{})
		if err != nil {
			out.WriteString("error\n")
			continue
		}
		c, err := Canonical(v)
		if err != nil {
			t.Fatalf("Canonical(%s): %v", line, err)
		}
		out.Write(c)
		out.WriteByte('\n')
		// Canonical output is a fixed point.
		c2, err := Canonical(mustParse(t, string(c)))
		if err != nil || !bytes.Equal(c, c2) {
			t.Errorf("canonical not stable for %s: %s vs %s", line, c, c2)
		}
	}
	golden := filepath.Join("testdata", "canonical.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	gotLines := strings.Split(out.String(), "\n")
	wantLines := strings.Split(string(want), "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("got %d lines, golden has %d", len(gotLines), len(wantLines))
	}
	for i := range gotLines {
		if gotLines[i] != wantLines[i] {
			t.Errorf("line %d: got %s, want %s", i+1, gotLines[i], wantLines[i])
		}
	}
}

func TestEqualCanonicalAgreement(t *testing.T) {
	// Each group holds mutually equal values; values of different groups differ.
	groups := [][]string{
		{`1`, `1.0`, `1E+0`, `10E-1`, `0.1e1`, `1.00000`},
		{`3.50`, `3.5`, `35E-1`, `0.35e1`},
		{`0`, `-0`, `0.0`, `0E+5`, `-0e-3`},
		{`100`, `1E2`, `1.00E+2`, `1000e-1`},
		{`-12300`, `-1.23E+4`, `-123e2`},
		{`"7"`, `"\u0037"`},
		{`7`},
		{`"a"`},
		{`"A"`},
		{`null`},
		{`false`},
		{`true`},
		{`""`},
		{`[]`, `[ ]`},
		{`{}`, `{ }`},
		{`[1,2]`, `[1.0, 2E0]`},
		{`[2,1]`},
		{`[[]]`},
		{`[{}]`},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, `{"b":2.0,"\u0061":1E0}`},
		{`{"a":1}`},
		{`{"A":1}`},
		{`{"a":1,"b":2,"c":3}`},
		{`{"a":[1,{"x":null}]}`, `{"a":[1.0,{"x":null}]}`},
		{`{"name":"x"}`},
		{`{"NAME":"x"}`},
	}
	type item struct {
		group int
		src   string
		v     Value
		c     string
	}
	var items []item
	for g, group := range groups {
		for _, s := range group {
			v := mustParse(t, s)
			c, err := Canonical(v)
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, item{g, s, v, string(c)})
		}
	}
	for _, a := range items {
		for _, b := range items {
			want := a.group == b.group
			if got := Equal(a.v, b.v); got != want {
				t.Errorf("Equal(%s, %s) = %v, want %v", a.src, b.src, got, want)
			}
			if got := a.c == b.c; got != want {
				t.Errorf("canonical equality of %s (%s) and %s (%s) = %v, want %v", a.src, a.c, b.src, b.c, got, want)
			}
		}
	}
}

func TestCanonicalLargeObject(t *testing.T) {
	// More than smallObject members, in reverse order, nested.
	var ms []Member
	for i := 40; i > 0; i-- {
		name := string(rune('a'+i%26)) + strings.Repeat("x", i)
		ms = append(ms, Field(name, Object(Field("z", Int(int64(i))), Field("a", Array()))))
	}
	v := Object(ms...)
	c, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, string(c))
	names := make([]string, 0, p.Len())
	for n := range p.All() {
		names = append(names, n)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Fatalf("not sorted at %d: %q >= %q", i, names[i-1], names[i])
		}
	}
	if !Equal(v, p) {
		t.Error("canonical reparse not Equal")
	}
	dup := Object(append(ms, Field(ms[3].Name, Null()))...)
	if _, err := Canonical(dup); !errors.Is(err, ErrDuplicateName) {
		t.Errorf("Canonical(dup) = %v", err)
	}
	if _, err := AppendJSON(nil, dup); !errors.Is(err, ErrDuplicateName) {
		t.Errorf("AppendJSON(dup) = %v", err)
	}
	if Equal(dup, dup) {
		t.Error("object with duplicates reported Equal")
	}
}

func TestAppendJSONRawFastPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":[1,2],"b":"x"}`, `{"a":[1,2],"b":"x"}`},
		{`{"a": [1,2]}`, `{"a":[1,2]}`},
		{`{"a":"\u0041"}`, `{"a":"A"}`},
		{`[ {"a":"\n"} , [] ]`, `[{"a":"\n"},[]]`},
		{`[[1],[ 2 ]]`, `[[1],[2]]`},
	}
	for _, tt := range tests {
		v := mustParse(t, tt.in)
		got, err := AppendJSON([]byte("x"), v)
		if err != nil || string(got) != "x"+tt.want {
			t.Errorf("AppendJSON(%s) = %s, %v", tt.in, got, err)
		}
		if v.String() != tt.want {
			t.Errorf("String(%s) = %s", tt.in, v.String())
		}
		for _, e := range v.Elements() {
			got, _ := AppendJSON(nil, e)
			if string(got) != e.String() {
				t.Errorf("element %s vs %s", got, e.String())
			}
		}
	}
}

func TestValueStringLenient(t *testing.T) {
	v := Object(Field("a", String("x\xffy")), Field("a", Int(1)), Field("d", deepArray(MaxDepthCeiling+5)))
	s := v.String()
	if !strings.HasPrefix(s, "{\"a\":\"x\uFFFDy\",\"a\":1,\"d\":[[") || !strings.Contains(s, `"..."`) {
		t.Errorf("String() = %.80s", s)
	}
}

func TestRawFastPathDepth(t *testing.T) {
	// A parsed 256-deep value wrapped in a constructed array exceeds the
	// encoding depth ceiling whichever path encodes it.
	p, err := Parse([]byte(nested(MaxDepthCeiling)), Limits{MaxDepth: MaxDepthCeiling})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AppendJSON(nil, p); err != nil {
		t.Fatalf("AppendJSON(256 deep) = %v", err)
	}
	w := Array(p)
	if _, err := AppendJSON(nil, w); !errors.Is(err, ErrLimit) {
		t.Errorf("AppendJSON(257 deep) = %v", err)
	}
	if _, err := Canonical(w); !errors.Is(err, ErrLimit) {
		t.Errorf("Canonical(257 deep) = %v", err)
	}
	if b, err := AppendJSON(nil, Array(mustParse(t, nested(3)))); err != nil || string(b) != "[[[[]]]]" {
		t.Errorf("AppendJSON(wrapped) = %s, %v", b, err)
	}
}

func TestAppendCanonicalWithout(t *testing.T) {
	// omit drops "x" everywhere it is asked, and "y" only inside "meta".
	omit := func(depth int, parent, name string) bool {
		return name == "x" || parent == "meta" && name == "y"
	}
	for _, tc := range []struct {
		name, in string
		depth    int
		want     string
	}{
		{"top level", `{"b":1,"x":2,"a":3}`, 0, `{"a":3,"b":1}`},
		{"depth 0 keeps nested", `{"m":{"x":1,"b":2},"x":0}`, 0, `{"m":{"b":2,"x":1}}`},
		{"depth 1 filters nested", `{"m":{"x":1,"b":2},"x":0}`, 1, `{"m":{"b":2}}`},
		{"parent named", `{"meta":{"y":1,"z":2},"other":{"y":3}}`, 1, `{"meta":{"z":2},"other":{"y":3}}`},
		{"deeper kept", `{"a":{"b":{"x":1}}}`, 1, `{"a":{"b":{"x":1}}}`},
		{"arrays kept", `{"a":[{"x":1}]}`, 3, `{"a":[{"x":1}]}`},
		{"canonical numbers and escapes", `{"n":1.50,"s":"\u00e9\n","x":true}`, 0, `{"n":1.5,"s":"é\n"}`},
		{"not an object", `[{"x":1}]`, 1, `[{"x":1}]`},
		{"everything omitted", `{"x":{"x":1}}`, 1, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ParseString(tc.in, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendCanonicalWithout([]byte("prefix:"), v, tc.depth, omit)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix:"+tc.want {
				t.Errorf("got %s, want prefix:%s", got, tc.want)
			}
		})
	}
	// No omit: the canonical encoding.
	v := Object(Field("b", Int(1)), Field("a", Int(2)))
	if got, _ := AppendCanonicalWithout(nil, v, 1, nil); string(got) != `{"a":2,"b":1}` {
		t.Errorf("nil omit: %s", got)
	}
	// Errors leave dst unchanged: duplicate names among the kept members,
	// invalid UTF-8 in a nested filtered object.
	for _, bad := range []Value{
		Object(Field("a", Int(1)), Field("a", Int(2))),
		Object(Field("m", Object(Field("\xff", Null())))),
	} {
		got, err := AppendCanonicalWithout([]byte("keep"), bad, 1, omit)
		if err == nil || string(got) != "keep" {
			t.Errorf("%v: got %q, %v", bad, got, err)
		}
	}
	// Members that would be duplicates are fine once one is omitted.
	if got, err := AppendCanonicalWithout(nil, Object(Field("x", Int(1)), Field("x", Int(2))), 0, omit); err != nil || string(got) != `{}` {
		t.Errorf("omitted duplicates: %s %v", got, err)
	}
}

func TestAppendJSONWithout(t *testing.T) {
	omit := func(depth int, parent, name string) bool {
		return name == "x" || parent == "meta" && name == "y"
	}
	for _, tc := range []struct {
		in    string
		depth int
		want  string
	}{
		{`{"b":1,"x":2,"a":3}`, 0, `{"b":1,"a":3}`},
		{`{"m":{"x":1,"b":2},"x":0}`, 0, `{"m":{"x":1,"b":2}}`},
		{`{"m":{"x":1,"b":2},"x":0}`, 1, `{"m":{"b":2}}`},
		{`{"meta":{"z":2,"y":1},"other":{"y":3}}`, 1, `{"meta":{"z":2},"other":{"y":3}}`},
		{`{"n":1.50, "s":"\u00e9\n"}`, 0, `{"n":1.50,"s":"é\n"}`},
		{`[{"x":1}]`, 1, `[{"x":1}]`},
		// Compact spans, filtered by copying the kept members' text.
		{`{"x":0,"s":"é ,}","n":-1.5E+3,"t":true,"f":false,"z":null,"a":[1,{"x":2}],"e":{},"x2":""}`, 0,
			`{"s":"é ,}","n":-1.5E+3,"t":true,"f":false,"z":null,"a":[1,{"x":2}],"e":{},"x2":""}`},
		{`{"meta":{"y":1},"x":{"y":2},"m":{"x":1,"meta":{"y":3}}}`, 1, `{"meta":{},"m":{"meta":{"y":3}}}`},
		{`{"meta":{"a":{"y":1},"y":[2],"b":"y"},"k":"v"}`, 2, `{"meta":{"a":{"y":1},"b":"y"},"k":"v"}`},
		{`{"x":1}`, 1, `{}`},
		{`{}`, 1, `{}`},
		// A compact object inside a spaced one, and the other way round.
		{`{"meta": {"y":1,"z":"\"q\""},"x":2}`, 1, `{"meta":{"z":"\"q\""}}`},
		{`{"meta":{"y":1,"z":[1, 2]},"x":2}`, 1, `{"meta":{"z":[1,2]}}`},
	} {
		v, err := ParseString(tc.in, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendJSONWithout(nil, v, tc.depth, omit)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.in, got, err, tc.want)
		}
		if v.Kind() != KindObject {
			continue
		}
		slow := encoder{noCopy: true}
		if err := slow.objectWithout(v, 1, "", 0, tc.depth, omit); err != nil || string(slow.buf) != tc.want {
			t.Errorf("%s: general path got %s, %v; want %s", tc.in, slow.buf, err, tc.want)
		}
	}
	// A compact span that does not match its members (no parsed value
	// has one) is not copied: the members are encoded.
	kids := []Member{Field("a", Int(12)), Field("x", Int(0))}
	odd := containerOf(KindObject, kids)
	odd.s, odd.b, odd.h = `{"a":1,"x":0}`, true, 1
	if got, err := AppendJSONWithout(nil, odd, 0, omit); err != nil || string(got) != `{"a":12}` {
		t.Errorf("mismatched span: %s %v", got, err)
	}
	// Duplicates among the kept members fail (dst unchanged); an omitted
	// one does not count.
	dup := Object(Field("a", Int(1)), Field("x", Int(2)), Field("a", Int(3)))
	if got, err := AppendJSONWithout([]byte("keep"), dup, 0, omit); !errors.Is(err, ErrDuplicateName) || string(got) != "keep" {
		t.Errorf("duplicate: %q %v", got, err)
	}
	if got, err := AppendJSONWithout(nil, Object(Field("x", Int(1)), Field("x", Int(2)), Field("b", Null())), 0, omit); err != nil || string(got) != `{"b":null}` {
		t.Errorf("omitted duplicates: %s %v", got, err)
	}
}
