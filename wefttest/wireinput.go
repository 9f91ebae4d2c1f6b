package wefttest

import (
	"context"
	"errors"
	"fmt"

	"github.com/weftmcp/weft/exactjson"
)

// DefaultMaxRounds is the round limit of [Client.CallToolWithInput] and its
// siblings when they are given 0.
const DefaultMaxRounds = 10

var (
	// ErrMaxRounds is returned when a result is still input_required after
	// the maximum number of rounds.
	ErrMaxRounds = errors.New("wefttest: still input_required after the maximum number of rounds")
	// ErrNotHandled is returned by a [WireResponder] for an input request it does
	// not answer; [WireChain] then tries the next one.
	ErrNotHandled = errors.New("wefttest: the responder does not handle this input request")
)

// WireResponder answers one input request of an input_required result, as a
// client would after asking its user, its model or its roots. key is the
// server-assigned key. The returned value is sent under key in
// inputResponses; a null value leaves the request unanswered. Return
// [ErrNotHandled] for requests the responder does not handle.
type WireResponder func(key string, req InputRequest) (exactjson.Value, error)

// WireAcceptForm answers form-mode elicitations by accepting with content.
func WireAcceptForm(content map[string]any) WireResponder {
	return func(key string, req InputRequest) (exactjson.Value, error) {
		if req.Method != "elicitation/create" || wireElicitMode(req) != "form" {
			return exactjson.Value{}, ErrNotHandled
		}
		v := exactjson.Object()
		if content != nil {
			var err error
			if v, err = exactjson.FromGo(content); err != nil {
				return exactjson.Value{}, fmt.Errorf("wefttest: form content: %w", err)
			}
		}
		return exactjson.Object(
			exactjson.Field("action", exactjson.String("accept")),
			exactjson.Field("content", v)), nil
	}
}

// WireDecline answers every elicitation (form or URL mode) with action "decline".
func WireDecline() WireResponder {
	return func(key string, req InputRequest) (exactjson.Value, error) {
		if req.Method != "elicitation/create" {
			return exactjson.Value{}, ErrNotHandled
		}
		return exactjson.Object(exactjson.Field("action", exactjson.String("decline"))), nil
	}
}

// WireSampleText answers sampling requests with an assistant text message from
// model, stop reason "endTurn".
func WireSampleText(model, text string) WireResponder {
	return func(key string, req InputRequest) (exactjson.Value, error) {
		if req.Method != "sampling/createMessage" {
			return exactjson.Value{}, ErrNotHandled
		}
		return exactjson.Object(
			exactjson.Field("role", exactjson.String("assistant")),
			exactjson.Field("content", exactjson.Object(
				exactjson.Field("type", exactjson.String("text")),
				exactjson.Field("text", exactjson.String(text)))),
			exactjson.Field("model", exactjson.String(model)),
			exactjson.Field("stopReason", exactjson.String("endTurn"))), nil
	}
}

// WireRootsOf answers roots/list with the given root URIs.
func WireRootsOf(uris ...string) WireResponder {
	return func(key string, req InputRequest) (exactjson.Value, error) {
		if req.Method != "roots/list" {
			return exactjson.Value{}, ErrNotHandled
		}
		roots := make([]exactjson.Value, len(uris))
		for i, u := range uris {
			roots[i] = exactjson.Object(exactjson.Field("uri", exactjson.String(u)))
		}
		return exactjson.Object(exactjson.Field("roots", exactjson.Array(roots...))), nil
	}
}

// WireChain returns a responder that asks each of rs in turn until one handles
// the request (returns something other than [ErrNotHandled]).
func WireChain(rs ...WireResponder) WireResponder {
	return func(key string, req InputRequest) (exactjson.Value, error) {
		for _, r := range rs {
			v, err := r(key, req)
			if !errors.Is(err, ErrNotHandled) {
				return v, err
			}
		}
		return exactjson.Value{}, ErrNotHandled
	}
}

// WireByKey returns a responder that dispatches on the input request key.
func WireByKey(m map[string]WireResponder) WireResponder {
	return func(key string, req InputRequest) (exactjson.Value, error) {
		r := m[key]
		if r == nil {
			return exactjson.Value{}, ErrNotHandled
		}
		return r(key, req)
	}
}

type round interface{ base() *Result }

func (r *ToolResult) base() *Result     { return &r.Result }
func (r *PromptResult) base() *Result   { return &r.Result }
func (r *ResourceResult) base() *Result { return &r.Result }

// drive runs an MRTR exchange: the first request, then a retry per
// input_required result answered by respond, up to maxRounds requests.
func drive[T round](start func() (T, error), retry func(prev T, responses map[string]exactjson.Value) (T, error), respond WireResponder, maxRounds int) (T, []T, error) {
	var zero T
	if respond == nil {
		return zero, nil, errors.New("wefttest: nil WireResponder")
	}
	if maxRounds <= 0 {
		maxRounds = DefaultMaxRounds
	}
	r, err := start()
	if err != nil {
		return zero, nil, err
	}
	rounds := []T{r}
	for r.base().InputRequired() {
		if len(rounds) >= maxRounds {
			return r, rounds, fmt.Errorf("%w (%d)", ErrMaxRounds, maxRounds)
		}
		responses, err := answer(r.base(), respond)
		if err != nil {
			return r, rounds, err
		}
		next, err := retry(r, responses)
		if err != nil {
			return r, rounds, err
		}
		r = next
		rounds = append(rounds, r)
	}
	return r, rounds, nil
}

// answer asks respond for every input request, in key order.
func answer(r *Result, respond WireResponder) (map[string]exactjson.Value, error) {
	out := map[string]exactjson.Value{}
	for _, k := range r.InputKeys() {
		req := r.InputRequests[k]
		v, err := respond(k, req)
		switch {
		case errors.Is(err, ErrNotHandled):
			return nil, fmt.Errorf("wefttest: no responder answers input request %q (%s)", k, req.Method)
		case err != nil:
			return nil, fmt.Errorf("wefttest: input request %q: %w", k, err)
		}
		if v.Kind() != exactjson.KindNull {
			out[k] = v
		}
	}
	return out, nil
}

// CallToolWithInput calls a tool and, while the result is input_required,
// answers its input requests with respond and retries, sending at most
// maxRounds requests in all (0 means [DefaultMaxRounds]). It returns the
// final result and every round's result in order (the final one last). On
// error, final is the last result received, if any; when the limit is
// reached the error wraps [ErrMaxRounds].
func (c *Client) CallToolWithInput(ctx context.Context, name string, args any, respond WireResponder, maxRounds int) (final *ToolResult, rounds []*ToolResult, err error) {
	return drive(func() (*ToolResult, error) { return c.CallTool(ctx, name, args) },
		func(prev *ToolResult, rs map[string]exactjson.Value) (*ToolResult, error) {
			return c.Retry(ctx, prev, rs)
		},
		respond, maxRounds)
}

// GetPromptWithInput is [Client.CallToolWithInput] for prompts/get.
func (c *Client) GetPromptWithInput(ctx context.Context, name string, args map[string]string, respond WireResponder, maxRounds int) (final *PromptResult, rounds []*PromptResult, err error) {
	return drive(func() (*PromptResult, error) { return c.GetPrompt(ctx, name, args) },
		func(prev *PromptResult, rs map[string]exactjson.Value) (*PromptResult, error) {
			return c.RetryPrompt(ctx, prev, rs)
		},
		respond, maxRounds)
}

// ReadResourceWithInput is [Client.CallToolWithInput] for resources/read.
func (c *Client) ReadResourceWithInput(ctx context.Context, uri string, respond WireResponder, maxRounds int) (final *ResourceResult, rounds []*ResourceResult, err error) {
	return drive(func() (*ResourceResult, error) { return c.ReadResource(ctx, uri) },
		func(prev *ResourceResult, rs map[string]exactjson.Value) (*ResourceResult, error) {
			return c.RetryResource(ctx, prev, rs)
		},
		respond, maxRounds)
}

func wireElicitMode(req InputRequest) string {
	if m, ok := getString(req.Params, "mode"); ok {
		return m
	}
	return "form"
}
