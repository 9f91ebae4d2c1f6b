package uritemplate

import (
	"math/bits"
	"strings"
	"unicode/utf8"
)

// MaxMatchSteps bounds the work of one [Template.Match] call. The base
// cost of a match is (units+1)*(len(uri)+1), where units is the number of
// steps the template compiles to (one per literal run, one per variable of
// a non-query expression and one per query expression); the bytes scanned
// while reading query parameters are charged on top. A match whose cost
// exceeds MaxMatchSteps fails. The actual work is proportional to the
// cost.
const MaxMatchSteps = 8388608

type unitKind uint8

const (
	unitLit   unitKind = iota // literal text
	unitCap                   // one variable value
	unitQuery                 // a {?...} or {&...} expression
)

// capClass is the set of URI characters a captured value may consist of.
type capClass uint8

const (
	// classSimple: any byte except '/', '?' and '#'; '%' must start a
	// valid triplet; the value is pct-decoded and must be valid UTF-8.
	classSimple capClass = iota
	// classReserved: unreserved and reserved characters except '?' and
	// '#', plus pct-encoded triplets; the value is returned verbatim.
	classReserved
	// classFragment: unreserved and reserved characters except '#', plus
	// pct-encoded triplets; the value is returned verbatim.
	classFragment
	// classQuery: the value of a query parameter: any byte except '&' and
	// '#'; pct-decoded and valid UTF-8.
	classQuery
)

func (c capClass) raw() bool { return c == classReserved || c == classFragment }

type qname struct {
	name     string
	varIdx   int
	maxRunes int
}

type unit struct {
	kind     unitKind
	lit      string   // unitLit: literal symbols, see litSymbols
	fail     []int32  // unitLit: KMP failure function of lit
	class    capClass // unitCap
	varIdx   int      // unitCap
	maxRunes int      // unitCap; 0 means unlimited
	first    byte     // unitQuery: '?' or '&'
	qnames   []qname  // unitQuery
}

// compile turns the parsed parts into a sequence of matching units:
// literals (adjacent ones merged), single-variable captures and query
// expressions. Operator prefixes, separators and ";name=" become literals.
func compile(parts []part) []unit {
	var us []unit
	addLit := func(s string) {
		if s == "" {
			return
		}
		if n := len(us); n > 0 && us[n-1].kind == unitLit {
			us[n-1].lit += s
			return
		}
		us = append(us, unit{kind: unitLit, lit: s})
	}
	for _, pt := range parts {
		switch pt.op {
		case opLiteral:
			addLit(pt.lit)
		case '?', '&':
			u := unit{kind: unitQuery, first: pt.op}
			for _, sp := range pt.specs {
				u.qnames = append(u.qnames, qname{name: sp.name, varIdx: sp.varIdx, maxRunes: sp.prefix})
			}
			us = append(us, u)
		default:
			cls, first, sep := classSimple, "", ","
			switch pt.op {
			case '+':
				cls = classReserved
			case '#':
				cls, first = classFragment, "#"
			case '.':
				first, sep = ".", "."
			case '/':
				first, sep = "/", "/"
			case ';':
				first, sep = ";", ";"
			}
			for i, sp := range pt.specs {
				if i == 0 {
					addLit(first)
				} else {
					addLit(sep)
				}
				if pt.op == ';' {
					addLit(sp.name + "=")
				}
				us = append(us, unit{kind: unitCap, class: cls, varIdx: sp.varIdx, maxRunes: sp.prefix})
			}
		}
	}
	for i := range us {
		if u := &us[i]; u.kind == unitLit {
			u.lit = litSymbols(u.lit)
			u.fail = kmpFailure(u.lit)
		}
	}
	return us
}

// litSymbols converts literal text to the symbol string it is matched as:
// a pct-encoded triplet for a non-ASCII byte becomes that byte, everything
// else stays as is. URIs are read the same way (see uriToken), so a
// non-ASCII character matches both its raw and its pct-encoded form.
func litSymbols(text string) string {
	var b []byte
	for i := 0; i < len(text); i++ {
		if sym, size := uriToken(text, i); size == 3 {
			if b == nil {
				b = append(make([]byte, 0, len(text)), text[:i]...)
			}
			b = append(b, sym)
			i += 2
		} else if b != nil {
			b = append(b, sym)
		}
	}
	if b == nil {
		return text
	}
	return string(b)
}

// kmpFailure returns the Knuth-Morris-Pratt failure function of p: f[i] is
// the length of the longest proper prefix of p[:i+1] that is also its
// suffix.
func kmpFailure(p string) []int32 {
	f := make([]int32, len(p))
	k := int32(0)
	for i := 1; i < len(p); i++ {
		for k > 0 && p[i] != p[k] {
			k = f[k-1]
		}
		if p[i] == p[k] {
			k++
		}
		f[i] = k
	}
	return f
}

// uriToken reads the symbol at s[pos]: a pct-encoded triplet whose value is
// a non-ASCII byte is that byte (size 3); any other byte is itself.
func uriToken(s string, pos int) (sym byte, size int) {
	if s[pos] == '%' && pos+2 < len(s) && isHex(s[pos+1]) && isHex(s[pos+2]) {
		if b := unhex(s[pos+1])<<4 | unhex(s[pos+2]); b >= utf8.RuneSelf {
			return b, 3
		}
	}
	return s[pos], 1
}

// uriTokenBefore reads the symbol that ends at s[end-1]. Triplets cannot
// overlap, so this agrees with reading forward with uriToken.
func uriTokenBefore(s string, end int) (sym byte, size int) {
	if end >= 3 && s[end-3] == '%' && isHex(s[end-2]) && isHex(s[end-1]) {
		if b := unhex(s[end-2])<<4 | unhex(s[end-1]); b >= utf8.RuneSelf {
			return b, 3
		}
	}
	return s[end-1], 1
}

// Match reports whether uri is an expansion of the template and, if so,
// returns the variable values. It is the inverse of [Template.Expand] for
// the following expression forms:
//
//   - {var} (and {a,b} as "a,b"): one or more characters other than '/',
//     '?' and '#'. The value is pct-decoded; an invalid pct-encoding or a
//     value that does not decode to valid UTF-8 prevents the match. Values
//     are never empty.
//   - {.var}, {/var} and {;var}: the operator character ('.', '/' or
//     ";var=") followed by a value as for {var}. {/var} is thus one
//     non-empty path segment.
//   - {+var} and {#var}: one or more unreserved or reserved characters or
//     pct-encoded triplets, excluding '?' and '#' for {+var} (it spans
//     path segments but stops at the query) and excluding '#' for {#var}
//     (which starts with '#'). The value is returned exactly as it appears
//     in the URI, not decoded, as reserved expansion would reproduce it.
//   - {?a,b} and {&a,b}: either nothing (all variables absent) or '?'
//     (respectively '&') followed by '&'-separated name=value pairs whose
//     names are variables of the expression, in any order, each at most
//     once; a name that is not a variable of the expression, or one
//     already seen, ends the expression. A pair runs to the next '&' or
//     '#' or the end of the URI, except that the value of the last pair
//     may stop earlier when literal text of the template follows; "name"
//     without '=' means an empty value. Values are pct-decoded like {var}.
//     Absent variables are missing from the result.
//
// Prefix modifiers (:N) limit the value to N characters; explode modifiers
// have no effect on string values. Literal text must match exactly
// (ASCII is case-sensitive, and so are pct-encoded ASCII characters), except
// that a non-ASCII byte and its pct-encoded form (hex digits in either
// case) are interchangeable, in the URI as well as in the template: "ü/"
// matches both "ü/" and "%C3%BC/", the form Expand produces.
//
// When a URI can be split in several ways, Match picks one deterministic
// split in which later expressions take the shortest possible values (so
// earlier ones the longest).
//
// A template that references some variable more than once (such as
// "{x}/{x}" or "{?x}{&x}") never matches: recovering one value consistent
// with every occurrence would require unbounded backtracking. Such
// templates can still be expanded; [Template.Matchable] reports this case.
//
// Matching never backtracks: it runs in time linear in len(uri) times the
// template size, plus the query parameters it scans, and gives up (reports
// no match) when that cost exceeds [MaxMatchSteps]. The returned map is
// non-nil on success and owned by the caller.
func (t *Template) Match(uri string) (map[string]string, bool) {
	if !t.Matchable() {
		return nil, false
	}
	m := matcher{units: t.units, vars: t.vars, uri: uri}
	return m.run()
}

// Matchable reports whether [Template.Match] can ever succeed for t, which
// is the case unless t is nil or references a variable more than once.
func (t *Template) Matchable() bool {
	return t != nil && !t.repeated
}

type matcher struct {
	units []unit
	vars  []string
	uri   string
	steps int
	ring  []int32 // scratch buffer for litScan
}

func (m *matcher) run() (map[string]string, bool) {
	n, nu := len(m.uri), len(m.units)
	base := uint64(nu+1) * uint64(n+1)
	if base > MaxMatchSteps {
		return nil, false
	}
	m.steps = int(base)
	words := n/64 + 1
	store := make([]uint64, (nu+1)*words)
	reach := func(i int) bitset { return bitset(store[i*words : (i+1)*words]) }
	reach(0).set(0)

	for i := range m.units {
		u := &m.units[i]
		in, out := reach(i), reach(i+1)
		first := in.next(0)
		if first < 0 {
			return nil, false
		}
		switch u.kind {
		case unitLit:
			m.litScan(u, in, out, first)
		case unitCap:
			m.sweep(u, in, out, first, -1)
		case unitQuery:
			for p := first; p >= 0; p = in.next(p + 1) {
				out.set(p) // all variables absent
				m.queryWalk(u, p, out, -1)
				if m.steps > MaxMatchSteps {
					return nil, false
				}
			}
		}
	}
	if !reach(nu).has(n) {
		return nil, false
	}

	// Walk back from the end, choosing for every unit the latest start
	// that was reachable.
	vals := make(map[string]string, len(m.vars))
	cur := n
	for i := nu - 1; i >= 0; i-- {
		u := &m.units[i]
		in := reach(i)
		switch u.kind {
		case unitLit:
			p, ok := m.litBackward(u.lit, cur)
			if !ok || !in.has(p) {
				return nil, false
			}
			cur = p
		case unitCap:
			p := m.sweep(u, in, nil, m.runStart(u.class, cur), cur)
			if p < 0 {
				return nil, false
			}
			v := m.uri[p:cur]
			if !u.class.raw() {
				v = pctDecode(v)
			}
			if !assign(vals, m.vars[u.varIdx], v) {
				return nil, false
			}
			cur = p
		case unitQuery:
			// Prefer the latest start from which at least one parameter
			// leads to cur; walks never cross '#'.
			best := -1
			for p := in.next(m.fragmentStart(cur)); p >= 0 && p < cur; p = in.next(p + 1) {
				if m.queryWalk(u, p, nil, cur) {
					best = p
				}
				if m.steps > MaxMatchSteps {
					return nil, false
				}
			}
			if best >= 0 {
				if !m.queryCollect(u, best, cur, vals) {
					return nil, false
				}
				cur = best
			} else if !in.has(cur) {
				return nil, false
			}
		}
	}
	if cur != 0 {
		return nil, false
	}
	return vals, true
}

// assign records v for name and reports whether it is consistent with an
// earlier occurrence of the same variable.
func assign(vals map[string]string, name, v string) bool {
	if old, ok := vals[name]; ok && old != v {
		return false
	}
	vals[name] = v
	return true
}

// litScan finds every occurrence of literal unit u that starts at a
// position in in, reading the URI as symbols (see uriToken) from the
// reachable position first, and adds the occurrence ends to out. It is a
// Knuth-Morris-Pratt scan, linear in the URI length.
func (m *matcher) litScan(u *unit, in, out bitset, first int) {
	s, lit := m.uri, u.lit
	n := len(lit)
	if cap(m.ring) < n {
		m.ring = make([]int32, n)
	}
	ring := m.ring[:n] // start offsets of the last n symbols
	k, count := 0, 0
	for pos := first; pos < len(s); {
		if k == 0 {
			// No partial match pending: skip to the next possible
			// start, a reachable position and hence a symbol boundary.
			if pos = in.next(pos); pos < 0 || pos >= len(s) {
				return
			}
		}
		sym, size := uriToken(s, pos)
		ring[count%n] = int32(pos)
		count++
		for k > 0 && lit[k] != sym {
			k = int(u.fail[k-1])
		}
		if lit[k] == sym {
			k++
		}
		pos += size
		if k == n {
			if in.has(int(ring[(count-n)%n])) {
				out.set(pos)
			}
			k = int(u.fail[n-1])
		}
	}
}

// litBackward matches the literal symbols lit so that they end at
// uri[end] and returns their start.
func (m *matcher) litBackward(lit string, end int) (int, bool) {
	s := m.uri
	q := end
	for i := len(lit) - 1; i >= 0; i-- {
		if q == 0 {
			return 0, false
		}
		sym, size := uriTokenBefore(s, q)
		if sym != lit[i] {
			return 0, false
		}
		q -= size
	}
	return q, true
}

// Byte sets as pairs of 64-bit masks (bytes 0-63 and 64-127).
const (
	digitsLo     = 0x3FF << '0'
	upperHi      = 0x3FFFFFF << ('A' - 64)
	lowerHi      = 0x3FFFFFF << ('a' - 64)
	unreservedLo = digitsLo | 1<<'-' | 1<<'.'
	unreservedHi = upperHi | lowerHi | 1<<('_'-64) | 1<<('~'-64)
	reservedLo   = 1<<':' | 1<<'/' | 1<<'?' | 1<<'#' | 1<<'!' | 1<<'$' | 1<<'&' | 1<<'\'' |
		1<<'(' | 1<<')' | 1<<'*' | 1<<'+' | 1<<',' | 1<<';' | 1<<'='
	reservedHi = 1<<('['-64) | 1<<(']'-64) | 1<<('@'-64)
	// Characters admitted in raw (reserved/fragment) values besides '%'.
	rawLo = unreservedLo | reservedLo
	rawHi = unreservedHi | reservedHi
)

func inSet(c byte, lo, hi uint64) bool {
	if c < 64 {
		return lo&(1<<c) != 0
	}
	if c < 128 {
		return hi&(1<<(c-64)) != 0
	}
	return false
}

// excludedByte reports whether a byte other than '%' can never be part of a
// value of class cls.
func excludedByte(c byte, cls capClass) bool {
	switch cls {
	case classSimple:
		return c == '/' || c == '?' || c == '#'
	case classQuery:
		return c == '&' || c == '#'
	case classReserved:
		return c == '?' || c == '#' || !inSet(c, rawLo, rawHi)
	default: // classFragment
		return c == '#' || !inSet(c, rawLo, rawHi)
	}
}

// tokenLen returns the length of the token at s[pos] if it may be part of
// a value of class cls: 3 for a valid pct-encoded triplet, 1 for another
// admissible byte, 0 otherwise (including '%' not followed by two hex
// digits).
func tokenLen(s string, pos int, cls capClass) int {
	c := s[pos]
	if c == '%' {
		if pos+2 < len(s) && isHex(s[pos+1]) && isHex(s[pos+2]) {
			return 3
		}
		return 0
	}
	if excludedByte(c, cls) {
		return 0
	}
	return 1
}

// utf8SeqLen returns the length of the UTF-8 sequence introduced by lead
// byte b, or 0 when b cannot start a sequence.
func utf8SeqLen(b byte) int {
	switch {
	case b >= 0xC2 && b <= 0xDF:
		return 2
	case b >= 0xE0 && b <= 0xEF:
		return 3
	case b >= 0xF0 && b <= 0xF4:
		return 4
	}
	return 0
}

// runeAt decodes the character of class cls at s[pos], whose token length
// is l > 0. It returns the number of bytes of s it spans, the number of
// characters it counts for a prefix modifier, and whether it is valid. For
// decoding classes the character is one UTF-8 encoded rune whose bytes may
// be raw or pct-encoded; for raw classes it is one token (a triplet counts
// as three characters, as in the value Expand would truncate).
func runeAt(s string, pos, l int, cls capClass) (size, chars int, ok bool) {
	if cls.raw() {
		return l, l, true
	}
	b := s[pos]
	if l == 3 {
		b = unhex(s[pos+1])<<4 | unhex(s[pos+2])
	}
	if b < utf8.RuneSelf {
		return l, 1, true
	}
	need := utf8SeqLen(b)
	if need == 0 {
		return l, 0, false
	}
	var buf [utf8.UTFMax]byte
	buf[0] = b
	q := pos + l
	for k := 1; k < need; k++ {
		if q >= len(s) {
			return l, 0, false
		}
		tl := tokenLen(s, q, cls)
		if tl == 0 {
			return l, 0, false
		}
		c := s[q]
		if tl == 3 {
			c = unhex(s[q+1])<<4 | unhex(s[q+2])
		}
		buf[k] = c
		q += tl
	}
	if _, sz := utf8.DecodeRune(buf[:need]); sz != need {
		return l, 0, false
	}
	return q - pos, 1, true
}

// runStart returns the start of the run of bytes that may belong to a
// value of class cls and that ends at end. It is a token boundary.
func (m *matcher) runStart(cls capClass, end int) int {
	s := m.uri
	p := end
	for p > 0 && (s[p-1] == '%' || !excludedByte(s[p-1], cls)) {
		p--
	}
	return p
}

// sweep processes capture unit u in one left-to-right pass starting at the
// token boundary from. A capture may start at any position in in and may
// end at any later character boundary of the same run, provided the value
// in between is valid and within the prefix limit. Tracking only the
// latest start suffices because it yields the shortest, hence most
// permissive, value.
//
// With out != nil every reachable end is added to out. With target >= 0
// the pass stops at target and returns the latest valid start of a
// capture ending there, or -1.
func (m *matcher) sweep(u *unit, in, out bitset, from, target int) int {
	s := m.uri
	limit := len(s)
	if target >= 0 {
		limit = target
	}
	pos, active, cnt := from, -1, 0
	for {
		if active >= 0 {
			if u.maxRunes == 0 || cnt <= u.maxRunes {
				if pos == target {
					return active
				}
				if out != nil {
					out.set(pos)
				}
			} else {
				active = -1 // the count only grows until the next start
			}
		}
		if active < 0 {
			// No capture in progress: skip to the next possible start,
			// which is a reachable position and hence a token boundary.
			if pos = in.next(pos); pos < 0 || pos > limit {
				return -1
			}
		}
		if pos >= limit {
			return -1
		}
		l := tokenLen(s, pos, u.class)
		if l == 0 {
			active = -1
			pos++
			continue
		}
		if in.has(pos) {
			active, cnt = pos, 0
		}
		size, chars, ok := runeAt(s, pos, l, u.class)
		if !ok {
			active = -1
			pos += l
			continue
		}
		cnt += chars
		pos += size
	}
}

// pairBounds returns the end of the name=value pair that follows the
// delimiter at s[pos] (the next '&' or '#', or the end of the URI) and the
// offset of its first '=' (-1 if none).
func (m *matcher) pairBounds(pos int) (end, eq int) {
	s := m.uri
	eq = -1
	end = pos + 1
	for end < len(s) && s[end] != '&' && s[end] != '#' {
		if eq < 0 && s[end] == '=' {
			eq = end
		}
		end++
	}
	m.steps += end - pos
	return end, eq
}

// pick returns the index of the first query variable of u that is not in
// seen, is called name and admits a value of chars characters, or -1.
func pick(u *unit, seen uint64, name string, chars int) int {
	for i, qn := range u.qnames {
		if seen&(1<<uint(i)) == 0 && qn.name == name && (qn.maxRunes == 0 || chars <= qn.maxRunes) {
			return i
		}
	}
	return -1
}

// queryWalk follows the parameters of query unit u starting at p. The unit
// may end after any complete parameter, and also inside the value of the
// last one at any character boundary (so that literal text may follow a
// query expression). With out != nil every such end is added to out; with
// target >= 0 queryWalk reports whether target is such an end.
func (m *matcher) queryWalk(u *unit, p int, out bitset, target int) bool {
	s := m.uri
	if p >= len(s) || s[p] != u.first {
		return false
	}
	reached := func(c int) bool {
		if out != nil {
			out.set(c)
		}
		return c == target
	}
	var seen uint64
	for pos := p; target < 0 || pos < target; {
		end, eq := m.pairBounds(pos)
		k := -1
		if eq < 0 {
			name := s[pos+1 : end]
			if k = pick(u, seen, name, 0); k >= 0 && reached(end) {
				return true
			}
		} else {
			name := s[pos+1 : eq]
			chars := 0
			for c := eq + 1; ; {
				if k = pick(u, seen, name, chars); k >= 0 && reached(c) {
					return true
				}
				if c == end {
					break
				}
				if target >= 0 && c >= target {
					return false
				}
				l := tokenLen(s, c, classQuery)
				if l == 0 {
					return false
				}
				size, _, ok := runeAt(s, c, l, classQuery)
				if !ok {
					return false
				}
				chars++
				c += size
			}
		}
		if k < 0 || end >= len(s) || s[end] != '&' {
			return false
		}
		seen |= 1 << uint(k)
		pos = end
	}
	return false
}

// fragmentStart returns the offset just past the last '#' before end, or 0.
func (m *matcher) fragmentStart(end int) int {
	return strings.LastIndexByte(m.uri[:end], '#') + 1
}

// queryCollect re-walks query unit u from p to end, as queryForward did,
// and records the values.
func (m *matcher) queryCollect(u *unit, p, end int, vals map[string]string) bool {
	s := m.uri
	if p >= len(s) || s[p] != u.first {
		return false
	}
	var seen uint64
	for pos := p; pos < end; {
		pairEnd, eq := m.pairBounds(pos)
		name, val := s[pos+1:pairEnd], ""
		last := end <= pairEnd
		if eq >= 0 {
			if end <= eq {
				return false
			}
			name = s[pos+1 : eq]
			if last {
				val = s[eq+1 : end]
			} else {
				val = s[eq+1 : pairEnd]
			}
		} else if last && end != pairEnd {
			return false
		}
		chars, ok := scanValue(val)
		if !ok {
			return false
		}
		k := pick(u, seen, name, chars)
		if k < 0 || !assign(vals, m.vars[u.qnames[k].varIdx], pctDecode(val)) {
			return false
		}
		if last {
			return true
		}
		seen |= 1 << uint(k)
		pos = pairEnd
	}
	return false
}

// scanValue validates a query value (pct-encoding and UTF-8 of the decoded
// bytes) and returns its length in characters.
func scanValue(v string) (int, bool) {
	chars := 0
	for pos := 0; pos < len(v); {
		l := tokenLen(v, pos, classQuery)
		if l == 0 {
			return 0, false
		}
		size, _, ok := runeAt(v, pos, l, classQuery)
		if !ok {
			return 0, false
		}
		chars++
		pos += size
	}
	return chars, true
}

// pctDecode decodes pct-encoded triplets; s must contain only valid ones.
func pctDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// bitset is a set of offsets 0..len(uri).
type bitset []uint64

func (b bitset) set(i int) { b[i>>6] |= 1 << (uint(i) & 63) }

func (b bitset) has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }

// next returns the smallest member >= i, or -1.
func (b bitset) next(i int) int {
	w := i >> 6
	if i < 0 || w >= len(b) {
		return -1
	}
	if x := b[w] >> (uint(i) & 63); x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	for w++; w < len(b); w++ {
		if b[w] != 0 {
			return w<<6 + bits.TrailingZeros64(b[w])
		}
	}
	return -1
}
