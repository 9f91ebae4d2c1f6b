package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/weftmcp/weft/exactjson"
)

// mrtr runs the multi round-trip loop for method: each input_required
// result is answered through the handlers and the ORIGINAL params are
// retried with inputResponses and the exact requestState, under a new id.
func (c *Client) mrtr(ctx context.Context, method string, params exactjson.Value, header http.Header) (exactjson.Value, error) {
	var (
		responses exactjson.Value // null: none to send
		state     exactjson.Value
		hasState  bool
		stateOnly int
	)
	for round := 0; ; round++ {
		p := params
		if !responses.IsNull() {
			p = p.With("inputResponses", responses)
		}
		if hasState {
			p = p.With("requestState", state)
		}
		res, err := c.roundTrip(ctx, method, p, header, nil)
		if err != nil {
			return exactjson.Value{}, err
		}
		if resultType(res) != "input_required" {
			return res, nil
		}
		if round >= c.maxRounds {
			return exactjson.Value{}, fmt.Errorf("%w: %s still requires input after %d retries", ErrTooManyRounds, method, c.maxRounds)
		}
		reqs, hasReqs := res.Get("inputRequests")
		state, hasState = res.Get("requestState")
		if hasReqs && reqs.Kind() != exactjson.KindObject {
			return exactjson.Value{}, protocolErrorf("%s: inputRequests is not an object", method)
		}
		if !hasState && (!hasReqs || reqs.Len() == 0) {
			return exactjson.Value{}, protocolErrorf("%s: input_required result has neither inputRequests nor requestState", method)
		}
		if !hasReqs || reqs.Len() == 0 {
			// State only (load shedding, hand-off): retry at once, a few times.
			stateOnly++
			if stateOnly > maxStateOnlyRetries {
				return exactjson.Value{}, fmt.Errorf("%w: %s returned state-only input_required %d times in a row", ErrTooManyRounds, method, stateOnly)
			}
			responses = exactjson.Value{}
			continue
		}
		stateOnly = 0
		if responses, err = c.resolveInputs(ctx, reqs); err != nil {
			return exactjson.Value{}, err
		}
	}
}

// resolveInputs answers every input request concurrently through the
// handlers and returns the inputResponses object (keys in request order).
func (c *Client) resolveInputs(ctx context.Context, reqs exactjson.Value) (exactjson.Value, error) {
	members := reqs.Members()
	// Check every method first so that nothing is asked of the user when
	// the request cannot be completed anyway.
	for _, m := range members {
		if err := c.checkHandler(m.Name, m.Value); err != nil {
			return exactjson.Value{}, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]exactjson.Value, len(members))
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			results[i], errs[i] = c.resolveOne(ctx, m.Name, m.Value)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// Report the first error in key order, preferring a real failure over
	// the cancellations it caused.
	var first error
	for _, err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		case errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled):
			first = err
		}
	}
	if first != nil {
		return exactjson.Value{}, first
	}
	out := make([]exactjson.Member, len(members))
	for i, m := range members {
		out[i] = exactjson.Field(m.Name, results[i])
	}
	return exactjson.Object(out...), nil
}

func (c *Client) checkHandler(key string, req exactjson.Value) error {
	method := str(req, "method")
	h := c.opts.Handlers
	switch method {
	case "elicitation/create":
		if h.Elicit != nil {
			return nil
		}
	case "sampling/createMessage":
		if h.Sample != nil {
			return nil
		}
	case "roots/list":
		if h.Roots != nil {
			return nil
		}
	case "":
		return protocolErrorf("input request %q has no method", key)
	}
	return &MissingHandlerError{Method: method, Key: key}
}

func (c *Client) resolveOne(ctx context.Context, key string, req exactjson.Value) (exactjson.Value, error) {
	method := str(req, "method")
	params, _ := req.Get("params")
	if params.IsNull() {
		params = exactjson.Object()
	}
	var (
		res exactjson.Value
		err error
	)
	h := c.opts.Handlers
	switch method {
	case "elicitation/create":
		res, err = h.Elicit(ctx, params)
	case "sampling/createMessage":
		res, err = h.Sample(ctx, params)
	case "roots/list":
		res, err = h.Roots(ctx)
	default:
		return exactjson.Value{}, &MissingHandlerError{Method: method, Key: key}
	}
	if err != nil {
		return exactjson.Value{}, fmt.Errorf("client: %s handler for input %q: %w", method, key, err)
	}
	if res.Kind() != exactjson.KindObject {
		return exactjson.Value{}, fmt.Errorf("client: %s handler for input %q returned %s, want an object", method, key, res.Kind())
	}
	return res, nil
}
