package exactjson

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AppendJSON appends the compact JSON encoding of v to dst: no whitespace,
// object members in document order, number literals as written, strings
// escaped minimally (see the package documentation). It fails for strings
// or names with invalid UTF-8 (wrapping ErrInvalidUTF8), objects with
// duplicate names (wrapping ErrDuplicateName), and values beyond the
// encoding limits (*LimitError). On error dst is returned unchanged.
func AppendJSON(dst []byte, v Value) ([]byte, error) {
	e := encoder{buf: dst, base: len(dst)}
	if err := e.value(v, 0); err != nil {
		return dst, err
	}
	return e.buf, nil
}

// Encode returns the compact JSON encoding of v (see AppendJSON), failing
// with a *LimitError{Limit: "MaxOutputBytes"} if it would exceed maxBytes
// bytes (0 means DefaultMaxOutputBytes).
func Encode(v Value, maxBytes int) ([]byte, error) {
	if maxBytes < 0 {
		return nil, fmt.Errorf("exactjson: invalid maxBytes %d: must be >= 0", maxBytes)
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxOutputBytes
	}
	e := encoder{max: maxBytes}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// AppendCanonical appends the canonical encoding of v to dst (see the
// package documentation). It fails like AppendJSON. On error dst is
// returned unchanged.
func AppendCanonical(dst []byte, v Value) ([]byte, error) {
	e := encoder{buf: dst, base: len(dst), canonical: true}
	if err := e.value(v, 0); err != nil {
		return dst, err
	}
	return e.buf, nil
}

// AppendCanonicalWithout appends the canonical encoding of v without the
// object members for which omit returns true, as if they had never been
// there. omit is asked about the members of v itself (depth 0, parent "")
// and of the objects held directly by members down to the given depth
// (depth 1: the objects that are values of v's members, parent naming that
// member; and so on); members of deeper objects, and of objects inside
// arrays, are all kept. It fails like AppendCanonical. On error dst is
// returned unchanged.
func AppendCanonicalWithout(dst []byte, v Value, depth int, omit func(depth int, parent, name string) bool) ([]byte, error) {
	return appendWithout(dst, v, depth, omit, true)
}

// AppendJSONWithout is AppendCanonicalWithout for the compact encoding:
// members keep their document order. It fails like AppendJSON.
func AppendJSONWithout(dst []byte, v Value, depth int, omit func(depth int, parent, name string) bool) ([]byte, error) {
	return appendWithout(dst, v, depth, omit, false)
}

func appendWithout(dst []byte, v Value, depth int, omit func(int, string, string) bool, canonical bool) ([]byte, error) {
	if v.kind != KindObject || omit == nil {
		if canonical {
			return AppendCanonical(dst, v)
		}
		return AppendJSON(dst, v)
	}
	e := encoder{buf: dst, base: len(dst), canonical: canonical}
	if err := e.objectWithout(v, 1, "", 0, depth, omit); err != nil {
		return dst, err
	}
	return e.buf, nil
}

// objectWithout writes the members of an object at nesting depth (1 for
// the top) that omit keeps, in canonical order when the encoding is
// canonical and in document order otherwise; level counts the filtered
// levels above it.
func (e *encoder) objectWithout(v Value, depth int, parent string, level, maxLevel int, omit func(int, string, string) bool) error {
	if !e.canonical && !e.noCopy && e.max == 0 && !e.lenient && v.b && v.s != "" && depth-1+int(v.h) <= MaxDepthCeiling {
		if done, err := e.compactWithout(v, depth, parent, level, maxLevel, omit); done {
			return err
		}
	}
	kids := v.members()
	var small [32]int32
	idx := small[:0]
	if len(kids) > len(small) {
		idx = make([]int32, 0, len(kids))
	}
	for i := range kids {
		if !omit(level, parent, kids[i].Name) {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == len(kids) && !e.canonical && level == maxLevel {
		// Nothing left out here and no filtered level below: the object
		// encodes as a whole (a parsed compact one is copied).
		return e.value(v, depth-1)
	}
	if e.canonical {
		sortIndexes(idx, kids)
	} else if v.s == "" { // parsed objects have distinct names
		if name, dup := duplicateAmong(idx, kids); dup {
			return fmt.Errorf("json: cannot encode object: %w %s", ErrDuplicateName, strconv.Quote(truncate(name, 64)))
		}
	}
	e.buf = append(e.buf, '{')
	for k, i := range idx {
		m := &kids[i]
		if k > 0 {
			if e.canonical && m.Name == kids[idx[k-1]].Name {
				return fmt.Errorf("json: cannot encode object: %w %s", ErrDuplicateName, strconv.Quote(truncate(m.Name, 64)))
			}
			e.buf = append(e.buf, ',')
		}
		if err := e.str(m.Name); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		var err error
		if m.Value.kind == KindObject && level < maxLevel {
			if depth >= MaxDepthCeiling {
				return &LimitError{Limit: "MaxDepth", Max: MaxDepthCeiling, Offset: -1}
			}
			err = e.objectWithout(m.Value, depth+1, m.Name, level+1, maxLevel, omit)
		} else {
			err = e.value(m.Value, depth)
		}
		if err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return e.checkMax()
}

// compactWithout is objectWithout in document order for a parsed object
// whose raw span is compact: every member's text in the span is already
// its compact encoding (no whitespace, no escape sequence, so every name
// and string verbatim), so a kept member is copied from the span instead
// of encoded again, and an object that keeps every member below the
// filtered levels is copied whole. The span's layout is recomputed from
// the members and checked as it goes; if it does not match (no parsed
// value fails it), the output is rolled back and done is false, for the
// general path, as it is for an object of more than 64 members. The
// caller checked that no depth ceiling can be reached below v.
func (e *encoder) compactWithout(v Value, depth int, parent string, level, maxLevel int, omit func(int, string, string) bool) (done bool, err error) {
	kids := v.members()
	if len(kids) > 64 {
		return false, nil
	}
	var drop uint64 // bit i: kids[i] is left out
	for i := range kids {
		if omit(level, parent, kids[i].Name) {
			drop |= 1 << i
		}
	}
	if drop == 0 && level == maxLevel {
		e.buf = append(e.buf, v.s...)
		return true, nil
	}
	start := len(e.buf)
	e.buf = append(e.buf, '{')
	off := 1 // offset in v.s of the current member's text
	first := true
	for i := range kids {
		m := &kids[i]
		n := rawLen(m.Value)
		nameEnd := off + len(m.Name) + 3 // past `"name":`
		end := nameEnd + n
		if n < 0 || end >= len(v.s) || v.s[off] != '"' || v.s[nameEnd-1] != ':' || (v.s[end] != ',' && v.s[end] != '}') {
			e.buf = e.buf[:start]
			return false, nil
		}
		if drop&(1<<i) == 0 {
			if !first {
				e.buf = append(e.buf, ',')
			}
			first = false
			if m.Value.kind == KindObject && level < maxLevel {
				e.buf = append(e.buf, v.s[off:nameEnd]...)
				if err := e.objectWithout(m.Value, depth+1, m.Name, level+1, maxLevel, omit); err != nil {
					return true, err
				}
			} else {
				e.buf = append(e.buf, v.s[off:end]...)
			}
		}
		off = end + 1
	}
	if off != len(v.s) {
		e.buf = e.buf[:start]
		return false, nil
	}
	e.buf = append(e.buf, '}')
	return true, nil
}

// rawLen returns the length of v's compact text inside a compact parsed
// span, or -1 for a value no parsed span holds.
func rawLen(v Value) int {
	switch v.kind {
	case KindString:
		return len(v.s) + 2
	case KindNumber, KindArray, KindObject:
		if v.s == "" {
			return -1
		}
		return len(v.s)
	case KindBool:
		if v.b {
			return 4
		}
		return 5
	case KindNull:
		return 4
	}
	return -1
}

// duplicateAmong returns a name that occurs more than once among
// kids[idx[...]].
func duplicateAmong(idx []int32, kids []Member) (string, bool) {
	if len(idx) <= smallObject {
		for i := 1; i < len(idx); i++ {
			for j := 0; j < i; j++ {
				if kids[idx[i]].Name == kids[idx[j]].Name {
					return kids[idx[i]].Name, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(idx))
	for _, i := range idx {
		if _, ok := seen[kids[i].Name]; ok {
			return kids[i].Name, true
		}
		seen[kids[i].Name] = struct{}{}
	}
	return "", false
}

// Canonical returns the canonical encoding of v (see AppendCanonical).
func Canonical(v Value) ([]byte, error) {
	return AppendCanonical(nil, v)
}

type encoder struct {
	noCopy    bool // never copy a canonical raw span, nor filter a compact one by copying (tests compare both paths)
	buf       []byte
	base      int // len(buf) before encoding started
	max       int // output limit in bytes; 0 = none
	canonical bool
	lenient   bool // never fail (Value.String)
}

func (e *encoder) checkMax() error {
	if e.max > 0 && len(e.buf)-e.base > e.max {
		return &LimitError{Limit: "MaxOutputBytes", Max: e.max, Offset: int64(e.max)}
	}
	return nil
}

// precheck fails early if appending at least n more bytes would exceed
// the output limit.
func (e *encoder) precheck(n int) error {
	if e.max > 0 && len(e.buf)-e.base+n > e.max {
		return &LimitError{Limit: "MaxOutputBytes", Max: e.max, Offset: int64(e.max)}
	}
	return nil
}

func (e *encoder) value(v Value, depth int) error {
	switch v.kind {
	case KindNull:
		e.buf = append(e.buf, "null"...)
	case KindBool:
		if v.b {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case KindNumber:
		if canonicalInt(v.s) {
			// Already canonical, and far inside every ceiling.
			e.buf = append(e.buf, v.s...)
			break
		}
		if !e.lenient {
			if err := checkLiteral(v.s); err != nil {
				return err
			}
		}
		switch {
		case e.canonical:
			e.buf = appendCanonicalNumber(e.buf, v.s)
		case v.s == "":
			e.buf = append(e.buf, '0')
		default:
			e.buf = append(e.buf, v.s...)
		}
	case KindString:
		if err := e.precheck(len(v.s) + 2); err != nil {
			return err
		}
		if err := e.str(v.s); err != nil {
			return err
		}
	case KindArray, KindObject:
		if depth >= MaxDepthCeiling {
			if e.lenient {
				e.buf = append(e.buf, `"..."`...)
				return nil
			}
			return &LimitError{Limit: "MaxDepth", Max: MaxDepthCeiling, Offset: -1}
		}
		if v.b && v.s != "" && !e.lenient && depth+int(v.h) <= MaxDepthCeiling &&
			(!e.canonical || (!e.noCopy && v.h <= maxCanonicalCopyHeight && canonicalTree(v))) {
			// Parsed container whose raw span is already compact (and,
			// for canonical output, already canonical: compact strings
			// are escaped the same way in both forms).
			if err := e.precheck(len(v.s)); err != nil {
				return err
			}
			e.buf = append(e.buf, v.s...)
			return nil
		}
		var err error
		if v.kind == KindArray {
			err = e.array(v, depth+1)
		} else {
			err = e.object(v, depth+1)
		}
		if err != nil {
			return err
		}
	default:
		if e.lenient {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return fmt.Errorf("json: cannot encode value of invalid kind %d", v.kind)
	}
	return e.checkMax()
}

// maxCanonicalCopyHeight bounds the containers whose raw span the canonical
// encoder checks for being canonical already, so that checking nested
// containers again at each level stays linear in practice.
const maxCanonicalCopyHeight = 4

// canonicalTree reports whether v's compact encoding is also canonical:
// every object's names strictly ascending and every number canonical.
func canonicalTree(v Value) bool {
	switch v.kind {
	case KindNumber:
		return canonicalInt(v.s) || isCanonicalLiteral(v.s)
	case KindObject:
		if !namesAscending(v.members()) {
			return false
		}
		fallthrough
	case KindArray:
		kids := v.members()
		for i := range kids {
			if !canonicalTree(kids[i].Value) {
				return false
			}
		}
	}
	return true
}

// namesAscending reports whether member names strictly ascend (byte order),
// as canonical JSON writes them.
func namesAscending(kids []Member) bool {
	for i := 1; i < len(kids); i++ {
		if kids[i-1].Name >= kids[i].Name {
			return false
		}
	}
	return true
}

// isCanonicalLiteral reports whether a short number literal is spelled
// canonically.
func isCanonicalLiteral(lit string) bool {
	if lit == "" || len(lit) > 40 {
		return false
	}
	var buf [64]byte
	return string(appendCanonicalNumber(buf[:0], lit)) == lit
}

func (e *encoder) array(v Value, depth int) error {
	e.buf = append(e.buf, '[')
	kids := v.members()
	for i := range kids {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.value(kids[i].Value, depth); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

func (e *encoder) object(v Value, depth int) error {
	kids := v.members()
	if e.canonical {
		return e.canonicalObject(kids, depth)
	}
	// Parsed objects (non-empty raw span) are known to have distinct names.
	if !e.lenient && v.s == "" {
		if name, dup := findDuplicate(kids); dup {
			return fmt.Errorf("json: cannot encode object: %w %s", ErrDuplicateName, strconv.Quote(truncate(name, 64)))
		}
	}
	e.buf = append(e.buf, '{')
	for i := range kids {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.str(kids[i].Name); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if err := e.value(kids[i].Value, depth); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

func (e *encoder) canonicalObject(kids []Member, depth int) error {
	sorted := namesAscending(kids)
	// Sort a permutation rather than the members themselves: indexes hold
	// no pointers, so small ones live on the stack and moves are cheap.
	var small [32]int32
	var idx []int32
	if !sorted {
		if len(kids) <= len(small) {
			idx = small[:len(kids)]
		} else {
			idx = make([]int32, len(kids))
		}
		for i := range idx {
			idx[i] = int32(i)
		}
		sortIndexes(idx, kids)
		for i := 1; i < len(idx); i++ {
			if name := kids[idx[i]].Name; name == kids[idx[i-1]].Name {
				return fmt.Errorf("json: cannot encode object: %w %s", ErrDuplicateName, strconv.Quote(truncate(name, 64)))
			}
		}
	}
	e.buf = append(e.buf, '{')
	for i := range kids {
		m := &kids[i]
		if !sorted {
			m = &kids[idx[i]]
		}
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.str(m.Name); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if err := e.value(m.Value, depth); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// sortIndexes sorts idx so that kids[idx[i]].Name ascend (byte order).
func sortIndexes(idx []int32, kids []Member) {
	if len(idx) <= 16 {
		for i := 1; i < len(idx); i++ {
			for j := i; j > 0 && kids[idx[j]].Name < kids[idx[j-1]].Name; j-- {
				idx[j], idx[j-1] = idx[j-1], idx[j]
			}
		}
		return
	}
	slices.SortFunc(idx, func(a, b int32) int { return strings.Compare(kids[a].Name, kids[b].Name) })
}

// findDuplicate returns a name occurring more than once in ms.
func findDuplicate(ms []Member) (string, bool) {
	if len(ms) <= smallObject {
		for i := 1; i < len(ms); i++ {
			for j := 0; j < i; j++ {
				if ms[i].Name == ms[j].Name {
					return ms[i].Name, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(ms))
	for i := range ms {
		if _, ok := seen[ms[i].Name]; ok {
			return ms[i].Name, true
		}
		seen[ms[i].Name] = struct{}{}
	}
	return "", false
}

const lowerHex = "0123456789abcdef"

// str appends s as a JSON string.
func (e *encoder) str(s string) error {
	buf := append(e.buf, '"')
	run := 0
	for i := 0; i < len(s); {
		if i = plainASCII(s, i); i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[run:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&15])
			}
			i++
			run = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if !e.lenient {
				e.buf = buf
				return fmt.Errorf("json: cannot encode string %s: %w at byte %d", strconv.Quote(truncate(s, 32)), ErrInvalidUTF8, i)
			}
			buf = append(buf, s[run:i]...)
			buf = append(buf, "\uFFFD"...)
			i++
			run = i
			continue
		}
		i += size
	}
	buf = append(buf, s[run:]...)
	e.buf = append(buf, '"')
	return nil
}
