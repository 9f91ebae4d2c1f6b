package elicit

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
)

// ErrInvalidContent is matched (with errors.Is) by every *ValidationError.
var ErrInvalidContent = errors.New("elicit: content does not match the requested schema")

// ProblemCode classifies a [Problem].
type ProblemCode string

// The problem codes reported by [Schema.Validate].
const (
	ProblemNotObject      ProblemCode = "not-object"      // the content is not a JSON object
	ProblemUnexpected     ProblemCode = "unexpected"      // a field the schema does not declare
	ProblemRepeated       ProblemCode = "repeated"        // a field present more than once
	ProblemRequired       ProblemCode = "required"        // a required field is missing
	ProblemType           ProblemCode = "type"            // wrong JSON type (or invalid UTF-8 text)
	ProblemTooShort       ProblemCode = "min-length"      // fewer characters than minLength
	ProblemTooLong        ProblemCode = "max-length"      // more characters than maxLength
	ProblemFormat         ProblemCode = "format"          // not a valid email, uri, date or date-time
	ProblemNotInteger     ProblemCode = "integer"         // a non-integral number for an integer field
	ProblemTooSmall       ProblemCode = "minimum"         // below minimum
	ProblemTooLarge       ProblemCode = "maximum"         // above maximum
	ProblemNotOption      ProblemCode = "option"          // not one of the offered options
	ProblemRepeatedOption ProblemCode = "repeated-option" // an option chosen twice in a multi-select
	ProblemTooFew         ProblemCode = "min-items"       // fewer choices than minItems
	ProblemTooMany        ProblemCode = "max-items"       // more choices than maxItems
)

// Problem is one reason accepted content failed validation. Reason is a short
// English sentence fragment that never quotes the submitted value, so it is
// safe to show to the user.
type Problem struct {
	// Field is the property name; empty for ProblemNotObject. For fields
	// the schema does not declare it is truncated to a bounded length.
	Field string
	// Code classifies the problem.
	Code ProblemCode
	// Reason explains the problem, e.g. "must be at least 18".
	Reason string
}

// maxProblems bounds the problems reported by one ValidationError.
const maxProblems = 32

// ValidationError reports accepted content that does not match the requested
// schema. It matches [ErrInvalidContent] with errors.Is.
type ValidationError struct {
	// Problems lists up to 32 problems: declared fields in schema order,
	// then unexpected or repeated fields in content order.
	Problems []Problem
	// Omitted counts further problems that were not listed.
	Omitted int
}

// Error lists the problems.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(ErrInvalidContent.Error())
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if p.Field != "" || p.Code != ProblemNotObject {
			b.WriteString(quoteTrunc(p.Field))
			b.WriteString(" ")
		}
		b.WriteString(p.Reason)
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "; and %d more", e.Omitted)
	}
	return b.String()
}

// Is reports whether target is ErrInvalidContent.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidContent }

// Validate checks accepted content against the schema: content must be an
// object; every member must be a declared field (unexpected and repeated
// fields are rejected); every required field must be present; and each value
// must have its field's type and satisfy its constraints — string length in
// Unicode code points, format, exact decimal minimum/maximum (3.50 equals
// 3.5), integrality for integer fields (2.0 is an integer), option
// membership, and for multi-selects minItems/maxItems and no repeated
// option. It returns nil or a *ValidationError.
func (s *Schema) Validate(content exactjson.Value) error {
	if s == nil {
		return errors.New("elicit: validate content: nil schema")
	}
	if content.Kind() != exactjson.KindObject {
		return &ValidationError{Problems: []Problem{{Code: ProblemNotObject, Reason: "the answer must be an object of named fields"}}}
	}
	fieldProbs := make([]*Problem, len(s.props))
	seen := make(map[string]bool, content.Len())
	var extra []Problem
	for name, v := range content.All() {
		if seen[name] {
			extra = append(extra, Problem{Field: truncField(name), Code: ProblemRepeated, Reason: "appears more than once"})
			continue
		}
		seen[name] = true
		i, ok := s.index[name]
		if !ok {
			extra = append(extra, Problem{Field: truncField(name), Code: ProblemUnexpected, Reason: "is not a field of this form"})
			continue
		}
		if p, bad := s.props[i].check(v); bad {
			fieldProbs[i] = &p
		}
	}
	var probs []Problem
	for i := range s.props {
		switch {
		case fieldProbs[i] != nil:
			probs = append(probs, *fieldProbs[i])
		case s.props[i].required && !seen[s.props[i].name]:
			probs = append(probs, Problem{Field: s.props[i].name, Code: ProblemRequired, Reason: "is required"})
		}
	}
	probs = append(probs, extra...)
	if len(probs) == 0 {
		return nil
	}
	e := &ValidationError{Problems: probs}
	if len(probs) > maxProblems {
		e.Problems, e.Omitted = probs[:maxProblems:maxProblems], len(probs)-maxProblems
	}
	return e
}

// truncField bounds a client-supplied field name for a Problem.
func truncField(s string) string {
	const max = 128
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// check validates one value against the property, returning the first
// problem.
func (p *property) check(v exactjson.Value) (Problem, bool) {
	bad := func(code ProblemCode, format string, args ...any) (Problem, bool) {
		return Problem{Field: p.name, Code: code, Reason: fmt.Sprintf(format, args...)}, true
	}
	switch p.kind {
	case KindString:
		s, ok := v.AsString()
		if !ok || !utf8.ValidString(s) {
			return bad(ProblemType, "must be text")
		}
		n := utf8.RuneCountInString(s)
		if p.minLen >= 0 && n < p.minLen {
			return bad(ProblemTooShort, "must be at least %d characters long", p.minLen)
		}
		if p.maxLen >= 0 && n > p.maxLen {
			return bad(ProblemTooLong, "must be at most %d characters long", p.maxLen)
		}
		switch p.format {
		case FormatEmail:
			if !validEmail(s) {
				return bad(ProblemFormat, "must be an email address such as name@example.com")
			}
		case FormatURI:
			if !validURI(s) {
				return bad(ProblemFormat, "must be an absolute URI such as https://example.com/")
			}
		case FormatDate:
			if !validDate(s) {
				return bad(ProblemFormat, "must be a date in the form YYYY-MM-DD")
			}
		case FormatDateTime:
			if !validDateTime(s) {
				return bad(ProblemFormat, "must be a date and time such as 2026-07-28T09:30:00Z")
			}
		}
	case KindNumber, KindInteger:
		n, ok := v.AsNumber()
		if !ok {
			if p.kind == KindInteger {
				return bad(ProblemType, "must be a whole number")
			}
			return bad(ProblemType, "must be a number")
		}
		if p.kind == KindInteger && !n.IsInteger() {
			return bad(ProblemNotInteger, "must be a whole number")
		}
		if p.hasMin && n.Cmp(p.minimum) < 0 {
			return bad(ProblemTooSmall, "must be at least %s", boundText(p.minimum))
		}
		if p.hasMax && n.Cmp(p.maximum) > 0 {
			return bad(ProblemTooLarge, "must be at most %s", boundText(p.maximum))
		}
	case KindBoolean:
		if _, ok := v.AsBool(); !ok {
			return bad(ProblemType, "must be true or false")
		}
	case KindSingleSelect:
		s, ok := v.AsString()
		if !ok {
			return bad(ProblemType, "must be one of the offered options")
		}
		if !p.hasOption(s) {
			return bad(ProblemNotOption, "must be one of the offered options")
		}
	case KindMultiSelect:
		if v.Kind() != exactjson.KindArray {
			return bad(ProblemType, "must be a list of the offered options")
		}
		seen := make(map[string]bool, v.Len())
		for e := range v.Values() {
			s, ok := e.AsString()
			if !ok {
				return bad(ProblemType, "must be a list of the offered options")
			}
			if !p.hasOption(s) {
				return bad(ProblemNotOption, "must contain only the offered options")
			}
			if seen[s] {
				return bad(ProblemRepeatedOption, "must not choose the same option twice")
			}
			seen[s] = true
		}
		if p.minItems >= 0 && v.Len() < p.minItems {
			return bad(ProblemTooFew, "must have at least %d %s chosen", p.minItems, plural(p.minItems, "option", "options"))
		}
		if p.maxItems >= 0 && v.Len() > p.maxItems {
			return bad(ProblemTooMany, "must have at most %d %s chosen", p.maxItems, plural(p.maxItems, "option", "options"))
		}
	}
	return Problem{}, false
}

// boundText renders a schema bound for a problem reason: its literal as
// authored when short, its canonical spelling otherwise.
func boundText(n exactjson.Number) string {
	if s := n.String(); len(s) <= 40 {
		return s
	}
	if s := n.Canonical(); len(s) <= 40 {
		return s
	}
	return "the allowed limit"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
