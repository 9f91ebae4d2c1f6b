package hdr

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"", "us-west1", "=?base64?SGVsbG8=?=", "=?base64?SGVsbG8?=", "=?base64?",
		"=?base64?=", " padded ", "Hello, 世界", "line1\nline2", "=?base64?literal?=",
		"=?base64?SGVs\nbG8=?=", "\t=?base64?IHBhZGRlZCA=?= ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Decode(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode(%q) error %v does not wrap ErrInvalid", s, err)
			}
		} else {
			if !utf8.ValidString(got) || len(got) > MaxDecodedValueBytes {
				t.Fatalf("Decode(%q) = %q: invalid UTF-8 or over the limit", s, got)
			}
			// A decoded value re-encodes to the canonical form of the input.
			if again, err := Decode(Encode(got)); err != nil || again != got {
				t.Fatalf("Decode(Encode(Decode(%q))) = %q, %v; want %q", s, again, err, got)
			}
		}

		if !utf8.ValidString(s) || len(s) > MaxDecodedValueBytes {
			return
		}
		enc := Encode(s)
		if strings.ContainsAny(enc, "\r\n\x00") {
			t.Fatalf("Encode(%q) = %q contains a forbidden byte", s, enc)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(%q)) error: %v (encoded %q)", s, err, enc)
		}
		if back != s {
			t.Fatalf("Decode(Encode(%q)) = %q (encoded %q)", s, back, enc)
		}
	})
}
