package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/jsonrpc"
)

// The wire layer: JSON-RPC messages between the gateway and one upstream,
// over stdio (one message per line) or 2025-era Streamable HTTP. Unlike the
// 2026-07-28 client package, it answers the requests an upstream of the
// 2025 era sends during a call (elicitation/create, sampling/createMessage,
// roots/list, ping).

// sink receives what an upstream sends for one call in flight: its
// server-to-client requests and its notifications.
type sink struct {
	// request answers a server-to-client request; it may block until the
	// downstream client answers. A nil sink answers with an error.
	request func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, *client.RPCError)
	// notify receives notifications (progress, log messages).
	notify func(method string, params exactjson.Value)
	// attending is the call's client.Request.Attending on stdio (nil:
	// always; see pool.go).
	attending func() bool
}

// answer is s.request as a [client.Request.OnServerRequest].
func (s *sink) answer(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error) {
	res, rerr := s.request(ctx, method, params)
	if rerr != nil {
		return exactjson.Value{}, rerr
	}
	return res, nil
}

// wire carries JSON-RPC between the gateway and an upstream.
type wire interface {
	// call sends a request and waits for its response; s receives what the
	// upstream sends for it in the meantime. A JSON-RPC error response is
	// returned as *client.RPCError.
	call(ctx context.Context, method string, params exactjson.Value, s *sink) (exactjson.Value, error)
	// notify sends a notification.
	notify(ctx context.Context, method string, params exactjson.Value) error
	// setSession tells the wire the negotiated session (HTTP: the
	// Mcp-Session-Id and protocol version headers).
	setSession(id, version string)
	// done is closed when the wire broke or was closed; err says why.
	done() <-chan struct{}
	err() error
	close() error
}

// errUpstreamClosed marks an upstream connection that broke or was closed.
var errUpstreamClosed = errors.New("gateway: upstream connection closed")

// msg is one parsed JSON-RPC message.
type msg struct {
	id       exactjson.Value
	hasID    bool
	method   string
	params   exactjson.Value
	result   exactjson.Value
	errorObj exactjson.Value
	isError  bool
}

// maxLine bounds one message of an upstream (an SSE event on HTTP).
const maxLine = exactjson.MaxInputBytesCeiling

// parseLimits bound what an upstream may send in one message.
var parseLimits = exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling, MaxStringBytes: exactjson.MaxStringBytesCeiling}

// parseMsg parses one JSON-RPC message of an upstream.
func parseMsg(b []byte) (msg, error) {
	v, err := exactjson.Parse(b, parseLimits)
	if err != nil {
		return msg{}, fmt.Errorf("not JSON: %w", err)
	}
	if v.Kind() != exactjson.KindObject {
		return msg{}, errors.New("not a JSON-RPC message: not an object")
	}
	if jv, ok := v.Get("jsonrpc"); !ok || !isStr(jv, "2.0") {
		return msg{}, errors.New(`not a JSON-RPC message: jsonrpc is not "2.0"`)
	}
	var m msg
	m.id, m.hasID = v.Get("id")
	if mv, ok := v.Get("method"); ok {
		s, ok := mv.AsString()
		if !ok || s == "" {
			return msg{}, errors.New("not a JSON-RPC message: method is not a non-empty string")
		}
		m.method = s
		m.params, _ = v.Get("params")
		return m, nil
	}
	if !m.hasID {
		return msg{}, errors.New("not a JSON-RPC message: a response without id")
	}
	if ev, ok := v.Get("error"); ok {
		m.errorObj, m.isError = ev, true
		return m, nil
	}
	r, ok := v.Get("result")
	if !ok {
		return msg{}, errors.New("not a JSON-RPC message: neither method, result nor error")
	}
	m.result = r
	return m, nil
}

func isStr(v exactjson.Value, s string) bool {
	got, ok := v.AsString()
	return ok && got == s
}

// str returns member name of v as a string ("" when absent).
func str(v exactjson.Value, name string) string {
	m, _ := v.Get(name)
	s, _ := m.AsString()
	return s
}

// rpcError decodes a JSON-RPC error object.
func rpcError(v exactjson.Value) *client.RPCError {
	e := &client.RPCError{Message: str(v, "message"), Code: client.CodeInternalError}
	if c, ok := v.Get("code"); ok {
		if n, ok := c.AsNumber(); ok {
			if i, ok := n.Int64(); ok {
				e.Code = int(i)
			}
		}
	}
	e.Data, _ = v.Get("data")
	if e.Message == "" {
		e.Message = "error without a message"
	}
	return e
}

// withProgressToken returns the params of call id. A call with a sink gets
// the id as its progress token: it routes the call's progress (and, for
// servers that echo it, its input requests) to the sink.
func withProgressToken(params exactjson.Value, id int64, s *sink) exactjson.Value {
	if s == nil {
		return params
	}
	meta, _ := params.Get("_meta")
	if meta.Kind() != exactjson.KindObject {
		meta = exactjson.Object()
	}
	return params.With("_meta", meta.With("progressToken", exactjson.Int(id)))
}

// encodeCall encodes request id of a call (see withProgressToken).
func encodeCall(id int64, method string, params exactjson.Value, s *sink) ([]byte, error) {
	b, err := jsonrpc.EncodeRequest(id, method, withProgressToken(params, id, s))
	if err != nil {
		return nil, fmt.Errorf("gateway: encoding %s: %w", method, err)
	}
	return b, nil
}

// encodeResponse answers a server-to-client request.
func encodeResponse(id exactjson.Value, result exactjson.Value, e *client.RPCError) ([]byte, error) {
	if e != nil {
		return jsonrpc.EncodeError(id, e.Code, e.Message, e.Data)
	}
	return jsonrpc.EncodeResult(id, result)
}

// answerServerRequest runs a server-to-client request through s (or the
// defaults when no call claims it: outside, else an error) and returns
// the response to send.
func answerServerRequest(ctx context.Context, m msg, s *sink, outside outsideFunc) []byte {
	var (
		res  exactjson.Value
		rerr *client.RPCError
	)
	switch {
	case m.method == "ping":
		res = exactjson.Object()
	case (s == nil || s.request == nil) && outside != nil:
		res, rerr = outside(ctx, m.method, m.params)
	case s == nil || s.request == nil:
		rerr = &client.RPCError{Code: client.CodeInternalError,
			Message: "The gateway cannot route " + m.method + ": no single call of this connection is waiting for it"}
	default:
		params := m.params
		if params.Kind() != exactjson.KindObject {
			params = exactjson.Object()
		}
		res, rerr = s.request(ctx, m.method, params)
	}
	b, err := encodeResponse(m.id, res, rerr)
	if err != nil {
		b, _ = encodeResponse(m.id, exactjson.Value{}, &client.RPCError{Code: client.CodeInternalError, Message: "cannot encode the answer"})
	}
	return b
}
