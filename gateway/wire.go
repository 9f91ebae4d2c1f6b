package gateway

import (
	"context"
	"errors"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// The wire layer: JSON-RPC messages between the gateway and a stdio
// upstream (one message per line, over a client.StdioTransport). HTTP
// upstreams of both eras are spoken to through a client.HTTPTransport
// directly (conn.go). A sink takes what an upstream sends for one call:
// the requests a 2025-era upstream asks during it (elicitation/create,
// sampling/createMessage, roots/list) and its notifications.

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
	// done is closed when the wire broke or was closed; err says why.
	done() <-chan struct{}
	err() error
	close() error
}

// errUpstreamClosed marks an upstream connection that broke or was closed.
var errUpstreamClosed = errors.New("gateway: upstream connection closed")

// parseLimits bound what an upstream may send in one message.
var parseLimits = exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling, MaxStringBytes: exactjson.MaxStringBytesCeiling}

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
