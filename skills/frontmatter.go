package skills

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
)

// Front-matter limits. The defaults bound what one SKILL.md can make the
// parser do; a Bundle's Limits may lower them, never raise them past the
// ceilings.
const (
	// DefaultMaxFrontmatterBytes bounds the YAML between the --- lines.
	DefaultMaxFrontmatterBytes = 32 << 10
	// MaxFrontmatterBytesCeiling is the largest accepted MaxFrontmatterBytes.
	MaxFrontmatterBytesCeiling = 1 << 20
	// DefaultMaxFrontmatterDepth bounds the nesting of mappings and
	// sequences; the top-level mapping is depth 1, metadata's mapping 2.
	DefaultMaxFrontmatterDepth = 16
	// MaxFrontmatterDepthCeiling is the largest accepted MaxFrontmatterDepth.
	MaxFrontmatterDepthCeiling = 64
	// MaxKeyBytes bounds one mapping key (YAML's limit on implicit keys is
	// 1024 characters; bytes are never fewer).
	MaxKeyBytes = 1024
)

// ErrNoFrontmatter reports a SKILL.md that does not begin with a
// ---‑delimited front-matter block.
var ErrNoFrontmatter = errors.New("skills: SKILL.md does not begin with a --- delimited YAML front matter block")

// FrontmatterError reports YAML the front-matter parser rejects, with the
// 1-based line within the front matter (0 when not tied to a line).
type FrontmatterError struct {
	Line int
	Msg  string
}

// Error implements error.
func (e *FrontmatterError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("skills: front matter line %d: %s", e.Line, e.Msg)
	}
	return "skills: front matter: " + e.Msg
}

// SplitFrontmatter splits a SKILL.md into its YAML front matter (the text
// between the opening and closing --- lines) and the body after the
// closing line. The file must start with a line that is exactly "---"
// (after an optional UTF-8 byte order mark); the block ends at the first
// line that is "---" followed only by spaces or tabs. Line ends may be LF
// or CRLF. This is the delimiting hosts apply when they verify a SKILL.md
// against its entry.
func SplitFrontmatter(skillMD []byte) (frontmatter, body []byte, err error) {
	s := bytes.TrimPrefix(skillMD, []byte("\xef\xbb\xbf"))
	var start int
	switch {
	case bytes.HasPrefix(s, []byte("---\n")):
		start = 4
	case bytes.HasPrefix(s, []byte("---\r\n")):
		start = 5
	default:
		return nil, nil, ErrNoFrontmatter
	}
	// The closing line may directly follow the opening one (empty front
	// matter); otherwise it follows a newline inside the block.
	if body, ok := closingLine(s, start); ok {
		return s[start:start], body, nil
	}
	for j := start; j < len(s); j++ {
		var k int // index just past the closing line's leading newline
		switch {
		case s[j] == '\n':
			k = j + 1
		case s[j] == '\r' && j+1 < len(s) && s[j+1] == '\n':
			k = j + 2
		default:
			continue
		}
		if !bytes.HasPrefix(s[k:], []byte("---")) {
			continue
		}
		m := k + 3
		for m < len(s) && (s[m] == ' ' || s[m] == '\t') {
			m++
		}
		switch {
		case m == len(s):
			return s[start:j], s[m:], nil
		case s[m] == '\n':
			return s[start:j], s[m+1:], nil
		case s[m] == '\r' && m+1 < len(s) && s[m+1] == '\n':
			return s[start:j], s[m+2:], nil
		}
	}
	return nil, nil, ErrNoFrontmatter
}

// closingLine reports whether a closing "---" line starts at s[k:], and
// returns what follows it.
func closingLine(s []byte, k int) ([]byte, bool) {
	if !bytes.HasPrefix(s[k:], []byte("---")) {
		return nil, false
	}
	m := k + 3
	for m < len(s) && (s[m] == ' ' || s[m] == '\t') {
		m++
	}
	switch {
	case m == len(s):
		return s[m:], true
	case s[m] == '\n':
		return s[m+1:], true
	case s[m] == '\r' && m+1 < len(s) && s[m+1] == '\n':
		return s[m+2:], true
	}
	return nil, false
}

// ParseFrontmatter parses SKILL.md front matter (the YAML between the ---
// lines, as returned by [SplitFrontmatter]) into the JSON object that a
// skill entry carries verbatim, with the default limits.
//
// It accepts a strict subset of YAML 1.2 (core schema), enough for the
// Agent Skills fields and ordinary author-written metadata, and rejects
// everything else rather than guess:
//
//   - block mappings (space-indented, unique keys that are plain or quoted
//     strings) and block sequences, nested to DefaultMaxFrontmatterDepth;
//   - plain scalars, including multi-line plain scalars (folded with
//     spaces), resolved by the core schema: null, ~, true/false, decimal,
//     0x and 0o integers (exactly representable: |n| <= 2^53), and
//     floats; anything else is a string;
//   - single- and double-quoted scalars on one line (all YAML escapes);
//   - literal (|) and folded (>) block scalars with the -, + chomping
//     indicators;
//   - one-line flow sequences of scalars ([a, "b", 3]) and the empty
//     flow mapping {}; comments.
//
// Refused: anchors, aliases, tags, directives, complex (?) keys, merge
// keys, multi-line quoted or flow scalars, explicit block-scalar
// indentation indicators, folded scalars with more-indented lines, tabs
// in indentation, non-printable characters, infinities and NaN.
func ParseFrontmatter(yaml []byte) (exactjson.Value, error) {
	return parseFrontmatter(yaml, DefaultMaxFrontmatterBytes, DefaultMaxFrontmatterDepth)
}

func parseFrontmatter(src []byte, maxBytes, maxDepth int) (exactjson.Value, error) {
	if len(src) > maxBytes {
		return exactjson.Value{}, &FrontmatterError{Msg: fmt.Sprintf("front matter is %d bytes, more than the limit of %d", len(src), maxBytes)}
	}
	if !utf8.Valid(src) {
		return exactjson.Value{}, &FrontmatterError{Msg: "front matter is not valid UTF-8"}
	}
	s := string(src)
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		if i := strings.IndexByte(s, '\r'); i >= 0 {
			return exactjson.Value{}, &FrontmatterError{Line: 1 + strings.Count(s[:i], "\n"), Msg: "carriage return outside a CRLF line end"}
		}
	}
	for i, r := range s {
		if !printable(r) {
			return exactjson.Value{}, &FrontmatterError{Line: 1 + strings.Count(s[:i], "\n"),
				Msg: fmt.Sprintf("character %U is not allowed (write it as an escape in a double-quoted string)", r)}
		}
	}
	p := &fmParser{lines: strings.Split(s, "\n"), maxDepth: maxDepth}
	i := p.nextContent()
	if i < 0 {
		return exactjson.Value{}, &FrontmatterError{Msg: "front matter is empty"}
	}
	ind, text, err := p.content(i)
	if err != nil {
		return exactjson.Value{}, err
	}
	if _, _, isKey, err := p.parseKey(text, i); err != nil {
		return exactjson.Value{}, err
	} else if !isKey {
		return exactjson.Value{}, &FrontmatterError{Line: i + 1, Msg: "front matter must be a mapping of keys to values"}
	}
	v, err := p.mapping(ind, 1, "", -1)
	if err != nil {
		return exactjson.Value{}, err
	}
	if j := p.nextContent(); j >= 0 {
		return exactjson.Value{}, &FrontmatterError{Line: j + 1, Msg: "unexpected indentation or content after the top-level mapping"}
	}
	return v, nil
}

// printable reports whether r may appear literally in front matter: YAML's
// c-printable minus the characters whose line-break status differs between
// YAML versions (U+0085, U+2028, U+2029) and the byte order mark.
func printable(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return true
	case r < 0x20 || r == 0x7f:
		return false
	case r < 0x7f:
		return true
	case r < 0xa0:
		return false
	case r == 0x2028 || r == 0x2029 || r == 0xfeff:
		return false
	case r <= 0xd7ff:
		return true
	case r >= 0xe000 && r <= 0xfffd:
		return true
	case r >= 0x10000 && r <= 0x10ffff:
		return true
	}
	return false
}

type fmParser struct {
	lines    []string
	pos      int // next unconsumed line
	maxDepth int
}

func (p *fmParser) errf(line int, format string, args ...any) error {
	return &FrontmatterError{Line: line + 1, Msg: fmt.Sprintf(format, args...)}
}

func indentOf(l string) int {
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n
}

// nextContent returns the index of the next line at or after pos that is
// neither blank (spaces only) nor a comment, or -1.
func (p *fmParser) nextContent() int {
	for i := p.pos; i < len(p.lines); i++ {
		t := p.lines[i][indentOf(p.lines[i]):]
		if t == "" || t[0] == '#' {
			continue
		}
		return i
	}
	return -1
}

// shallowComment rejects a comment line between pos and the value on line
// next that is not indented past parentIndent: YAML parsers disagree on
// where such a comment leaves the value.
func (p *fmParser) shallowComment(next, parentIndent int) error {
	for j := p.pos; j < next; j++ {
		if ind := indentOf(p.lines[j]); ind < len(p.lines[j]) && ind <= parentIndent {
			return p.errf(j, "comment between a key and its value must be indented like the value")
		}
	}
	return nil
}

// content returns the indentation and text of content line i, rejecting
// tabs in the indentation.
func (p *fmParser) content(i int) (int, string, error) {
	ind := indentOf(p.lines[i])
	text := p.lines[i][ind:]
	if text[0] == '\t' {
		return 0, "", p.errf(i, "tab in indentation (YAML indents with spaces)")
	}
	return ind, text, nil
}

func isSeqEntry(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ")
}

// indicator reports whether c cannot start a plain scalar.
func indicator(c byte) bool {
	return strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", c) >= 0
}

// parseKey recognizes "key:" at the start of text (plain or quoted key,
// followed by ':' and a space or the end of the line). It returns the key
// and the text after the ':'.
func (p *fmParser) parseKey(text string, line int) (key, rest string, ok bool, err error) {
	if text[0] == '"' || text[0] == '\'' {
		k, after, err := p.quoted(text, line)
		if err != nil {
			return "", "", false, err
		}
		if after == ":" || strings.HasPrefix(after, ": ") {
			if len(k) > MaxKeyBytes {
				return "", "", false, p.errf(line, "key longer than %d bytes", MaxKeyBytes)
			}
			return k, after[1:], true, nil
		}
		if strings.HasPrefix(after, ":") {
			return "", "", false, p.errf(line, "a key's ':' must be followed by a space")
		}
		return "", "", false, nil
	}
	if indicator(text[0]) {
		return "", "", false, nil
	}
	k := -1
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '#' && i > 0 && text[i-1] == ' ' {
			return "", "", false, nil // a comment starts before any key indicator
		}
		if c == ':' && (i+1 == len(text) || text[i+1] == ' ') {
			k = i
			break
		}
	}
	if k < 0 {
		if strings.Contains(text, ":\t") {
			return "", "", false, p.errf(line, "a key's ':' must be followed by a space, not a tab")
		}
		return "", "", false, nil
	}
	key = strings.TrimRight(text[:k], " ")
	if strings.ContainsAny(key, "\t[]{},") {
		return "", "", false, p.errf(line, "plain key %q holds a tab or a flow indicator; quote it", key)
	}
	if len(key) > MaxKeyBytes {
		return "", "", false, p.errf(line, "key longer than %d bytes", MaxKeyBytes)
	}
	if v, err := resolvePlain(key); err != nil || v.Kind() != exactjson.KindString {
		return "", "", false, p.errf(line, "key %q is not a string in YAML; quote it", key)
	}
	return key, text[k+1:], true, nil
}

// mapping parses a block mapping whose keys sit at indentation ind. When
// first is non-empty it is the text of the first entry, already consumed
// from line firstLine (a mapping that starts on a sequence entry's line).
func (p *fmParser) mapping(ind, depth int, first string, firstLine int) (exactjson.Value, error) {
	if depth > p.maxDepth {
		return exactjson.Value{}, p.errf(max(firstLine, p.pos), "nesting deeper than %d", p.maxDepth)
	}
	var members []exactjson.Member
	seen := map[string]bool{}
	entry := func(text string, line int) error {
		key, rest, ok, err := p.parseKey(text, line)
		if err != nil {
			return err
		}
		if !ok {
			return p.errf(line, "expected a \"key: value\" entry")
		}
		switch {
		case seen[key]:
			return p.errf(line, "duplicate key %q", key)
		case key == "<<":
			return p.errf(line, "merge keys (<<) are not supported")
		case key == "__proto__":
			return p.errf(line, "key __proto__ is not allowed")
		}
		seen[key] = true
		v, err := p.value(rest, ind, depth, line)
		if err != nil {
			return err
		}
		members = append(members, exactjson.Field(key, v))
		return nil
	}
	if first != "" {
		if err := entry(first, firstLine); err != nil {
			return exactjson.Value{}, err
		}
	}
	for {
		i := p.nextContent()
		if i < 0 {
			break
		}
		ci, text, err := p.content(i)
		if err != nil {
			return exactjson.Value{}, err
		}
		if ci < ind {
			break
		}
		if ci > ind {
			return exactjson.Value{}, p.errf(i, "unexpected indentation")
		}
		if isSeqEntry(text) {
			return exactjson.Value{}, p.errf(i, "a sequence entry where a mapping key was expected")
		}
		p.pos = i + 1
		if err := entry(text, i); err != nil {
			return exactjson.Value{}, err
		}
	}
	return exactjson.Object(members...), nil
}

// sequence parses a block sequence whose "-" sit at indentation ind.
func (p *fmParser) sequence(ind, depth int) (exactjson.Value, error) {
	if depth > p.maxDepth {
		return exactjson.Value{}, p.errf(p.pos, "nesting deeper than %d", p.maxDepth)
	}
	var items []exactjson.Value
	for {
		i := p.nextContent()
		if i < 0 {
			break
		}
		ci, text, err := p.content(i)
		if err != nil {
			return exactjson.Value{}, err
		}
		if ci < ind {
			break
		}
		if ci > ind {
			return exactjson.Value{}, p.errf(i, "unexpected indentation")
		}
		if !isSeqEntry(text) {
			break // the parent decides whether this line may follow
		}
		p.pos = i + 1
		rest := text[1:]
		sp := indentOf(rest)
		rest = rest[sp:]
		var item exactjson.Value
		switch {
		case strings.HasPrefix(rest, "\t"):
			return exactjson.Value{}, p.errf(i, "tab after a sequence entry's '-'")
		case rest == "" || rest[0] == '#':
			if j := p.nextContent(); j >= 0 && indentOf(p.lines[j]) > ind {
				if err = p.shallowComment(j, ind); err == nil {
					item, err = p.node(ind, depth+1)
				}
			}
		case isSeqEntry(rest):
			return exactjson.Value{}, p.errf(i, "compact nested sequences (- - x) are not supported")
		default:
			var isKey bool
			if _, _, isKey, err = p.parseKey(rest, i); err != nil {
				return exactjson.Value{}, err
			}
			if isKey {
				item, err = p.mapping(ind+1+sp, depth+1, rest, i)
			} else {
				item, err = p.scalar(rest, ind, i)
			}
		}
		if err != nil {
			return exactjson.Value{}, err
		}
		items = append(items, item)
	}
	return exactjson.Array(items...), nil
}

// node parses the value that starts on the next content line, which is
// indented more than parentIndent.
func (p *fmParser) node(parentIndent, depth int) (exactjson.Value, error) {
	i := p.nextContent()
	ind, text, err := p.content(i)
	if err != nil {
		return exactjson.Value{}, err
	}
	if isSeqEntry(text) {
		return p.sequence(ind, depth)
	}
	if _, _, isKey, err := p.parseKey(text, i); err != nil {
		return exactjson.Value{}, err
	} else if isKey {
		return p.mapping(ind, depth, "", -1)
	}
	if text[0] == '|' || text[0] == '>' {
		return exactjson.Value{}, p.errf(i, "a block scalar indicator must follow its key on the same line")
	}
	p.pos = i + 1
	return p.scalar(text, parentIndent, i)
}

// value parses what follows "key:" on line (rest starts after the ':').
func (p *fmParser) value(rest string, parentIndent, depth, line int) (exactjson.Value, error) {
	rest = rest[indentOf(rest):]
	if strings.HasPrefix(rest, "\t") {
		return exactjson.Value{}, p.errf(line, "tab after a key's ':'")
	}
	if rest == "" || rest[0] == '#' {
		i := p.nextContent()
		if i < 0 {
			return exactjson.Null(), nil
		}
		ind, text, err := p.content(i)
		if err != nil {
			return exactjson.Value{}, err
		}
		if ind > parentIndent || ind == parentIndent && isSeqEntry(text) {
			if err := p.shallowComment(i, parentIndent); err != nil {
				return exactjson.Value{}, err
			}
			if ind > parentIndent {
				return p.node(parentIndent, depth+1)
			}
			return p.sequence(ind, depth+1)
		}
		return exactjson.Null(), nil
	}
	return p.scalar(rest, parentIndent, line)
}

// scalar parses a scalar (or one-line flow collection) that starts with
// text on line; a multi-line plain scalar continues on following lines
// indented more than parentIndent.
func (p *fmParser) scalar(text string, parentIndent, line int) (exactjson.Value, error) {
	switch c := text[0]; {
	case c == '|' || c == '>':
		s, err := p.blockScalar(text, parentIndent, line)
		return exactjson.String(s), err
	case c == '"' || c == '\'':
		s, after, err := p.quoted(text, line)
		if err != nil {
			return exactjson.Value{}, err
		}
		if err := p.trailing(after, line); err != nil {
			return exactjson.Value{}, err
		}
		return exactjson.String(s), nil
	case c == '[':
		return p.flowSequence(text, line)
	case c == '{':
		if after, ok := strings.CutPrefix(text, "{}"); ok {
			return exactjson.Object(), p.trailing(after, line)
		}
		return exactjson.Value{}, p.errf(line, "flow mappings ({...}) are not supported; use a block mapping")
	case c == '&' || c == '*':
		return exactjson.Value{}, p.errf(line, "anchors and aliases are not supported")
	case c == '!':
		return exactjson.Value{}, p.errf(line, "tags are not supported")
	case indicator(c) && (c != '-' && c != '?' && c != ':' || len(text) == 1 || text[1] == ' '):
		return exactjson.Value{}, p.errf(line, "a plain scalar cannot start with %q; quote the value", c)
	}
	s, err := p.plain(text, parentIndent, line)
	if err != nil {
		return exactjson.Value{}, err
	}
	v, err := resolvePlain(s)
	if err != nil {
		return exactjson.Value{}, p.errf(line, "%v", err)
	}
	return v, nil
}

// trailing checks what follows a quoted scalar or flow collection: nothing,
// or spaces and a comment.
func (p *fmParser) trailing(after string, line int) error {
	if after == "" {
		return nil
	}
	t := after[indentOf(after):]
	if after[0] == ' ' && (t == "" || t[0] == '#') {
		return nil
	}
	return p.errf(line, "unexpected text %q after a value", after)
}

// plainLine checks one line of a plain scalar and returns it without its
// trailing spaces; comment reports that a comment ended it.
func (p *fmParser) plainLine(t string, line int) (s string, comment bool, err error) {
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\t':
			return "", false, p.errf(line, "tab in a plain scalar; quote the value")
		case '#':
			if i > 0 && t[i-1] == ' ' {
				return strings.TrimRight(t[:i], " "), true, nil
			}
		case ':':
			if i+1 == len(t) || t[i+1] == ' ' {
				return "", false, p.errf(line, "': ' inside a plain scalar (a nested mapping on one line?); quote the value")
			}
		}
	}
	return strings.TrimRight(t, " "), false, nil
}

func (p *fmParser) plain(first string, parentIndent, line int) (string, error) {
	s, comment, err := p.plainLine(first, line)
	if err != nil || comment {
		return s, err
	}
	var b strings.Builder
	b.WriteString(s)
	blanks := 0
	for j := p.pos; j < len(p.lines); j++ {
		l := p.lines[j]
		ind := indentOf(l)
		if ind == len(l) {
			blanks++
			continue
		}
		if ind <= parentIndent {
			break
		}
		t := l[ind:]
		if t[0] == '\t' {
			return "", p.errf(j, "tab in indentation")
		}
		if t[0] == '#' {
			return "", p.errf(j, "comment line inside a multi-line plain scalar")
		}
		if indicator(t[0]) {
			return "", p.errf(j, "continuation line of a plain scalar starts with %q; quote the value or use a block scalar", t[0])
		}
		c, comment, err := p.plainLine(t, j)
		if err != nil {
			return "", err
		}
		if comment {
			return "", p.errf(j, "comment inside a multi-line plain scalar")
		}
		if blanks == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(strings.Repeat("\n", blanks))
		}
		b.WriteString(c)
		blanks = 0
		p.pos = j + 1
	}
	return b.String(), nil
}

// quoted parses a single- or double-quoted scalar at the start of text
// (which must close on the same line) and returns the text after it.
func (p *fmParser) quoted(text string, line int) (string, string, error) {
	var b strings.Builder
	if text[0] == '\'' {
		for i := 1; i < len(text); i++ {
			if text[i] != '\'' {
				b.WriteByte(text[i])
				continue
			}
			if i+1 < len(text) && text[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), text[i+1:], nil
		}
		return "", "", p.errf(line, "unterminated single-quoted scalar (multi-line quoted scalars are not supported)")
	}
	for i := 1; i < len(text); i++ {
		c := text[i]
		switch c {
		case '"':
			return b.String(), text[i+1:], nil
		case '\\':
		default:
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(text) {
			break
		}
		var hexLen int
		switch e := text[i]; e {
		case '0':
			b.WriteByte(0)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't', '\t':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case ' ', '"', '/', '\\':
			b.WriteByte(e)
		case 'N':
			b.WriteRune(0x85)
		case '_':
			b.WriteRune(0xa0)
		case 'L':
			b.WriteRune(0x2028)
		case 'P':
			b.WriteRune(0x2029)
		case 'x':
			hexLen = 2
		case 'u':
			hexLen = 4
		case 'U':
			hexLen = 8
		default:
			return "", "", p.errf(line, "invalid escape \\%c in a double-quoted scalar", e)
		}
		if hexLen == 0 {
			continue
		}
		if i+hexLen >= len(text) {
			return "", "", p.errf(line, "truncated \\%c escape", text[i])
		}
		n, err := strconv.ParseUint(text[i+1:i+1+hexLen], 16, 32)
		if err != nil || !utf8.ValidRune(rune(n)) {
			return "", "", p.errf(line, "invalid \\%c escape %q", text[i], text[i+1:i+1+hexLen])
		}
		b.WriteRune(rune(n))
		i += hexLen
	}
	return "", "", p.errf(line, "unterminated double-quoted scalar (multi-line quoted scalars are not supported)")
}

// flowSequence parses a one-line flow sequence of scalars: [a, "b", 3].
func (p *fmParser) flowSequence(text string, line int) (exactjson.Value, error) {
	items := []exactjson.Value{}
	i := 1
	skip := func() {
		for i < len(text) && text[i] == ' ' {
			i++
		}
	}
	skip()
	if i < len(text) && text[i] == ']' {
		return exactjson.Array(), p.trailing(text[i+1:], line)
	}
	for {
		skip()
		if i == len(text) {
			return exactjson.Value{}, p.errf(line, "unterminated flow sequence (multi-line flow sequences are not supported)")
		}
		switch c := text[i]; {
		case c == '"' || c == '\'':
			s, after, err := p.quoted(text[i:], line)
			if err != nil {
				return exactjson.Value{}, err
			}
			items = append(items, exactjson.String(s))
			i = len(text) - len(after)
		case indicator(c) && (c != '-' && c != '?' && c != ':' || i+1 == len(text) || strings.IndexByte(" ,[]{}", text[i+1]) >= 0):
			return exactjson.Value{}, p.errf(line, "flow sequence item starting with %q is not supported; quote it", c)
		default:
			j := i
			for ; j < len(text); j++ {
				d := text[j]
				if d == ',' || d == ']' {
					break
				}
				switch {
				case d == '[' || d == '{' || d == '}':
					return exactjson.Value{}, p.errf(line, "nested flow collections are not supported")
				case d == '\t':
					return exactjson.Value{}, p.errf(line, "tab in a flow sequence")
				case d == '#' && text[j-1] == ' ':
					return exactjson.Value{}, p.errf(line, "unterminated flow sequence (comment before ']')")
				case d == ':' && (j+1 == len(text) || strings.IndexByte(" ,[]{}", text[j+1]) >= 0):
					return exactjson.Value{}, p.errf(line, "':' ends a flow sequence item (a mapping?); quote the item")
				}
			}
			v, err := resolvePlain(strings.TrimRight(text[i:j], " "))
			if err != nil {
				return exactjson.Value{}, p.errf(line, "%v", err)
			}
			items = append(items, v)
			i = j
		}
		skip()
		if i == len(text) {
			return exactjson.Value{}, p.errf(line, "unterminated flow sequence")
		}
		switch text[i] {
		case ']':
			return exactjson.Array(items...), p.trailing(text[i+1:], line)
		case ',':
			i++
			skip()
			if i < len(text) && (text[i] == ']' || text[i] == ',') {
				return exactjson.Value{}, p.errf(line, "empty flow sequence item or trailing comma")
			}
		default:
			return exactjson.Value{}, p.errf(line, "expected ',' or ']' in a flow sequence")
		}
	}
}

// blockScalar parses a literal (|) or folded (>) block scalar whose header
// is on line; its content is the following lines indented more than
// parentIndent.
func (p *fmParser) blockScalar(header string, parentIndent, line int) (string, error) {
	folded := header[0] == '>'
	h := header[1:]
	chomp := byte(0) // clip
	if h != "" && (h[0] == '-' || h[0] == '+') {
		chomp, h = h[0], h[1:]
	}
	if h != "" && h[0] >= '0' && h[0] <= '9' {
		return "", p.errf(line, "block scalar indentation indicators are not supported")
	}
	if h != "" && h[0] != ' ' {
		return "", p.errf(line, "unexpected %q after a block scalar indicator", h)
	}
	if t := h[indentOf(h):]; t != "" && t[0] != '#' {
		return "", p.errf(line, "unexpected %q after a block scalar indicator", t)
	}

	contentIndent := -1
	leadingMax := 0 // the most spaces on a blank line before the first content line
	var lines []string
	trailing := 0 // blank lines (with a line break) after the last content line
	j := p.pos
	for ; j < len(p.lines); j++ {
		l := p.lines[j]
		sp := indentOf(l)
		hasBreak := j < len(p.lines)-1
		if sp == len(l) { // blank
			if contentIndent < 0 {
				leadingMax = max(leadingMax, sp)
			} else if sp > contentIndent {
				return "", p.errf(j, "whitespace-only line indented past the block scalar's content; remove the trailing spaces")
			}
			if hasBreak {
				lines = append(lines, "")
				trailing++
			}
			continue
		}
		if contentIndent < 0 {
			if sp <= parentIndent {
				break
			}
			if l[sp] == '\t' {
				return "", p.errf(j, "tab in indentation")
			}
			contentIndent = sp
			if leadingMax > contentIndent {
				return "", p.errf(j, "a leading blank line of the block scalar has more spaces than its content")
			}
		}
		if sp < contentIndent {
			if sp > parentIndent {
				return "", p.errf(j, "line less indented than the block scalar's content")
			}
			break
		}
		c := l[contentIndent:]
		if folded && (c[0] == ' ' || c[0] == '\t') {
			return "", p.errf(j, "more-indented lines in a folded (>) block scalar are not supported; use |")
		}
		lines = append(lines, c)
		trailing = 0
	}
	p.pos = j
	body := lines[:len(lines)-trailing]
	if len(body) == 0 || contentIndent < 0 {
		if chomp == '+' {
			return "", p.errf(line, "a keep (+) block scalar with no content is not supported")
		}
		return "", nil
	}
	var b strings.Builder
	if folded {
		i := 0
		for ; i < len(body) && body[i] == ""; i++ {
			b.WriteByte('\n')
		}
		b.WriteString(body[i])
		for i++; i < len(body); i++ {
			k := 0
			for ; body[i] == ""; i++ {
				k++
			}
			if k == 0 {
				b.WriteByte(' ')
			} else {
				b.WriteString(strings.Repeat("\n", k))
			}
			b.WriteString(body[i])
		}
	} else {
		b.WriteString(strings.Join(body, "\n"))
	}
	// The last content line counts as ended by a line break even at the
	// end of the front matter (which never ends with one: the newline
	// before the closing --- belongs to the delimiter), as YAML parsers
	// treat the end of the input.
	switch chomp {
	case 0:
		b.WriteByte('\n')
	case '+':
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("\n", trailing))
	}
	return b.String(), nil
}

// Core-schema number forms (YAML 1.2).
var (
	reInt      = regexp.MustCompile(`^[-+]?[0-9]+$`)
	reOct      = regexp.MustCompile(`^0o[0-7]+$`)
	reHex      = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	reFloat    = regexp.MustCompile(`^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$|^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$`)
	reInfNaN   = regexp.MustCompile(`^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$`)
	maxExactly = float64(1 << 53)
)

// resolvePlain applies the YAML 1.2 core schema to a plain scalar.
func resolvePlain(s string) (exactjson.Value, error) {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return exactjson.Null(), nil
	case "true", "True", "TRUE":
		return exactjson.Bool(true), nil
	case "false", "False", "FALSE":
		return exactjson.Bool(false), nil
	}
	if !strings.ContainsAny(s[:1], "+-.0123456789") {
		return exactjson.String(s), nil
	}
	var f float64
	switch {
	case reInfNaN.MatchString(s):
		return exactjson.Value{}, fmt.Errorf("%q is an infinity or NaN in YAML, which JSON cannot hold; quote it", s)
	case reOct.MatchString(s), reHex.MatchString(s):
		base := 8
		if s[1] == 'x' {
			base = 16
		}
		n, err := strconv.ParseUint(s[2:], base, 64)
		if err != nil || n > 1<<53 {
			return exactjson.Value{}, fmt.Errorf("integer %s is not exactly representable; quote it", s)
		}
		f = float64(n)
	case reInt.MatchString(s):
		var err error
		if f, err = strconv.ParseFloat(s, 64); err != nil || math.Abs(f) > maxExactly {
			return exactjson.Value{}, fmt.Errorf("integer %s is not exactly representable; quote it", s)
		}
	case reFloat.MatchString(s):
		var err error
		if f, err = strconv.ParseFloat(s, 64); err != nil || math.IsInf(f, 0) {
			return exactjson.Value{}, fmt.Errorf("number %s is out of range; quote it", s)
		}
	default:
		return exactjson.String(s), nil
	}
	if f == 0 && math.Signbit(f) {
		return exactjson.Value{}, fmt.Errorf("negative zero %s is not supported; write 0 or quote it", s)
	}
	return exactjson.Float(f)
}
