package openapi

import "fmt"

// flowDepth returns an upper bound of the nesting the YAML parser builds
// from the flow collections ({...} and [...], which is all of a JSON
// document's nesting) of a YAML or JSON document, scanning its bytes once
// without parsing it, and stops with an error as soon as it passes limit.
// Each flow collection counts two levels: in YAML a flow collection can be
// the key of an implicit single-pair mapping ("[a]: b" at the top, or
// inside a flow sequence), which nests one level above it
// (FuzzFlowDepth found "[]:", two levels for one bracket).
//
// It runs before the YAML parser and libopenapi see the document: their
// cost grows with depth times size (a 149 KB document of nested flow
// mappings took 841 MB), so a document is refused here, in time and memory
// linear in its size. Block-style nesting needs an indentation per level,
// so its depth is bounded by the square root of the document's size and
// needs no check of its own.
//
// The scan is lexical: it skips comments, quoted scalars and block
// scalars (| and >). In block context a bracket opens a collection only
// where YAML starts a value (after "key: ", "- ", "? " or at the start of a
// line): a bracket inside a plain scalar ("pattern: ^[a-z]+$") is text. In
// flow context every bracket is structure, and a quote or a "#" starts a
// quoted scalar or a comment only where the parser's scanner starts a token
// (a quote inside a plain scalar, as in "{0:\"x", is text). Where the scan and
// a parser could disagree (an unbalanced bracket at the start of a plain
// scalar's continuation line), it counts the bracket: it may refuse an odd
// document, never admit a deeper one.
func flowDepth(doc []byte, limit int) (int, error) {
	depth, deepest := 0, 0
	// Block context (depth 0). atValue: the next non-blank byte starts a
	// value (or a key).
	atValue := true
	lineIndent, col := 0, 0
	lineStart := true
	// Flow context (depth > 0), as the parser's scanner tokenizes it:
	// plain: inside a plain scalar, where quotes are text and ":" or "?"
	// end it only before a blank (":" also before ",", "]" or "}");
	// afterEntry: the last token was "[", "{" or ",", after which ":" not
	// followed by a blank starts a plain scalar; blank: the byte before
	// was a blank or a line break (a "#" after one starts a comment).
	plain, afterEntry, blank := false, false, true
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		if c == '\n' || c == '\r' {
			lineStart, col, lineIndent = true, 0, 0
			if depth == 0 {
				atValue = true
			}
			blank = true
			continue
		}
		if lineStart {
			if c == ' ' || c == '\t' {
				col++
				continue
			}
			lineStart, lineIndent = false, col
		}
		// A bracket opens a collection everywhere in flow context (comments
		// and quoted scalars are skipped whole), and where a value starts in
		// block context.
		if (c == '{' || c == '[') && (depth > 0 || atValue) {
			depth += 2
			deepest = max(deepest, depth)
			if depth > limit {
				return deepest, fmt.Errorf("openapi: the document nests collections more than %d levels deep (Options.MaxDocumentDepth)", limit)
			}
			plain, afterEntry, blank = false, true, false
			continue
		}
		if depth > 0 {
			wasBlank := blank
			blank = c == ' ' || c == '\t'
			if blank {
				continue
			}
			if c == '#' && (!plain || wasBlank) {
				i = skipLine(doc, i)
				plain = false
				continue
			}
			switch c {
			case '}', ']':
				depth -= 2
				plain, afterEntry, atValue = false, false, false
				continue
			case ',':
				plain, afterEntry = false, true
				continue
			}
			if plain {
				if c == ':' && (i+1 == len(doc) || isBlank(doc[i+1]) || doc[i+1] == ',' || doc[i+1] == ']' || doc[i+1] == '}') ||
					c == '?' && (i+1 == len(doc) || isBlank(doc[i+1])) {
					plain = false // the scalar ends at a value or key indicator
				}
				continue
			}
			// A token starts at c.
			notBlankNext := i+1 < len(doc) && !isBlank(doc[i+1])
			switch c {
			case '"', '\'':
				i = skipQuoted(doc, i)
			case ':':
				plain = afterEntry && notBlankNext // else the value indicator
			case '?':
				plain = notBlankNext // else the key indicator
			case '&', '!', '*':
				// an anchor, a tag or an alias: its name ends at a blank or a
				// flow indicator
				for i+1 < len(doc) && !isBlank(doc[i+1]) && !isFlowIndicator(doc[i+1]) {
					i++
				}
			default:
				plain = true
			}
			afterEntry = false
			continue
		}
		switch c {
		case ' ', '\t':
			continue
		case '#':
			if i == 0 || isBlank(doc[i-1]) {
				i = skipLine(doc, i)
				continue
			}
		}
		if atValue {
			switch c {
			case '"', '\'':
				i = skipQuoted(doc, i)
				atValue = false
				continue
			case '|', '>':
				i = skipBlockScalar(doc, i, lineIndent)
				continue
			case '-', '?':
				if i+1 == len(doc) || isBlank(doc[i+1]) {
					continue // a sequence entry or a complex key: a value follows
				}
			case '&', '!':
				// an anchor or a tag: a value follows after it
				for i+1 < len(doc) && !isBlank(doc[i+1]) && doc[i+1] != ',' && doc[i+1] != '[' && doc[i+1] != '{' {
					i++
				}
				continue
			}
		}
		switch c {
		case ':':
			if i+1 == len(doc) || isBlank(doc[i+1]) {
				atValue = true
			}
		default:
			atValue = false
		}
	}
	return deepest, nil
}

// skipLine returns the index of the last byte of the line i is on.
func skipLine(doc []byte, i int) int {
	for i+1 < len(doc) && doc[i+1] != '\n' && doc[i+1] != '\r' {
		i++
	}
	return i
}

// isFlowIndicator reports whether c is one of YAML's flow indicators.
func isFlowIndicator(c byte) bool {
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipQuoted returns the index of the quote closing the scalar opened at i
// (or the last index when it is never closed).
func skipQuoted(doc []byte, i int) int {
	q := doc[i]
	for j := i + 1; j < len(doc); j++ {
		switch {
		case q == '"' && doc[j] == '\\':
			j++
		case doc[j] == q:
			if q == '\'' && j+1 < len(doc) && doc[j+1] == '\'' {
				j++ // '' is an escaped quote
				continue
			}
			return j
		}
	}
	return len(doc) - 1
}

// skipBlockScalar skips a block scalar whose indicator is at i on a line
// indented by indent: the rest of that line, then every line that is blank
// or indented more. It returns the index of the last byte skipped.
func skipBlockScalar(doc []byte, i, indent int) int {
	for i < len(doc) && doc[i] != '\n' {
		i++
	}
	for i < len(doc) {
		// doc[i] is a newline: look at the next line.
		j, col := i+1, 0
		for j < len(doc) && (doc[j] == ' ' || doc[j] == '\t') {
			j++
			col++
		}
		if j < len(doc) && doc[j] != '\n' && doc[j] != '\r' && col <= indent {
			return i - 1 // the next line belongs to the parent
		}
		i = j
		for i < len(doc) && doc[i] != '\n' {
			i++
		}
	}
	return len(doc) - 1
}
