package wefttest

import (
	"context"
	"fmt"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// ElicitFunc answers elicitation/create: the type of client.Handlers.Elicit.
type ElicitFunc = func(ctx context.Context, params exactjson.Value) (exactjson.Value, error)

// AcceptForm returns a client.Handlers.Elicit that accepts every form
// elicitation with content (nil sends {}; otherwise a map, a struct or an
// exactjson.Value that marshals to an object) and fails on a URL
// elicitation, which a form answer cannot satisfy.
func AcceptForm(content any) ElicitFunc {
	return func(_ context.Context, params exactjson.Value) (exactjson.Value, error) {
		if mode := elicitMode(params); mode != "form" {
			return exactjson.Value{}, fmt.Errorf("wefttest: AcceptForm got a %s elicitation; answer it with AcceptURL", mode)
		}
		v := exactjson.Object()
		if content != nil {
			var err error
			if v, err = exactjson.FromGo(content); err != nil {
				return exactjson.Value{}, fmt.Errorf("wefttest: form content: %w", err)
			}
			if v.Kind() != exactjson.KindObject {
				return exactjson.Value{}, fmt.Errorf("wefttest: form content is %s, not an object", v.Kind())
			}
		}
		return exactjson.Object(
			exactjson.Field("action", exactjson.String("accept")),
			exactjson.Field("content", v)), nil
	}
}

// AcceptURL returns a client.Handlers.Elicit that accepts every URL
// elicitation, as a user who opened the link and finished there would,
// and fails on a form elicitation.
func AcceptURL() ElicitFunc {
	return func(_ context.Context, params exactjson.Value) (exactjson.Value, error) {
		if mode := elicitMode(params); mode != "url" {
			return exactjson.Value{}, fmt.Errorf("wefttest: AcceptURL got a %s elicitation; answer it with AcceptForm", mode)
		}
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept"))), nil
	}
}

// Decline returns a client.Handlers.Elicit that declines every
// elicitation.
func Decline() ElicitFunc { return answerWith(weft.Declined) }

// Cancel returns a client.Handlers.Elicit that cancels every elicitation,
// as a user who dismissed it would.
func Cancel() ElicitFunc { return answerWith(weft.Cancelled) }

func answerWith(a weft.Action) ElicitFunc {
	return func(context.Context, exactjson.Value) (exactjson.Value, error) {
		return exactjson.Object(exactjson.Field("action", exactjson.String(a.String()))), nil
	}
}

// SampleText returns a client.Handlers.Sample that answers every
// sampling/createMessage with one assistant text message from model.
func SampleText(model, text string) func(context.Context, exactjson.Value) (exactjson.Value, error) {
	return func(context.Context, exactjson.Value) (exactjson.Value, error) {
		return exactjson.Object(
			exactjson.Field("role", exactjson.String("assistant")),
			exactjson.Field("content", exactjson.Object(
				exactjson.Field("type", exactjson.String("text")),
				exactjson.Field("text", exactjson.String(text)))),
			exactjson.Field("model", exactjson.String(model)),
			exactjson.Field("stopReason", exactjson.String("endTurn"))), nil
	}
}

// RootsOf returns a client.Handlers.Roots that lists the given root URIs.
func RootsOf(uris ...string) func(context.Context) (exactjson.Value, error) {
	return func(context.Context) (exactjson.Value, error) {
		roots := make([]exactjson.Value, len(uris))
		for i, u := range uris {
			roots[i] = exactjson.Object(exactjson.Field("uri", exactjson.String(u)))
		}
		return exactjson.Object(exactjson.Field("roots", exactjson.Array(roots...))), nil
	}
}

// elicitMode is an elicitation's mode: "form" when absent.
func elicitMode(params exactjson.Value) string {
	if m, ok := params.Get("mode"); ok {
		if s, ok := m.AsString(); ok {
			return s
		}
	}
	return "form"
}
