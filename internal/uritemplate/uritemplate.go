// Package uritemplate implements RFC 6570 URI Templates for MCP resource
// templates such as "test://template/{id}/data", "file:///{+path}" or
// "db://{schema}/{table}{?limit,offset}".
//
// [Parse] accepts the full RFC 6570 expression syntax (levels 1 to 4:
// operators + # . / ; ? &, the explode modifier * and prefix modifiers
// :N). [Template.Expand] implements the RFC expansion algorithm for string
// values. [Template.Match] is the reverse operation used to route a
// concrete resource URI to a template and recover the variable values; its
// rules are documented on the method.
//
// A parsed [Template] is immutable and safe for concurrent use. The
// package holds no mutable state.
package uritemplate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits enforced by [Parse].
const (
	// MaxTemplateBytes is the maximum length of a template in bytes.
	MaxTemplateBytes = 8192
	// MaxVariables is the maximum number of variable references
	// (varspecs) in a template, counting every occurrence.
	MaxVariables = 32
	// MaxVariableNameBytes is the maximum length of a variable name in
	// bytes, as written in the template (pct-encoded triplets count as
	// three bytes).
	MaxVariableNameBytes = 128
	// MaxPrefixLength is the largest prefix modifier (":N") RFC 6570
	// allows.
	MaxPrefixLength = 9999
)

// ParseError describes why [Parse] rejected a template.
type ParseError struct {
	// Offset is the byte offset in the template at which the problem
	// was detected.
	Offset int
	// Msg describes the problem.
	Msg string
}

// Error implements the error interface.
func (e *ParseError) Error() string {
	return fmt.Sprintf("uritemplate: %s at offset %d", e.Msg, e.Offset)
}

func parseErrorf(offset int, format string, args ...any) error {
	return &ParseError{Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

// Template is a parsed URI template, obtained from [Parse]. The zero value
// is the empty template, which expands to "" and matches only "".
type Template struct {
	raw   string
	parts []part
	vars  []string // distinct variable names in order of first appearance
	units []unit   // compiled reverse matcher, see match.go
	// repeated is set when some variable is referenced more than once;
	// such templates never match (see Match).
	repeated bool
}

// part is either a literal (op == opLiteral) or an expression.
type part struct {
	op    byte // opLiteral, opSimple, or one of + # . / ; ? &
	lit   string
	specs []varspec
}

const (
	opLiteral byte = 0
	opSimple  byte = 1
)

type varspec struct {
	name    string
	varIdx  int // index into Template.vars
	prefix  int // 0 when there is no prefix modifier
	explode bool
}

// Parse parses a URI template.
//
// Literal text may contain the characters RFC 6570 section 2.1 allows
// (visible ASCII other than " ' % < > \ ^ ` { | }, valid pct-encoded
// triplets, and the non-ASCII ucschar/iprivate ranges, which must be valid
// UTF-8). Expressions follow section 2.2-2.4: an optional operator from
// "+#./;?&" (the reserved operators "=,!@|" are rejected), a comma-separated
// list of variable names made of ALPHA, DIGIT, "_", pct-encoded triplets
// and single interior dots, each optionally followed by "*" or ":N" with
// 1 <= N <= 9999.
//
// Parse enforces [MaxTemplateBytes], [MaxVariables] and
// [MaxVariableNameBytes]. Errors are of type *[ParseError] and carry the
// byte offset of the problem.
func Parse(s string) (*Template, error) {
	if len(s) > MaxTemplateBytes {
		return nil, parseErrorf(MaxTemplateBytes, "template is %d bytes, limit is %d", len(s), MaxTemplateBytes)
	}
	p := parser{s: s, seen: make(map[string]int)}
	if err := p.parse(); err != nil {
		return nil, err
	}
	t := &Template{raw: s, parts: p.parts, vars: p.vars, repeated: p.nSpecs != len(p.vars)}
	t.units = compile(t.parts)
	return t, nil
}

type parser struct {
	s      string
	parts  []part
	vars   []string
	seen   map[string]int
	nSpecs int
}

func (p *parser) parse() error {
	s := p.s
	litStart := 0
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '{':
			if i > litStart {
				p.parts = append(p.parts, part{op: opLiteral, lit: s[litStart:i]})
			}
			end, err := p.parseExpression(i)
			if err != nil {
				return err
			}
			i = end
			litStart = i
		case c == '}':
			return parseErrorf(i, "unmatched '}'")
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return parseErrorf(i, "'%%' not followed by two hexadecimal digits")
			}
			i += 3
		case c < utf8.RuneSelf:
			if !isLiteralASCII(c) {
				return parseErrorf(i, "character %q is not allowed in a template literal", c)
			}
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return parseErrorf(i, "invalid UTF-8 byte 0x%02x", c)
			}
			if !isUCSChar(r) {
				return parseErrorf(i, "character %U is not allowed in a template literal", r)
			}
			i += size
		}
	}
	if len(s) > litStart {
		p.parts = append(p.parts, part{op: opLiteral, lit: s[litStart:]})
	}
	return nil
}

// parseExpression parses the expression starting at s[start] == '{' and
// returns the offset just past its closing brace.
func (p *parser) parseExpression(start int) (int, error) {
	s := p.s
	i := start + 1
	if i >= len(s) {
		return 0, parseErrorf(start, "unclosed expression")
	}
	ex := part{op: opSimple}
	switch c := s[i]; c {
	case '+', '#', '.', '/', ';', '?', '&':
		ex.op = c
		i++
	case '=', ',', '!', '@', '|':
		return 0, parseErrorf(i, "operator %q is reserved by RFC 6570", c)
	}
	for {
		nameStart := i
		i = scanVarname(s, i)
		if i < 0 {
			return 0, parseErrorf(-i-1, "invalid variable name: '.' must be followed by a name character")
		}
		if i == nameStart {
			if i >= len(s) {
				return 0, parseErrorf(start, "unclosed expression")
			}
			switch {
			case s[i] == '%':
				return 0, parseErrorf(i, "'%%' not followed by two hexadecimal digits")
			case s[i] == '}' && len(ex.specs) == 0:
				return 0, parseErrorf(start, "empty expression")
			}
			return 0, parseErrorf(i, "expected a variable name, found %s", describeAt(s, i))
		}
		if i-nameStart > MaxVariableNameBytes {
			return 0, parseErrorf(nameStart, "variable name is %d bytes, limit is %d", i-nameStart, MaxVariableNameBytes)
		}
		p.nSpecs++
		if p.nSpecs > MaxVariables {
			return 0, parseErrorf(nameStart, "template has more than %d variables", MaxVariables)
		}
		spec := varspec{name: s[nameStart:i]}
		if i < len(s) && s[i] == ':' {
			i++
			digStart := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			switch {
			case i == digStart:
				return 0, parseErrorf(digStart, "prefix modifier ':' must be followed by a length")
			case s[digStart] == '0':
				return 0, parseErrorf(digStart, "prefix length must be between 1 and %d without leading zeros", MaxPrefixLength)
			case i-digStart > 4:
				return 0, parseErrorf(digStart, "prefix length %s exceeds %d", s[digStart:i], MaxPrefixLength)
			}
			n, err := strconv.Atoi(s[digStart:i])
			if err != nil {
				return 0, parseErrorf(digStart, "invalid prefix length %q", s[digStart:i])
			}
			spec.prefix = n
		} else if i < len(s) && s[i] == '*' {
			spec.explode = true
			i++
		}
		idx, ok := p.seen[spec.name]
		if !ok {
			idx = len(p.vars)
			p.seen[spec.name] = idx
			p.vars = append(p.vars, spec.name)
		}
		spec.varIdx = idx
		ex.specs = append(ex.specs, spec)
		if i >= len(s) {
			return 0, parseErrorf(start, "unclosed expression")
		}
		switch s[i] {
		case ',':
			i++
			continue
		case '}':
			p.parts = append(p.parts, ex)
			return i + 1, nil
		case ':', '*':
			return 0, parseErrorf(i, "a variable may have at most one modifier")
		default:
			return 0, parseErrorf(i, "unexpected %s in expression", describeAt(s, i))
		}
	}
}

// describeAt describes the character at s[i] for an error message.
func describeAt(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("byte 0x%02x", s[i])
	}
	return fmt.Sprintf("%q", r)
}

// scanVarname scans varname = varchar *( ["."] varchar ) starting at i and
// returns the offset just past it (i itself when there is no name). A dot
// not followed by a varchar yields -(offset of the dot)-1.
func scanVarname(s string, i int) int {
	for {
		n := varcharLen(s, i)
		if n == 0 {
			return i
		}
		i += n
		if i < len(s) && s[i] == '.' {
			i++
			if varcharLen(s, i) == 0 {
				return -(i - 1) - 1
			}
		}
	}
}

// varcharLen returns the length of the varchar at s[i], or 0.
func varcharLen(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	c := s[i]
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		return 1
	case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
		return 3
	}
	return 0
}

// String returns the template text. It is identical to the string given to
// [Parse].
func (t *Template) String() string {
	if t == nil {
		return ""
	}
	var sb strings.Builder
	sb.Grow(len(t.raw))
	for _, pt := range t.parts {
		if pt.op == opLiteral {
			sb.WriteString(pt.lit)
			continue
		}
		sb.WriteByte('{')
		if pt.op != opSimple {
			sb.WriteByte(pt.op)
		}
		for i, sp := range pt.specs {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(sp.name)
			if sp.prefix > 0 {
				sb.WriteByte(':')
				sb.WriteString(strconv.Itoa(sp.prefix))
			} else if sp.explode {
				sb.WriteByte('*')
			}
		}
		sb.WriteByte('}')
	}
	return sb.String()
}

// Variables returns the distinct variable names of the template in order of
// first appearance. The caller owns the returned slice.
func (t *Template) Variables() []string {
	if t == nil || len(t.vars) == 0 {
		return nil
	}
	return append([]string(nil), t.vars...)
}

// IsLiteral reports whether the template contains no expressions, in which
// case it matches exactly one URI.
func (t *Template) IsLiteral() bool {
	if t == nil {
		return true
	}
	for _, pt := range t.parts {
		if pt.op != opLiteral {
			return false
		}
	}
	return true
}

// opInfo holds the expansion parameters of RFC 6570 Appendix A.
type opInfo struct {
	first, sep    string
	named         bool
	ifemp         string
	allowReserved bool
}

func infoFor(op byte) opInfo {
	switch op {
	case '+':
		return opInfo{sep: ",", allowReserved: true}
	case '#':
		return opInfo{first: "#", sep: ",", allowReserved: true}
	case '.':
		return opInfo{first: ".", sep: "."}
	case '/':
		return opInfo{first: "/", sep: "/"}
	case ';':
		return opInfo{first: ";", sep: ";", named: true}
	case '?':
		return opInfo{first: "?", sep: "&", named: true, ifemp: "="}
	case '&':
		return opInfo{first: "&", sep: "&", named: true, ifemp: "="}
	}
	return opInfo{sep: ","}
}

// Expand expands the template with the given string values following
// RFC 6570 section 3. Variables missing from vars are undefined and are
// skipped as the RFC specifies; an empty string is a defined, empty value.
// The explode modifier has no effect on string values. Non-ASCII literal
// characters in the template are emitted pct-encoded (UTF-8).
//
// Expand returns an error when t is nil or when a value used by the
// template is not valid UTF-8.
func (t *Template) Expand(vars map[string]string) (string, error) {
	if t == nil {
		return "", fmt.Errorf("uritemplate: Expand called on a nil *Template")
	}
	var sb strings.Builder
	sb.Grow(len(t.raw) + 16)
	for _, pt := range t.parts {
		if pt.op == opLiteral {
			appendLiteral(&sb, pt.lit)
			continue
		}
		info := infoFor(pt.op)
		first := true
		for _, sp := range pt.specs {
			v, ok := vars[sp.name]
			if !ok {
				continue
			}
			if !utf8.ValidString(v) {
				return "", fmt.Errorf("uritemplate: value of variable %q is not valid UTF-8", sp.name)
			}
			if first {
				sb.WriteString(info.first)
				first = false
			} else {
				sb.WriteString(info.sep)
			}
			if info.named {
				sb.WriteString(sp.name)
				if v == "" {
					sb.WriteString(info.ifemp)
					continue
				}
				sb.WriteByte('=')
			}
			if sp.prefix > 0 {
				v = truncateRunes(v, sp.prefix)
			}
			appendEncoded(&sb, v, info.allowReserved)
		}
	}
	return sb.String(), nil
}

func truncateRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

const upperHex = "0123456789ABCDEF"

func appendPct(sb *strings.Builder, c byte) {
	sb.WriteByte('%')
	sb.WriteByte(upperHex[c>>4])
	sb.WriteByte(upperHex[c&15])
}

// appendLiteral copies template literal text, pct-encoding the UTF-8 bytes
// of non-ASCII characters (RFC 6570 section 3.1). Every ASCII character
// Parse admits in a literal is either unreserved, reserved or part of a
// pct-encoded triplet and is copied as is.
func appendLiteral(sb *strings.Builder, lit string) {
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; c < utf8.RuneSelf {
			sb.WriteByte(c)
		} else {
			appendPct(sb, c)
		}
	}
}

// appendEncoded appends v, pct-encoding every byte outside the unreserved
// set, or outside unreserved and reserved when allowReserved is set (in
// which case existing pct-encoded triplets are kept).
func appendEncoded(sb *strings.Builder, v string, allowReserved bool) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isUnreserved(c), allowReserved && isReserved(c):
			sb.WriteByte(c)
		case allowReserved && c == '%' && i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2]):
			sb.WriteString(v[i : i+3])
			i += 2
		default:
			appendPct(sb, c)
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// isUnreserved reports whether c is an RFC 3986 unreserved character.
func isUnreserved(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c == '-' || c == '.' || c == '_' || c == '~'
}

// isReserved reports whether c is an RFC 3986 reserved character
// (gen-delims or sub-delims).
func isReserved(c byte) bool {
	switch c {
	case ':', '/', '?', '#', '[', ']', '@',
		'!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=':
		return true
	}
	return false
}

// isLiteralASCII reports whether an ASCII byte may appear in a template
// literal (RFC 6570 section 2.1); '%' and '{' are handled by the caller.
func isLiteralASCII(c byte) bool {
	if c <= 0x20 || c >= 0x7f {
		return false
	}
	switch c {
	case '"', '\'', '%', '<', '>', '\\', '^', '`', '{', '|', '}':
		return false
	}
	return true
}

// isUCSChar reports whether r is in the ucschar or iprivate ranges of
// RFC 3987, which RFC 6570 admits in literals.
func isUCSChar(r rune) bool {
	switch {
	case r >= 0xA0 && r <= 0xD7FF,
		r >= 0xE000 && r <= 0xF8FF,
		r >= 0xF900 && r <= 0xFDCF,
		r >= 0xFDF0 && r <= 0xFFEF:
		return true
	case r >= 0x10000 && r <= 0x10FFFD:
		return r&0xFFFF <= 0xFFFD && !(r >= 0xE0000 && r < 0xE1000)
	}
	return false
}
