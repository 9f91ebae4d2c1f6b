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

// legacyCall is one legacy request and what invoking its handler needs.
type legacyCall struct {
	l      *legacyServer
	c      *legacyConn
	method string
	id     ID
	name   string
	h      methodHandler
}

// request builds the *Request of one invocation.
func (call *legacyCall) request(params exactjson.Value, id ID) *Request {
	s := call.l.srv
	c := call.c
	meta, _ := params.Get("_meta")
	req := &Request{
		Method:             call.method,
		ID:                 id,
		ProtocolVersion:    c.sess.ProtocolVersion,
		Name:               call.name,
		Params:             params,
		Meta:               meta,
		ClientInfo:         c.info,
		ClientCapabilities: c.caps,
		Identity:           c.ident,
		Header:             c.in.header,
		Endpoint:           c.in.endpoint,
		srv:                s,
		out:                c.in.out,
		logLevel:           levelIndex(LogLevel(c.sess.LogLevel)),
	}
	if pt, ok := meta.Get("progressToken"); ok && (pt.Kind() == exactjson.KindString || isInteger(pt)) {
		req.progressToken = pt
	}
	return req
}

// invoke runs the modern handler once under request id id.
func (call *legacyCall) invoke(ctx context.Context, params exactjson.Value, id ID) reply {
	s := call.l.srv
	c := call.c
	req := call.request(params, id)
	// The handler sees no HTTP metadata headers to check: legacy clients
	// send none (Request.Header still carries the request's headers).
	in := &inbound{body: c.in.body, endpoint: c.in.endpoint, transport: c.in.transport, remoteAddr: c.in.remoteAddr, out: c.in.out}
	// As in the modern pipeline: observed, gated and bounded by the
	// request deadline, per invocation (waiting for the client's answers
	// between rounds holds no slot and runs under InputTimeout instead).
	var rep reply
	if obs := s.opts.Observer; obs != nil {
		obs.RequestStarted(ctx, req)
		defer func() {
			var err error
			if rep.err != nil {
				err = rep.err
			}
			obs.RequestFinished(ctx, req, rep.classify(), err)
		}()
	}
	rep = s.runGated(ctx, req, in, call.h)
	return rep
}

// roundID is the request id of the handler's invocation in round r: the
// client's id for the first, a derived id for later rounds (request state is
// bound to the id that emitted it and must be retried under another).
func roundID(id ID, r int) ID {
	if r == 0 {
		return id
	}
	return StringID(fmt.Sprintf("%s#weft-round-%d", id.key(), r))
}

// bridge runs an MRTR-capable operation to completion for a legacy client.
func (call *legacyCall) bridge(ctx context.Context, params exactjson.Value) reply {
	l := call.l
	// A legacy client has no part in the input protocol: whatever it puts
	// in these members is not a retry.
	params = params.Without("inputResponses", "requestState")
	for round := 0; ; round++ {
		rep := call.invoke(ctx, params, roundID(call.id, round))
		if rep.err != nil || rep.none {
			return rep
		}
		res, err := exactjson.Parse(rep.result, outputLimits)
		if err != nil {
			return reply{err: internalError(err)}
		}
		if rt, _ := res.Get("resultType"); !isString(rt, "input_required") {
			return l.translateResult(ctx, call.c, call.method, rep)
		}
		if round >= l.opts.MaxRounds {
			l.srv.log.Warn("weft: a legacy call exceeded its input rounds", "method", call.method, "name", call.name, "rounds", round)
			return reply{err: protocolError(CodeInternalError, fmt.Sprintf("The request needed more than %d rounds of client input", l.opts.MaxRounds), exactjson.Value{})}
		}
		requests, _ := res.Get("inputRequests")
		answers, e := call.ask(ctx, requests)
		if e != nil {
			return reply{err: e}
		}
		params = params.With("inputResponses", answers)
		if st, ok := res.Get("requestState"); ok {
			params = params.With("requestState", st)
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
func (call *legacyCall) ask(ctx context.Context, requests exactjson.Value) (exactjson.Value, *Error) {
	l := call.l
	c := call.c
	s := l.srv
	if requests.Kind() != exactjson.KindObject || requests.Len() == 0 {
		// State only (e.g. a hand-off): retry at once.
		return exactjson.Object(), nil
	}
	// The slot outlives the wait a little (in the store's clock), so that
	// the wait's own deadline decides a timeout.
	slotExpiry := s.now().Add(l.opts.InputTimeout + 30*time.Second)
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
			call.cancelRequest(o.id, "The server no longer needs this input")
		}
	}()
	for key, r := range requests.All() {
		mv, _ := r.Get("method")
		method, _ := mv.AsString()
		params, _ := r.Get("params")
		params = call.adaptParams(method, params)
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
		msg := []byte(`{"jsonrpc":"2.0","id":`)
		msg = appendQuoted(msg, id)
		msg = append(msg, `,"method":`...)
		msg = appendQuoted(msg, method)
		if params.Kind() != exactjson.KindNull {
			msg = append(msg, `,"params":`...)
			if msg, err = exactjson.AppendJSON(msg, params); err != nil {
				return exactjson.Value{}, internalError(err)
			}
		}
		msg = append(msg, '}')
		if err := call.send(msg); err != nil {
			s.log.Warn("weft: cannot send a request to a legacy client", "method", method, "err", err)
			return exactjson.Value{}, protocolError(CodeInternalError,
				"The client cannot receive server requests: it accepts no event stream and has none open", exactjson.Value{})
		}
	}
	wctx, cancel := context.WithTimeout(ctx, l.opts.InputTimeout)
	defer cancel()
	go func() {
		select {
		case <-s.done:
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
			case isClosed(s.done):
				return exactjson.Value{}, protocolError(CodeInternalError, "Server is shutting down", exactjson.Value{})
			case errors.Is(err, context.DeadlineExceeded):
				call.cancelRequest(o.id, "Timed out")
				return exactjson.Value{}, protocolError(CodeInternalError, "Timed out waiting for the client's answer to "+o.method, exactjson.Value{})
			case errors.Is(err, sessionstore.ErrNotFound):
				return exactjson.Value{}, protocolError(CodeInvalidRequest, "Session ended while waiting for the client", exactjson.Value{})
			}
			return exactjson.Value{}, internalError(fmt.Errorf("await an answer: %w", err))
		}
		v, err := exactjson.Parse(body, s.limits.JSON)
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
func (call *legacyCall) adaptParams(method string, params exactjson.Value) exactjson.Value {
	if method != "elicitation/create" || params.Kind() != exactjson.KindObject {
		return params
	}
	mode, _ := params.Get("mode")
	if call.c.sess.ProtocolVersion == LegacyVersion20250618 && isString(mode, "form") {
		return params.Without("mode")
	}
	if isString(mode, "url") && !params.Has("elicitationId") {
		if id, err := newOutboundID(); err == nil {
			params = params.With("elicitationId", exactjson.String(strings.TrimPrefix(id, "weft-")))
		}
	}
	return params
}

// send writes a server-to-client message: on the call's own response stream
// when the client accepts one (HTTP) or on the connection (stdio), otherwise
// on the session's GET stream held by this instance.
func (call *legacyCall) send(msg []byte) error {
	c := call.c
	switch out := c.in.out.(type) {
	case *httpResponder:
		if err := out.sendRaw(msg); err == nil {
			return nil
		}
	case *stdioNotifier:
		if out.ctx.Err() != nil {
			return out.ctx.Err()
		}
		return out.out.write(msg)
	}
	if st := call.l.local.stream(c.sess.ID); st != nil {
		return st.send(msg)
	}
	return errNoStream
}

// cancelRequest tells the client a server request is void (best effort).
func (call *legacyCall) cancelRequest(id, reason string) {
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`)
	msg = appendQuoted(msg, id)
	msg = append(msg, `,"reason":`...)
	msg = appendQuoted(msg, reason)
	msg = append(msg, "}}"...)
	_ = call.send(msg)
}

// sendRaw writes one JSON-RPC message on the response stream, switching the
// response to SSE.
func (h *httpResponder) sendRaw(msg []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done || !h.sseOK {
		return errNoStream
	}
	if !h.sse {
		h.startSSE()
	}
	return h.writeFrame(msg)
}
