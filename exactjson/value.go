package exactjson

import (
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// Kind is the kind of a JSON value.
type Kind uint8

// The JSON value kinds.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// String returns the lower-case JSON name of the kind ("null", "bool",
// "number", "string", "array", "object").
func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "bool"
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindArray:
		return "array"
	case KindObject:
		return "object"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is an immutable JSON value. The zero Value is JSON null. Values are
// small and meant to be copied by value; copies share their (immutable)
// contents.
type Value struct {
	// s is the string contents (KindString), the number literal (KindNumber),
	// or the raw input span of a parsed container (KindArray, KindObject;
	// empty for constructed containers).
	s string
	// kp and kn are the object members, or array elements with empty names
	// (members returns them as a slice): a pointer and a 32-bit length
	// rather than a slice header keep a Value at 32 bytes.
	kp   *Member
	kn   uint32
	kind Kind
	// b is the boolean (KindBool) or, for containers with a raw span,
	// whether that span is byte-identical to the compact encoding.
	b bool
	// h is the nesting height of a parsed container ([] is 1); 0 otherwise.
	h uint16
}

// Member is a named object member.
type Member struct {
	// Name is the member name (unescaped).
	Name string
	// Value is the member value.
	Value Value
}

// Null returns the JSON null value (the zero Value).
func Null() Value { return Value{} }

// Bool returns a JSON boolean.
func Bool(b bool) Value { return Value{kind: KindBool, b: b} }

// String returns a JSON string. The string is not validated here; invalid
// UTF-8 is reported when encoding.
func String(s string) Value { return Value{kind: KindString, s: s} }

// Int returns a JSON number holding i exactly.
func Int(i int64) Value { return Value{kind: KindNumber, s: strconv.FormatInt(i, 10)} }

// Uint returns a JSON number holding u exactly.
func Uint(u uint64) Value { return Value{kind: KindNumber, s: strconv.FormatUint(u, 10)} }

// Float returns a JSON number holding the shortest decimal that round-trips
// to f, written like encoding/json writes floats: plain notation for
// 1e-6 <= |f| < 1e21 (50, 0.25, 123456789), otherwise scientific with E, a
// sign and no leading exponent zeros (1E+21, 1E-7).
// It reports an error for NaN and infinities.
func Float(f float64) (Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}, fmt.Errorf("exactjson: cannot represent %v as a JSON number", f)
	}
	var buf [32]byte
	// Like encoding/json: plain notation for 1e-6 <= |f| < 1e21, shortest
	// scientific notation otherwise.
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'g'
	}
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	if i := indexByte(b, 'e'); i >= 0 {
		// b[i+1] is the sign; strip leading zeros of the exponent digits.
		j := i + 2
		for j < len(b)-1 && b[j] == '0' {
			j++
		}
		out := make([]byte, 0, len(b))
		out = append(out, b[:i]...)
		out = append(out, 'E', b[i+1])
		out = append(out, b[j:]...)
		return Value{kind: KindNumber, s: string(out)}, nil
	}
	return Value{kind: KindNumber, s: string(b)}, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// NumberValue returns a JSON number value holding n (with n's literal).
func NumberValue(n Number) Value { return Value{kind: KindNumber, s: n.String()} }

// Array returns a JSON array of the given elements. The slice is copied.
func Array(elems ...Value) Value {
	kids := make([]Member, len(elems))
	for i, e := range elems {
		kids[i].Value = e
	}
	return containerOf(KindArray, kids)
}

// Object returns a JSON object of the given members in the given order. The
// slice is copied. Duplicate names are not checked here; they are reported
// as errors when encoding.
func Object(members ...Member) Value {
	kids := make([]Member, len(members))
	copy(kids, members)
	return containerOf(KindObject, kids)
}

// containerOf returns an array or object holding kids (not copied).
func containerOf(kind Kind, kids []Member) Value {
	if uint64(len(kids)) > math.MaxUint32 {
		panic("exactjson: container of more than 2^32-1 members")
	}
	return Value{kind: kind, kp: unsafe.SliceData(kids), kn: uint32(len(kids))}
}

// members returns the members of an object or the elements of an array.
func (v Value) members() []Member { return unsafe.Slice(v.kp, v.kn) }

// Field returns a Member; it is shorthand for Member{Name: name, Value: v}.
func Field(name string, v Value) Member { return Member{Name: name, Value: v} }

// Kind returns the kind of v.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is JSON null.
func (v Value) IsNull() bool { return v.kind == KindNull }

// AsBool returns the boolean and true if v is a boolean.
func (v Value) AsBool() (bool, bool) {
	if v.kind != KindBool {
		return false, false
	}
	return v.b, true
}

// AsString returns the string and true if v is a string.
func (v Value) AsString() (string, bool) {
	if v.kind != KindString {
		return "", false
	}
	return v.s, true
}

// AsNumber returns the number and true if v is a number.
func (v Value) AsNumber() (Number, bool) {
	if v.kind != KindNumber {
		return Number{}, false
	}
	return Number{lit: v.s}, true
}

// Len returns the number of array elements or object members; 0 for other kinds.
func (v Value) Len() int {
	if v.kind != KindArray && v.kind != KindObject {
		return 0
	}
	return int(v.kn)
}

// Index returns array element i, or Null if v is not an array or i is out of range.
func (v Value) Index(i int) Value {
	if v.kind != KindArray || i < 0 || i >= int(v.kn) {
		return Value{}
	}
	return v.members()[i].Value
}

// Member returns the i-th member of an object in document order, or the
// zero Member if v is not an object or i is out of range. With Len it walks
// an object without the copy Members makes.
func (v Value) Member(i int) Member {
	if v.kind != KindObject || i < 0 || i >= int(v.kn) {
		return Member{}
	}
	return v.members()[i]
}

// Elements returns a copy of the array elements, or nil if v is not an array.
func (v Value) Elements() []Value {
	if v.kind != KindArray {
		return nil
	}
	kids := v.members()
	out := make([]Value, len(kids))
	for i := range kids {
		out[i] = kids[i].Value
	}
	return out
}

// Members returns a copy of the object members in document order, or nil
// if v is not an object.
func (v Value) Members() []Member {
	if v.kind != KindObject {
		return nil
	}
	out := make([]Member, v.kn)
	copy(out, v.members())
	return out
}

// Get returns the value of the first member named exactly name (byte-wise,
// case-sensitive). It reports false if v is not an object or has no such
// member. Lookup is a linear scan.
func (v Value) Get(name string) (Value, bool) {
	if v.kind != KindObject {
		return Value{}, false
	}
	kids := v.members()
	for i := range kids {
		if kids[i].Name == name {
			return kids[i].Value, true
		}
	}
	return Value{}, false
}

// Has reports whether v is an object with a member named exactly name.
func (v Value) Has(name string) bool {
	_, ok := v.Get(name)
	return ok
}

// All returns the object members in document order (empty if v is not an object).
func (v Value) All() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		if v.kind != KindObject {
			return
		}
		kids := v.members()
		for i := range kids {
			if !yield(kids[i].Name, kids[i].Value) {
				return
			}
		}
	}
}

// Values returns the array elements in order (empty if v is not an array).
func (v Value) Values() iter.Seq[Value] {
	return func(yield func(Value) bool) {
		if v.kind != KindArray {
			return
		}
		kids := v.members()
		for i := range kids {
			if !yield(kids[i].Value) {
				return
			}
		}
	}
}

// Without returns a copy of the object v without its top-level members
// with any of the given names. Non-objects are returned unchanged.
func (v Value) Without(names ...string) Value {
	if v.kind != KindObject {
		return v
	}
	kids := make([]Member, 0, v.kn)
outer:
	for _, m := range v.members() {
		for _, n := range names {
			if m.Name == n {
				continue outer
			}
		}
		kids = append(kids, m)
	}
	return containerOf(KindObject, kids)
}

// With returns a copy of the object v with member name set to val: the
// first member with that name is replaced in place, otherwise the member
// is appended. Non-objects are returned unchanged.
func (v Value) With(name string, val Value) Value {
	if v.kind != KindObject {
		return v
	}
	old := v.members()
	for i := range old {
		if old[i].Name == name {
			kids := make([]Member, len(old))
			copy(kids, old)
			kids[i].Value = val
			return containerOf(KindObject, kids)
		}
	}
	kids := make([]Member, len(old), len(old)+1)
	copy(kids, old)
	kids = append(kids, Member{Name: name, Value: val})
	return containerOf(KindObject, kids)
}

// String returns the compact JSON encoding of v for debugging. It never
// fails: invalid UTF-8 is replaced by U+FFFD, duplicate names are written
// as they are, and nesting beyond MaxDepthCeiling is elided as "...".
func (v Value) String() string {
	e := encoder{lenient: true}
	_ = e.value(v, 0)
	return string(e.buf)
}

// MarshalJSON returns the compact JSON encoding of v (see AppendJSON).
func (v Value) MarshalJSON() ([]byte, error) { return AppendJSON(nil, v) }

// UnmarshalJSON parses b with DefaultLimits into v. The result does not
// alias b.
func (v *Value) UnmarshalJSON(b []byte) error {
	x, err := Parse(b, Limits{})
	if err != nil {
		return err
	}
	*v = x
	return nil
}

// Equal reports whether a and b are deeply equal: objects compare as
// unordered sets of members, arrays element-wise in order, strings
// byte-wise, numbers by exact numeric value (1 == 1.0 == 1E+0 == 10E-1).
// An object containing duplicate member names is equal to nothing (it has
// no canonical form either).
func Equal(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case KindNull:
		return true
	case KindBool:
		return a.b == b.b
	case KindString:
		return a.s == b.s
	case KindNumber:
		if a.s == b.s {
			return true
		}
		if plainInteger(a.s) && plainInteger(b.s) {
			return false // one spelling per value
		}
		return cmpLiterals(a.s, b.s) == 0
	case KindArray:
		ak, bk := a.members(), b.members()
		if len(ak) != len(bk) {
			return false
		}
		for i := range ak {
			if !Equal(ak[i].Value, bk[i].Value) {
				return false
			}
		}
		return true
	case KindObject:
		return equalObjects(a.members(), b.members())
	}
	return false
}

const smallObject = 16

func equalObjects(a, b []Member) bool {
	if len(a) != len(b) {
		return false
	}
	n := len(a)
	if n <= smallObject {
		for i := range a {
			for j := 0; j < i; j++ {
				if a[j].Name == a[i].Name {
					return false // duplicate in a
				}
			}
			found := false
			for j := range b {
				if b[j].Name == a[i].Name {
					if !Equal(a[i].Value, b[j].Value) {
						return false
					}
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		// a has n distinct names, all present in b, and len(b) == n, so b
		// has no duplicates either.
		return true
	}
	sa, okA := sortedMembers(a)
	sb, okB := sortedMembers(b)
	if !okA || !okB {
		return false
	}
	for i := range sa {
		if sa[i].Name != sb[i].Name || !Equal(sa[i].Value, sb[i].Value) {
			return false
		}
	}
	return true
}

// sortedMembers returns a copy of ms sorted by name and whether the names
// are distinct.
func sortedMembers(ms []Member) ([]Member, bool) {
	s := make([]Member, len(ms))
	copy(s, ms)
	sortMembers(s)
	for i := 1; i < len(s); i++ {
		if s[i].Name == s[i-1].Name {
			return s, false
		}
	}
	return s, true
}

func sortMembers(s []Member) {
	if len(s) <= 12 {
		for i := 1; i < len(s); i++ {
			for j := i; j > 0 && s[j].Name < s[j-1].Name; j-- {
				s[j], s[j-1] = s[j-1], s[j]
			}
		}
		return
	}
	slices.SortFunc(s, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
}

// Any returns v as encoding/json decodes into an any with UseNumber: nil,
// bool, json.Number (the exact literal as written), string, []any
// and map[string]any. It is for libraries that take such trees, such as
// JSON Schema validators.
func (v Value) Any() any {
	switch v.Kind() {
	case KindBool:
		b, _ := v.AsBool()
		return b
	case KindNumber:
		n, _ := v.AsNumber()
		return json.Number(n.String())
	case KindString:
		s, _ := v.AsString()
		return s
	case KindArray:
		out := make([]any, 0, v.Len())
		for e := range v.Values() {
			out = append(out, e.Any())
		}
		return out
	case KindObject:
		out := make(map[string]any, v.Len())
		for k, e := range v.All() {
			out[k] = e.Any()
		}
		return out
	}
	return nil
}
