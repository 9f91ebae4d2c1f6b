package weft

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// SamplingMessage is one message of a sampling request: who says it and
// what (a text, image or audio block).
type SamplingMessage struct {
	Role    Role
	Content Content
}

// SamplingInput declares sampling/createMessage: the handler asks the
// client's model for a message.
type SamplingInput struct{ inputDecl }

// Sampling declares sampling/createMessage requests without tools; see
// [SamplingInput.WithTools] for requests that offer tools.
func Sampling(r Requirement) SamplingInput { return SamplingInput{inputDecl{inputSampling, r}} }

// WithTools returns the declaration of sampling requests that may offer the
// model tools ([SamplingRequest.Tools]): the client must declare the
// sampling.tools capability.
func (d SamplingInput) WithTools() SamplingInput {
	d.kind = inputSamplingTools
	return d
}

// Ask builds a sampling request. A request without messages, with MaxTokens
// below 1, with content other than text, image or audio, or with tools under
// a declaration without [SamplingInput.WithTools] is reported by the
// request's Err and when the handler's result is checked.
func (d SamplingInput) Ask(r SamplingRequest) (ir InputRequest) {
	defer ir.from(d)
	if err := d.invalid(); err != nil {
		return d.failed(err)
	}
	params, err := r.params()
	if err != nil {
		return d.failed(fmt.Errorf("weft: sampling request: %w", err))
	}
	req := InputRequest{decl: d.inputDecl, kind: inputSampling, params: params}
	if len(r.Tools) > 0 || r.ToolChoice != "" {
		req.kind = inputSamplingTools
		if d.kind != inputSamplingTools {
			req.err = errors.New("weft: sampling request offers tools but the operation declared weft.Sampling without WithTools")
		}
	}
	return req
}

// Answer reads the response under key to a sampling request: whether it is
// present and the message the client's model produced. A present response
// that is not a sampling result is an error.
func (d SamplingInput) Answer(req *Request, key string) (SamplingResult, bool, error) {
	v, ok := req.InputResponses().Get(key)
	if !ok {
		return SamplingResult{}, false, nil
	}
	r, err := parseSamplingResult(v)
	return r, true, err
}

// SamplingRequest asks the client's model for a message
// (sampling/createMessage); build the input request with
// [SamplingInput.Ask].
type SamplingRequest struct {
	// Messages is the conversation to continue; at least one.
	Messages []SamplingMessage
	// SystemPrompt is an optional system prompt; the client may change or
	// omit it.
	SystemPrompt string
	// MaxTokens bounds the reply (required by the protocol; at least 1).
	MaxTokens int
	// Temperature, when set, is passed to the model.
	Temperature *float64
	// StopSequences are optional stop sequences.
	StopSequences []string
	// ModelHints name preferred models in order (modelPreferences.hints);
	// the client may ignore them.
	ModelHints []string
	// Metadata is optional provider-specific metadata (a JSON object).
	Metadata exactjson.Value
	// Tools are tools the model may call (declare the input with
	// [SamplingInput.WithTools]). A tool use comes back as a "tool_use"
	// content block of the [SamplingResult].
	Tools []SamplingTool
	// ToolChoice is "auto", "required" or "none"; empty leaves it to the
	// client.
	ToolChoice string
}

// SamplingTool is a tool offered to the client's model in a sampling
// request.
type SamplingTool struct {
	Name        string
	Description string
	// InputSchema is the tool's JSON Schema (root type "object"); null
	// means {"type":"object"}.
	InputSchema exactjson.Value
}

func (r SamplingRequest) params() (exactjson.Value, error) {
	if len(r.Messages) == 0 {
		return exactjson.Value{}, errors.New("no messages")
	}
	if r.MaxTokens < 1 {
		return exactjson.Value{}, fmt.Errorf("MaxTokens %d: must be at least 1", r.MaxTokens)
	}
	msgs := make([]exactjson.Value, len(r.Messages))
	for i, m := range r.Messages {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return exactjson.Value{}, fmt.Errorf("message %d: role %q: want %q or %q", i, m.Role, RoleUser, RoleAssistant)
		}
		switch m.Content.Type {
		case "text", "image", "audio":
		default:
			return exactjson.Value{}, fmt.Errorf("message %d: content type %q: sampling messages hold text, image or audio", i, m.Content.Type)
		}
		c, err := contentValue(m.Content)
		if err != nil {
			return exactjson.Value{}, fmt.Errorf("message %d: %w", i, err)
		}
		msgs[i] = exactjson.Object(exactjson.Field("role", exactjson.String(string(m.Role))), exactjson.Field("content", c))
	}
	fields := []exactjson.Member{exactjson.Field("messages", exactjson.Array(msgs...))}
	if r.SystemPrompt != "" {
		fields = append(fields, exactjson.Field("systemPrompt", exactjson.String(r.SystemPrompt)))
	}
	fields = append(fields, exactjson.Field("maxTokens", exactjson.Int(int64(r.MaxTokens))))
	if r.Temperature != nil {
		t, err := exactjson.Float(*r.Temperature)
		if err != nil {
			return exactjson.Value{}, fmt.Errorf("temperature: %w", err)
		}
		fields = append(fields, exactjson.Field("temperature", t))
	}
	if len(r.StopSequences) > 0 {
		seqs := make([]exactjson.Value, len(r.StopSequences))
		for i, s := range r.StopSequences {
			seqs[i] = exactjson.String(s)
		}
		fields = append(fields, exactjson.Field("stopSequences", exactjson.Array(seqs...)))
	}
	if len(r.ModelHints) > 0 {
		hints := make([]exactjson.Value, len(r.ModelHints))
		for i, h := range r.ModelHints {
			hints[i] = exactjson.Object(exactjson.Field("name", exactjson.String(h)))
		}
		fields = append(fields, exactjson.Field("modelPreferences", exactjson.Object(exactjson.Field("hints", exactjson.Array(hints...)))))
	}
	if len(r.Tools) > 0 {
		tools := make([]exactjson.Value, len(r.Tools))
		for i, t := range r.Tools {
			if !validToolName(t.Name) {
				return exactjson.Value{}, fmt.Errorf("tool %d: name %q must be 1-128 characters of A-Z a-z 0-9 _ . -", i, t.Name)
			}
			schema := t.InputSchema
			if schema.IsNull() {
				schema = exactjson.Object(exactjson.Field("type", exactjson.String("object")))
			}
			if ty, _ := schema.Get("type"); !isString(ty, "object") {
				return exactjson.Value{}, fmt.Errorf(`tool %q: input schema must have root "type": "object"`, t.Name)
			}
			fs := []exactjson.Member{exactjson.Field("name", exactjson.String(t.Name))}
			if t.Description != "" {
				fs = append(fs, exactjson.Field("description", exactjson.String(t.Description)))
			}
			tools[i] = exactjson.Object(append(fs, exactjson.Field("inputSchema", schema))...)
		}
		fields = append(fields, exactjson.Field("tools", exactjson.Array(tools...)))
	}
	switch r.ToolChoice {
	case "":
	case "auto", "required", "none":
		fields = append(fields, exactjson.Field("toolChoice", exactjson.Object(exactjson.Field("mode", exactjson.String(r.ToolChoice)))))
	default:
		return exactjson.Value{}, fmt.Errorf(`tool choice %q: want "auto", "required" or "none"`, r.ToolChoice)
	}
	if !r.Metadata.IsNull() {
		if r.Metadata.Kind() != exactjson.KindObject {
			return exactjson.Value{}, errors.New("metadata must be a JSON object")
		}
		fields = append(fields, exactjson.Field("metadata", r.Metadata))
	}
	return exactjson.Object(fields...), nil
}

// contentValue is c's wire form as a Value.
func contentValue(c Content) (exactjson.Value, error) {
	e := &enc{}
	c.encode(e)
	if e.err != nil {
		return exactjson.Value{}, e.err
	}
	return exactjson.Parse(e.b, exactjson.Limits{})
}

// SamplingResult is a client's answer to a sampling request, read with
// [SamplingInput.Answer].
type SamplingResult struct {
	// Role is who the message is from, normally [RoleAssistant].
	Role Role
	// Model names the model that produced it, as the client reports it.
	Model string
	// StopReason is why sampling stopped ("endTurn", "stopSequence",
	// "maxTokens", "toolUse" or a provider's own); empty when not given.
	StopReason string
	// Content holds the content blocks as sent (a single block is a
	// one-element slice).
	Content []exactjson.Value
}

// Text returns the text of the result's text blocks, joined by newlines
// (empty when it has none).
func (r SamplingResult) Text() string {
	var parts []string
	for _, c := range r.Content {
		if t, _ := c.Get("type"); isString(t, "text") {
			if s, ok := c.Get("text"); ok {
				text, _ := s.AsString()
				parts = append(parts, text)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// parseSamplingResult reads a sampling input response (a
// CreateMessageResult). The server checks the shape of every input response
// before the handler runs, so an error here means v is not the answer to a
// sampling request.
func parseSamplingResult(v exactjson.Value) (SamplingResult, error) {
	if err := checkSamplingResult(v); err != nil {
		return SamplingResult{}, fmt.Errorf("weft: %w", err)
	}
	var r SamplingResult
	role, _ := v.Get("role")
	s, _ := role.AsString()
	r.Role = Role(s)
	m, _ := v.Get("model")
	r.Model, _ = m.AsString()
	if sr, ok := v.Get("stopReason"); ok {
		r.StopReason, _ = sr.AsString()
	}
	c, _ := v.Get("content")
	if c.Kind() == exactjson.KindObject {
		r.Content = []exactjson.Value{c}
	} else {
		r.Content = make([]exactjson.Value, 0, c.Len())
		for b := range c.Values() {
			r.Content = append(r.Content, b)
		}
	}
	return r, nil
}

// RootsInput declares roots/list: the handler asks for the client's roots.
type RootsInput struct{ inputDecl }

// Roots declares roots/list requests.
func Roots(r Requirement) RootsInput { return RootsInput{inputDecl{inputRoots, r}} }

// Ask builds a roots/list request.
func (d RootsInput) Ask() (r InputRequest) {
	defer r.from(d)
	if err := d.invalid(); err != nil {
		return d.failed(err)
	}
	return InputRequest{decl: d.inputDecl, kind: d.kind, params: exactjson.Object()}
}

// Answer reads the response under key to a roots request: whether it is
// present and the roots. Roots are advisory: they say where the user works,
// not what the server may touch.
func (d RootsInput) Answer(req *Request, key string) ([]Root, bool, error) {
	v, ok := req.InputResponses().Get(key)
	if !ok {
		return nil, false, nil
	}
	rs, err := parseRoots(v)
	return rs, true, err
}

// Root is one of the client's roots (roots/list).
type Root struct {
	// URI is the root's URI (a file:// URI today).
	URI string
	// Name is its optional human-readable name.
	Name string
}

// parseRoots reads a roots input response (a ListRootsResult).
func parseRoots(v exactjson.Value) ([]Root, error) {
	if err := checkRootsResult(v); err != nil {
		return nil, fmt.Errorf("weft: %w", err)
	}
	list, _ := v.Get("roots")
	out := make([]Root, 0, list.Len())
	for e := range list.Values() {
		u, _ := e.Get("uri")
		n, _ := e.Get("name")
		r := Root{}
		r.URI, _ = u.AsString()
		r.Name, _ = n.AsString()
		out = append(out, r)
	}
	return out, nil
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
