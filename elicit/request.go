package elicit

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
)

// Method is the method of an elicitation input request.
const Method = "elicitation/create"

// Mode is an elicitation mode.
type Mode string

// The elicitation modes.
const (
	ModeForm Mode = "form" // in-band structured data through the client
	ModeURL  Mode = "url"  // out-of-band interaction at a URL
)

// Request is a verified elicitation/create request: its params are ready to
// embed in an input_required result under an application-chosen key. It is
// immutable. Build it with [Form], [FormWithPolicy], [FormFromSchema] or
// [URL]; the zero Request is invalid (Params returns null).
type Request struct {
	mode    Mode
	message string
	schema  *Schema
	url     string
	params  exactjson.Value
}

// Mode returns the request's mode.
func (r Request) Mode() Mode { return r.mode }

// Message returns the message shown to the user.
func (r Request) Message() string { return r.message }

// Schema returns the requested schema of a form request, or nil for a URL
// request.
func (r Request) Schema() *Schema { return r.schema }

// URL returns the URL of a URL-mode request, or "".
func (r Request) URL() string { return r.url }

// Params returns the elicitation/create params: {"mode":"form", "message",
// "requestedSchema"} or {"mode":"url", "message", "url"}.
func (r Request) Params() exactjson.Value { return r.params }

// Embedded returns the request as it appears in inputRequests:
// {"method":"elicitation/create","params":{...}}.
func (r Request) Embedded() exactjson.Value {
	return exactjson.Object(
		exactjson.Field("method", exactjson.String(Method)),
		exactjson.Field("params", r.params))
}

// Answer interprets the client's response to this request; see [Answer].
// For a URL request it is Answer(nil, response).
func (r Request) Answer(response exactjson.Value) (exactjson.Value, Outcome, error) {
	if r.mode == "" {
		return exactjson.Null(), 0, errors.New("elicit: answer: zero Request")
	}
	return Answer(r.schema, response)
}

// checkMessage rejects messages that cannot explain anything to the user.
func checkMessage(message string) error {
	if !utf8.ValidString(message) {
		return errors.New("elicit: message is not valid UTF-8")
	}
	if strings.TrimSpace(message) == "" {
		return errors.New("elicit: message is empty; tell the user why the input is needed")
	}
	return nil
}

// Form builds a form-mode request from the fields after applying the
// default [SecretPolicy]. It fails if the message is empty, a field is
// invalid or repeated (errors wrapping [ErrInvalidSchema]), or a free-entry
// field appears to ask for a secret (a *SecretFieldError, matching
// [ErrSecretField]) — secrets must be requested with [URL] mode.
func Form(message string, fields ...Field) (Request, error) {
	return FormWithPolicy(DefaultSecretPolicy(), message, fields...)
}

// FormWithPolicy is like [Form] with the given secret policy instead of the
// default.
func FormWithPolicy(policy SecretPolicy, message string, fields ...Field) (Request, error) {
	if err := checkMessage(message); err != nil {
		return Request{}, err
	}
	s, err := BuildSchema(fields...)
	if err != nil {
		return Request{}, fmt.Errorf("elicit: build form: %w", err)
	}
	return FormFromSchema(policy, message, s)
}

// FormFromSchema builds a form-mode request from a schema obtained from
// [ParseSchema] (for hand-written schemas) or [BuildSchema], applying the
// given secret policy to its free-entry fields.
func FormFromSchema(policy SecretPolicy, message string, schema *Schema) (Request, error) {
	if err := checkMessage(message); err != nil {
		return Request{}, err
	}
	if schema == nil {
		return Request{}, errors.New("elicit: build form: nil schema")
	}
	if err := policy.CheckSchema(schema); err != nil {
		return Request{}, fmt.Errorf("elicit: form refused by secret policy: %w", err)
	}
	return Request{
		mode:    ModeForm,
		message: message,
		schema:  schema,
		params: exactjson.Object(
			exactjson.Field("mode", exactjson.String(string(ModeForm))),
			exactjson.Field("message", exactjson.String(message)),
			exactjson.Field("requestedSchema", schema.Value())),
	}, nil
}

// URL builds a URL-mode request after checking rawURL against policy (see
// [URLPolicy.Check]). The URL in the request is the normalised form returned
// by Check.
func URL(message, rawURL string, policy URLPolicy) (Request, error) {
	if err := checkMessage(message); err != nil {
		return Request{}, err
	}
	u, err := policy.Check(rawURL)
	if err != nil {
		return Request{}, err
	}
	return Request{
		mode:    ModeURL,
		message: message,
		url:     u,
		params: exactjson.Object(
			exactjson.Field("mode", exactjson.String(string(ModeURL))),
			exactjson.Field("message", exactjson.String(message)),
			exactjson.Field("url", exactjson.String(u))),
	}, nil
}
