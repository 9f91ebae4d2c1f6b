package weft

import (
	"errors"
	"fmt"
	"iter"
	"math/big"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// An operation that needs the client's help before it can complete declares
// each kind of client request it may emit, once, at registration:
//
//	approval := weft.FormOf[Approval](weft.ConditionalCapability)
//	weft.AddTool(s, weft.Tool{Name: "order", Inputs: []weft.Input{approval}, ...}, ...)
//
// The same declaration builds the request (approval.Ask("Order tea?")),
// which the handler returns keyed in an [InputRequired]
// (weft.AskInput("approval", approval.Ask(...))), and reads the client's
// answer on the retry (approval.Answer(req, "approval")). There is one
// declaration per kind: [Form] and [FormOf] (form-mode elicitation), [URL]
// (URL-mode elicitation), [Sampling] and [Roots].

// inputKind names the kind of client request an operation may embed in an
// input_required result.
type inputKind uint8

// The input kinds.
const (
	inputForm          inputKind = iota + 1 // elicitation/create, form mode
	inputURL                                // elicitation/create, URL mode
	inputSampling                           // sampling/createMessage
	inputSamplingTools                      // sampling/createMessage with tools
	inputRoots                              // roots/list
)

// String returns a short name for the kind.
func (k inputKind) String() string {
	switch k {
	case inputForm:
		return "form elicitation"
	case inputURL:
		return "URL elicitation"
	case inputSampling:
		return "sampling"
	case inputSamplingTools:
		return "sampling with tools"
	case inputRoots:
		return "roots"
	}
	return fmt.Sprintf("inputKind(%d)", uint8(k))
}

// method returns the JSON-RPC method of the embedded request.
func (k inputKind) method() string {
	switch k {
	case inputForm, inputURL:
		return elicit.Method
	case inputSampling, inputSamplingTools:
		return "sampling/createMessage"
	case inputRoots:
		return "roots/list"
	}
	return ""
}

// Requirement says when a declared input's client capability is checked.
type Requirement uint8

const (
	// RequiredCapability: the capability is checked on every call, after
	// admission and before the handler runs; a client without it gets
	// -32021 listing every missing capability.
	RequiredCapability Requirement = iota + 1
	// ConditionalCapability: the capability is checked only when the
	// handler actually emits that kind of request. While such a capability
	// is missing the response stays uncommitted, so progress notifications
	// are held back.
	ConditionalCapability
)

// String returns "required" or "conditional".
func (r Requirement) String() string {
	switch r {
	case RequiredCapability:
		return "required"
	case ConditionalCapability:
		return "conditional"
	}
	return fmt.Sprintf("Requirement(%d)", uint8(r))
}

// Input is a declaration that an operation may emit one kind of client
// request, listed in Tool.Inputs, Prompt.Inputs or Resource.Inputs. It is
// implemented only by the declarations of this package: [FormInput],
// [TypedFormInput], [URLInput], [SamplingInput] and [RootsInput]. An
// operation may list several declarations of one kind (two typed forms, say)
// as long as they agree on the [Requirement].
type Input interface {
	// Requirement returns when the capability is checked.
	Requirement() Requirement
	// Method returns the JSON-RPC method of the declared request.
	Method() string
	// Capabilities returns the client capabilities the request needs, as a
	// ClientCapabilities object.
	Capabilities() exactjson.Value
	// String describes the declaration ("conditional form elicitation").
	String() string

	input() declared
}

// declared is what registration learns from an [Input]: its kind and
// requirement, the schema of a typed form (checked against the server's
// secret policy) and any construction error.
type declared struct {
	decl   inputDecl
	schema *elicit.Schema
	err    error
}

// inputDecl is the comparable core of every declaration: its kind and
// requirement. The zero value declares nothing.
type inputDecl struct {
	kind inputKind
	req  Requirement
}

// Requirement returns when the capability is checked.
func (d inputDecl) Requirement() Requirement { return d.req }

// Method returns the JSON-RPC method of the declared request.
func (d inputDecl) Method() string { return d.kind.method() }

// Capabilities returns the client capabilities this kind needs.
func (d inputDecl) Capabilities() exactjson.Value { return capabilityFor(d.kind) }

// String describes the declaration.
func (d inputDecl) String() string { return d.req.String() + " " + d.kind.String() }

func (d inputDecl) input() declared { return declared{decl: d} }

func (d inputDecl) valid() bool {
	return d.kind >= inputForm && d.kind <= inputRoots && (d.req == RequiredCapability || d.req == ConditionalCapability)
}

// invalid is the error of a request built from a zero declaration.
func (d inputDecl) invalid() error {
	if d.valid() {
		return nil
	}
	return errors.New("weft: input request built from a zero or invalid declaration (use weft.Form, FormOf, URL, Sampling or Roots)")
}

// newOperation checks an operation's input declarations and records them.
// Declarations of one kind collapse into one; they must agree on the
// requirement. A typed form's schema must pass the server's secret policy.
func (s *Server) newOperation(kind ItemKind, name string, inputs []Input, mode StateMode) (*operation, error) {
	var decls []inputDecl
	for _, in := range inputs {
		if in == nil {
			return nil, fmt.Errorf("weft: %q: nil input declaration", name)
		}
		d := in.input()
		if d.err != nil {
			return nil, fmt.Errorf("weft: %q: %w", name, d.err)
		}
		if !d.decl.valid() {
			return nil, fmt.Errorf("weft: %q: input declarations must be built with weft.Form, FormOf, URL, Sampling or Roots", name)
		}
		if d.schema != nil {
			if err := s.opts.SecretPolicy.CheckSchema(d.schema); err != nil {
				return nil, fmt.Errorf("weft: %q: form refused by the secret policy: %w", name, err)
			}
		}
		dup := false
		for _, prev := range decls {
			if prev.kind == d.decl.kind {
				if prev.req != d.decl.req {
					return nil, fmt.Errorf("weft: %q declares %s both as %s and %s", name, d.decl.kind, prev.req, d.decl.req)
				}
				dup = true
			}
		}
		if !dup {
			decls = append(decls, d.decl)
		}
	}
	if mode > StateFramework {
		return nil, fmt.Errorf("weft: %q: unknown state mode %d", name, mode)
	}
	return &operation{kind: kind, name: name, inputs: decls, stateMode: mode}, nil
}

func (op *operation) declaration(k inputKind) (inputDecl, bool) {
	for _, d := range op.inputs {
		if d.kind == k {
			return d, true
		}
	}
	return inputDecl{}, false
}

func capabilityFor(k inputKind) exactjson.Value {
	empty := exactjson.Object()
	switch k {
	case inputForm:
		return exactjson.Object(exactjson.Field("elicitation", exactjson.Object(exactjson.Field("form", empty))))
	case inputURL:
		return exactjson.Object(exactjson.Field("elicitation", exactjson.Object(exactjson.Field("url", empty))))
	case inputSampling:
		return exactjson.Object(exactjson.Field("sampling", empty))
	case inputSamplingTools:
		return exactjson.Object(exactjson.Field("sampling", exactjson.Object(exactjson.Field("tools", empty))))
	case inputRoots:
		return exactjson.Object(exactjson.Field("roots", empty))
	}
	return empty
}

// clientSupports reports whether client capabilities cover kind k.
func clientSupports(caps exactjson.Value, k inputKind) bool {
	switch k {
	case inputForm, inputURL:
		e, ok := caps.Get("elicitation")
		if !ok || e.Kind() != exactjson.KindObject {
			return false
		}
		hasForm, hasURL := e.Has("form"), e.Has("url")
		if k == inputURL {
			return hasURL
		}
		return hasForm || !hasURL // {} means form only
	case inputSampling:
		s, ok := caps.Get("sampling")
		return ok && s.Kind() == exactjson.KindObject
	case inputSamplingTools:
		s, ok := caps.Get("sampling")
		return ok && s.Kind() == exactjson.KindObject && s.Has("tools")
	case inputRoots:
		r, ok := caps.Get("roots")
		return ok && r.Kind() == exactjson.KindObject
	}
	return false
}

// mergeCapabilities deep-merges capability objects (used to report every
// missing capability in one -32021).
// ClientCapabilities returns the ClientCapabilities object that declares
// what the given input declarations need of a client:
// ClientCapabilities(Form(r), Roots(r)) is
// {"elicitation":{"form":{}},"roots":{}}. A test declares it with
// client.Options.Capabilities.
func ClientCapabilities(inputs ...Input) exactjson.Value {
	out := exactjson.Object()
	for _, in := range inputs {
		if in != nil {
			out = mergeCapabilities(out, in.Capabilities())
		}
	}
	return out
}

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

// InputRequest is one client request embedded in an input_required result,
// built by a declaration's Ask method. It is immutable; a request that could
// not be built carries its error ([InputRequest.Err]), which is reported
// when the handler's result is checked.
type InputRequest struct {
	src    Input // the declaration it was built from
	decl   inputDecl
	kind   inputKind // the kind actually emitted (sampling with tools is derived from params)
	params exactjson.Value
	schema *elicit.Schema // a form's parsed requestedSchema, when known
	err    error
	// urlPolicy, when set, checks a URL elicitation instead of
	// Options.URLElicitation (a relayed request: see Proxy.WithURLPolicy).
	urlPolicy *elicit.URLPolicy
}

// Method returns the embedded request's JSON-RPC method.
func (r InputRequest) Method() string { return r.decl.Method() }

// Declaration returns the declaration the request was built from (the
// value whose Ask built it, or the one given to [Relay]), nil for the zero
// InputRequest. Compare it with the operation's declarations to tell which
// one a request came from, or read its Requirement and Capabilities.
func (r InputRequest) Declaration() Input { return r.src }

// from records the declaration a request is built from (deferred by every
// Ask, so that each of its returns carries it).
func (r *InputRequest) from(in Input) { r.src = in }

// Params returns the embedded request's params.
func (r InputRequest) Params() exactjson.Value { return r.params }

// Err returns the construction error, if any.
func (r InputRequest) Err() error { return r.err }

// failed returns a request that reports err when the result is checked.
func (d inputDecl) failed(err error) InputRequest {
	return InputRequest{decl: d, kind: d.kind, err: err}
}

// maxApplicationStateBytes bounds application-protected request state.
const maxApplicationStateBytes = 65536

// InputRequired is what an operation returns, as its error, when it needs
// the client's input before it can complete (the one way: it is not a
// [Result], and middleware sees it as the error too):
//
//	return nil, weft.AskInput("approval", approval.Ask("Approve?")).
//		WithFrameworkState(step{Phase: "approving"})
//
// It carries one or more keyed input requests, retry state, or both. It is not
// a failure: the framework answers resultType "input_required". The zero
// value is an empty InputRequired ready to use; the two state setters are
// exclusive and the last call wins.
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

// AskInput returns an InputRequired asking for one keyed request; add more
// with [InputRequired.Ask].
func AskInput(key string, r InputRequest) *InputRequired { return new(InputRequired).Ask(key, r) }

// Ask adds a keyed input request. Keys are exact JSON member names (any
// valid UTF-8, "" included, as in the schema's InputRequests map; the retry
// answers under the same key) and must be unique within the result.
func (ir *InputRequired) Ask(key string, r InputRequest) *InputRequired {
	if ir.err == nil {
		switch {
		case !utf8.ValidString(key):
			// Any valid UTF-8 string, "" included, is a JSON member name,
			// and the schema's InputRequests map allows every one.
			ir.err = fmt.Errorf("weft: input request key %q is not valid UTF-8", key)
		case r.err != nil:
			ir.err = fmt.Errorf("weft: input request %q: %w", key, r.err)
		case !r.decl.valid():
			ir.err = fmt.Errorf("weft: input request %q: %w", key, r.decl.invalid())
		default:
			for _, k := range ir.keys {
				if k == key {
					ir.err = fmt.Errorf("weft: duplicate input request key %q: give each InputRequired.Ask of one result its own key", key)
				}
			}
		}
	}
	ir.keys = append(ir.keys, key)
	ir.requests = append(ir.requests, r)
	return ir
}

// WithApplicationState sets application-protected state: an exact, non-empty
// opaque string of at most 65,536 UTF-8 bytes, returned untouched on retry
// ([Request.ApplicationState]). It replaces any framework state set before.
func (ir *InputRequired) WithApplicationState(s string) *InputRequired {
	ir.appState, ir.fwState, ir.mode = s, exactjson.Value{}, StateApplication
	return ir
}

// WithFrameworkState sets framework-protected state: a Go value (a struct,
// a map, an [exactjson.Value], ...) that the framework encodes as JSON
// (github.com/go-json-experiment/json, as typed tools' output), seals and
// binds to this operation. The retry reads it back as the same type with
// [FrameworkState]. It replaces any application state set before; a value
// that cannot be encoded is reported when the result is checked.
func (ir *InputRequired) WithFrameworkState(v any) *InputRequired {
	sv, ok := v.(exactjson.Value)
	if !ok {
		var err error
		if sv, err = exactjson.FromGo(v); err != nil && ir.err == nil {
			ir.err = fmt.Errorf("weft: framework state: %w", err)
		}
	}
	ir.fwState, ir.appState, ir.mode = sv, "", StateFramework
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

// Keys returns the request keys in the order they were added.
func (ir *InputRequired) Keys() []string { return append([]string(nil), ir.keys...) }

// ApplicationState returns the application state, if set.
func (ir *InputRequired) ApplicationState() (string, bool) {
	return ir.appState, ir.mode == StateApplication
}

// FrameworkState returns the framework state as JSON, if set.
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
	// StateFramework: the application supplies a Go value; Weft seals its
	// JSON with AES-256-GCM and binds it to the endpoint, protocol version,
	// method, authorization partition, stable params, lifetime, round and
	// request id.
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

// FrameworkState returns the verified framework-protected state of a retry,
// decoded into T (exactly, as typed tool arguments are): present only on a
// retry of an operation declared with [StateFramework]. T is normally the
// type given to [InputRequired.WithFrameworkState]; exactjson.Value returns
// the JSON itself. Numbers come back in canonical form (1.50 as 1.5, 100 as
// 1E+2); integers still decode into integer fields. An error means the
// state does not decode into T (say, after a deploy changed the type).
func FrameworkState[T any](req *Request) (T, bool, error) {
	rs := req.retry
	if rs == nil || !rs.hasFwState {
		var zero T
		return zero, false, nil
	}
	// T exactly exactjson.Value (not an interface it satisfies) is the
	// state itself, handed over without a copy on the heap: the variable
	// Unmarshal decodes into escapes, so it lives in decodeFrameworkState.
	if _, ok := any((*T)(nil)).(*exactjson.Value); ok {
		return any(rs.fwState).(T), true, nil
	}
	return decodeFrameworkState[T](rs.fwState)
}

// decodeFrameworkState decodes framework state into a T.
func decodeFrameworkState[T any](state exactjson.Value) (T, bool, error) {
	var out T
	if err := exactjson.Unmarshal(plainIntegers(state), &out); err != nil {
		return out, true, fmt.Errorf("weft: framework state: %w", err)
	}
	return out, true, nil
}

// maxPlainExponent bounds the integers plainIntegers spells out: 1E+400
// becomes 401 digits, 1E+5000 stays as it is (and fails to decode into an
// integer field, as it should).
const maxPlainExponent = 400

// plainIntegers respells integers in exponent form (canonical JSON writes
// 100 as 1E+2) as plain digits, which integer fields accept. Values without
// such numbers are returned as they are.
func plainIntegers(v exactjson.Value) exactjson.Value {
	out, _ := respell(v)
	return out
}

// respell is plainIntegers, reporting whether anything changed.
func respell(v exactjson.Value) (exactjson.Value, bool) {
	switch v.Kind() {
	case exactjson.KindNumber:
		n, _ := v.AsNumber()
		if !n.IsInteger() || !strings.ContainsAny(n.String(), "eE.") {
			return v, false
		}
		unscaled, scale := n.Decimal()
		if scale < -maxPlainExponent {
			return v, false
		}
		pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(scale, -scale))), nil)
		if scale < 0 {
			unscaled.Mul(unscaled, pow)
		} else {
			unscaled.Quo(unscaled, pow) // exact: n is an integer
		}
		p, err := exactjson.ParseNumber(unscaled.String())
		if err != nil {
			return v, false
		}
		return exactjson.NumberValue(p), true
	case exactjson.KindArray:
		var out []exactjson.Value
		for i := range v.Len() {
			e, changed := respell(v.Index(i))
			if changed && out == nil {
				out = append(make([]exactjson.Value, 0, v.Len()), v.Elements()[:i]...)
			}
			if out != nil {
				out = append(out, e)
			}
		}
		if out == nil {
			return v, false
		}
		return exactjson.Array(out...), true
	case exactjson.KindObject:
		var out []exactjson.Member
		for i := range v.Len() {
			m := v.Member(i)
			e, changed := respell(m.Value)
			if changed && out == nil {
				out = append(make([]exactjson.Member, 0, v.Len()), v.Members()[:i]...)
			}
			if out != nil {
				out = append(out, exactjson.Field(m.Name, e))
			}
		}
		if out == nil {
			return v, false
		}
		return exactjson.Object(out...), true
	}
	return v, false
}

// InputResponses holds the keyed responses a client sent with a retry, as
// [Request.InputResponses] returns them. Values passed the protocol-union
// check; unexpected keys are preserved. Read an answer through the
// declaration that asked for it (for example [TypedFormInput.Answer]).
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

// checkInputResponse checks one response against the protocol union of
// elicitation, sampling and roots results. When method is known (from sealed
// state) only that shape is accepted.
func checkInputResponse(v exactjson.Value, method string) error {
	if v.Kind() != exactjson.KindObject {
		return errors.New("input response must be an object")
	}
	switch method {
	case elicit.Method:
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

// checkElicitation applies the server's form and URL policies to an emitted
// elicitation: form fields that ask for secrets and unsafe URLs are refused
// before anything reaches the client.
func (s *Server) checkElicitation(r InputRequest) error {
	switch r.kind {
	case inputForm:
		schema := r.schema
		if schema == nil {
			schemaValue, _ := r.params.Get("requestedSchema")
			var err error
			if schema, err = elicit.ParseSchema(schemaValue); err != nil {
				return err
			}
		}
		return s.opts.SecretPolicy.CheckSchema(schema)
	case inputURL:
		u, _ := r.params.Get("url")
		us, _ := u.AsString()
		if r.urlPolicy != nil {
			if _, err := r.urlPolicy.Check(us); err != nil {
				return fmt.Errorf("%w (the relayed request's URL policy)", err)
			}
			return nil
		}
		if _, err := s.opts.URLElicitation.Check(us); err != nil {
			return fmt.Errorf("%w (configure Options.URLElicitation)", err)
		}
	}
	return nil
}

func isInteger(v exactjson.Value) bool {
	n, ok := v.AsNumber()
	return ok && n.IsInteger()
}
