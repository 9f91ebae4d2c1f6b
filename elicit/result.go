package elicit

import (
	"errors"
	"fmt"

	"github.com/weftmcp/weft/exactjson"
)

// ErrInvalidResult is wrapped by every error that reports an elicitation
// result outside the protocol shape.
var ErrInvalidResult = errors.New("elicit: invalid elicitation result")

// Action is the user's action on an elicitation: accept, decline or cancel.
// The zero Action is not a valid action.
type Action uint8

// The three outcomes. Decline and cancel are normal terminal branches, not
// malformed successes: handle each explicitly.
const (
	Accepted  Action = iota + 1 // "accept": the user submitted (form) or consented to open the URL (URL mode)
	Declined                    // "decline": the user explicitly refused
	Cancelled                   // "cancel": the user dismissed without choosing
)

// String returns the wire action: "accept", "decline" or "cancel".
func (o Action) String() string {
	switch o {
	case Accepted:
		return "accept"
	case Declined:
		return "decline"
	case Cancelled:
		return "cancel"
	}
	return fmt.Sprintf("Action(%d)", uint8(o))
}

// Result is a decoded elicitation result (an entry of inputResponses).
type Result struct {
	// Action is the user's action.
	Action Action
	// Content is the submitted object for an accepted form, or null when
	// the result has no content (URL mode, decline, cancel). It holds only
	// protocol content values: strings, numbers, booleans and arrays of
	// strings. It is not validated against any schema; see
	// [Schema.Validate] and [Answer].
	Content exactjson.Value
}

// Accepted reports whether the user accepted.
func (r Result) Accepted() bool { return r.Action == Accepted }

// Declined reports whether the user declined.
func (r Result) Declined() bool { return r.Action == Declined }

// Cancelled reports whether the user cancelled.
func (r Result) Cancelled() bool { return r.Action == Cancelled }

func resultErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidResult}, args...)...)
}

// ParseResult decodes an elicitation result: an object with "action" equal
// to "accept", "decline" or "cancel" and, only with accept, an optional
// "content" object whose values are strings, numbers, booleans or arrays of
// strings (null values, nested objects and arrays holding anything but
// strings are rejected). A null content counts as absent. Other members
// (such as "_meta", or a "resultType" some clients add) are ignored.
// Errors wrap [ErrInvalidResult].
func ParseResult(v exactjson.Value) (Result, error) {
	if v.Kind() != exactjson.KindObject {
		return Result{}, resultErr("result must be a JSON object, not %s", v.Kind())
	}
	var (
		action  exactjson.Value
		content exactjson.Value
		nAction int
		nCont   int
	)
	for i := range v.Len() {
		switch m := v.Member(i); m.Name {
		case "action":
			action, nAction = m.Value, nAction+1
		case "content":
			content, nCont = m.Value, nCont+1
		}
	}
	if nAction == 0 {
		return Result{}, resultErr(`missing "action"`)
	}
	if nAction > 1 || nCont > 1 {
		return Result{}, resultErr("a member appears twice")
	}
	var r Result
	switch s, _ := action.AsString(); s {
	case "accept":
		r.Action = Accepted
	case "decline":
		r.Action = Declined
	case "cancel":
		r.Action = Cancelled
	default:
		return Result{}, resultErr(`"action" must be "accept", "decline" or "cancel"`)
	}
	if content.IsNull() {
		return r, nil
	}
	if r.Action != Accepted {
		return Result{}, resultErr(`"content" is only allowed with action "accept", not %q`, r.Action)
	}
	if content.Kind() != exactjson.KindObject {
		return Result{}, resultErr(`"content" must be an object, not %s`, content.Kind())
	}
	if err := checkNames(content); err != nil {
		return Result{}, resultErr("content: %w", err)
	}
	for i := range content.Len() {
		m := content.Member(i)
		if err := checkContentValue(m.Value); err != nil {
			return Result{}, resultErr("content field %s: %w", quoteTrunc(m.Name), err)
		}
	}
	r.Content = content
	return r, nil
}

// checkContentValue checks the protocol content union.
func checkContentValue(v exactjson.Value) error {
	switch v.Kind() {
	case exactjson.KindString, exactjson.KindNumber, exactjson.KindBool:
		return nil
	case exactjson.KindArray:
		for e := range v.Values() {
			if e.Kind() != exactjson.KindString {
				return fmt.Errorf("arrays may hold only strings, found %s", e.Kind())
			}
		}
		return nil
	}
	return fmt.Errorf("value must be a string, number, boolean or array of strings, not %s", v.Kind())
}

// Answer interprets the client's response to an elicitation in one step and
// makes the three branches explicit:
//
//   - a malformed response returns an error wrapping [ErrInvalidResult] and
//     a zero Action;
//   - decline and cancel return (null, Declined or Cancelled, nil);
//   - accept with a form schema validates the content (absent content
//     counts as {}) and returns (content, Accepted, nil), or (null,
//     Accepted, err) with err a *ValidationError when the content does not
//     match — re-ask or report it, but never act on it;
//   - accept with a nil schema is a URL-mode consent: any content is an
//     error, otherwise (null, Accepted, nil). Consent to open a URL does not
//     mean the out-of-band interaction finished; check your own state.
//
// A response that is missing altogether (the key is absent from
// inputResponses) is not an answer: re-request it.
func Answer(schema *Schema, response exactjson.Value) (exactjson.Value, Action, error) {
	r, err := ParseResult(response)
	if err != nil {
		return exactjson.Null(), 0, err
	}
	if r.Action != Accepted {
		return exactjson.Null(), r.Action, nil
	}
	if schema == nil {
		if !r.Content.IsNull() {
			return exactjson.Null(), Accepted, resultErr("a URL-mode result must not carry content")
		}
		return exactjson.Null(), Accepted, nil
	}
	content := r.Content
	if content.IsNull() {
		content = exactjson.Object()
	}
	if err := schema.Validate(content); err != nil {
		return exactjson.Null(), Accepted, err
	}
	return content, Accepted, nil
}
