package hdr

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    string
		wantErr string // substring of the error; empty means success
	}{
		// Examples from the Value Encoding table of the 2026-07-28
		// Streamable HTTP transport page.
		{name: "spec plain ascii", raw: "us-west1", want: "us-west1"},
		{name: "spec non-ascii", raw: "=?base64?SGVsbG8sIOS4lueVjA==?=", want: "Hello, 世界"},
		{name: "spec padded", raw: "=?base64?IHBhZGRlZCA=?=", want: " padded "},
		{name: "spec newline", raw: "=?base64?bGluZTEKbGluZTI=?=", want: "line1\nline2"},
		{name: "spec sentinel lookalike", raw: "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", want: "=?base64?literal?="},
		{name: "spec tool name", raw: "get_weather", want: "get_weather"},
		{name: "spec resource uri", raw: "file:///projects/myapp/config.json", want: "file:///projects/myapp/config.json"},
		{name: "spec method", raw: "tools/call", want: "tools/call"},

		{name: "hello", raw: "=?base64?SGVsbG8=?=", want: "Hello"},
		{name: "needlessly encoded", raw: "=?base64?dXMtd2VzdDE=?=", want: "us-west1"},
		{name: "encoded control chars", raw: "=?base64?AAEC?=", want: "\x00\x01\x02"},
		{name: "missing padding", raw: "=?base64?SGVsbG8?=", wantErr: "not a multiple of 4"},
		{name: "excess padding", raw: "=?base64?SGVs====?=", wantErr: "malformed"},
		{name: "excess padding length", raw: "=?base64?SGVsbG8==?=", wantErr: "not a multiple of 4"},
		{name: "padding in middle", raw: "=?base64?SG=sbG8=?=", wantErr: "malformed"},
		{name: "char outside alphabet", raw: "=?base64?SGVs*G8=?=", wantErr: "outside the standard alphabet"},
		{name: "url alphabet", raw: "=?base64?-_-_?=", wantErr: "outside the standard alphabet"},
		{name: "embedded space", raw: "=?base64?SGVs bG8=?=", wantErr: "outside the standard alphabet"},
		{name: "embedded newline", raw: "=?base64?SGVs\nbG8=?=", wantErr: "outside the standard alphabet"},
		{name: "embedded CR", raw: "=?base64?SGVsbG8=\r?=", wantErr: "outside the standard alphabet"},
		{name: "non-canonical trailing bits", raw: "=?base64?SGVsbG9=?=", wantErr: "malformed"},
		{name: "invalid utf8 payload", raw: "=?base64?/w==?=", wantErr: "valid UTF-8"},
		{name: "empty payload", raw: "=?base64??=", want: ""},
		{name: "overlapping markers", raw: "=?base64?=", wantErr: "overlap"},
		{name: "base64 without sentinel is literal", raw: "SGVsbG8=", want: "SGVsbG8="},
		{name: "prefix without suffix is literal", raw: "=?base64?", want: "=?base64?"},
		{name: "prefix and payload without suffix", raw: "=?base64?SGVsbG8=", want: "=?base64?SGVsbG8="},
		{name: "suffix without prefix is literal", raw: "SGVsbG8=?=", want: "SGVsbG8=?="},
		{name: "uppercase marker is literal", raw: "=?BASE64?SGVsbG8=?=", want: "=?BASE64?SGVsbG8=?="},
		{name: "trim spaces", raw: "  us-west1  ", want: "us-west1"},
		{name: "trim tabs", raw: "\tus-west1\t ", want: "us-west1"},
		{name: "trim around sentinel", raw: " \t=?base64?SGVsbG8=?= ", want: "Hello"},
		{name: "inner space kept", raw: "a b", want: "a b"},
		{name: "inner tab kept", raw: "a\tb", want: "a\tb"},
		{name: "empty", raw: "", want: ""},
		{name: "only whitespace", raw: " \t ", want: ""},
		{name: "non-ascii literal", raw: "Hello, 世界", wantErr: "non-ASCII"},
		{name: "latin1 byte literal", raw: "caf\xe9", wantErr: "non-ASCII"},
		{name: "newline literal", raw: "line1\nline2", wantErr: "control character"},
		{name: "NUL literal", raw: "a\x00b", wantErr: "control character"},
		{name: "DEL literal", raw: "a\x7fb", wantErr: "control character"},
		{name: "literal at limit", raw: strings.Repeat("a", MaxDecodedValueBytes), want: strings.Repeat("a", MaxDecodedValueBytes)},
		{name: "literal over limit", raw: strings.Repeat("a", MaxDecodedValueBytes+1), wantErr: "limit"},
		{name: "sentinel at limit", raw: Encode(strings.Repeat("é", MaxDecodedValueBytes/2)), want: strings.Repeat("é", MaxDecodedValueBytes/2)},
		{name: "sentinel over limit", raw: Encode(strings.Repeat("é", MaxDecodedValueBytes/2) + "\n"), wantErr: "limit"},
		{name: "sentinel far over limit", raw: Encode(strings.Repeat("\n", 10*MaxDecodedValueBytes)), wantErr: "exceed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.raw)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Decode(%q) = %q, want error containing %q", tc.raw, got, tc.wantErr)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("Decode(%q) error %v does not wrap ErrInvalid", tc.raw, err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Decode(%q) error %q, want it to contain %q", tc.raw, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%q) error: %v", tc.raw, err)
			}
			if got != tc.want {
				t.Errorf("Decode(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		value string
		want  string
	}{
		// The Value Encoding table of the specification.
		{"us-west1", "us-west1"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},

		{"", ""},
		{"Hello", "Hello"},
		{"a b", "a b"},
		{"SGVsbG8=", "SGVsbG8="},
		{"=?base64?", "=?base64?"},
		{"?=", "?="},
		{"=?base64?=", "=?base64?PT9iYXNlNjQ/PQ==?="},
		{"=?base64??=", "=?base64?PT9iYXNlNjQ/Pz0=?="},
		{"leading", "leading"},
		{" leading", "=?base64?IGxlYWRpbmc=?="},
		{"trailing ", "=?base64?dHJhaWxpbmcg?="},
		{"tab\tinside", "=?base64?dGFiCWluc2lkZQ==?="},
		{"\x7f", "=?base64?fw==?="},
		{"~!", "~!"},
	}
	for _, tc := range tests {
		if got := Encode(tc.value); got != tc.want {
			t.Errorf("Encode(%q) = %q, want %q", tc.value, got, tc.want)
		}
		if got, want := NeedsEncoding(tc.value), tc.want != tc.value; got != want {
			t.Errorf("NeedsEncoding(%q) = %v, want %v", tc.value, got, want)
		}
		back, err := Decode(tc.want)
		if err != nil {
			t.Errorf("Decode(Encode(%q)) error: %v", tc.value, err)
		} else if back != tc.value {
			t.Errorf("Decode(Encode(%q)) = %q", tc.value, back)
		}
	}
}

// TestRoundTripProperty checks Decode(Encode(s)) == s for random valid
// UTF-8 strings built from an alphabet that stresses every encoding rule.
func TestRoundTripProperty(t *testing.T) {
	pieces := []string{"a", "Z", "0", " ", "\t", "\n", "\r", "\x00", "\x7f", "=", "?", "=?base64?", "?=", "é", "世", "😀", "\u2028", "\ufeff", "%", "\"", "\\"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var sb strings.Builder
		n := rng.IntN(12)
		for j := 0; j < n; j++ {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := sb.String()
		enc := Encode(s)
		got, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(%q)) = error %v (encoded %q)", s, err, enc)
		}
		if got != s {
			t.Fatalf("Decode(Encode(%q)) = %q (encoded %q)", s, got, enc)
		}
		// Surrounding whitespace added by intermediaries is ignored.
		if got, err := Decode(" \t" + enc + "\t "); err != nil || got != s {
			t.Fatalf("Decode(OWS + Encode(%q) + OWS) = %q, %v", s, got, err)
		}
		for k := 0; k < len(enc); k++ {
			if c := enc[k]; c < 0x20 || c > 0x7e {
				t.Fatalf("Encode(%q) = %q contains byte 0x%02x not allowed in a header", s, enc, c)
			}
		}
	}
}

func TestEncodeInvalidUTF8IsRejectedByDecode(t *testing.T) {
	enc := Encode("\xff\xfe")
	if !strings.HasPrefix(enc, "=?base64?") {
		t.Fatalf("Encode of invalid UTF-8 = %q, want sentinel form", enc)
	}
	if _, err := Decode(enc); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Decode(%q) error = %v, want ErrInvalid", enc, err)
	}
}

func TestIsToken(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"Region", true},
		{"x-tenant_id.v2", true},
		{"!#$%&'*+-.^_`|~09azAZ", true},
		{"", false},
		{"a b", false},
		{"a\tb", false},
		{"a\rb", false},
		{"a\nb", false},
		{"a\x00", false},
		{"a\x7f", false},
		{"a:b", false},
		{"a/b", false},
		{"(a)", false},
		{"a,b", false},
		{"a;b", false},
		{"<a>", false},
		{"a=b", false},
		{"a?", false},
		{"a@b", false},
		{"[a]", false},
		{"a\\b", false},
		{"{a}", false},
		{"\"a\"", false},
		{"é", false},
	}
	for _, tc := range tests {
		if got := IsToken(tc.s); got != tc.want {
			t.Errorf("IsToken(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestIsTokenExhaustive(t *testing.T) {
	const tchars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for c := 0; c < 256; c++ {
		want := strings.IndexByte(tchars, byte(c)) >= 0
		if got := IsToken(string([]byte{byte(c)})); got != want {
			t.Errorf("IsToken(%q) = %v, want %v", byte(c), got, want)
		}
	}
}

func TestParseInteger(t *testing.T) {
	tests := []struct {
		s       string
		want    int64
		wantErr bool
	}{
		{"42", 42, false},
		{"-7", -7, false},
		{"0", 0, false},
		{"-0", 0, false},
		{"007", 7, false},
		{"42.0", 42, false},
		{"42.000", 42, false},
		{"9007199254740991", MaxSafeInteger, false},
		{"-9007199254740991", -MaxSafeInteger, false},
		{"9007199254740992", 0, true},
		{"-9007199254740992", 0, true},
		{"99999999999999999999999", 0, true},
		{"", 0, true},
		{"-", 0, true},
		{"+1", 0, true},
		{"1.5", 0, true},
		{"1.", 0, true},
		{".0", 0, true},
		{"1e3", 0, true},
		{" 1", 0, true},
		{"0x10", 0, true},
		{"١", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseInteger(tc.s)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseInteger(%q) = %d, want error", tc.s, got)
			} else if !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseInteger(%q) error %v does not wrap ErrInvalid", tc.s, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseInteger(%q) = %d, %v; want %d", tc.s, got, err, tc.want)
		}
		if back, err := ParseInteger(FormatInteger(got)); err != nil || back != got {
			t.Errorf("ParseInteger(FormatInteger(%d)) = %d, %v", got, back, err)
		}
	}
}

func TestBool(t *testing.T) {
	for _, b := range []bool{true, false} {
		got, err := ParseBool(FormatBool(b))
		if err != nil || got != b {
			t.Errorf("ParseBool(FormatBool(%v)) = %v, %v", b, got, err)
		}
	}
	for _, s := range []string{"", "True", "FALSE", "1", "0", "yes", " true"} {
		if _, err := ParseBool(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseBool(%q) error = %v, want ErrInvalid", s, err)
		}
	}
}

func TestNeedsEncodingAgreesWithDecode(t *testing.T) {
	// Every value that does not need encoding must come back unchanged
	// from Decode; every single byte is checked.
	for c := 0; c < 256; c++ {
		for _, s := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "b"} {
			if NeedsEncoding(s) {
				continue
			}
			if !utf8.ValidString(s) {
				t.Fatalf("NeedsEncoding(%q) = false for invalid UTF-8", s)
			}
			got, err := Decode(s)
			if err != nil || got != s {
				t.Errorf("NeedsEncoding(%q) = false but Decode = %q, %v", s, got, err)
			}
		}
	}
}

// TestValue: a metadata header is found under any spelling of its name,
// once; a repeated or undecodable one is an error; the canonical spelling
// of a present header costs no allocation.
func TestValue(t *testing.T) {
	h := http.Header{}
	h.Set("MCP-Protocol-Version", "2026-07-28")
	h.Add("Mcp-Name", "a")
	h.Add("Mcp-Name", "b")
	h.Set("Mcp-Method", "=?base64?not base64?=")
	for _, tc := range []struct {
		name    string
		want    string
		present bool
		wantErr bool
	}{
		{"Mcp-Protocol-Version", "2026-07-28", true, false},
		{"MCP-Protocol-Version", "2026-07-28", true, false},
		{"mcp-protocol-version", "2026-07-28", true, false},
		{"Mcp-Param-Region", "", false, false},
		{"MCP-PARAM-REGION", "", false, false},
		{"Mcp-Name", "", true, true},
		{"mcp-name", "", true, true},
		{"Mcp-Method", "", true, true},
	} {
		got, present, err := Value(h, tc.name)
		if got != tc.want || present != tc.present || (err != nil) != tc.wantErr {
			t.Errorf("Value(%q) = %q, %v, %v; want %q, %v, error %v", tc.name, got, present, err, tc.want, tc.present, tc.wantErr)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = Value(h, "Mcp-Protocol-Version") }); n != 0 {
		t.Errorf("the canonical name of a present header allocates %v times", n)
	}
}
