package exactjson

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"strings"
	"testing"
)

// fuzzSeeds are added with f.Add in addition to testdata/fuzz/FuzzParse.
var fuzzSeeds = []string{
	`null`, `true`, `false`, `0`, `-0`, `3.50`, `1E+2`, `1e-7`, `-12300`, `0.0000001`,
	`""`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, "\"\u2028é\"",
	`[]`, `{}`, `[1,[2,[3]]]`, `{"b":1,"a":{"d":[],"c":null}}`,
	`{"a":1,"\u0061":2}`, `{"name":1,"NAME":2}`, `[1.0,1,10E-1,1E+0]`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`"\ud800"`, `"\udc00"`, "\xef\xbb\xbf1", "\"\xff\"", `01`, `1.`, `.5`, `[1,]`, `1E99999999999999999999`,
	`0E99999999999999999`, `[0.1e1, 100e-2, 1]`, `{"k":[{"x":1,"y":2},{"y":2,"x":1}]}`,
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data, Limits{})
		// A Parser that has parsed another document first agrees.
		var ps Parser
		_, _ = ps.ParseString(`{"a":[1,{"b":"c"}],"d":{"e":null,"f":true,"g":2,"h":"i","j":[]}}`, Limits{})
		if pv, perr := ps.Parse(data, Limits{}); (perr == nil) != (err == nil) ||
			(err != nil && perr.Error() != err.Error()) || (err == nil && pv.String() != v.String()) {
			t.Fatalf("Parser.Parse(%q) = %s, %v; Parse = %s, %v", data, pv, perr, v, err)
		}
		if err != nil {
			var se *SyntaxError
			var le *LimitError
			switch {
			case errors.As(err, &se):
				if se.Offset < 0 || se.Offset > int64(len(data)) {
					t.Fatalf("syntax error offset %d out of range (len %d)", se.Offset, len(data))
				}
			case errors.As(err, &le):
				if !errors.Is(err, ErrLimit) {
					t.Fatal("LimitError is not ErrLimit")
				}
			default:
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		// Everything we accept is valid JSON for encoding/json too.
		if !stdjson.Valid(data) {
			t.Fatalf("accepted input that encoding/json rejects: %q", data)
		}

		// parse → encode → parse round trip.
		enc, err := AppendJSON(nil, v)
		if err != nil {
			t.Fatalf("AppendJSON of parsed value: %v", err)
		}
		if s := v.String(); s != string(enc) {
			t.Fatalf("String() = %q, AppendJSON = %q", s, enc)
		}
		v2, err := Parse(enc, Limits{})
		if err != nil {
			t.Fatalf("re-parse of %q: %v", enc, err)
		}
		if !Equal(v, v2) {
			t.Fatalf("round trip not Equal: %q vs %q", data, enc)
		}
		enc2, err := AppendJSON(nil, v2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %q vs %q (%v)", enc, enc2, err)
		}

		// Canonical form is stable and agrees with Equal.
		c1, err := Canonical(v)
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}
		// Copying raw spans that are already canonical changes nothing.
		slow := encoder{canonical: true, noCopy: true}
		if err := slow.value(v, 0); err != nil || !bytes.Equal(slow.buf, c1) {
			t.Fatalf("canonical with span copies %q, without %q (%v)", c1, slow.buf, err)
		}
		c2, err := Canonical(v2)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonical differs after round trip: %q vs %q", c1, c2)
		}
		// Canonical plain notation can be a few bytes longer than the
		// literal, so re-parse with the number-length ceiling.
		v3, err := Parse(c1, Limits{MaxNumberLength: MaxNumberLengthCeiling})
		if err != nil {
			t.Fatalf("re-parse of canonical %q: %v", c1, err)
		}
		if !Equal(v, v3) {
			t.Fatalf("canonical not Equal to original: %q vs %q", data, c1)
		}
		c3, err := Canonical(v3)
		if err != nil || !bytes.Equal(c1, c3) {
			t.Fatalf("canonical(canonical) not stable: %q vs %q", c1, c3)
		}

		// The filtered compact encoding (which copies parsed compact
		// objects that lose nothing) is the JSON of the filtered value:
		// members whose name starts with "a" are left out of the top
		// level and of the objects directly below it.
		omitA := func(depth int, parent, name string) bool { return strings.HasPrefix(name, "a") }
		if v.Kind() == KindObject {
			want := filterA(v, 1)
			got, err := AppendJSONWithout(nil, v, 1, omitA)
			if err != nil {
				t.Fatalf("AppendJSONWithout: %v", err)
			}
			back, err := Parse(got, Limits{})
			if err != nil || !Equal(back, want) {
				t.Fatalf("AppendJSONWithout of %s wrote %s, want the JSON of %s (%v)", data, got, want, err)
			}
			// Filtering a compact span by copying writes the same bytes
			// as encoding the kept members.
			slow := encoder{noCopy: true}
			if err := slow.objectWithout(v, 1, "", 0, 1, omitA); err != nil || !bytes.Equal(slow.buf, got) {
				t.Fatalf("AppendJSONWithout of %s wrote %s, the general path %s (%v)", data, got, slow.buf, err)
			}
		}

		// Canonical bytes equal iff Equal, over pairs of sub-values.
		subs := collect(nil, v, 24)
		canon := make([][]byte, len(subs))
		for i, s := range subs {
			if canon[i], err = Canonical(s); err != nil {
				t.Fatalf("Canonical(sub %v): %v", s, err)
			}
		}
		var nums []Number
		for i := range subs {
			for j := range subs {
				if eq, ceq := Equal(subs[i], subs[j]), bytes.Equal(canon[i], canon[j]); eq != ceq {
					t.Fatalf("Equal(%v, %v) = %v but canonical equality = %v (%q, %q)", subs[i], subs[j], eq, ceq, canon[i], canon[j])
				}
			}
			if n, ok := subs[i].AsNumber(); ok && len(nums) < 6 {
				nums = append(nums, n)
			}
		}
		// Exact numeric comparison agrees with big.Rat.
		for _, a := range nums {
			if i, ok := a.Int64(); ok && a.Rat().Cmp(ratInt(i)) != 0 {
				t.Fatalf("Int64(%s) = %d is not exact", a, i)
			}
			for _, b := range nums {
				if got, want := a.Cmp(b), a.Rat().Cmp(b.Rat()); got != want {
					t.Fatalf("Cmp(%s, %s) = %d, big.Rat says %d", a, b, got, want)
				}
			}
		}
	})
}

// filterA is the reference for AppendJSONWithout with omitA: v without
// members named "a..." at its top level and, levels deep, below.
func filterA(v Value, levels int) Value {
	var kept []Member
	for _, m := range v.members() {
		if strings.HasPrefix(m.Name, "a") {
			continue
		}
		if levels > 0 && m.Value.Kind() == KindObject {
			m.Value = filterA(m.Value, levels-1)
		}
		kept = append(kept, m)
	}
	return Object(kept...)
}

// collect appends v and its descendants (pre-order) up to max values.
func collect(dst []Value, v Value, max int) []Value {
	if len(dst) >= max {
		return dst
	}
	dst = append(dst, v)
	for _, m := range v.members() {
		dst = collect(dst, m.Value, max)
	}
	return dst
}
