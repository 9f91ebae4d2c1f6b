package exactjson

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

func mustParse(t testing.TB, s string) Value {
	t.Helper()
	v, err := Parse([]byte(s), Limits{})
	if err != nil {
		t.Fatalf("Parse(%.60q): %v", s, err)
	}
	return v
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name, in, compact string
	}{
		{"null", "null", "null"},
		{"true", "true", "true"},
		{"false", " false ", "false"},
		{"zero", "0", "0"},
		{"neg zero", "-0", "-0"},
		{"number literal kept", "3.50", "3.50"},
		{"exp", "1E+2", "1E+2"},
		{"exp lower", "1e-2", "1e-2"},
		{"string", `"abc"`, `"abc"`},
		{"escapes", `"\"\\\/\b\f\n\r\t"`, `"\"\\/\b\f\n\r\t"`},
		{"unicode escape", `"\u00e9\u4e2d"`, `"é中"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`},
		{"surrogate pair upper", `"\uD83D\uDE00"`, `"😀"`},
		{"nul escape", `"\u0000"`, `"\u0000"`},
		{"control escapes", `"\u001f\u007f"`, "\"\\u001f\x7f\""},
		{"raw utf8", `"é中😀"`, `"é中😀"`},
		{"U+2028 kept raw", "\"\u2028\u2029\"", "\"\u2028\u2029\""},
		{"html kept raw", `"<a&b>"`, `"<a&b>"`},
		{"empty array", "[]", "[]"},
		{"empty array ws", "[ \n ]", "[]"},
		{"empty object", "{}", "{}"},
		{"empty object ws", "{\t}", "{}"},
		{"nested", `{"a":[1,{"b":null}],"c":{}}`, `{"a":[1,{"b":null}],"c":{}}`},
		{"whitespace", " \t\r\n{ \"a\" : [ 1 , 2 ] }\n", `{"a":[1,2]}`},
		{"document order", `{"b":1,"a":2}`, `{"b":1,"a":2}`},
		{"case distinct names", `{"name":1,"NAME":2}`, `{"name":1,"NAME":2}`},
		{"empty name", `{"":1}`, `{"":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustParse(t, tt.in)
			got, err := AppendJSON(nil, v)
			if err != nil {
				t.Fatalf("AppendJSON: %v", err)
			}
			if string(got) != tt.compact {
				t.Errorf("AppendJSON = %s, want %s", got, tt.compact)
			}
		})
	}
}

func TestParseStrict(t *testing.T) {
	type errKind int
	const (
		syntax errKind = iota
		limit
	)
	tests := []struct {
		name   string
		in     string
		kind   errKind
		offset int64
		msg    string // substring of the error message
	}{
		{"empty", "", syntax, 0, "unexpected end of input"},
		{"only ws", "  ", syntax, 2, "unexpected end of input"},
		{"bom", "\xEF\xBB\xBF{}", syntax, 0, "byte order mark"},
		{"bom only", "\xEF\xBB\xBF", syntax, 0, "byte order mark"},
		{"invalid utf8 in string", "\"a\xffb\"", syntax, 2, "invalid UTF-8"},
		{"invalid utf8 after escape", "\"\\n\xff\"", syntax, 3, "invalid UTF-8"},
		{"utf8 surrogate encoding", "\"\xed\xa0\x80\"", syntax, 1, "invalid UTF-8"},
		{"overlong utf8", "\"\xc0\xaf\"", syntax, 1, "invalid UTF-8"},
		{"truncated utf8", "\"\xe4\xb8\"", syntax, 1, "invalid UTF-8"},
		{"invalid utf8 outside string", "[\xff]", syntax, 1, "invalid UTF-8"},
		{"non-ascii outside string", "[é]", syntax, 1, "'é'"},
		{"lone high surrogate", `"\ud800"`, syntax, 1, "unpaired high surrogate"},
		{"high surrogate then char", `"\ud800x"`, syntax, 1, "unpaired high surrogate"},
		{"high surrogate then high", `"\ud800\ud800"`, syntax, 1, "unpaired high surrogate"},
		{"high surrogate then escape", `"\ud800\n"`, syntax, 1, "unpaired high surrogate"},
		{"lone low surrogate", `"\udc00"`, syntax, 1, "unpaired low surrogate"},
		{"low then high", `"\udfff\ud800"`, syntax, 1, "unpaired low surrogate"},
		{"bad hex", `"\u12g4"`, syntax, 1, "invalid \\u escape"},
		{"short hex", `"\u12"`, syntax, 1, "invalid \\u escape"},
		{"bad escape", `"\x"`, syntax, 1, "invalid escape"},
		{"escape at eof", `"\`, syntax, 2, "unexpected end of input"},
		{"raw newline", "\"a\nb\"", syntax, 2, "control character"},
		{"raw tab", "\"\t\"", syntax, 1, "control character"},
		{"raw nul", "\"\x00\"", syntax, 1, "control character"},
		{"raw control after escape", "\"\\t\x01\"", syntax, 3, "control character"},
		{"unterminated string", `"abc`, syntax, 4, "unexpected end of input in string"},
		{"duplicate", `{"a":1,"a":2}`, syntax, 7, "duplicate object member name \"a\""},
		{"escaped duplicate", `{"a":1,"\u0061":2}`, syntax, 7, "duplicate"},
		{"nested duplicate", `[{"x":{"k":1,"k":1}}]`, syntax, 13, "duplicate"},
		{"trailing garbage", `{} x`, syntax, 3, "after top-level value"},
		{"two values", `1 2`, syntax, 2, "after top-level value"},
		{"trailing comma array", `[1,]`, syntax, 3, "looking for beginning of value"},
		{"trailing comma object", `{"a":1,}`, syntax, 7, "object member name"},
		{"missing colon", `{"a" 1}`, syntax, 5, "expected ':'"},
		{"missing comma", `[1 2]`, syntax, 3, "expected ',' or ']'"},
		{"unquoted name", `{a:1}`, syntax, 1, "object member name"},
		{"single quotes", `'a'`, syntax, 0, "looking for beginning of value"},
		{"unclosed array", `[1`, syntax, 2, "unexpected end of input in array"},
		{"unclosed object", `{"a":1`, syntax, 6, "unexpected end of input in object"},
		{"unclosed after colon", `{"a":`, syntax, 5, "unexpected end of input in object"},
		{"leading zero", `01`, syntax, 0, "leading zero"},
		{"neg leading zero", `-01`, syntax, 0, "leading zero"},
		{"leading plus", `+1`, syntax, 0, "looking for beginning of value"},
		{"leading dot", `.5`, syntax, 0, "looking for beginning of value"},
		{"trailing dot", `5.`, syntax, 2, "after decimal point"},
		{"dot exp", `5.e3`, syntax, 2, "after decimal point"},
		{"empty exp", `5e`, syntax, 2, "exponent"},
		{"sign only exp", `5e+`, syntax, 3, "exponent"},
		{"minus only", `-`, syntax, 1, "end of input in number"},
		{"minus letter", `-a`, syntax, 1, "in number"},
		{"NaN", `NaN`, syntax, 0, "looking for beginning of value"},
		{"Infinity", `-Infinity`, syntax, 1, "in number"},
		{"hex number", `0x10`, syntax, 1, "after top-level value"},
		{"bad literal", `tru`, syntax, 0, "looking for beginning of value"},
		{"literal case", `True`, syntax, 0, "looking for beginning of value"},
		{"literal suffix", `nullx`, syntax, 4, "after top-level value"},
		{"vertical tab ws", "\v1", syntax, 0, "U+000B"},
		{"form feed ws", "[1,\f2]", syntax, 3, "U+000C"},
		{"nbsp ws", "\u00a01", syntax, 0, "looking for beginning of value"},
		{"comment", `[1/*x*/]`, syntax, 2, "expected ',' or ']'"},
		{"huge exponent", `1E99999999999999999999`, limit, 0, "MaxExponent"},
		{"huge negative exponent", `[1E-99999999999999999999999999]`, limit, 1, "MaxExponent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in), Limits{})
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", tt.in, v)
			}
			var off int64
			switch tt.kind {
			case syntax:
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("error %v (%T) is not a *SyntaxError", err, err)
				}
				off = se.Offset
			case limit:
				var le *LimitError
				if !errors.As(err, &le) {
					t.Fatalf("error %v (%T) is not a *LimitError", err, err)
				}
				off = le.Offset
			}
			if off != tt.offset {
				t.Errorf("offset = %d, want %d (%v)", off, tt.offset, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if !isZeroValue(v) {
				t.Errorf("Parse returned non-zero value with error: %v", v)
			}
		})
	}
}

// isZeroValue reports whether v is the zero Value.
func isZeroValue(v Value) bool { return v.kind == KindNull && v.s == "" && v.kp == nil && !v.b }

func TestSyntaxErrorFormat(t *testing.T) {
	_, err := Parse([]byte(`[1,2,}`), Limits{})
	want := "json: syntax error at byte 5: invalid character '}' looking for beginning of value"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestLimitErrorFormat(t *testing.T) {
	err := error(&LimitError{Limit: "MaxDepth", Max: 128, Offset: 128})
	if got, want := err.Error(), "json: input exceeds MaxDepth (128) at byte 128"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(err, ErrLimit) {
		t.Error("LimitError is not ErrLimit")
	}
	if errors.Is(&SyntaxError{}, ErrLimit) {
		t.Error("SyntaxError is ErrLimit")
	}
	err = &LimitError{Limit: "MaxExponent", Max: 100000, Offset: -1}
	if got, want := err.Error(), "json: value exceeds MaxExponent (100000)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func nestedObjects(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// arrayOfNodes returns an array with n nodes in total (itself included).
func arrayOfNodes(n int) string {
	return "[" + strings.Repeat("0,", n-2) + "0]"
}

func TestLimitBoundaries(t *testing.T) {
	mib := 1 << 20
	tests := []struct {
		name  string
		lim   Limits
		ok    string // exactly at the limit
		bad   string // one past the limit
		limit string
		max   int
		off   int64 // offset of the error for bad
	}{
		{"depth arrays", Limits{}, nested(128), nested(129), "MaxDepth", 128, 128},
		{"depth objects", Limits{}, nestedObjects(128), nestedObjects(129), "MaxDepth", 128, 5 * 128},
		{"depth ceiling", Limits{MaxDepth: 256}, nested(256), nested(257), "MaxDepth", 256, 256},
		{"depth small", Limits{MaxDepth: 1}, "[0]", "[[]]", "MaxDepth", 1, 1},
		{"depth one scalar", Limits{MaxDepth: 1}, `"x"`, `[{}]`, "MaxDepth", 1, 1},
		{"nodes", Limits{}, arrayOfNodes(100_000), arrayOfNodes(100_001), "MaxNodes", 100_000, 1 + 2*99_999},
		{"nodes names free", Limits{MaxNodes: 3}, `{"a":1,"b":2}`, `{"a":1,"b":2,"c":3}`, "MaxNodes", 3, 17},
		{"nodes scalar", Limits{MaxNodes: 1}, `[]`, `[0]`, "MaxNodes", 1, 1},
		{"number length", Limits{}, strings.Repeat("1", 1024), strings.Repeat("1", 1025), "MaxNumberLength", 1024, 0},
		{"number length frac", Limits{}, "-0." + strings.Repeat("1", 1021), "-0." + strings.Repeat("1", 1022), "MaxNumberLength", 1024, 0},
		{"number length nested", Limits{}, "[" + strings.Repeat("2", 1024) + "]", "[" + strings.Repeat("2", 1025) + "]", "MaxNumberLength", 1024, 1},
		{"number length ceiling", Limits{MaxNumberLength: 4096}, strings.Repeat("1", 4096), strings.Repeat("1", 4097), "MaxNumberLength", 4096, 0},
		{"exponent", Limits{}, "1E10000", "1E10001", "MaxExponent", 10000, 0},
		{"exponent plus", Limits{}, "9.99E+10000", "10E+10000", "MaxExponent", 10000, 0},
		{"exponent negative", Limits{}, "1E-10000", "1E-10001", "MaxExponent", 10000, 0},
		{"exponent adjusted digits", Limits{}, "12E9999", "12E10000", "MaxExponent", 10000, 0},
		{"exponent adjusted fraction", Limits{}, "0.001E-9997", "0.001E-9998", "MaxExponent", 10000, 0},
		{"exponent leading zeros", Limits{}, "1E0000000000000000000010000", "1E0000000000000000000010001", "MaxExponent", 10000, 0},
		{"exponent ceiling", Limits{MaxExponent: 100000}, "-1E100000", "-1E100001", "MaxExponent", 100000, 0},
		{"string", Limits{}, `"` + strings.Repeat("a", mib) + `"`, `"` + strings.Repeat("a", mib+1) + `"`, "MaxStringBytes", mib, 0},
		{"string escaped", Limits{}, `"` + strings.Repeat(`\n`, mib) + `"`, `"` + strings.Repeat(`\n`, mib) + `a"`, "MaxStringBytes", mib, 0},
		{"string multibyte", Limits{MaxStringBytes: 4}, `"éé"`, `"ééa"`, "MaxStringBytes", 4, 0},
		{"string u-escape", Limits{MaxStringBytes: 3}, `"\u4e2d"`, `"\u4e2da"`, "MaxStringBytes", 3, 0},
		{"member name", Limits{MaxStringBytes: 3}, `{"abc":1}`, `{"abcd":1}`, "MaxStringBytes", 3, 1},
		{"input bytes", Limits{MaxInputBytes: 10}, `"12345678"`, `"123456789"`, "MaxInputBytes", 10, 10},
		{"input bytes default", Limits{}, "0" + strings.Repeat(" ", 4<<20-1), "0" + strings.Repeat(" ", 4<<20), "MaxInputBytes", 4 << 20, 4 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.ok), tt.lim); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err := Parse([]byte(tt.bad), tt.lim)
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("past the limit: got %v, want *LimitError", err)
			}
			if le.Limit != tt.limit || le.Max != tt.max {
				t.Errorf("got %s (%d), want %s (%d)", le.Limit, le.Max, tt.limit, tt.max)
			}
			if le.Offset != tt.off {
				t.Errorf("offset = %d, want %d", le.Offset, tt.off)
			}
			if !errors.Is(err, ErrLimit) {
				t.Error("not ErrLimit")
			}
			if !strings.Contains(err.Error(), tt.limit) {
				t.Errorf("message %q does not name %s", err, tt.limit)
			}
		})
	}
}

func TestZeroExponentAccepted(t *testing.T) {
	// The adjusted exponent of zero is 0 however it is spelled.
	for _, s := range []string{"0E99999999999999999999", "-0.000E-99999", "0e0"} {
		v := mustParse(t, s)
		n, _ := v.AsNumber()
		if !n.IsZero() || n.Canonical() != "0" {
			t.Errorf("%s: IsZero=%v Canonical=%s", s, n.IsZero(), n.Canonical())
		}
	}
}

func TestParseInvalidLimits(t *testing.T) {
	_, err := Parse([]byte("1"), Limits{MaxDepth: 257})
	if err == nil || !strings.Contains(err.Error(), "MaxDepth") {
		t.Errorf("got %v, want error naming MaxDepth", err)
	}
	_, err = ParseString("1", Limits{MaxNodes: -1})
	if err == nil || !strings.Contains(err.Error(), "MaxNodes") {
		t.Errorf("got %v, want error naming MaxNodes", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name  string
		lim   Limits
		field string // "" = valid
	}{
		{"zero", Limits{}, ""},
		{"defaults", DefaultLimits(), ""},
		{"ceilings", Limits{MaxInputBytesCeiling, MaxDepthCeiling, MaxNodesCeiling, MaxNumberLengthCeiling, MaxExponentCeiling, MaxStringBytesCeiling}, ""},
		{"ones", Limits{1, 1, 1, 1, 1, 1}, ""},
		{"input over", Limits{MaxInputBytes: MaxInputBytesCeiling + 1}, "MaxInputBytes"},
		{"input negative", Limits{MaxInputBytes: -1}, "MaxInputBytes"},
		{"depth over", Limits{MaxDepth: MaxDepthCeiling + 1}, "MaxDepth"},
		{"nodes over", Limits{MaxNodes: MaxNodesCeiling + 1}, "MaxNodes"},
		{"number over", Limits{MaxNumberLength: MaxNumberLengthCeiling + 1}, "MaxNumberLength"},
		{"exponent over", Limits{MaxExponent: MaxExponentCeiling + 1}, "MaxExponent"},
		{"exponent negative", Limits{MaxExponent: -5}, "MaxExponent"},
		{"string over", Limits{MaxStringBytes: MaxStringBytesCeiling + 1}, "MaxStringBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.lim.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "Limits."+tt.field+" ") {
				t.Fatalf("Validate = %v, want error naming %s", err, tt.field)
			}
		})
	}
	d := DefaultLimits()
	if d != (Limits{}).resolved() {
		t.Errorf("DefaultLimits %+v != resolved zero %+v", d, Limits{}.resolved())
	}
	if d.MaxInputBytes != 4<<20 || d.MaxDepth != 128 || d.MaxNodes != 100_000 || d.MaxNumberLength != 1024 || d.MaxExponent != 10_000 || d.MaxStringBytes != 1<<20 {
		t.Errorf("unexpected defaults %+v", d)
	}
}

func TestParseNoAliasing(t *testing.T) {
	buf := []byte(`{"name":"abc","list":[1,2]}`)
	v, err := Parse(buf, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = ' '
	}
	if got := v.String(); got != `{"name":"abc","list":[1,2]}` {
		t.Errorf("value changed after mutating input: %s", got)
	}
	var dst struct {
		List []int `json:"list"`
	}
	if err := Unmarshal(v, &dst); err != nil || len(dst.List) != 2 {
		t.Errorf("Unmarshal after mutation: %v %v", dst, err)
	}
}

func TestParseString(t *testing.T) {
	v, err := ParseString(`{"a":[1]}`, Limits{})
	if err != nil || v.String() != `{"a":[1]}` {
		t.Fatalf("ParseString = %v, %v", v, err)
	}
	if err := Valid([]byte(`{"a":}`), Limits{}); err == nil {
		t.Error("Valid accepted invalid input")
	}
	if err := Valid([]byte(`{"a":1}`), Limits{}); err != nil {
		t.Errorf("Valid: %v", err)
	}
}

func TestLargeObjectDuplicates(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%02d":1`, i)
	}
	ok := b.String() + "}"
	v := mustParse(t, ok)
	if v.Len() != 40 {
		t.Fatalf("Len = %d", v.Len())
	}
	for _, dupAt := range []int{0, 15, 16, 17, 39} {
		bad := b.String() + fmt.Sprintf(`,"k%02d":2}`, dupAt)
		_, err := Parse([]byte(bad), Limits{})
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "duplicate") {
			t.Errorf("dup of member %d: got %v", dupAt, err)
		}
	}
	// Escaped duplicate beyond the linear-scan threshold.
	bad := b.String() + `,"\u006b20":2}`
	if _, err := Parse([]byte(bad), Limits{}); err == nil {
		t.Error("escaped duplicate in large object accepted")
	}
}

// TestParserReuse: one Parser parses a sequence of documents exactly as
// ParseString does, never lets a later document change an earlier value,
// and keeps no member of a parsed document in its scratch.
func TestParserReuse(t *testing.T) {
	big := "{"
	for i := range 100 {
		if i > 0 {
			big += ","
		}
		big += fmt.Sprintf(`"k%d":{"v":[%d,"s"]}`, i, i)
	}
	big += "}"
	docs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","n":1.50}}}`,
		`{"phase":"x"}`,
		`[1,2,3]`,
		`"just a string"`,
		big,
		`{"a":{"b":{"c":{"d":[{"e":null}]}}},"f":true}`,
		`{"a":1,"a":2}`, // duplicate: an error
		`{"unterminated":`,
		`{"x":[{},{},{"y":"z"}]}`,
		`{"phase":"y"}`,
	}
	var ps Parser
	var got []Value
	for _, d := range docs {
		want, werr := ParseString(d, Limits{})
		v, err := ps.ParseString(d, Limits{})
		if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("%.40s: error %v, ParseString %v", d, err, werr)
		}
		if err == nil && (v.String() != want.String() || !Equal(v, want)) {
			t.Fatalf("%.40s: %s, ParseString %s", d, v, want)
		}
		for i, m := range ps.stack[:cap(ps.stack)] {
			if m.Name != "" || m.Value.kind != KindNull || m.Value.s != "" || m.Value.kp != nil {
				t.Fatalf("%.40s: scratch entry %d still holds %+v", d, i, m)
			}
		}
		got = append(got, v)
	}
	for i, d := range docs {
		want, err := ParseString(d, Limits{})
		if err == nil && got[i].String() != want.String() {
			t.Errorf("document %d changed after later parses: %s", i, got[i])
		}
	}
	// Parse copies; limits are checked as the package-level functions do.
	b := []byte(docs[0])
	v, err := ps.Parse(b, Limits{})
	b[2] = 'X'
	if err != nil || v.String() != `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","n":1.50}}}` {
		t.Errorf("Parse: %s %v", v, err)
	}
	if _, err := ps.Parse([]byte(docs[0]), Limits{MaxInputBytes: 10}); !errors.Is(err, ErrLimit) {
		t.Errorf("MaxInputBytes: %v", err)
	}
	if _, err := ps.ParseString(docs[0], Limits{MaxDepth: -1}); err == nil {
		t.Error("invalid limits accepted")
	}
}

// TestValueLayout pins the size of Value and Member on 64-bit platforms:
// parse trees are arrays of Members, so every byte here is paid per node.
func TestValueLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are pinned for 64-bit platforms")
	}
	if v, m := unsafe.Sizeof(Value{}), unsafe.Sizeof(Member{}); v != 32 || m != 48 {
		t.Fatalf("Value is %d bytes and Member %d, want 32 and 48", v, m)
	}
}

// TestParserTinyDocumentsAllocateOnlyTheirMembers: a reused Parser keeps
// its scratch stack, so each later tiny document (a sealed request state,
// say) allocates only its members, not scratch shared with them.
func TestParserTinyDocumentsAllocateOnlyTheirMembers(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		members int
	}{
		{`{"phase":"confirming"}`, 1},
		{`{"a":1,"b":[true]}`, 3},
	} {
		ps := new(Parser)
		if _, err := ps.ParseString(tc.doc, Limits{}); err != nil {
			t.Fatal(err)
		}
		const runs = 100
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			if _, err := ps.ParseString(tc.doc, Limits{}); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		per := (after.TotalAlloc - before.TotalAlloc) / runs
		if want := uint64(tc.members) * uint64(unsafe.Sizeof(Member{})); per > want {
			t.Errorf("%s: %d bytes allocated per parse, want at most %d (its members)", tc.doc, per, want)
		}
	}
}
