package weft

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	gschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// Action is the user's action on a form or URL request: [Accepted],
// [Declined] or [Cancelled] (the answer's "accept", "decline" or
// "cancel"). The zero Action is not a valid action. It is the type package
// elicit parses answers into, named here so that a server needs no other
// package to read them.
type Action = elicit.Action

// The three actions. Decline and cancel are normal ends of a request, not
// failures: handle each explicitly.
const (
	Accepted  = elicit.Accepted  // the user submitted the form, or consented to open the URL
	Declined  = elicit.Declined  // the user explicitly refused
	Cancelled = elicit.Cancelled // the user dismissed the request without choosing
)

// FormInput declares form-mode elicitation with a requested schema given
// on each request: use it when the form is built at call time (a choice
// among the caller's own orders, say). For a fixed form, [FormOf] infers
// the schema from a Go struct and decodes the answer into it.
type FormInput struct{ inputDecl }

// Form declares form-mode elicitation (elicitation/create, mode "form").
func Form(r Requirement) FormInput { return FormInput{inputDecl{inputForm, r}} }

// Ask builds a form request: message tells the user why the input is
// needed, and schema is the requestedSchema, a flat object of primitive
// fields (see package elicit: [elicit.ParseSchema] rules apply, and the
// server's secret policy refuses fields that ask for secrets). An invalid
// request is reported when the handler's result is checked.
func (f FormInput) Ask(message string, schema exactjson.Value) (r InputRequest) {
	defer r.from(f)
	if err := f.invalid(); err != nil {
		return f.failed(err)
	}
	s, err := elicit.ParseSchema(schema)
	if err != nil {
		return f.failed(fmt.Errorf("weft: form request: %w", err))
	}
	return formRequest(f.inputDecl, message, s)
}

// Answer reads the response under key to a form request: whether a
// response is present, the user's action and, when the user accepted, the
// submitted content (an object of strings, numbers, booleans and arrays of
// strings; {} when none was sent). A malformed response is an error (ask
// again). The content is not validated against the schema that was asked:
// check every field before acting on it, or use [FormOf], which does.
func (f FormInput) Answer(req *Request, key string) (content exactjson.Value, action Action, present bool, err error) {
	v, ok := req.InputResponses().Get(key)
	if !ok {
		return exactjson.Value{}, 0, false, nil
	}
	r, err := elicit.ParseResult(v)
	if err != nil {
		return exactjson.Value{}, 0, true, err
	}
	if r.Action != Accepted {
		return exactjson.Value{}, r.Action, true, nil
	}
	if r.Content.IsNull() {
		return exactjson.Object(), Accepted, true, nil
	}
	return r.Content, Accepted, true, nil
}

// TypedFormInput declares form-mode elicitation of a fixed form whose
// fields are those of the Go struct T; build it with [FormOf].
type TypedFormInput[T any] struct {
	inputDecl
	schema *elicit.Schema
	err    error
}

// FormOf declares form-mode elicitation of the form described by struct T:
// each exported field is a form field named by its json tag, described by
// its jsonschema tag (github.com/google/jsonschema-go), and required unless
// tagged omitempty or omitzero. Fields must be strings, booleans, integers,
// floats or [exactjson.Number] (an exact decimal: 3.50 keeps its digits);
// the accepted answer decodes into a T.
//
// Refinements, built with package elicit's field constructors, replace the
// inferred schema of the field of the same name: a title, bounds, a format,
// a default, the options of a string (single-select) or []string
// (multi-select) field. A refinement must keep the field's JSON type.
//
//	type Refund struct {
//		Amount exactjson.Number `json:"amount" jsonschema:"the amount to refund"`
//		Reason string           `json:"reason,omitempty"`
//	}
//	refund := weft.FormOf[Refund](weft.ConditionalCapability,
//		elicit.NumberField("amount").Title("Amount").MinInt(0).MaxDecimal("500.00"),
//		elicit.EnumField("reason", "damaged", "late", "other").Title("Reason"))
//
// A type that does not make a flat form, an invalid refinement, or a field
// that asks for a secret under the server's [Options.SecretPolicy] makes
// registration fail.
func FormOf[T any](r Requirement, refine ...elicit.Field) TypedFormInput[T] {
	f := TypedFormInput[T]{inputDecl: inputDecl{inputForm, r}}
	f.schema, f.err = formSchemaFor[T](refine)
	return f
}

// Schema returns the inferred requestedSchema, or nil when T does not make
// a form ([TypedFormInput.Err] says why).
func (f TypedFormInput[T]) Schema() *elicit.Schema { return f.schema }

// Err returns the error of inferring the form from T, if any.
func (f TypedFormInput[T]) Err() error { return f.err }

func (f TypedFormInput[T]) input() declared {
	return declared{decl: f.inputDecl, schema: f.schema, err: f.err}
}

// Ask builds the form request with message telling the user why the input
// is needed. An invalid request is reported when the handler's result is
// checked.
func (f TypedFormInput[T]) Ask(message string) (r InputRequest) {
	defer r.from(f)
	if err := f.invalid(); err != nil {
		return f.failed(err)
	}
	if f.err != nil {
		return f.failed(f.err)
	}
	return formRequest(f.inputDecl, message, f.schema)
}

// Answer reads the response under key to this form: whether a response is
// present, the user's action and, when the user accepted, the content
// validated against the form's schema and decoded into a T. Content that
// breaks the schema is a *elicit.ValidationError whose problems are safe to
// show the user (ask again); decline and cancel return the zero T with
// their outcome. Validation covers the schema only: apply your own business
// rules and authorise again before any side effect.
func (f TypedFormInput[T]) Answer(req *Request, key string) (answer T, action Action, present bool, err error) {
	v, ok := req.InputResponses().Get(key)
	if !ok {
		return answer, 0, false, nil
	}
	if f.err != nil {
		return answer, 0, true, f.err
	}
	content, outcome, err := elicit.Answer(f.schema, v)
	if err != nil || outcome != Accepted {
		return answer, outcome, true, err
	}
	if err := exactjson.Unmarshal(content, &answer); err != nil {
		return answer, outcome, true, fmt.Errorf("weft: decode form answer %q: %w", key, err)
	}
	return answer, outcome, true, nil
}

// formRequest builds elicitation/create params for a checked schema.
func formRequest(d inputDecl, message string, s *elicit.Schema) InputRequest {
	if err := checkMessage(message); err != nil {
		return d.failed(err)
	}
	return InputRequest{decl: d, kind: d.kind, schema: s, params: exactjson.Object(
		exactjson.Field("mode", exactjson.String(string(elicit.ModeForm))),
		exactjson.Field("message", exactjson.String(message)),
		exactjson.Field("requestedSchema", s.Value()))}
}

// checkMessage rejects elicitation messages that cannot explain anything.
func checkMessage(message string) error {
	if !utf8.ValidString(message) {
		return errors.New("weft: elicitation message is not valid UTF-8")
	}
	if strings.TrimSpace(message) == "" {
		return errors.New("weft: elicitation message is empty; tell the user why the input is needed")
	}
	return nil
}

// formSchemaFor infers the requestedSchema of struct T with
// github.com/google/jsonschema-go (exactjson.Number as "number"), applies
// the refinements and checks the result against the flat form-schema rules.
func formSchemaFor[T any](refine []elicit.Field) (*elicit.Schema, error) {
	t := reflect.TypeFor[T]()
	fail := func(err error) (*elicit.Schema, error) {
		return nil, fmt.Errorf("weft: form %s: %w", t, err)
	}
	if t.Kind() != reflect.Struct {
		return fail(errors.New("a form is described by a struct type"))
	}
	sch, err := gschema.For[T](&gschema.ForOptions{TypeSchemas: map[reflect.Type]*gschema.Schema{
		reflect.TypeFor[exactjson.Number](): numberSchema,
	}})
	if err != nil {
		return fail(err)
	}
	var refined *elicit.Schema
	if len(refine) > 0 {
		if refined, err = elicit.BuildSchema(refine...); err != nil {
			return fail(fmt.Errorf("refinement: %w", err))
		}
		for _, fi := range refined.Fields() {
			if _, ok := sch.Properties[fi.Name]; !ok {
				return fail(fmt.Errorf("refinement of %q: %s has no such field", fi.Name, t))
			}
		}
	}
	required := make(map[string]bool, len(sch.Required))
	for _, name := range sch.Required {
		required[name] = true
	}
	props := make([]exactjson.Member, 0, len(sch.PropertyOrder))
	var reqNames []exactjson.Value
	for _, name := range sch.PropertyOrder {
		inferred := sch.Properties[name]
		var v exactjson.Value
		if fi, ok := refined.Field(name); ok {
			if jt := jsonType(inferred); !refinable(jt, fi.Kind) {
				return fail(fmt.Errorf("refinement of %q: a %s field cannot hold the values of the Go field (JSON type %q)", name, fi.Kind, jt))
			}
			pv, _ := refined.Value().Get("properties")
			v, _ = pv.Get(name)
			if fi.Description == "" && inferred.Description != "" {
				v = v.With("description", exactjson.String(inferred.Description))
			}
			required[name] = required[name] || fi.Required
		} else {
			b, err := json.Marshal(inferred)
			if err != nil {
				return fail(err)
			}
			if v, err = exactjson.Parse(b, exactjson.Limits{}); err != nil {
				return fail(err)
			}
		}
		props = append(props, exactjson.Field(name, v))
		if required[name] {
			reqNames = append(reqNames, exactjson.String(name))
		}
	}
	members := []exactjson.Member{
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(props...)),
	}
	if len(reqNames) > 0 {
		members = append(members, exactjson.Field("required", exactjson.Array(reqNames...)))
	}
	s, err := elicit.ParseSchema(exactjson.Object(members...))
	if err != nil {
		return fail(err)
	}
	return s, nil
}

// jsonType is the JSON type of an inferred property: its "type", or the
// non-null one of a nullable slice's ["null", "array"].
func jsonType(s *gschema.Schema) string {
	if s.Type != "" || len(s.Types) != 2 {
		return s.Type
	}
	if s.Types[0] == "null" {
		return s.Types[1]
	}
	if s.Types[1] == "null" {
		return s.Types[0]
	}
	return ""
}

// refinable reports whether a form field of kind k can stand for a Go
// field whose inferred JSON type is jsonType: its answers must decode into
// the Go field.
func refinable(jsonType string, k elicit.FieldKind) bool {
	switch jsonType {
	case "string":
		return k == elicit.KindString || k == elicit.KindSingleSelect
	case "boolean":
		return k == elicit.KindBoolean
	case "integer":
		return k == elicit.KindInteger
	case "number":
		return k == elicit.KindNumber || k == elicit.KindInteger
	case "array":
		return k == elicit.KindMultiSelect
	}
	return false
}

// URLInput declares URL-mode elicitation: the user is sent to a page the
// server owns, for anything that must not pass through the client
// (credentials, payments, third-party sign-in).
type URLInput struct{ inputDecl }

// URL declares URL-mode elicitation (elicitation/create, mode "url").
func URL(r Requirement) URLInput { return URLInput{inputDecl{inputURL, r}} }

// Ask builds a URL request: message tells the user why, url is the page to
// open. The server checks url against [Options.URLElicitation] before
// anything reaches the client (HTTPS on an allowed origin, no secrets in
// userinfo, query or fragment); give it an opaque handle
// ([elicit.NewHandle], [elicit.HandleURL]) bound server-side to the user.
func (u URLInput) Ask(message, url string) (r InputRequest) {
	defer r.from(u)
	if err := u.invalid(); err != nil {
		return u.failed(err)
	}
	if err := checkMessage(message); err != nil {
		return u.failed(err)
	}
	return InputRequest{decl: u.inputDecl, kind: u.kind, params: exactjson.Object(
		exactjson.Field("mode", exactjson.String(string(elicit.ModeURL))),
		exactjson.Field("message", exactjson.String(message)),
		exactjson.Field("url", exactjson.String(url)))}
}

// Answer reads the response under key to a URL request: whether it is
// present and the user's action. Accepted means only that the user agreed
// to open the page, not that the interaction there finished: check your
// own record of it (the handle) before completing.
func (u URLInput) Answer(req *Request, key string) (action Action, present bool, err error) {
	v, ok := req.InputResponses().Get(key)
	if !ok {
		return 0, false, nil
	}
	_, action, err = elicit.Answer(nil, v)
	return action, true, err
}
