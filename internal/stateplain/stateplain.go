// Package stateplain encodes the plaintext that framework-protected request
// state seals: the framework metadata and the application state
// (docs/request-state.md, "The sealed plaintext").
package stateplain

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/weftmcp/weft/exactjson"
)

// Meta is the framework metadata sealed next to the application state.
type Meta struct {
	IssuedAt  int64 // unix milliseconds
	ExpiresAt int64 // unix milliseconds
	Round     int
	// RequestID is the JSON-RPC id of the emitting request: a string or an
	// integer.
	RequestID exactjson.Value
	Keys      []Key  // issued input keys, sorted by name, distinct
	keyBuf    [1]Key // backing for Keys when there is one (Meta stays 128 bytes)
	// Args is the fingerprint of the input schema that validated the
	// emitting tools/call's arguments ("" if none did): a retry whose
	// arguments the binding proves identical, under a schema with the same
	// fingerprint, is not validated again.
	Args string
}

// Key is one issued input key and the method of its request.
type Key struct{ Name, Method string }

// SortKeys puts issued keys in the order Meta.Keys keeps.
func SortKeys(ks []Key) {
	slices.SortFunc(ks, func(a, b Key) int { return strings.Compare(a.Name, b.Name) })
}

// Method returns the method issued under key, or "".
func (m *Meta) Method(key string) string {
	for _, k := range m.Keys {
		if k.Name == key {
			return k.Method
		}
	}
	return ""
}

func isInteger(v exactjson.Value) bool {
	n, ok := v.AsNumber()
	return ok && n.IsInteger()
}

// Format 2, written by Encode, is a binary frame for the framework
// metadata followed by the canonical JSON of the application state:
//
//	0x02                              format
//	i64be(iat) || i64be(exp)          Unix milliseconds
//	uvarint(round)
//	rid kind (0x01 string, 0x02 integer) || uvarint(len) || text
//	uvarint(len(args)) || args        input-schema fingerprint, empty if none
//	uvarint(n) || n × (uvarint(len(key)) || key || uvarint(len(method)) || method)
//	state                             canonical JSON, to the end
//
// Every uvarint is minimal, every text valid UTF-8, keys strictly ascending
// (byte order) and an integer id is written as canonical JSON spells it, so
// each metadata value has exactly one encoding. Format 1, the canonical JSON
// object earlier versions sealed (its first byte is '{'), is still read.
const (
	plaintextFormat = 0x02
	ridString       = 0x01
	ridInteger      = 0x02

	plaintextJSONVersion = 1 // the "v" member of a format 1 plaintext
)

// ErrMalformed reports a plaintext whose frame is malformed.
var ErrMalformed = errors.New("malformed state plaintext")

// Encode writes m and state in format 2.
func Encode(m *Meta, state exactjson.Value) ([]byte, error) {
	var rid []byte
	kind := byte(ridString)
	switch m.RequestID.Kind() {
	case exactjson.KindString:
		s, _ := m.RequestID.AsString()
		rid = unsafe.Slice(unsafe.StringData(s), len(s))
	case exactjson.KindNumber:
		kind = ridInteger
		var err error
		if rid, err = exactjson.AppendCanonical(nil, m.RequestID); err != nil || !isInteger(m.RequestID) {
			return nil, fmt.Errorf("request id %s cannot carry state: not an integer", m.RequestID)
		}
	default:
		return nil, errors.New("a request without an id cannot carry state")
	}
	if m.Round < 0 {
		return nil, fmt.Errorf("negative round %d", m.Round)
	}
	if !utf8.Valid(rid) || !utf8.ValidString(m.Args) {
		return nil, errors.New("invalid UTF-8 in the request id or args fingerprint")
	}
	n := 1 + 8 + 8 + 3*binary.MaxVarintLen64 + 1 + len(rid) + len(m.Args)
	for i, k := range m.Keys {
		if i > 0 && m.Keys[i-1].Name >= k.Name {
			return nil, errors.New("input request keys are not strictly ascending")
		}
		if !utf8.ValidString(k.Name) || !utf8.ValidString(k.Method) {
			return nil, fmt.Errorf("invalid UTF-8 in input request key %q or its method", k.Name)
		}
		n += 2*binary.MaxVarintLen64 + len(k.Name) + len(k.Method)
	}
	b := make([]byte, 0, n+64)
	b = append(b, plaintextFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(m.IssuedAt))
	b = binary.BigEndian.AppendUint64(b, uint64(m.ExpiresAt))
	b = binary.AppendUvarint(b, uint64(m.Round))
	b = append(b, kind)
	b = appendText(b, rid)
	b = appendText(b, m.Args)
	b = binary.AppendUvarint(b, uint64(len(m.Keys)))
	for _, k := range m.Keys {
		b = appendText(b, k.Name)
		b = appendText(b, k.Method)
	}
	return exactjson.AppendCanonical(b, state)
}

func appendText[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Decode reads a sealed plaintext, which the caller must not modify
// afterwards: the metadata strings and the state share it.
func Decode(b []byte) (*Meta, exactjson.Value, error) {
	return DecodeWith(new(exactjson.Parser), b)
}

// DecodeWith is Decode parsing the state with ps.
func DecodeWith(ps *exactjson.Parser, b []byte) (*Meta, exactjson.Value, error) {
	m := new(Meta)
	state, err := DecodeInto(ps, b, m)
	if err != nil {
		return nil, exactjson.Value{}, err
	}
	return m, state, nil
}

// DecodeInto is DecodeWith writing the metadata into m, which the caller
// may hold inside a larger value (one allocation less). On error m holds
// nothing the caller may use.
func DecodeInto(ps *exactjson.Parser, b []byte, m *Meta) (exactjson.Value, error) {
	if len(b) > 0 && b[0] == '{' {
		jm, state, err := decodePlaintextJSON(b)
		if err != nil {
			return exactjson.Value{}, err
		}
		*m = *jm // its Keys are its own slice, not jm.keyBuf
		return state, nil
	}
	r := frameReader{s: unsafe.String(unsafe.SliceData(b), len(b))}
	if f, ok := r.byte(); !ok || f != plaintextFormat {
		return exactjson.Value{}, errors.New("unknown state plaintext format")
	}
	iat, ok1 := r.int64()
	exp, ok2 := r.int64()
	round, ok3 := r.uvarint()
	kind, ok4 := r.byte()
	ridText, ok5 := r.text()
	args, ok6 := r.text()
	nkeys, ok7 := r.uvarint()
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || round > uint64(maxInt) || nkeys > uint64(len(r.s)-r.i)/2 {
		return exactjson.Value{}, ErrMalformed
	}
	*m = Meta{IssuedAt: iat, ExpiresAt: exp, Round: int(round), Args: args}
	switch kind {
	case ridString:
		m.RequestID = exactjson.String(ridText)
	case ridInteger:
		id, ok := canonicalIntegerID(ridText)
		if !ok {
			return exactjson.Value{}, errors.New("malformed state request id")
		}
		m.RequestID = id
	default:
		return exactjson.Value{}, errors.New("malformed state request id")
	}
	m.Keys = m.keyBuf[:0]
	if nkeys > uint64(len(m.keyBuf)) {
		m.Keys = make([]Key, 0, nkeys)
	}
	for range nkeys {
		k, ok1 := r.text()
		method, ok2 := r.text()
		if !ok1 || !ok2 || (len(m.Keys) > 0 && m.Keys[len(m.Keys)-1].Name >= k) {
			return exactjson.Value{}, errors.New("malformed state keys")
		}
		m.Keys = append(m.Keys, Key{k, method})
	}
	state, err := ps.ParseString(r.s[r.i:], exactjson.Limits{})
	if err != nil {
		return exactjson.Value{}, fmt.Errorf("state: %w", err)
	}
	return state, nil
}

const maxInt = int(^uint(0) >> 1)

// canonicalIntegerID reads an integer request id spelled as canonical JSON
// spells it, the only spelling Encode writes.
func canonicalIntegerID(s string) (exactjson.Value, bool) {
	// Plain digits without a leading or trailing zero are canonical
	// already (1E+2, not 100); anything else is compared the long way.
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	plain := digits == "0" && s == "0" || len(digits) > 0 && digits[0] != '0' && digits[len(digits)-1] != '0'
	for i := 0; plain && i < len(digits); i++ {
		plain = digits[i] >= '0' && digits[i] <= '9'
	}
	if plain && len(digits) <= 18 {
		// The common id: at most 18 digits, an int64 without overflow,
		// spelled as strconv spells it.
		var v int64
		for i := 0; i < len(digits); i++ {
			v = v*10 + int64(digits[i]-'0')
		}
		if len(digits) < len(s) {
			v = -v
		}
		return exactjson.Int(v), true
	}
	if plain {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return exactjson.Int(v), true
		}
	}
	n, err := exactjson.ParseNumber(s)
	if err != nil || !n.IsInteger() {
		return exactjson.Value{}, false
	}
	if !plain && n.Canonical() != s {
		return exactjson.Value{}, false
	}
	return exactjson.NumberValue(n), true
}

// frameReader reads the binary frame of a format 2 plaintext. Texts share
// the plaintext.
type frameReader struct {
	s string
	i int
}

func (r *frameReader) byte() (byte, bool) {
	if r.i >= len(r.s) {
		return 0, false
	}
	r.i++
	return r.s[r.i-1], true
}

func (r *frameReader) int64() (int64, bool) {
	if len(r.s)-r.i < 8 {
		return 0, false
	}
	v := binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(r.s[r.i:]), 8))
	r.i += 8
	return int64(v), true
}

// uvarint reads a minimal unsigned varint.
func (r *frameReader) uvarint() (uint64, bool) {
	var v uint64
	for k := 0; k < binary.MaxVarintLen64 && r.i < len(r.s); k++ {
		c := r.s[r.i]
		r.i++
		if k == binary.MaxVarintLen64-1 && c > 1 {
			return 0, false // overflows 64 bits
		}
		v |= uint64(c&0x7f) << (7 * k)
		if c < 0x80 {
			return v, k == 0 || c != 0 // a trailing zero byte is not minimal
		}
	}
	return 0, false
}

// text reads a length-prefixed UTF-8 text.
func (r *frameReader) text() (string, bool) {
	var n uint64
	if r.i < len(r.s) && r.s[r.i] < 0x80 {
		// A length below 128: one byte, minimal whatever its value.
		n = uint64(r.s[r.i])
		r.i++
	} else {
		var ok bool
		if n, ok = r.uvarint(); !ok {
			return "", false
		}
	}
	if n > uint64(len(r.s)-r.i) {
		return "", false
	}
	s := r.s[r.i : r.i+int(n)]
	r.i += int(n)
	return s, validText(s)
}

// validText reports whether s is valid UTF-8, deciding the short ASCII
// texts of the frame (ids, fingerprints, keys, methods) in one pass
// without utf8.ValidString's setup.
func validText(s string) bool {
	var or uint64
	i := 0
	for ; i+8 <= len(s); i += 8 {
		or |= binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
	}
	for ; i < len(s); i++ {
		or |= uint64(s[i])
	}
	return or&0x8080808080808080 == 0 || utf8.ValidString(s)
}

// decodePlaintextJSON reads a format 1 plaintext: the canonical JSON object
// {"args":F,"exp":N,"iat":N,"keys":{...},"rid":ID,"round":N,"state":JSON,"v":1}
// ("args" optional) that earlier versions sealed.
func decodePlaintextJSON(b []byte) (*Meta, exactjson.Value, error) {
	v, err := exactjson.Parse(b, exactjson.Limits{})
	if err != nil {
		return nil, exactjson.Value{}, err
	}
	get := func(name string) (int64, bool) {
		x, ok := v.Get(name)
		if !ok {
			return 0, false
		}
		n, ok := x.AsNumber()
		if !ok {
			return 0, false
		}
		return n.Int64()
	}
	ver, ok1 := get("v")
	iat, ok2 := get("iat")
	exp, ok3 := get("exp")
	round, ok4 := get("round")
	rid, ok5 := v.Get("rid")
	keys, ok6 := v.Get("keys")
	state, ok7 := v.Get("state")
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || ver != plaintextJSONVersion || keys.Kind() != exactjson.KindObject || round != int64(int(round)) {
		return nil, exactjson.Value{}, ErrMalformed
	}
	if rid.Kind() != exactjson.KindString && !isInteger(rid) {
		return nil, exactjson.Value{}, errors.New("malformed state request id")
	}
	m := &Meta{IssuedAt: iat, ExpiresAt: exp, Round: int(round), RequestID: rid, Keys: make([]Key, 0, keys.Len())}
	if a, ok := v.Get("args"); ok {
		if m.Args, ok = a.AsString(); !ok {
			return nil, exactjson.Value{}, errors.New("malformed state args fingerprint")
		}
	}
	for k, kv := range keys.All() {
		s, ok := kv.AsString()
		if !ok {
			return nil, exactjson.Value{}, errors.New("malformed state keys")
		}
		m.Keys = append(m.Keys, Key{k, s})
	}
	SortKeys(m.Keys)
	return m, state, nil
}
