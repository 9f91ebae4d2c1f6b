package exactjson

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse parses data as exactly one strict JSON value (see the package
// documentation for the rules), enforcing lim (zero fields mean defaults).
// Errors are *SyntaxError or *LimitError with the byte offset, or an error
// from lim.Validate. The result does not alias data: Parse copies data
// once and the value's strings refer to that copy.
func Parse(data []byte, lim Limits) (Value, error) {
	if err := lim.Validate(); err != nil {
		return Value{}, err
	}
	lim = lim.resolved()
	if len(data) > lim.MaxInputBytes {
		return Value{}, &LimitError{Limit: "MaxInputBytes", Max: lim.MaxInputBytes, Offset: int64(lim.MaxInputBytes)}
	}
	p := parser{src: string(data), lim: lim}
	return p.document()
}

// ParseString is like Parse but takes a string, which it does not copy.
func ParseString(s string, lim Limits) (Value, error) {
	if err := lim.Validate(); err != nil {
		return Value{}, err
	}
	lim = lim.resolved()
	if len(s) > lim.MaxInputBytes {
		return Value{}, &LimitError{Limit: "MaxInputBytes", Max: lim.MaxInputBytes, Offset: int64(lim.MaxInputBytes)}
	}
	p := parser{src: s, lim: lim}
	return p.document()
}

// A Parser parses documents like [ParseString] and [Parse], keeping its
// scratch space from one document to the next, so that parsing many
// documents allocates little more than their values. Values never share the
// scratch space. The zero Parser is ready to use. A Parser is not safe for
// concurrent use: give each goroutine its own, or pool them.
type Parser struct {
	stack []Member // cleared between documents
	// lim was validated, and resolved is its resolved form (checked once
	// for a Parser that keeps parsing with the same limits).
	lim, resolved Limits
	valid         bool
}

// maxParserStack bounds the scratch a Parser keeps (members): a rare huge
// document does not pin its scratch.
const maxParserStack = 64

// limits validates and resolves lim, remembering the last limits.
func (ps *Parser) limits(lim Limits) (Limits, error) {
	if !ps.valid || !lim.same(ps.lim) {
		if err := lim.Validate(); err != nil {
			return Limits{}, err
		}
		ps.lim, ps.resolved, ps.valid = lim, lim.resolved(), true
	}
	return ps.resolved, nil
}

// ParseString is like the package-level [ParseString].
func (ps *Parser) ParseString(s string, lim Limits) (Value, error) {
	lim, err := ps.limits(lim)
	if err != nil {
		return Value{}, err
	}
	if len(s) > lim.MaxInputBytes {
		return Value{}, &LimitError{Limit: "MaxInputBytes", Max: lim.MaxInputBytes, Offset: int64(lim.MaxInputBytes)}
	}
	p := parser{src: s, lim: lim, stack: ps.stack[:0], kept: true}
	v, err := p.document()
	// Keep the scratch (grown, if it did, within bounds) with nothing of
	// this document left in it: entries up to the deepest use (take
	// records it; an error may leave entries pushed).
	high := max(p.high, len(p.stack))
	if cap(p.stack) <= maxParserStack && !p.tiny {
		clear(p.stack[:high])
		ps.stack = p.stack[:0]
	} else {
		clear(ps.stack[:min(high, cap(ps.stack))])
	}
	return v, err
}

// Parse is like the package-level [Parse].
func (ps *Parser) Parse(data []byte, lim Limits) (Value, error) {
	res, err := ps.limits(lim)
	if err != nil {
		return Value{}, err
	}
	if len(data) > res.MaxInputBytes {
		return Value{}, &LimitError{Limit: "MaxInputBytes", Max: res.MaxInputBytes, Offset: int64(res.MaxInputBytes)}
	}
	return ps.ParseString(string(data), lim)
}

// Valid reports whether data is one strict JSON value within lim, returning
// the error Parse would return.
func Valid(data []byte, lim Limits) error {
	_, err := Parse(data, lim)
	return err
}

type parser struct {
	src   string
	lim   Limits
	nodes int
	pos   int // offset of the most recently closed container's end
	// dirty counts whitespace runs and escape sequences seen; a container
	// whose span saw none is byte-identical to its compact encoding.
	dirty int
	// stack is scratch space for the children of open containers.
	stack []Member
	// slab is the unused tail of the current chunk from which the exact
	// sized children slices of closed containers are carved.
	slab []Member
	// members bounds the members and elements of the whole document (see
	// take); taken counts those carved so far.
	members, taken int
	// tiny: stack shares its allocation with the slab (see document).
	tiny bool
	// kept: the stack is a Parser's, kept for its next document, so a
	// tiny document does not share it with the slab either.
	kept bool
	// high is the largest length the stack reached.
	high int
}

// take returns a copy of the top n members of p.stack, allocated from the
// slab, and pops them.
func (p *parser) take(base int) []Member {
	n := len(p.stack) - base
	p.high = max(p.high, len(p.stack))
	if len(p.slab) < n {
		// Size chunks by what is left to carve: a document has at most
		// one member or element per ',', '{' and '[' (exactly that many
		// when no string contains those bytes), so one chunk usually
		// holds them all, whatever the length of the strings. Chunks hold
		// at least n and at most 4096 members.
		size := max(min(p.members-p.taken, 4096), n)
		p.slab = make([]Member, size)
	}
	p.taken += n
	kids := p.slab[:n:n]
	p.slab = p.slab[n:]
	copy(kids, p.stack[base:])
	// No need to clear the popped entries: the stack dies with the parser.
	p.stack = p.stack[:base]
	return kids
}

func (p *parser) document() (Value, error) {
	p.members = strings.Count(p.src, ",") + strings.Count(p.src, "{") + strings.Count(p.src, "[")
	if m := p.members; m > 0 && m <= 4 && cap(p.stack) < m && !p.kept {
		// A tiny document without scratch gets one allocation: the
		// scratch stack never holds more than all members, and the slab
		// exactly all of them. A Parser's scratch is allocated apart
		// instead, once, and kept: its later tiny documents allocate
		// only their members.
		buf := make([]Member, 2*m)
		p.stack, p.slab, p.tiny = buf[:0:m], buf[m:], true
	}
	if strings.HasPrefix(p.src, "\uFEFF") {
		return Value{}, p.syntax(0, "unexpected byte order mark (U+FEFF) at start of input")
	}
	i := p.ws(0)
	if i >= len(p.src) {
		return Value{}, p.syntax(i, "unexpected end of input (expected a JSON value)")
	}
	v, i, err := p.value(i, 0)
	if err != nil {
		return Value{}, err
	}
	i = p.ws(i)
	if i < len(p.src) {
		return Value{}, p.syntax(i, "invalid character "+describeByte(p.src, i)+" after top-level value")
	}
	return v, nil
}

func (p *parser) syntax(off int, msg string) error {
	return &SyntaxError{Offset: int64(off), Msg: msg}
}

// ws skips JSON whitespace.
func (p *parser) ws(i int) int {
	j := i
	for j < len(p.src) {
		switch p.src[j] {
		case ' ', '\t', '\n', '\r':
			j++
			continue
		}
		break
	}
	if j != i {
		p.dirty++
	}
	return j
}

// value parses the value starting at p.src[i], which must exist. depth is
// the depth of the enclosing container (0 at top level).
func (p *parser) value(i, depth int) (Value, int, error) {
	p.nodes++
	if p.nodes > p.lim.MaxNodes {
		return Value{}, i, &LimitError{Limit: "MaxNodes", Max: p.lim.MaxNodes, Offset: int64(i)}
	}
	switch c := p.src[i]; c {
	case '{':
		return p.object(i, depth+1)
	case '[':
		return p.array(i, depth+1)
	case '"':
		s, j, err := p.str(i)
		return Value{kind: KindString, s: s}, j, err
	case 't':
		if strings.HasPrefix(p.src[i:], "true") {
			return Value{kind: KindBool, b: true}, i + 4, nil
		}
	case 'f':
		if strings.HasPrefix(p.src[i:], "false") {
			return Value{kind: KindBool}, i + 5, nil
		}
	case 'n':
		if strings.HasPrefix(p.src[i:], "null") {
			return Value{}, i + 4, nil
		}
	default:
		if c == '-' || isDigit(c) {
			j, err := scanNumber(p.src, i, &p.lim)
			if err != nil {
				return Value{}, j, err
			}
			return Value{kind: KindNumber, s: p.src[i:j]}, j, nil
		}
	}
	return Value{}, i, p.syntax(i, "invalid character "+describeByte(p.src, i)+" looking for beginning of value")
}

func (p *parser) eof(i int, in string) error {
	return p.syntax(i, "unexpected end of input in "+in)
}

func (p *parser) array(start, depth int) (Value, int, error) {
	if depth > p.lim.MaxDepth {
		return Value{}, start, &LimitError{Limit: "MaxDepth", Max: p.lim.MaxDepth, Offset: int64(start)}
	}
	d0 := p.dirty
	i := p.ws(start + 1)
	if i >= len(p.src) {
		return Value{}, i, p.eof(i, "array")
	}
	if p.src[i] == ']' {
		return Value{kind: KindArray, s: p.src[start : i+1], b: p.dirty == d0, h: 1}, i + 1, nil
	}
	if p.stack == nil {
		p.stack = make([]Member, 0, min(p.members, 16))
	}
	base := len(p.stack)
	var h uint16 // height of the tallest child
	for {
		v, j, err := p.value(i, depth)
		if err != nil {
			return Value{}, j, err
		}
		h = max(h, v.h)
		p.stack = append(p.stack, Member{Value: v})
		i = p.ws(j)
		if i >= len(p.src) {
			return Value{}, i, p.eof(i, "array")
		}
		if c := p.src[i]; c == ',' {
			i = p.ws(i + 1)
			if i >= len(p.src) {
				return Value{}, i, p.eof(i, "array")
			}
			continue
		} else if c == ']' {
			break
		}
		return Value{}, i, p.syntax(i, "invalid character "+describeByte(p.src, i)+" after array element (expected ',' or ']')")
	}
	p.pos = i
	kids := p.take(base)
	v := containerOf(KindArray, kids)
	v.s, v.b, v.h = p.src[start:i+1], p.dirty == d0, h+1
	return v, i + 1, nil
}

func (p *parser) object(start, depth int) (Value, int, error) {
	if depth > p.lim.MaxDepth {
		return Value{}, start, &LimitError{Limit: "MaxDepth", Max: p.lim.MaxDepth, Offset: int64(start)}
	}
	d0 := p.dirty
	i := p.ws(start + 1)
	if i >= len(p.src) {
		return Value{}, i, p.eof(i, "object")
	}
	if p.src[i] == '}' {
		return Value{kind: KindObject, s: p.src[start : i+1], b: p.dirty == d0, h: 1}, i + 1, nil
	}
	if p.stack == nil {
		p.stack = make([]Member, 0, min(p.members, 16))
	}
	base := len(p.stack)
	var h uint16                 // height of the tallest child
	var seen map[string]struct{} // used above smallObject members
	for {
		if p.src[i] != '"' {
			return Value{}, i, p.syntax(i, "invalid character "+describeByte(p.src, i)+" looking for beginning of object member name")
		}
		nameOff := i
		name, j, err := p.str(i)
		if err != nil {
			return Value{}, j, err
		}
		if seen != nil {
			if _, dup := seen[name]; dup {
				return Value{}, nameOff, p.dupName(nameOff, name)
			}
			seen[name] = struct{}{}
		} else {
			for k := base; k < len(p.stack); k++ {
				if p.stack[k].Name == name {
					return Value{}, nameOff, p.dupName(nameOff, name)
				}
			}
			if n := len(p.stack) - base + 1; n > smallObject {
				seen = make(map[string]struct{}, 4*n)
				for k := base; k < len(p.stack); k++ {
					seen[p.stack[k].Name] = struct{}{}
				}
				seen[name] = struct{}{}
			}
		}
		i = p.ws(j)
		if i >= len(p.src) {
			return Value{}, i, p.eof(i, "object")
		}
		if p.src[i] != ':' {
			return Value{}, i, p.syntax(i, "invalid character "+describeByte(p.src, i)+" after object member name (expected ':')")
		}
		i = p.ws(i + 1)
		if i >= len(p.src) {
			return Value{}, i, p.eof(i, "object")
		}
		v, j, err := p.value(i, depth)
		if err != nil {
			return Value{}, j, err
		}
		h = max(h, v.h)
		p.stack = append(p.stack, Member{Name: name, Value: v})
		i = p.ws(j)
		if i >= len(p.src) {
			return Value{}, i, p.eof(i, "object")
		}
		if c := p.src[i]; c == ',' {
			i = p.ws(i + 1)
			if i >= len(p.src) {
				return Value{}, i, p.eof(i, "object")
			}
			continue
		} else if c == '}' {
			break
		}
		return Value{}, i, p.syntax(i, "invalid character "+describeByte(p.src, i)+" after object member (expected ',' or '}')")
	}
	p.pos = i
	kids := p.take(base)
	v := containerOf(KindObject, kids)
	v.s, v.b, v.h = p.src[start:i+1], p.dirty == d0, h+1
	return v, i + 1, nil
}

func (p *parser) dupName(off int, name string) error {
	return p.syntax(off, "duplicate object member name "+strconv.Quote(truncate(name, 64)))
}

// str parses the string starting at the quote p.src[i] and returns its
// decoded contents and the index past the closing quote.
func (p *parser) str(i int) (string, int, error) {
	s := p.src
	j := i + 1
	for j < len(s) {
		if j = plainASCII(s, j); j >= len(s) {
			break
		}
		c := s[j]
		if c < utf8.RuneSelf {
			if c == '"' {
				if j-(i+1) > p.lim.MaxStringBytes {
					return "", i, &LimitError{Limit: "MaxStringBytes", Max: p.lim.MaxStringBytes, Offset: int64(i)}
				}
				return s[i+1 : j], j + 1, nil
			}
			if c == '\\' {
				return p.escapedStr(i, j)
			}
			if c < 0x20 {
				return "", j, p.syntax(j, "invalid control character "+describeByte(s, j)+" in string (must be escaped)")
			}
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && size == 1 {
			return "", j, p.syntax(j, "invalid UTF-8 byte "+hexByte(s[j])+" in string")
		}
		j += size
	}
	return "", j, p.eof(j, "string")
}

// escapedStr continues parsing the string that starts at p.src[i] from its
// first backslash at p.src[j].
func (p *parser) escapedStr(i, j int) (string, int, error) {
	s := p.src
	// Find an upper bound for the decoded length: escapes never expand.
	k := j
	for k < len(s) && s[k] != '"' {
		if s[k] == '\\' {
			k++
		}
		k++
	}
	var b strings.Builder
	b.Grow(min(k, len(s)) - (i + 1))
	b.WriteString(s[i+1 : j])
	p.dirty++
	run := j // start of the pending unescaped run
	for j < len(s) {
		c := s[j]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && size == 1 {
				return "", j, p.syntax(j, "invalid UTF-8 byte "+hexByte(s[j])+" in string")
			}
			j += size
			continue
		}
		if c == '"' {
			b.WriteString(s[run:j])
			if b.Len() > p.lim.MaxStringBytes {
				return "", i, &LimitError{Limit: "MaxStringBytes", Max: p.lim.MaxStringBytes, Offset: int64(i)}
			}
			return b.String(), j + 1, nil
		}
		if c < 0x20 {
			return "", j, p.syntax(j, "invalid control character "+describeByte(s, j)+" in string (must be escaped)")
		}
		if c != '\\' {
			j++
			continue
		}
		b.WriteString(s[run:j])
		if j+1 >= len(s) {
			return "", j + 1, p.eof(j+1, "string")
		}
		switch e := s[j+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
			j += 2
		case 'b':
			b.WriteByte('\b')
			j += 2
		case 'f':
			b.WriteByte('\f')
			j += 2
		case 'n':
			b.WriteByte('\n')
			j += 2
		case 'r':
			b.WriteByte('\r')
			j += 2
		case 't':
			b.WriteByte('\t')
			j += 2
		case 'u':
			r, ok := hex4(s, j+2)
			if !ok {
				return "", j, p.syntax(j, "invalid \\u escape in string (expected 4 hex digits)")
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return "", j, p.syntax(j, "unpaired low surrogate \\u"+s[j+2:j+6]+" in string")
			case r >= 0xD800 && r <= 0xDBFF:
				r2, ok := rune(0), false
				if j+7 < len(s) && s[j+6] == '\\' && s[j+7] == 'u' {
					r2, ok = hex4(s, j+8)
				}
				if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
					return "", j, p.syntax(j, "unpaired high surrogate \\u"+s[j+2:j+6]+" in string")
				}
				r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
				j += 6
			}
			b.WriteRune(r)
			j += 6
		default:
			return "", j, p.syntax(j, "invalid escape sequence "+strconv.Quote(truncate(s[j:], 2))+" in string")
		}
		p.dirty++
		run = j
	}
	return "", j, p.eof(j, "string")
}

// hex4 decodes 4 hex digits at s[i:i+4].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := s[k]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// describeByte describes the character at s[i] for error messages.
func describeByte(s string, i int) string {
	if i >= len(s) {
		return "EOF"
	}
	c := s[i]
	if c < utf8.RuneSelf {
		if c >= 0x20 && c < 0x7f {
			return strconv.QuoteRune(rune(c))
		}
		return "U+00" + string("0123456789ABCDEF"[c>>4]) + string("0123456789ABCDEF"[c&15])
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size == 1 {
		return "(invalid UTF-8 byte " + hexByte(c) + ")"
	}
	return strconv.QuoteRune(r)
}

func hexByte(c byte) string {
	return "0x" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
}

// truncate shortens s to at most n bytes (on a rune boundary) for messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
