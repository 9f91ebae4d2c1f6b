// Package ecmare reads the regular expressions of JSON Schema patterns in
// their own dialect, ECMA-262 in the "u" (Unicode) mode clients such as ajv
// check them with, and runs them with Go's RE2 engine.
package ecmare

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxDepth bounds the nesting of groups.
const maxDepth = 128

// Compile is a jsonschema.RegexpEngine for ECMA-262 patterns: it runs the
// pattern's Go spelling (\u00e9 as \x{00e9}); a valid pattern Go cannot
// run (look-around, back-references) matches every string, so the server
// leaves it to clients and the upstream rather than refusing the schema.
// A pattern that is not ECMA-262 at all is read as Go reads it (an
// authored schema or an upstream's may be written for Go); package
// openapi translates or leaves out such patterns before they get here.
func Compile(p string) (jsonschema.Regexp, error) {
	_, g, goErr, err := Translate(p)
	if err != nil {
		return regexp.Compile(p)
	}
	if goErr != nil {
		return anyString(p), nil
	}
	return regexp.Compile(g)
}

// anyString is the Regexp of a pattern Go cannot run.
type anyString string

func (anyString) MatchString(string) bool { return true }
func (a anyString) String() string        { return string(a) }

// Translate checks a JSON Schema pattern against the regular expression
// dialect JSON Schema names, ECMA-262, in the "u" (Unicode) mode most
// validators use (ajv among them), which is stricter than the dialects
// OpenAPI documents are often written for (PCRE, Java, Go): an escape of a
// character that needs none (DigitalOcean's "\:"), and a brace or bracket
// that is not syntax ("{id}"), are errors there.
//
// It returns the pattern, translated when the translation means exactly
// what the document meant (an unneeded escape becomes the character; a
// lone {, } or ] is escaped), or an error saying why it cannot be used
// (then the caller leaves the keyword out). It also returns the same
// expression in Go's syntax (\u00e9 as \x{00e9}), which the server checks
// arguments with, or an error when Go's RE2 engine cannot run it
// (look-around, back-references).
func Translate(p string) (ecma string, goExpr string, goErr error, err error) {
	s := &reScanner{src: p, names: map[string]bool{}}
	if err := s.disjunction(0); err != nil {
		return "", "", nil, err
	}
	if s.pos < len(s.src) {
		return "", "", nil, fmt.Errorf("unbalanced ) at offset %d", s.pos)
	}
	if s.maxBackref > s.groups {
		return "", "", nil, fmt.Errorf("back-reference \\%d to a group that does not exist", s.maxBackref)
	}
	for n := range s.refNames {
		if !s.names[n] {
			return "", "", nil, fmt.Errorf("\\k<%s> names no group", n)
		}
	}
	goExpr = s.goOut.String()
	if _, err := regexp.Compile(goExpr); err != nil {
		goErr = err
	}
	return s.out.String(), goExpr, goErr, nil
}

type reScanner struct {
	src        string
	pos        int
	out        strings.Builder // ECMA-262
	goOut      strings.Builder // the same in Go's syntax
	groups     int
	names      map[string]bool
	refNames   map[string]bool
	maxBackref int
}

const syntaxChars = `^$\.*+?()[]{}|/`

func (s *reScanner) peek() byte {
	if s.pos < len(s.src) {
		return s.src[s.pos]
	}
	return 0
}

func (s *reScanner) more() bool { return s.pos < len(s.src) }

func (s *reScanner) emit(str string) { s.out.WriteString(str); s.goOut.WriteString(str) }

// emit2 writes an expression whose Go spelling differs.
func (s *reScanner) emit2(ecma, goExpr string) { s.out.WriteString(ecma); s.goOut.WriteString(goExpr) }

func (s *reScanner) disjunction(depth int) error {
	if depth > maxDepth {
		return errors.New("groups nested too deeply")
	}
	for {
		if err := s.alternative(depth); err != nil {
			return err
		}
		if s.peek() != '|' {
			return nil
		}
		s.pos++
		s.emit("|")
	}
}

func (s *reScanner) alternative(depth int) error {
	for s.more() {
		c := s.peek()
		if c == '|' || c == ')' {
			return nil
		}
		quantifiable, err := s.term(depth)
		if err != nil {
			return err
		}
		if q, ok, err := s.quantifier(); err != nil {
			return err
		} else if ok {
			if !quantifiable {
				return fmt.Errorf("quantifier %q at offset %d follows nothing it can repeat", q, s.pos-len(q))
			}
			s.emit(q)
		}
	}
	return nil
}

// quantifier reads *, +, ?, {n}, {n,}, {n,m}, each maybe followed by ?.
func (s *reScanner) quantifier() (string, bool, error) {
	start := s.pos
	switch s.peek() {
	case '*', '+', '?':
		s.pos++
	case '{':
		end, ok := braceQuantifier(s.src[s.pos:])
		if !ok {
			return "", false, nil // a lone brace: term escapes it
		}
		if err := checkBounds(s.src[s.pos : s.pos+end]); err != nil {
			return "", false, err
		}
		s.pos += end
	default:
		return "", false, nil
	}
	if s.peek() == '?' {
		s.pos++
	}
	return s.src[start:s.pos], true, nil
}

// braceQuantifier returns the length of {n}, {n,} or {n,m} at the start of
// s, if there is one.
func braceQuantifier(s string) (int, bool) {
	i := 1
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if digits() == 0 {
		return 0, false
	}
	if i < len(s) && s[i] == ',' {
		i++
		digits()
	}
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	return 0, false
}

func checkBounds(q string) error {
	parts := strings.SplitN(strings.Trim(q, "{}"), ",", 2)
	lo, err := strconv.Atoi(parts[0])
	if err != nil || lo > 1000 {
		return fmt.Errorf("repeat count in %s is too large", q)
	}
	if len(parts) == 2 && parts[1] != "" {
		hi, err := strconv.Atoi(parts[1])
		if err != nil || hi > 1000 {
			return fmt.Errorf("repeat count in %s is too large", q)
		}
		if hi < lo {
			return fmt.Errorf("numbers out of order in %s", q)
		}
	}
	return nil
}

// term reads one assertion or atom and says whether a quantifier may
// follow it.
func (s *reScanner) term(depth int) (bool, error) {
	c := s.peek()
	switch c {
	case '^', '$':
		s.pos++
		s.emit(string(c))
		return false, nil
	case '.':
		s.pos++
		s.emit(".")
		return true, nil
	case '(':
		return s.group(depth)
	case '[':
		return true, s.class()
	case '\\':
		return s.atomEscape()
	case '*', '+', '?':
		return false, fmt.Errorf("quantifier %q at offset %d follows nothing", c, s.pos)
	case '{':
		if _, ok := braceQuantifier(s.src[s.pos:]); ok {
			return false, fmt.Errorf("quantifier at offset %d follows nothing", s.pos)
		}
		s.pos++
		s.emit(`\{`) // a lone brace is an error in u mode: it meant itself
		return true, nil
	case '}', ']':
		s.pos++
		s.emit(`\` + string(c))
		return true, nil
	}
	r, size := utf8.DecodeRuneInString(s.src[s.pos:])
	if r == utf8.RuneError && size <= 1 {
		return false, errors.New("the pattern is not valid UTF-8")
	}
	s.emit(s.src[s.pos : s.pos+size])
	s.pos += size
	return true, nil
}

func (s *reScanner) group(depth int) (bool, error) {
	start := s.pos
	s.pos++ // (
	quantifiable := true
	rest := s.src[s.pos:]
	switch {
	case strings.HasPrefix(rest, "?:"):
		s.pos += 2
	case strings.HasPrefix(rest, "?="), strings.HasPrefix(rest, "?!"):
		s.pos += 2
		quantifiable = false
	case strings.HasPrefix(rest, "?<="), strings.HasPrefix(rest, "?<!"):
		s.pos += 3
		quantifiable = false
	case strings.HasPrefix(rest, "?<"):
		end := strings.IndexByte(rest, '>')
		if end < 0 || !groupName(rest[2:end]) {
			return false, fmt.Errorf("invalid group name at offset %d", start)
		}
		name := rest[2:end]
		if s.names[name] {
			return false, fmt.Errorf("duplicate group name %q", name)
		}
		s.names[name] = true
		s.groups++
		s.pos += end + 1
	case strings.HasPrefix(rest, "?"):
		return false, fmt.Errorf("group syntax (%s at offset %d is not ECMA-262 (inline flags, named groups as (?P<...>) and atomic groups are not)", rest[:min(len(rest), 3)], start)
	default:
		s.groups++
	}
	s.emit(s.src[start:s.pos])
	if err := s.disjunction(depth + 1); err != nil {
		return false, err
	}
	if s.peek() != ')' {
		return false, fmt.Errorf("unterminated group at offset %d", start)
	}
	s.pos++
	s.emit(")")
	return quantifiable, nil
}

func groupName(n string) bool {
	for i, r := range n {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9' || r > 0x7f) {
			return false
		}
	}
	return n != ""
}

// atomEscape reads an escape outside a class.
func (s *reScanner) atomEscape() (bool, error) {
	start := s.pos
	s.pos++ // backslash
	if !s.more() {
		return false, errors.New(`the pattern ends with \`)
	}
	c := s.peek()
	switch {
	case c == 'b' || c == 'B':
		s.pos++
		s.emit(s.src[start:s.pos])
		return false, nil
	case c >= '1' && c <= '9':
		j := s.pos
		for j < len(s.src) && s.src[j] >= '0' && s.src[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s.src[s.pos:j])
		if err != nil {
			return false, fmt.Errorf("back-reference at offset %d: %w", start, err)
		}
		s.maxBackref = max(s.maxBackref, n)
		s.pos = j
		s.emit(s.src[start:s.pos])
		return true, nil
	case c == 'k':
		rest := s.src[s.pos:]
		end := strings.IndexByte(rest, '>')
		if !strings.HasPrefix(rest, "k<") || end < 0 || !groupName(rest[2:end]) {
			return false, fmt.Errorf(`\k at offset %d must name a group: \k<name>`, start)
		}
		if s.refNames == nil {
			s.refNames = map[string]bool{}
		}
		s.refNames[rest[2:end]] = true
		s.pos += end + 1
		s.emit(s.src[start:s.pos])
		return true, nil
	}
	return true, s.charEscape(start, false)
}

// charEscape reads the rest of an escape that stands for characters (a
// class escape such as \d, or one character), in or out of a class.
func (s *reScanner) charEscape(start int, inClass bool) error {
	c := s.peek()
	switch {
	case strings.IndexByte("dDsSwWfnrtv", c) >= 0:
		s.pos++
	case c == 'c':
		if s.pos+1 >= len(s.src) || !isASCIILetter(s.src[s.pos+1]) {
			return fmt.Errorf(`\c at offset %d must be followed by a letter`, start)
		}
		s.pos += 2
	case c == '0':
		if s.pos+1 < len(s.src) && s.src[s.pos+1] >= '0' && s.src[s.pos+1] <= '9' {
			return fmt.Errorf(`octal escape at offset %d is not allowed in ECMA-262 u mode`, start)
		}
		s.pos++
	case c == 'x':
		if s.pos+2 >= len(s.src) || !isHex(s.src[s.pos+1]) || !isHex(s.src[s.pos+2]) {
			return fmt.Errorf(`\x at offset %d needs two hex digits`, start)
		}
		s.pos += 3
	case c == 'u':
		rest := s.src[s.pos+1:]
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			v, err := strconv.ParseUint(rest[1:max(end, 1)], 16, 32)
			if end < 2 || err != nil || v > 0x10FFFF {
				return fmt.Errorf(`\u{...} at offset %d is not a code point`, start)
			}
			s.pos += 1 + end + 1
		case len(rest) >= 4 && isHex(rest[0]) && isHex(rest[1]) && isHex(rest[2]) && isHex(rest[3]):
			s.pos += 5
		default:
			return fmt.Errorf(`\u at offset %d needs four hex digits or {code point}`, start)
		}
	case c == 'p' || c == 'P':
		rest := s.src[s.pos+1:]
		end := strings.IndexByte(rest, '}')
		if !strings.HasPrefix(rest, "{") || end < 2 || strings.Trim(rest[1:end], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_=") != "" {
			return fmt.Errorf(`\%c at offset %d must name a property: \%c{Name}`, c, start, c)
		}
		s.pos += 1 + end + 1
	case strings.IndexByte(syntaxChars, c) >= 0 || inClass && c == '-':
		s.pos++
	case c < utf8.RuneSelf && !isASCIILetter(c) && !(c >= '0' && c <= '9') && c != '_':
		// An escape of punctuation that needs none (\: \- \# \" \'): an
		// error in u mode, the character itself elsewhere. Write the
		// character.
		s.pos++
		s.emit(string(c))
		return nil
	default:
		r, _ := utf8.DecodeRuneInString(s.src[s.pos:])
		return fmt.Errorf(`\%c at offset %d is not an ECMA-262 escape`, r, start)
	}
	e := s.src[start:s.pos]
	switch e[1] {
	case 'u', 'c', '0', '/':
		// Go has no \u, \c or \0 escapes, and \/ is only an escape in ECMA.
		r, _ := escapedRune(e)
		s.emit2(e, fmt.Sprintf(`\x{%x}`, r))
	default:
		s.emit(e)
	}
	return nil
}

// class reads [...]; ranges must be ordered and have single characters at
// both ends.
func (s *reScanner) class() error {
	start := s.pos
	s.pos++
	s.emit("[")
	if s.peek() == '^' {
		s.pos++
		s.emit("^")
	}
	prev, prevOK := rune(0), false // the last single character, for ranges
	pendingRange := false
	prevClassEscape := false // the last atom was \d, \p{...}...
	for {
		if !s.more() {
			return fmt.Errorf("unterminated character class at offset %d", start)
		}
		c := s.peek()
		if c == ']' {
			if pendingRange {
				s.emit("-")
			}
			s.pos++
			s.emit("]")
			return nil
		}
		if c == '-' && !pendingRange && s.pos+1 < len(s.src) && s.src[s.pos+1] != ']' {
			if prevOK {
				s.pos++
				pendingRange = true
				continue
			}
			if prevClassEscape {
				return fmt.Errorf("a range in the class at offset %d has a class escape at one end", start)
			}
		}
		if pendingRange {
			s.emit("-")
		}
		var r rune
		single := true
		if c == '\\' {
			escStart := s.pos
			s.pos++
			if !s.more() {
				return errors.New(`the pattern ends with \`)
			}
			if s.peek() == 'b' {
				s.pos++
				s.emit2(`\b`, `\x08`)
				r = '\b'
			} else if err := s.charEscape(escStart, true); err != nil {
				return err
			} else {
				r, single = escapedRune(s.src[escStart:s.pos])
			}
		} else {
			var size int
			r, size = utf8.DecodeRuneInString(s.src[s.pos:])
			if r == utf8.RuneError && size <= 1 {
				return errors.New("the pattern is not valid UTF-8")
			}
			if c == '[' {
				s.emit(`\[`)
			} else {
				s.emit(s.src[s.pos : s.pos+size])
			}
			s.pos += size
		}
		if pendingRange {
			if !single || !prevOK {
				return fmt.Errorf("a range in the class at offset %d has a class escape at one end", start)
			}
			if r < prev {
				return fmt.Errorf("range out of order in the class at offset %d", start)
			}
			pendingRange, prevOK, prevClassEscape = false, false, false
			continue
		}
		prev, prevOK, prevClassEscape = r, single, !single
	}
}

// escapedRune returns the character an escape (with its backslash) stands
// for, or false for class escapes (\d, \p{...}).
func escapedRune(e string) (rune, bool) {
	if len(e) < 2 {
		return 0, false
	}
	switch c := e[1]; c {
	case 'd', 'D', 's', 'S', 'w', 'W', 'p', 'P':
		return 0, false
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'v':
		return '\v', true
	case '0':
		return 0, true
	case 'c':
		return rune(e[2] % 32), true
	case 'x':
		v, _ := strconv.ParseUint(e[2:4], 16, 32)
		return rune(v), true
	case 'u':
		h := strings.Trim(e[2:], "{}")
		v, _ := strconv.ParseUint(h, 16, 32)
		return rune(v), true
	default:
		r, _ := utf8.DecodeRuneInString(e[1:])
		return r, true
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
