package stateplain

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
)

// FuzzDecodePlaintext: decoding never panics, and whatever the format 2
// decoder accepts has exactly one encoding: encoding the decoded metadata
// writes the same frame, followed by the state in canonical form.
func FuzzDecodePlaintext(f *testing.F) {
	for _, tc := range plaintextCases(f) {
		pt, err := Encode(tc.m, tc.state)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pt)
	}
	f.Add([]byte(`{"exp":2,"iat":1,"keys":{"b":"x","a":"y"},"rid":1,"round":1,"state":{},"v":1}`))
	f.Add([]byte{plaintextFormat})
	f.Fuzz(func(t *testing.T, b []byte) {
		b = slices.Clip(b)
		m, st, err := Decode(b)
		if err != nil || b[0] == '{' {
			return
		}
		again, err := Encode(m, st)
		if err != nil {
			t.Fatalf("decoded %x to %+v, which does not encode: %v", b, m, err)
		}
		canon, err := exactjson.Canonical(st)
		if err != nil {
			t.Fatal(err)
		}
		frame := again[:len(again)-len(canon)]
		if !bytes.HasPrefix(b, frame) {
			t.Fatalf("frame of %x encodes as %x", b, frame)
		}
		if rest, err := exactjson.Parse(b[len(frame):], exactjson.Limits{}); err != nil || !exactjson.Equal(rest, st) {
			t.Fatalf("state of %x is not what was decoded: %s vs %s (%v)", b, rest, st, err)
		}
	})
}

type plaintextCase struct {
	name  string
	m     *Meta
	state exactjson.Value
}

func plaintextCases(t testing.TB) []plaintextCase {
	st := exactjson.Object(exactjson.Field("phase", exactjson.String("confirming")), exactjson.Field("n", exactjson.NumberValue(mustNumber(t, "1.50"))))
	return []plaintextCase{
		{"doc vector", &Meta{IssuedAt: 1764680000000, ExpiresAt: 1764680900000, Round: 1, RequestID: exactjson.Int(7), Keys: []Key{{"approval", "elicitation/create"}}}, st},
		{"string id, three keys", &Meta{IssuedAt: 1, ExpiresAt: 2, Round: 10, RequestID: exactjson.String("r-1"),
			Keys: []Key{{"a", "roots/list"}, {"b", "sampling/createMessage"}, {"é", "elicitation/create"}}}, exactjson.Null()},
		{"negative times, args", &Meta{IssuedAt: -5, ExpiresAt: 100, Round: 3, RequestID: exactjson.Int(100), Args: "00ff00ff00ff00ff"}, st},
		{"escaped text", &Meta{Round: 300, RequestID: exactjson.String("q\"uote\n"), Keys: []Key{{"k\"", ""}, {"k\\", "m"}}}, exactjson.String("x")},
		{"negative id", &Meta{IssuedAt: 1, ExpiresAt: 120000, Round: 2, RequestID: exactjson.Int(-100)}, exactjson.Array()},
		{"big id", &Meta{IssuedAt: 1, ExpiresAt: 2, Round: 1, RequestID: exactjson.NumberValue(mustNumber(t, "123456789012345678901234567890"))}, st},
		{"empty string id", &Meta{IssuedAt: 1, ExpiresAt: 2, Round: 1, RequestID: exactjson.String("")}, st},
		{"zero id", &Meta{IssuedAt: 1, ExpiresAt: 2, Round: 1, RequestID: exactjson.Int(0)}, st},
	}
}

// TestPlaintextRoundTrip: what encodePlaintext writes decodes to the same
// metadata and state, the framing sharing the plaintext.
func TestPlaintextRoundTrip(t *testing.T) {
	for _, tc := range plaintextCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			pt, err := Encode(tc.m, tc.state)
			if err != nil {
				t.Fatal(err)
			}
			if pt[0] != plaintextFormat {
				t.Fatalf("format byte %#x", pt[0])
			}
			m, st, err := Decode(pt)
			if err != nil {
				t.Fatal(err)
			}
			if m.IssuedAt != tc.m.IssuedAt || m.ExpiresAt != tc.m.ExpiresAt || m.Round != tc.m.Round || m.Args != tc.m.Args ||
				!exactjson.Equal(m.RequestID, tc.m.RequestID) || !slices.Equal(m.Keys, tc.m.Keys) {
				t.Errorf("decoded %+v, want %+v", m, tc.m)
			}
			if !exactjson.Equal(st, tc.state) {
				t.Errorf("state %s, want %s", st, tc.state)
			}
			// Every proper prefix is refused, never read past its end.
			for n := range len(pt) - len(exactjson.Value.String(tc.state)) {
				if _, _, err := Decode(pt[:n:n]); err == nil {
					t.Errorf("prefix of %d bytes decoded", n)
				}
			}
		})
	}
}

// TestPlaintextRefused: frames encodePlaintext never writes are refused.
func TestPlaintextRefused(t *testing.T) {
	ok, err := Encode(&Meta{IssuedAt: 1, ExpiresAt: 2, Round: 1, RequestID: exactjson.Int(7), Keys: []Key{{"a", "roots/list"}}}, exactjson.Null())
	if err != nil {
		t.Fatal(err)
	}
	// The frame: format, iat, exp, round (at 17), rid kind (18), rid
	// length (19) and text (20), args length (21), key count (22), key (23..),
	// then the state "null".
	frame := func(edit func(b []byte) []byte) []byte { return edit(bytes.Clone(ok)) }
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown format", frame(func(b []byte) []byte { b[0] = 3; return b })},
		{"round not minimal", frame(func(b []byte) []byte { b[17] = 0x81; return slices.Insert(b, 18, 0x00) })},
		{"round overflows", frame(func(b []byte) []byte {
			return slices.Concat(b[:17], bytes.Repeat([]byte{0xff}, 9), []byte{0x02}, b[18:])
		})},
		{"unknown id kind", frame(func(b []byte) []byte { b[18] = 3; return b })},
		{"integer id not canonical", frame(func(b []byte) []byte { b[19] = 2; return slices.Insert(b, 21, '0') })},
		{"integer id not a number", frame(func(b []byte) []byte { b[20] = 'x'; return b })},
		{"fractional id", frame(func(b []byte) []byte { return slices.Concat(b[:19], []byte{3, '1', '.', '5'}, b[21:]) })},
		{"length past the end", frame(func(b []byte) []byte { b[21] = 100; return b })},
		{"invalid UTF-8 key", frame(func(b []byte) []byte { b[24] = 0xff; return b })},
		{"keys not ascending", frame(func(b []byte) []byte {
			b[22] = 2
			return slices.Concat(b[:len(b)-4], []byte{1, 'a', 0}, b[len(b)-4:])
		})},
		{"too many keys", frame(func(b []byte) []byte { b[22] = 0x7f; return b })},
		{"state missing", ok[: len(ok)-4 : len(ok)-4]},
		{"state malformed", append(bytes.Clone(ok[:len(ok)-4]), "nul"...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m, st, err := Decode(tc.b); err == nil {
				t.Errorf("decoded %x to %+v %s", tc.b, m, st)
			}
		})
	}
}

// TestPlaintextFormat1: a canonical JSON plaintext sealed by an earlier
// version still opens.
func TestPlaintextFormat1(t *testing.T) {
	v1 := `{"args":"0123456789abcdef","exp":1.7646809E+12,"iat":1.76468E+12,"keys":{"approval":"elicitation/create"},"rid":7,"round":1,"state":{"amount":1.5,"phase":"waiting-for-approval"},"v":1}`
	m, st, err := Decode([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	if m.IssuedAt != 1764680000000 || m.ExpiresAt != 1764680900000 || m.Round != 1 || !exactjson.Equal(m.RequestID, exactjson.Int(7)) ||
		m.Method("approval") != "elicitation/create" || m.Args != "0123456789abcdef" {
		t.Errorf("decoded %+v", m)
	}
	if got := st.String(); got != `{"amount":1.5,"phase":"waiting-for-approval"}` {
		t.Errorf("state %s", got)
	}
	for _, bad := range []string{
		`{"exp":2,"iat":1,"keys":{},"rid":1,"round":1,"state":null,"v":2}`,
		`{"exp":2,"iat":1,"keys":{},"rid":1.5,"round":1,"state":null,"v":1}`,
		`{"exp":2,"iat":1,"keys":[],"rid":1,"round":1,"state":null,"v":1}`,
		`{"exp":2,"iat":1,"keys":{},"rid":1,"round":1,"state":{,"v":1}`,
	} {
		if _, _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}

func mustNumber(t testing.TB, s string) exactjson.Number {
	t.Helper()
	n, err := exactjson.ParseNumber(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestValidText: the frame's texts are checked as utf8.ValidString checks
// them, on both sides of the eight-byte steps.
func TestValidText(t *testing.T) {
	for _, s := range []string{
		"", "2", "confirm", "elicitation/create", "0123456789abcdef",
		"héllo", "0123456é", "01234567é", "\xff", "0123456\xff", "01234567\xff",
		"0123456789abcde\xc3", "\xe2\x82", "ok\xed\xa0\x80", strings.Repeat("a", 40) + "\xc0\xaf",
	} {
		if got, want := validText(s), utf8.ValidString(s); got != want {
			t.Errorf("validText(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestDecodeInto: decoding into a Meta that held another plaintext's
// metadata leaves nothing of it (every field written, one key held in the
// Meta itself), for both formats.
func TestDecodeInto(t *testing.T) {
	stale := func() *Meta {
		return &Meta{IssuedAt: 9, ExpiresAt: 99, Round: 7, RequestID: exactjson.String("stale"), Args: "stale", Keys: []Key{{"z", "stale"}}}
	}
	type want struct {
		m     *Meta
		state exactjson.Value
		in    []byte
	}
	var cases []want
	for _, tc := range plaintextCases(t) {
		pt, err := Encode(tc.m, tc.state)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, want{tc.m, tc.state, pt})
	}
	cases = append(cases, want{&Meta{IssuedAt: 1, ExpiresAt: 2, Round: 1, RequestID: exactjson.Int(7), Keys: []Key{{"approval", "elicitation/create"}}},
		exactjson.Object(exactjson.Field("amount", exactjson.NumberValue(mustNumber(t, "1.5")))), []byte(`{"exp":2,"iat":1,"keys":{"approval":"elicitation/create"},"rid":7,"round":1,"state":{"amount":1.5},"v":1}`)})
	for _, tc := range cases {
		m := stale()
		st, err := DecodeInto(new(exactjson.Parser), tc.in, m)
		if err != nil {
			t.Fatal(err)
		}
		if m.IssuedAt != tc.m.IssuedAt || m.ExpiresAt != tc.m.ExpiresAt || m.Round != tc.m.Round || m.Args != tc.m.Args ||
			!exactjson.Equal(m.RequestID, tc.m.RequestID) || !slices.Equal(m.Keys, tc.m.Keys) {
			t.Errorf("decoded %+v, want %+v", m, tc.m)
		}
		if len(m.Keys) == 1 && &m.Keys[0] != &m.keyBuf[0] && tc.in[0] != '{' {
			t.Errorf("one key of %x not held in the Meta", tc.in)
		}
		if !exactjson.Equal(st, tc.state) {
			t.Errorf("state %s, want %s", st, tc.state)
		}
	}
	if _, err := DecodeInto(new(exactjson.Parser), []byte{plaintextFormat, 1}, stale()); err == nil {
		t.Error("a truncated frame decoded")
	}
}

// TestCanonicalIntegerID: the ids Encode writes decode to the same number,
// whichever path reads them; every other spelling is refused.
func TestCanonicalIntegerID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the id's JSON, "" if refused
	}{
		{"0", "0"},
		{"7", "7"},
		{"-100", ""}, // canonical JSON writes -1E+2
		{"-1E+2", "-1E+2"},
		{"999999999999999999", "999999999999999999"},
		{"-999999999999999999", "-999999999999999999"},
		{"9223372036854775807", "9223372036854775807"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"9223372036854775809", "9223372036854775809"},
		{"123456789012345678901234567891", "123456789012345678901234567891"},
		{"1.23456789012345678901234567891E+29", ""}, // canonical JSON writes its digits
		{"007", ""},
		{"-0", ""},
		{"10", ""},
		{"", ""},
		{"-", ""},
		{"1x", ""},
		{"1.5", ""},
	} {
		v, ok := canonicalIntegerID(tc.in)
		if ok != (tc.want != "") {
			t.Errorf("canonicalIntegerID(%q) = %v, %v", tc.in, v, ok)
			continue
		}
		if !ok {
			continue
		}
		if got, _ := exactjson.AppendCanonical(nil, v); string(got) != tc.want {
			t.Errorf("canonicalIntegerID(%q) = %s, want %s", tc.in, got, tc.want)
		}
		// It round-trips through Encode and Decode.
		pt, err := Encode(&Meta{IssuedAt: 1, ExpiresAt: 2, Round: 1, RequestID: v}, exactjson.Null())
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := Decode(pt)
		if err != nil || !exactjson.Equal(m.RequestID, v) {
			t.Errorf("id %s round trip: %v, %v", tc.in, m, err)
		}
	}
}
