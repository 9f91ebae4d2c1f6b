package exactjson

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

func TestKindString(t *testing.T) {
	want := map[Kind]string{KindNull: "null", KindBool: "bool", KindNumber: "number", KindString: "string", KindArray: "array", KindObject: "object", Kind(99): "Kind(99)"}
	for k, s := range want {
		if k.String() != s {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), s)
		}
	}
}

func TestConstructors(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		kind Kind
		json string
	}{
		{"zero", Value{}, KindNull, "null"},
		{"null", Null(), KindNull, "null"},
		{"true", Bool(true), KindBool, "true"},
		{"false", Bool(false), KindBool, "false"},
		{"string", String("a\"b"), KindString, `"a\"b"`},
		{"int", Int(-9223372036854775808), KindNumber, "-9223372036854775808"},
		{"uint", Uint(18446744073709551615), KindNumber, "18446744073709551615"},
		{"number", NumberValue(Number{}), KindNumber, "0"},
		{"array", Array(Int(1), Null()), KindArray, "[1,null]"},
		{"empty array", Array(), KindArray, "[]"},
		{"object", Object(Field("b", Bool(true)), Field("a", Array())), KindObject, `{"b":true,"a":[]}`},
		{"empty object", Object(), KindObject, "{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.v.Kind() != tt.kind {
				t.Errorf("Kind = %v, want %v", tt.v.Kind(), tt.kind)
			}
			got, err := tt.v.MarshalJSON()
			if err != nil || string(got) != tt.json {
				t.Errorf("MarshalJSON = %s, %v; want %s", got, err, tt.json)
			}
			if tt.v.String() != tt.json {
				t.Errorf("String = %s", tt.v.String())
			}
			if !Equal(tt.v, mustParse(t, tt.json)) {
				t.Errorf("not Equal to its parsed encoding")
			}
		})
	}
}

func TestConstructorsCopy(t *testing.T) {
	elems := []Value{Int(1), Int(2)}
	a := Array(elems...)
	elems[0] = Int(9)
	if a.Index(0).String() != "1" {
		t.Error("Array did not copy its argument")
	}
	ms := []Member{Field("a", Int(1))}
	o := Object(ms...)
	ms[0].Name = "z"
	if !o.Has("a") {
		t.Error("Object did not copy its argument")
	}
	got := o.Members()
	got[0].Name = "q"
	if !o.Has("a") {
		t.Error("Members did not return a copy")
	}
	es := a.Elements()
	es[1] = Null()
	if a.Index(1).IsNull() {
		t.Error("Elements did not return a copy")
	}
}

func TestAccessors(t *testing.T) {
	v := mustParse(t, `{"name":"x","NAME":"y","id":7,"sid":"7","flag":true,"list":[1,"a",null],"obj":{"k":1}}`)
	if v.Len() != 7 || !v.Has("name") || v.Has("Name") || v.Has("missing") {
		t.Fatalf("Len/Has wrong")
	}
	if s, ok := v.Get("name"); !ok || s.String() != `"x"` {
		t.Errorf(`Get("name") = %v, %v`, s, ok)
	}
	if s, ok := v.Get("NAME"); !ok || s.String() != `"y"` {
		t.Errorf(`Get("NAME") = %v, %v`, s, ok)
	}
	id, _ := v.Get("id")
	sid, _ := v.Get("sid")
	if id.Kind() != KindNumber || sid.Kind() != KindString || Equal(id, sid) {
		t.Errorf("7 and \"7\" must differ: %v %v", id.Kind(), sid.Kind())
	}
	if n, ok := id.AsNumber(); !ok || n.String() != "7" {
		t.Errorf("AsNumber = %v, %v", n, ok)
	}
	if _, ok := id.AsString(); ok {
		t.Error("AsString on number ok")
	}
	if s, ok := sid.AsString(); !ok || s != "7" {
		t.Errorf("AsString = %q, %v", s, ok)
	}
	if _, ok := sid.AsNumber(); ok {
		t.Error("AsNumber on string ok")
	}
	flag, _ := v.Get("flag")
	if b, ok := flag.AsBool(); !ok || !b {
		t.Error("AsBool")
	}
	if _, ok := id.AsBool(); ok {
		t.Error("AsBool on number ok")
	}
	list, _ := v.Get("list")
	if list.Len() != 3 || list.Index(1).String() != `"a"` || !list.Index(2).IsNull() || !list.Index(3).IsNull() || !list.Index(-1).IsNull() {
		t.Error("Index")
	}
	if m := v.Member(2); m.Name != "id" || m.Value.String() != "7" {
		t.Errorf("Member(2) = %+v", m)
	}
	if m := v.Member(v.Len()); m.Name != "" || !m.Value.IsNull() {
		t.Errorf("Member out of range = %+v", m)
	}
	if m := list.Member(0); m.Name != "" || !m.Value.IsNull() {
		t.Errorf("Member of an array = %+v", m)
	}
	var vals []string
	for e := range list.Values() {
		vals = append(vals, e.String())
	}
	if !slices.Equal(vals, []string{"1", `"a"`, "null"}) {
		t.Errorf("Values = %v", vals)
	}
	var names []string
	for n := range v.All() {
		names = append(names, n)
	}
	if !slices.Equal(names, []string{"name", "NAME", "id", "sid", "flag", "list", "obj"}) {
		t.Errorf("All = %v", names)
	}
	// Early break in iterators.
	for range v.All() {
		break
	}
	for range list.Values() {
		break
	}
	// Wrong-kind accessors.
	for _, w := range []Value{Null(), Int(1), String("s"), list} {
		if w.Members() != nil || w.Has("x") {
			t.Errorf("%v: object accessors on non-object", w)
		}
		if _, ok := w.Get("x"); ok {
			t.Errorf("%v: Get on non-object", w)
		}
		for range w.All() {
			t.Errorf("%v: All yielded", w)
		}
	}
	for _, w := range []Value{Null(), Int(1), v} {
		if w.Elements() != nil || !w.Index(0).IsNull() {
			t.Errorf("%v: array accessors on non-array", w)
		}
		for range w.Values() {
			t.Errorf("%v: Values yielded", w)
		}
	}
	if Int(1).Len() != 0 || String("abc").Len() != 0 {
		t.Error("Len of scalar")
	}
	if Array().Elements() == nil || Object().Members() == nil {
		t.Error("empty containers should give non-nil copies")
	}
}

func TestWithWithout(t *testing.T) {
	v := mustParse(t, `{"a":1,"b":2,"c":3}`)
	w := v.Without("b", "zz")
	if w.String() != `{"a":1,"c":3}` || v.String() != `{"a":1,"b":2,"c":3}` {
		t.Errorf("Without = %s (orig %s)", w, v)
	}
	if got := v.Without().String(); got != v.String() {
		t.Errorf("Without() = %s", got)
	}
	if got := v.With("b", String("x")).String(); got != `{"a":1,"b":"x","c":3}` {
		t.Errorf("With replace = %s", got)
	}
	if got := v.With("d", Null()).String(); got != `{"a":1,"b":2,"c":3,"d":null}` {
		t.Errorf("With append = %s", got)
	}
	if v.String() != `{"a":1,"b":2,"c":3}` {
		t.Errorf("original modified: %s", v)
	}
	// Modified copies are re-encoded (no stale raw span).
	if b, _ := AppendJSON(nil, v.With("a", Int(9))); string(b) != `{"a":9,"b":2,"c":3}` {
		t.Errorf("AppendJSON(With) = %s", b)
	}
	var dst map[string]int
	if err := Unmarshal(v.Without("a"), &dst); err != nil || len(dst) != 2 {
		t.Errorf("Unmarshal(Without) = %v, %v", dst, err)
	}
	// Appending to an object must not clobber a shared backing array.
	base := Object(Field("a", Int(1)))
	x, y := base.With("x", Int(1)), base.With("y", Int(2))
	if x.String() != `{"a":1,"x":1}` || y.String() != `{"a":1,"y":2}` {
		t.Errorf("shared backing: %s %s", x, y)
	}
	for _, nv := range []Value{Null(), Int(1), Array(Int(1))} {
		if !Equal(nv.With("a", Int(1)), nv) || !Equal(nv.Without("a"), nv) {
			t.Errorf("With/Without changed non-object %v", nv)
		}
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b Value
		want bool
	}{
		{Null(), Value{}, true},
		{Null(), Bool(false), false},
		{Bool(true), Bool(true), true},
		{Bool(true), Bool(false), false},
		{Int(1), mustParse(t, "1.0"), true},
		{Int(1), String("1"), false},
		{String("a"), String("a"), true},
		{String("a"), String("A"), false},
		{Array(Int(1), Int(2)), Array(Int(2), Int(1)), false},
		{Array(Int(1)), Array(Int(1), Int(1)), false},
		{Object(Field("a", Int(1)), Field("b", Int(2))), Object(Field("b", Int(2)), Field("a", Int(1))), true},
		{Object(Field("a", Int(1))), Object(Field("a", Int(1)), Field("b", Int(2))), false},
		{Object(Field("a", Int(1)), Field("a", Int(1))), Object(Field("a", Int(1)), Field("b", Int(1))), false},
		{Object(Field("a", Int(1)), Field("b", Int(1))), Object(Field("a", Int(1)), Field("a", Int(1))), false},
		{Object(Field("a", Int(1))), Object(Field("b", Int(1))), false},
		{NumberValue(Number{}), Int(0), true},
		{Int(10), mustParse(t, "1E+1"), true},
		{Int(10), Int(100), false},
		{Int(7), Int(-7), false},
		{mustParse(t, "-0"), Int(0), true},
		{mustParse(t, "-0"), mustParse(t, "0.0"), true},
		{Int(123456789012345678), mustParse(t, "123456789012345678.0"), true},
		{mustParse(t, "1234567890123456789012345"), mustParse(t, "1234567890123456789012346"), false},
	}
	for i, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("%d: Equal(%v, %v) = %v, want %v", i, tt.a, tt.b, got, tt.want)
		}
		if got := Equal(tt.b, tt.a); got != tt.want {
			t.Errorf("%d: Equal(%v, %v) (swapped) = %v, want %v", i, tt.b, tt.a, got, tt.want)
		}
	}
}

func TestUnmarshalJSONValue(t *testing.T) {
	var v Value
	if err := v.UnmarshalJSON([]byte(` {"a":[1,2]} `)); err != nil || v.String() != `{"a":[1,2]}` {
		t.Fatalf("UnmarshalJSON = %v, %v", v, err)
	}
	if err := v.UnmarshalJSON([]byte(`{"a":1,"a":2}`)); err == nil {
		t.Error("UnmarshalJSON accepted duplicate")
	}
	if v.String() != `{"a":[1,2]}` {
		t.Error("failed UnmarshalJSON modified the value")
	}
}

func TestPlainASCII(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	want := func(s string, i int) int {
		for ; i < len(s); i++ {
			if special(s[i]) {
				return i
			}
		}
		return i
	}
	// Every special byte at every position of a 20-byte plain run, with
	// neighbours that stress the borrow tricks, alone and followed by a
	// second byte of each kind in the same eight-byte window or a later
	// one (a mark above the first hit must not move the result).
	bytesTried := []byte{0, 0x1f, '"', '\\', 0x80, 0xff, 0xa0, 0x21, 0x5b, 0x5d, 0x7f, 0x20}
	for _, c := range bytesTried {
		for pos := range 20 {
			for _, fill := range []byte{'a', ' ', '!', '#', '[', ']', '~', 0x7f} {
				for _, c2 := range append([]byte{fill}, bytesTried...) {
					for pos2 := pos; pos2 < min(pos+10, 20); pos2++ {
						b := make([]byte, 20)
						for k := range b {
							b[k] = fill
						}
						b[pos2] = c2 // pos2 == pos: c alone
						b[pos] = c
						s := string(b)
						for start := range 3 {
							if got, w := plainASCII(s, start), want(s, start); got != w {
								t.Fatalf("plainASCII(%q, %d) = %d, want %d", s, start, got, w)
							}
						}
					}
				}
			}
		}
	}
}

func TestValueAny(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`null`, nil},
		{`true`, true},
		{`"é"`, "é"},
		{`9007199254740993`, json.Number("9007199254740993")},
		{`1.50`, json.Number("1.50")},
		{`[1,"a",[]]`, []any{json.Number("1"), "a", []any{}}},
		{`{"a":{"b":null},"c":1E+2}`, map[string]any{"a": map[string]any{"b": nil}, "c": json.Number("1E+2")}},
	} {
		v, err := Parse([]byte(tc.in), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Any(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Any() = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}
