package weft

import (
	"errors"
	"fmt"
	"iter"
	"sort"
	"unicode/utf8"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// InputKind names the kind of client request an operation may embed in an
// input_required result.
type InputKind uint8

// The input kinds.
const (
	InputFormElicitation   InputKind = iota + 1 // elicitation/create, form mode
	InputURLElicitation                         // elicitation/create, URL mode
	InputSampling                               // sampling/createMessage
	InputSamplingWithTools                      // sampling/createMessage with tools
	InputRoots                                  // roots/list
)

// String returns a short name for the kind.
func (k InputKind) String() string {
	switch k {
	case InputFormElicitation:
		return "form elicitation"
	case InputURLElicitation:
		return "URL elicitation"
	case InputSampling:
		return "sampling"
	case InputSamplingWithTools:
		return "sampling with tools"
	case InputRoots:
		return "roots"
	}
	return fmt.Sprintf("InputKind(%d)", uint8(k))
}

// Method returns the JSON-RPC method of the embedded request.
func (k InputKind) Method() string {
	switch k {
	case InputFormElicitation, InputURLElicitation:
		return "elicitation/create"
	case InputSampling, InputSamplingWithTools:
		return "sampling/createMessage"
	case InputRoots:
		return "roots/list"
	}
	return ""
}

// Requirement says when a declared input kind's client capability is checked.
type Requirement uint8

const (
	// Required capabilities are checked on every call, after admission and
	// before the handler runs: a client without them gets -32021.
	Required Requirement = iota + 1
	// Conditional capabilities are checked only when the handler actually
	// emits that kind of request. While such a capability is missing the
	// response stays uncommitted, so progress notifications are held back.
	Conditional
)

// String returns "required" or "conditional".
func (r Requirement) String() string {
	switch r {
	case Required:
		return "required"
	case Conditional:
		return "conditional"
	}
	return fmt.Sprintf("Requirement(%d)", uint8(r))
}

// InputDeclaration declares that an operation may emit one kind of client
// request. It is an immutable value built only by its named constructors
// ([FormElicitation], [URLElicitation], [Sampling], [SamplingWithTools],
// [Roots]); the zero value declares nothing.
type InputDeclaration struct {
	kind InputKind
	req  Requirement
}

// FormElicitation declares form-mode elicitation.
func FormElicitation(r Requirement) InputDeclaration {
	return InputDeclaration{InputFormElicitation, r}
}

// URLElicitation declares URL-mode elicitation.
func URLElicitation(r Requirement) InputDeclaration { return InputDeclaration{InputURLElicitation, r} }

// Sampling declares sampling/createMessage without tools.
func Sampling(r Requirement) InputDeclaration { return InputDeclaration{InputSampling, r} }

// SamplingWithTools declares sampling/createMessage requests that offer tools.
func SamplingWithTools(r Requirement) InputDeclaration {
	return InputDeclaration{InputSamplingWithTools, r}
}

// Roots declares roots/list.
func Roots(r Requirement) InputDeclaration { return InputDeclaration{InputRoots, r} }

// Kind returns the declared kind.
func (d InputDeclaration) Kind() InputKind { return d.kind }

// Requirement returns when the capability is checked.
func (d InputDeclaration) Requirement() Requirement { return d.req }

// Method returns the JSON-RPC method of the declared request.
func (d InputDeclaration) Method() string { return d.kind.Method() }

// Capabilities returns the client capabilities this kind needs, as a
// ClientCapabilities object.
func (d InputDeclaration) Capabilities() exactjson.Value { return capabilityFor(d.kind) }

// String describes the declaration.
func (d InputDeclaration) String() string { return d.req.String() + " " + d.kind.String() }

func (d InputDeclaration) valid() bool {
	return d.kind >= InputFormElicitation && d.kind <= InputRoots && (d.req == Required || d.req == Conditional)
}

func capabilityFor(k InputKind) exactjson.Value {
	empty := exactjson.Object()
	switch k {
	case InputFormElicitation:
		return exactjson.Object(exactjson.Field("elicitation", exactjson.Object(exactjson.Field("form", empty))))
	case InputURLElicitation:
		return exactjson.Object(exactjson.Field("elicitation", exactjson.Object(exactjson.Field("url", empty))))
	case InputSampling:
		return exactjson.Object(exactjson.Field("sampling", empty))
	case InputSamplingWithTools:
		return exactjson.Object(exactjson.Field("sampling", exactjson.Object(exactjson.Field("tools", empty))))
	case InputRoots:
		return exactjson.Object(exactjson.Field("roots", empty))
	}
	return empty
}

// clientSupports reports whether client capabilities cover kind k.
func clientSupports(caps exactjson.Value, k InputKind) bool {
	switch k {
	case InputFormElicitation, InputURLElicitation:
		e, ok := caps.Get("elicitation")
		if !ok || e.Kind() != exactjson.KindObject {
			return false
		}
		hasForm, hasURL := e.Has("form"), e.Has("url")
		if k == InputURLElicitation {
			return hasURL
		}
		return hasForm || !hasURL // {} means form only
	case InputSampling:
		s, ok := caps.Get("sampling")
		return ok && s.Kind() == exactjson.KindObject
	case InputSamplingWithTools:
		s, ok := caps.Get("sampling")
		return ok && s.Kind() == exactjson.KindObject && s.Has("tools")
	case InputRoots:
		r, ok := caps.Get("roots")
		return ok && r.Kind() == exactjson.KindObject
	}
	return false
}

// mergeCapabilities deep-merges capability objects (used to report every
// missing capability in one -32021).
func mergeCapabilities(a, b exactjson.Value) exactjson.Value {
	if a.Kind() != exactjson.KindObject {
		return b
	}
	out := a
	for name, bv := range b.All() {
		if av, ok := out.Get(name); ok && av.Kind() == exactjson.KindObject && bv.Kind() == exactjson.KindObject {
			out = out.With(name, mergeCapabilities(av, bv))
		} else if !ok {
			out = out.With(name, bv)
		}
	}
	return out
}

// InputRequest is one client request embedded in an input_required result.
// Build it with [NewInputRequest] or one of the helpers ([ElicitForm],
// [ElicitURL], [CreateMessage], [ListRoots]).
type InputRequest struct {
	decl   InputDeclaration
	kind   InputKind // the kind actually emitted (sampling with tools is derived from params)
	params exactjson.Value
	err    error
}

// NewInputRequest builds an embedded request for declaration d with the given
// params (the "params" member of the embedded request). The params are
// checked against the protocol shape of d's method.
func NewInputRequest(d InputDeclaration, params exactjson.Value) (InputRequest, error) {
	r := InputRequest{decl: d, kind: d.kind, params: params}
	if !d.valid() {
		r.err = errors.New("weft: input request built from a zero or invalid InputDeclaration")
		return r, r.err
	}
	if params.Kind() == exactjson.KindNull {
		params = exactjson.Object()
		r.params = params
	}
	if params.Kind() != exactjson.KindObject {
		r.err = fmt.Errorf("weft: %s params must be a JSON object", d.Method())
		return r, r.err
	}
	switch d.kind {
	case InputFormElicitation:
		if m, ok := params.Get("mode"); ok && !isString(m, "form") {
			r.err = errors.New(`weft: form elicitation params must have mode "form" or no mode`)
		} else if msg, ok := params.Get("message"); !ok || msg.Kind() != exactjson.KindString {
			r.err = errors.New(`weft: form elicitation params need a string "message"`)
		} else if s, ok := params.Get("requestedSchema"); !ok || s.Kind() != exactjson.KindObject {
			r.err = errors.New(`weft: form elicitation params need an object "requestedSchema"`)
		}
	case InputURLElicitation:
		if m, ok := params.Get("mode"); !ok || !isString(m, "url") {
			r.err = errors.New(`weft: URL elicitation params must have mode "url"`)
		} else if msg, ok := params.Get("message"); !ok || msg.Kind() != exactjson.KindString {
			r.err = errors.New(`weft: URL elicitation params need a string "message"`)
		} else if u, ok := params.Get("url"); !ok || u.Kind() != exactjson.KindString {
			r.err = errors.New(`weft: URL elicitation params need a string "url"`)
		}
	case InputSampling, InputSamplingWithTools:
		if m, ok := params.Get("messages"); !ok || m.Kind() != exactjson.KindArray {
			r.err = errors.New(`weft: sampling params need an array "messages"`)
		} else if mt, ok := params.Get("maxTokens"); !ok || !isInteger(mt) {
			r.err = errors.New(`weft: sampling params need an integer "maxTokens"`)
		}
		if params.Has("tools") || params.Has("toolChoice") {
			r.kind = InputSamplingWithTools
			if d.kind != InputSamplingWithTools {
				r.err = errors.New("weft: sampling request offers tools but the operation declared Sampling, not SamplingWithTools")
			}
		}
	case InputRoots:
	}
	return r, r.err
}

func isInteger(v exactjson.Value) bool {
	n, ok := v.AsNumber()
	return ok && n.IsInteger()
}

// ElicitForm builds a form-mode elicitation request. Invalid input is
// reported when the handler's result is checked.
func ElicitForm(d InputDeclaration, message string, requestedSchema exactjson.Value) InputRequest {
	r, _ := NewInputRequest(d, exactjson.Object(
		exactjson.Field("mode", exactjson.String("form")),
		exactjson.Field("message", exactjson.String(message)),
		exactjson.Field("requestedSchema", requestedSchema)))
	return r
}

// ElicitURL builds a URL-mode elicitation request.
func ElicitURL(d InputDeclaration, message, url string) InputRequest {
	r, _ := NewInputRequest(d, exactjson.Object(
		exactjson.Field("mode", exactjson.String("url")),
		exactjson.Field("message", exactjson.String(message)),
		exactjson.Field("url", exactjson.String(url))))
	return r
}

// CreateMessage builds a sampling/createMessage request from its params.
func CreateMessage(d InputDeclaration, params exactjson.Value) InputRequest {
	r, _ := NewInputRequest(d, params)
	return r
}

// ListRoots builds a roots/list request.
func ListRoots(d InputDeclaration) InputRequest {
	r, _ := NewInputRequest(d, exactjson.Object())
	return r
}

// Declaration returns the declaration the request was built from.
func (r InputRequest) Declaration() InputDeclaration { return r.decl }

// Method returns the embedded request's JSON-RPC method.
func (r InputRequest) Method() string { return r.decl.Method() }

// Params returns the embedded request's params.
func (r InputRequest) Params() exactjson.Value { return r.params }

// Err returns the construction error, if any.
func (r InputRequest) Err() error { return r.err }

// MaxApplicationStateBytes bounds application-protected request state.
const MaxApplicationStateBytes = 65536

// InputRequired is the result a handler returns, through its error result,
// when it needs the client's input before it can complete:
//
//	return nil, weft.AskInput("approval", weft.ElicitForm(form, "Approve?", schema)).
//		WithFrameworkState(state)
//
// It carries one or more keyed input requests, retry state, or both. It is not
// a failure: the framework answers resultType "input_required". The two state
// setters are exclusive; the last call wins.
type InputRequired struct {
	keys     []string
	requests []InputRequest
	appState string
	fwState  exactjson.Value
	mode     StateMode // which state was set last (StateNone: none)
	// token is the requestState sent: the application state, or the
	// framework state once sealed (prepareInputRequired).
	token string
	err   error
}

// NewInputRequired returns an empty InputRequired to add requests and state to.
func NewInputRequired() *InputRequired { return &InputRequired{} }

// AskInput returns an InputRequired with one keyed request.
func AskInput(key string, r InputRequest) *InputRequired { return NewInputRequired().Ask(key, r) }

// Ask adds a keyed input request. Keys must be unique within the result.
func (ir *InputRequired) Ask(key string, r InputRequest) *InputRequired {
	if ir.err == nil {
		switch {
		case key == "" || !utf8.ValidString(key):
			ir.err = fmt.Errorf("weft: input request key %q is not a valid JSON member name", key)
		case r.err != nil:
			ir.err = fmt.Errorf("weft: input request %q: %w", key, r.err)
		default:
			for _, k := range ir.keys {
				if k == key {
					ir.err = fmt.Errorf("weft: duplicate input request key %q", key)
				}
			}
		}
	}
	ir.keys = append(ir.keys, key)
	ir.requests = append(ir.requests, r)
	return ir
}

// WithApplicationState sets application-protected state: an exact, non-empty
// opaque string of at most 65,536 UTF-8 bytes, returned untouched on retry.
// It replaces any framework state set before.
func (ir *InputRequired) WithApplicationState(s string) *InputRequired {
	ir.appState, ir.fwState, ir.mode = s, exactjson.Value{}, StateApplication
	return ir
}

// WithFrameworkState sets framework-protected state: JSON the framework seals
// and binds to this operation; returned verified (with canonical numbers) on
// retry. It replaces any application state set before.
func (ir *InputRequired) WithFrameworkState(v exactjson.Value) *InputRequired {
	ir.fwState, ir.appState, ir.mode = v, "", StateFramework
	return ir
}

// Requests returns the keyed requests in the order they were added.
func (ir *InputRequired) Requests() iter.Seq2[string, InputRequest] {
	return func(yield func(string, InputRequest) bool) {
		for i, k := range ir.keys {
			if !yield(k, ir.requests[i]) {
				return
			}
		}
	}
}

// ApplicationState returns the application state, if set.
func (ir *InputRequired) ApplicationState() (string, bool) {
	return ir.appState, ir.mode == StateApplication
}

// FrameworkState returns the framework state, if set.
func (ir *InputRequired) FrameworkState() (exactjson.Value, bool) {
	return ir.fwState, ir.mode == StateFramework
}

// Error implements error so typed handlers can return an InputRequired
// through their error result. It is not a failure.
func (ir *InputRequired) Error() string { return "weft: input required" }

// StateMode selects how an operation's retry state is protected.
type StateMode uint8

const (
	// StateNone: the operation carries no request state (the default).
	StateNone StateMode = iota
	// StateApplication: the application supplies an opaque string and owns
	// its protection, expiry and validation. Weft only bounds its size.
	StateApplication
	// StateFramework: the application supplies JSON; Weft seals it with
	// AES-256-GCM and binds it to the endpoint, protocol version, method,
	// authorization partition, stable params, lifetime, round and request id.
	StateFramework
)

// String names the mode.
func (m StateMode) String() string {
	switch m {
	case StateNone:
		return "none"
	case StateApplication:
		return "application-protected"
	case StateFramework:
		return "framework-protected"
	}
	return fmt.Sprintf("StateMode(%d)", uint8(m))
}

// InputResponses holds the keyed responses a client sent with a retry. Values
// passed the protocol-union check; unexpected keys are preserved.
type InputResponses struct{ v exactjson.Value }

// Get returns the exact response under key.
func (r InputResponses) Get(key string) (exactjson.Value, bool) { return r.v.Get(key) }

// Has reports whether a response for key is present.
func (r InputResponses) Has(key string) bool { return r.v.Has(key) }

// Len returns the number of responses.
func (r InputResponses) Len() int { return r.v.Len() }

// Keys returns the response keys, sorted.
func (r InputResponses) Keys() []string {
	var ks []string
	for k := range r.v.All() {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// All iterates over the responses in the order the client sent them.
func (r InputResponses) All() iter.Seq2[string, exactjson.Value] { return r.v.All() }

// Missing returns those of keys that have no response, in order: the keys a
// handler should ask for again.
func (r InputResponses) Missing(keys ...string) []string {
	var out []string
	for _, k := range keys {
		if !r.v.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// Decode converts the response under key to T (for example a struct with
// Action and Content fields). Conversion is not validation: check the action
// and the content before acting on it.
func Decode[T any](r InputResponses, key string) (T, bool, error) {
	var zero T
	v, ok := r.v.Get(key)
	if !ok {
		return zero, false, nil
	}
	out, err := exactjson.Decode[T](v)
	if err != nil {
		return zero, true, fmt.Errorf("weft: decode input response %q: %w", key, err)
	}
	return out, true, nil
}

// NewInputResponses builds InputResponses from a JSON object, for tests.
func NewInputResponses(obj exactjson.Value) InputResponses { return InputResponses{obj} }

// checkInputResponse checks one response against the protocol union of
// elicitation, sampling and roots results. When method is known (from sealed
// state) only that shape is accepted.
func checkInputResponse(v exactjson.Value, method string) error {
	if v.Kind() != exactjson.KindObject {
		return errors.New("input response must be an object")
	}
	switch method {
	case "elicitation/create":
		return checkElicitResult(v)
	case "sampling/createMessage":
		return checkSamplingResult(v)
	case "roots/list":
		return checkRootsResult(v)
	}
	if checkElicitResult(v) == nil || checkSamplingResult(v) == nil || checkRootsResult(v) == nil {
		return nil
	}
	return errors.New("input response matches no elicitation, sampling or roots result")
}

func checkElicitResult(v exactjson.Value) error {
	_, err := elicit.ParseResult(v)
	return err
}

func checkSamplingResult(v exactjson.Value) error {
	role, ok := v.Get("role")
	if r, isStr := role.AsString(); !ok || !isStr || (r != "assistant" && r != "user") {
		return errors.New(`sampling result needs role "assistant" or "user"`)
	}
	c, ok := v.Get("content")
	if !ok || (c.Kind() != exactjson.KindObject && c.Kind() != exactjson.KindArray) {
		return errors.New("sampling result needs content")
	}
	for b := range c.Values() {
		if b.Kind() != exactjson.KindObject {
			return errors.New("sampling result content blocks must be objects")
		}
	}
	if m, ok := v.Get("model"); !ok || m.Kind() != exactjson.KindString {
		return errors.New("sampling result needs a string model")
	}
	if sr, ok := v.Get("stopReason"); ok && sr.Kind() != exactjson.KindString {
		return errors.New("sampling result stopReason must be a string")
	}
	return nil
}

func checkRootsResult(v exactjson.Value) error {
	roots, ok := v.Get("roots")
	if !ok || roots.Kind() != exactjson.KindArray {
		return errors.New("roots result needs an array roots")
	}
	for r := range roots.Values() {
		if u, ok := r.Get("uri"); !ok || u.Kind() != exactjson.KindString {
			return errors.New("each root needs a string uri")
		}
		if n, ok := r.Get("name"); ok && n.Kind() != exactjson.KindString {
			return errors.New("a root's name must be a string")
		}
	}
	return nil
}

// Keys returns the request keys in the order they were added.
func (ir *InputRequired) Keys() []string { return append([]string(nil), ir.keys...) }

// checkElicitation applies the server's form and URL policies to an emitted
// elicitation: form fields that ask for secrets and unsafe URLs are refused
// before anything reaches the client.
func (s *Server) checkElicitation(r InputRequest) error {
	switch r.kind {
	case InputFormElicitation:
		schemaValue, _ := r.params.Get("requestedSchema")
		schema, err := elicit.ParseSchema(schemaValue)
		if err != nil {
			return err
		}
		return s.opts.SecretPolicy.CheckSchema(schema)
	case InputURLElicitation:
		u, _ := r.params.Get("url")
		us, _ := u.AsString()
		if _, err := s.opts.URLElicitation.Check(us); err != nil {
			return fmt.Errorf("%w (configure Options.URLElicitation)", err)
		}
	}
	return nil
}

// Elicit builds an embedded elicitation request from an [elicit.Request]
// (built with elicit.Form or elicit.URL) under declaration d.
func Elicit(d InputDeclaration, r elicit.Request) InputRequest {
	ir, _ := NewInputRequest(d, r.Params())
	return ir
}

// Answer reads the response under key to the elicitation r: it reports
// whether a response is present, the outcome (accept, decline, cancel) and,
// for an accepted form, the content validated against r's schema. A present
// but invalid answer returns an error (a *elicit.ValidationError for content
// that breaks the schema) that is safe to show to the user; ask again.
func Answer(in InputResponses, key string, r elicit.Request) (content exactjson.Value, outcome elicit.Outcome, present bool, err error) {
	v, ok := in.Get(key)
	if !ok {
		return exactjson.Value{}, 0, false, nil
	}
	content, outcome, err = r.Answer(v)
	return content, outcome, true, err
}
