package exactjson

import (
	"errors"
	"strconv"
)

// ErrLimit is matched (via errors.Is) by every *LimitError.
var ErrLimit = errors.New("json: limit exceeded")

// ErrInvalidUTF8 is wrapped by encoding errors for strings or member names
// that are not valid UTF-8.
var ErrInvalidUTF8 = errors.New("json: invalid UTF-8")

// ErrDuplicateName is wrapped by encoding errors for objects that contain
// the same member name more than once.
var ErrDuplicateName = errors.New("json: duplicate object member name")

// SyntaxError reports input that is not strict JSON.
type SyntaxError struct {
	// Offset is the byte offset in the input where the error was detected.
	Offset int64
	// Msg describes the problem.
	Msg string
}

// Error returns "json: syntax error at byte N: msg".
func (e *SyntaxError) Error() string {
	return "json: syntax error at byte " + strconv.FormatInt(e.Offset, 10) + ": " + e.Msg
}

// LimitError reports that a resource limit was exceeded.
type LimitError struct {
	// Limit is the name of the Limits field (or "MaxOutputBytes") that was exceeded.
	Limit string
	// Max is the effective value of that limit.
	Max int
	// Offset is the input byte offset (or, for MaxOutputBytes, the output
	// length) where the limit was hit. It is negative when no position
	// applies (limits checked on a value before encoding it).
	Offset int64
}

// Error returns e.g. "json: input exceeds MaxDepth (128) at byte N".
func (e *LimitError) Error() string {
	what := "input"
	switch e.Limit {
	case "MaxOutputBytes":
		what = "output"
	}
	if e.Offset < 0 {
		what = "value"
	}
	s := "json: " + what + " exceeds " + e.Limit + " (" + strconv.Itoa(e.Max) + ")"
	if e.Offset >= 0 {
		s += " at byte " + strconv.FormatInt(e.Offset, 10)
	}
	return s
}

// Is reports whether target is ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }
