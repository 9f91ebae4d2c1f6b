package gateway

import (
	"context"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// Server requests outside a call. A 2025-era upstream may ask the gateway
// something that belongs to no call: server-everything asks roots/list
// right after initialize, on stdio while no call runs or on its session's
// GET stream. No client of the gateway is waiting for it, so the gateway
// answers itself:
//   - ping: {};
//   - roots/list: the upstream's configured Roots; without, -32601 (a
//     server caching the answer may ask again during a call, whose client
//     has roots);
//   - anything else (elicitation/create, sampling/createMessage...):
//     -32601 saying that the gateway has no client to ask outside a call.
//
// A roots/list inside a call is answered from Roots as well when the
// upstream has them configured (the upstream sees one set of roots),
// else relayed to the call's client as an input request.

// outsideFunc answers a server request of no call.
type outsideFunc func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, *client.RPCError)

// serveOutside makes the stdio upstream c answer the server requests no
// call claims with outside (nil: with an error). A 2025 HTTP session's
// come on its GET stream, or on the stream of a call without a sink
// (conn.serverRequests).
func serveOutside(c *conn, outside outsideFunc) {
	w, ok := c.w.(*stdioWire)
	if outside == nil || !ok {
		return
	}
	w.t.SetServerRequestHandler(func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error) {
		res, rerr := outside(ctx, method, params)
		if rerr != nil {
			return exactjson.Value{}, rerr
		}
		return res, nil
	})
}

// serverRequests answers the requests a 2025 HTTP session's upstream sends
// on the stream of a call: through its sink s, else as requests outside a
// call (c.outside); ping is answered here.
func (c *conn) serverRequests(s *sink) func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error) {
	return func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error) {
		if params.Kind() != exactjson.KindObject {
			params = exactjson.Object()
		}
		var (
			res  exactjson.Value
			rerr *client.RPCError
		)
		switch {
		case method == "ping":
			return exactjson.Object(), nil
		case s != nil && s.request != nil:
			res, rerr = s.request(ctx, method, params)
		case c.outside != nil:
			res, rerr = c.outside(ctx, method, params)
		default:
			rerr = &client.RPCError{Code: client.CodeMethodNotFound,
				Message: "The gateway cannot route " + method + ": no call of this connection is waiting for it"}
		}
		if rerr != nil {
			return exactjson.Value{}, rerr
		}
		return res, nil
	}
}

// outsideCall answers a server request that belongs to no call.
func (u *upstream) outsideCall(_ context.Context, method string, _ exactjson.Value) (exactjson.Value, *client.RPCError) {
	switch method {
	case "ping":
		return exactjson.Object(), nil
	case "roots/list":
		if len(u.cfg.Roots) == 0 {
			// An error, not an empty list: a server caching the answer
			// may then ask again during a call, whose client has roots.
			u.g.log.Info("gateway: refused the upstream's roots/list outside a call: it has no roots configured", "upstream", u.cfg.Name)
			return exactjson.Value{}, &client.RPCError{Code: client.CodeMethodNotFound,
				Message: "The gateway has no roots configured for this server outside a call; during a call it asks the call's client"}
		}
		u.g.log.Info("gateway: answered the upstream's roots/list outside a call with its configured roots", "upstream", u.cfg.Name, "roots", len(u.cfg.Roots))
		return u.cfg.rootsResult(), nil
	}
	u.g.log.Info("gateway: refused an upstream request outside a call: no client is waiting for it", "upstream", u.cfg.Name, "method", method)
	return exactjson.Value{}, &client.RPCError{Code: client.CodeMethodNotFound,
		Message: "The gateway answers only ping and roots/list outside a call: no client of the gateway is waiting for " + method}
}

// rootsResult is the ListRootsResult of the configured roots.
func (u *UpstreamConfig) rootsResult() exactjson.Value {
	rs := make([]exactjson.Value, len(u.Roots))
	for i, r := range u.Roots {
		m := []exactjson.Member{exactjson.Field("uri", exactjson.String(r.URI))}
		if r.Name != "" {
			m = append(m, exactjson.Field("name", exactjson.String(r.Name)))
		}
		rs[i] = exactjson.Object(m...)
	}
	return exactjson.Object(exactjson.Field("roots", exactjson.Array(rs...)))
}
