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

// SamplingRequest asks the client's model for a message
// (sampling/createMessage). Build the input request with [Sample]; for
// members it does not cover (tools, includeContext, model priorities) build
// the params yourself and use [CreateMessage].
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
}

// Sample builds a sampling/createMessage input request for declaration d
// (from [Sampling]). A request without messages, with MaxTokens below 1 or
// with content other than text, image or audio is reported by the returned
// request's Err and when the handler's result is checked, like every other
// input request.
func Sample(d InputDeclaration, r SamplingRequest) InputRequest {
	params, err := r.params()
	if err != nil {
		return InputRequest{decl: d, kind: d.kind, err: fmt.Errorf("weft: sampling request: %w", err)}
	}
	ir, _ := NewInputRequest(d, params)
	return ir
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

// SamplingResult is a client's answer to a sampling request: the input
// response under the request's key, read with [ParseSamplingResult].
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

// ParseSamplingResult reads a sampling input response (a
// CreateMessageResult), as [Request.InputResponses] returns it. The server
// checks the shape of every input response before the handler runs, so an
// error here means v is not the answer to a sampling request.
func ParseSamplingResult(v exactjson.Value) (SamplingResult, error) {
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

// Root is one of the client's roots (roots/list).
type Root struct {
	// URI is the root's URI (a file:// URI today).
	URI string
	// Name is its optional human-readable name.
	Name string
}

// ParseRoots reads a roots input response (a ListRootsResult), as
// [Request.InputResponses] returns it. Like [ParseSamplingResult], it fails
// only on what the server refuses as an input response anyway.
func ParseRoots(v exactjson.Value) ([]Root, error) {
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
