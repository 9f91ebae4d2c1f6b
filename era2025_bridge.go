package weft

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/sessionstore"
)

// The input bridge: a handler written once for 2026-07-28 (returning
// input_required with keyed inputRequests and optional requestState) serves a
// 2025-11-25 client unchanged. When the handler asks for input, the bridge
// sends each input request to the client as a real JSON-RPC request
// (elicitation/create, sampling/createMessage, roots/list) on the call's
// response stream, collects the answers through the session store's mailbox
// (they may reach any instance of a fleet), and invokes the handler again
// with them as inputResponses and the requestState echoed, exactly as a
// 2026-07-28 client retries, until the handler completes or MaxRounds is
// reached. The requestState never leaves the server, and framework-protected
// state is sealed and verified as usual.

// roundID is the request id of the handler's invocation in round r: the
// client's id for the first, a derived id for later rounds (request state is
// bound to the id that emitted it and must be retried under another).
func roundID(id ID, r int) ID {
	if r == 0 {
		return id
	}
	return StringID(fmt.Sprintf("%s#weft-round-%d", id.key(), r))
}

// bridge runs an MRTR-capable operation to completion for a legacy client:
// each round is dispatched like any request (observed, gated, bounded by the
// request deadline and wrapped in the middleware; waiting for the client's
// answers between rounds holds no slot and runs under InputTimeout instead),
// and an input_required result is answered with server-to-client requests.
func (l *legacyServer) bridge(ctx context.Context, first eraCall) reply {
	c := first.conn.(*legacyConn)
	// A legacy client has no part in the input protocol: whatever it puts
	// in these members is not a retry.
	params := first.params.Without("inputResponses", "requestState")
	strip := first.params.Has("inputResponses") || first.params.Has("requestState")
	for round := 0; ; round++ {
		call := first
		if round > 0 || strip {
			call.id, call.params = roundID(first.id, round), params
		}
		if round > 0 {
			// The client's request was charged to the rate limiter, and
			// recorded by the telemetry, once.
			call.charged, call.rt = true, nil
		}
		rep := l.env.core.dispatch(ctx, call)
		ask, ok := rep.res.(askResult)
		if rep.err != nil || rep.none || !ok {
			return rep
		}
		ir := ask.InputRequired
		if round >= l.opts.MaxRounds {
			l.env.log.Warn("weft: a legacy call exceeded its input rounds", "method", first.method, "name", first.name, "rounds", round)
			return reply{err: protocolError(CodeInternalError, fmt.Sprintf("The request needed more than %d rounds of client input", l.opts.MaxRounds), exactjson.Value{})}
		}
		answers, e := l.ask(ctx, c, ir)
		if e != nil {
			return reply{err: e}
		}
		params = params.With("inputResponses", answers)
		if ir.token != "" {
			params = params.With("requestState", exactjson.String(ir.token))
		} else {
			params = params.Without("requestState")
		}
	}
}

type outbound struct {
	key, id, method string
}

// ask sends one round of input requests to the client and returns the
// answers keyed like the requests.
func (l *legacyServer) ask(ctx context.Context, c *legacyConn, ir *InputRequired) (exactjson.Value, *Error) {
	if len(ir.keys) == 0 {
		// State only (e.g. a hand-off): retry at once.
		return exactjson.Object(), nil
	}
	if c.sess == nil {
		// Unreachable: a stateless request has no client capabilities, so
		// prepareInputRequired refuses every input request first.
		return exactjson.Value{}, internalError(errors.New("weft: input requested of a stateless 2025-era request"))
	}
	// The slot outlives the wait a little (in the store's clock), so that
	// the wait's own deadline decides a timeout.
	slotExpiry := l.env.now().Add(l.opts.InputTimeout + 30*time.Second)
	var sent []outbound
	awaited := 0
	defer func() {
		// Remove the slots nobody waits for any more, and tell the client
		// the requests it did not answer are void.
		if awaited == len(sent) {
			return
		}
		done, cancel := context.WithCancel(context.WithoutCancel(ctx))
		cancel()
		for _, o := range sent[awaited:] {
			_, _ = c.store.Await(done, c.sess.ID, o.id)
			l.cancelRequest(c, o.id, "The server no longer needs this input")
		}
	}()
	for i, key := range ir.keys {
		method := ir.requests[i].Method()
		params := l.adaptParams(c, method, ir.requests[i].params)
		id, err := newOutboundID()
		if err != nil {
			return exactjson.Value{}, internalError(err)
		}
		switch err := c.store.Expect(ctx, c.sess.ID, id, slotExpiry); {
		case errors.Is(err, sessionstore.ErrNotFound):
			return exactjson.Value{}, protocolError(CodeInvalidRequest, "Session not found", exactjson.Value{})
		case err != nil:
			return exactjson.Value{}, internalError(fmt.Errorf("expect an answer: %w", err))
		}
		sent = append(sent, outbound{key: key, id: id, method: method})
		if err := l.send(c, frame{id: id, method: method, params: params}); err != nil {
			l.env.log.Warn("weft: cannot send a request to a legacy client", "method", method, "err", err)
			return exactjson.Value{}, protocolError(CodeInternalError,
				"The client cannot receive server requests: it accepts no event stream and has none open", exactjson.Value{})
		}
	}
	wctx, cancel := context.WithTimeout(ctx, l.opts.InputTimeout)
	defer cancel()
	go func() {
		select {
		case <-l.env.done:
			cancel()
		case <-wctx.Done():
		}
	}()
	members := make([]exactjson.Member, 0, len(sent))
	for _, o := range sent {
		body, err := c.store.Await(wctx, c.sess.ID, o.id)
		awaited++
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return exactjson.Value{}, internalError(ctx.Err())
			case isClosed(l.env.done):
				return exactjson.Value{}, protocolError(CodeInternalError, "Server is shutting down", exactjson.Value{})
			case errors.Is(err, context.DeadlineExceeded):
				l.cancelRequest(c, o.id, "Timed out")
				return exactjson.Value{}, protocolError(CodeInternalError, "Timed out waiting for the client's answer to "+o.method, exactjson.Value{})
			case errors.Is(err, sessionstore.ErrNotFound):
				return exactjson.Value{}, protocolError(CodeInvalidRequest, "Session ended while waiting for the client", exactjson.Value{})
			}
			return exactjson.Value{}, internalError(fmt.Errorf("await an answer: %w", err))
		}
		v, err := exactjson.Parse(body, l.env.limits.JSON)
		if err != nil {
			return exactjson.Value{}, InvalidParams("The client's answer is not valid JSON")
		}
		if ev, ok := v.Get("error"); ok {
			return exactjson.Value{}, protocolError(CodeInternalError, "The client failed the server's "+o.method+" request",
				exactjson.Object(exactjson.Field("method", exactjson.String(o.method)), exactjson.Field("error", ev)))
		}
		result, _ := v.Get("result")
		members = append(members, exactjson.Field(o.key, result))
	}
	return exactjson.Object(members...), nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// adaptParams makes an embedded request's params valid for the session's
// revision: 2025-11-25 URL elicitations need an elicitationId; 2025-06-18
// knows no elicitation modes.
func (l *legacyServer) adaptParams(c *legacyConn, method string, params exactjson.Value) exactjson.Value {
	if method != "elicitation/create" || params.Kind() != exactjson.KindObject {
		return params
	}
	mode, _ := params.Get("mode")
	if c.sess.ProtocolVersion == LegacyVersion20250618 && isString(mode, "form") {
		return params.Without("mode")
	}
	if isString(mode, "url") && !params.Has("elicitationId") {
		if id, err := newOutboundID(); err == nil {
			params = params.With("elicitationId", exactjson.String(strings.TrimPrefix(id, "weft-")))
		}
	}
	return params
}

// send writes a server-to-client message: on the call's own stream when it
// can carry one (an HTTP response the client accepts as SSE, or the stdio
// connection), otherwise on the session's GET stream held by this instance.
func (l *legacyServer) send(c *legacyConn, f frame) error {
	if out := c.in.out; out != nil && out.canStream() {
		err := out.send(f)
		if err == nil || c.in.conn != nil {
			return err // stdio has no other stream
		}
	}
	if st, ok := l.local.Stream(c.sess.ID); ok {
		return st.send(f)
	}
	return errNoStream
}

// cancelRequest tells the client a server request is void (best effort).
func (l *legacyServer) cancelRequest(c *legacyConn, id, reason string) {
	_ = l.send(c, frame{method: "notifications/cancelled", params: exactjson.Object(
		exactjson.Field("requestId", exactjson.String(id)),
		exactjson.Field("reason", exactjson.String(reason)))})
}
