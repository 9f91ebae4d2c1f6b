package gateway

import (
	"context"
	"net/http"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// LegacyClient is the gateway's own 2025-11-25 session client, exported to
// the tests as a 2025-era client of a gateway.
type LegacyClient struct{ c *conn }

// DialLegacy opens a 2025-11-25 session with the MCP endpoint url; answer
// answers the server's requests.
func DialLegacy(ctx context.Context, url string, answer func(method string, params exactjson.Value) exactjson.Value) (*LegacyClient, error) {
	u := &UpstreamConfig{Name: "legacy-client", URL: url, Protocol: Version20251125}
	c, err := dial(ctx, u, nil, nil, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	c.answer = answer
	return &LegacyClient{c: c}, nil
}

// Call sends a request in the session.
func (l *LegacyClient) Call(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error) {
	return l.c.do(ctx, method, params, callOpts{sink: &sink{request: func(_ context.Context, m string, p exactjson.Value) (exactjson.Value, *client.RPCError) {
		return l.c.answer(m, p), nil
	}}})
}

// Close ends the session.
func (l *LegacyClient) Close() error { return l.c.close() }

// Running returns how many calls attend the processes of the command
// upstream name (pool.go).
func (g *Gateway) Running(name string) int {
	for _, u := range g.ups {
		if u.cfg.Name == name {
			u.pool.mu.Lock()
			defer u.pool.mu.Unlock()
			n := 0
			for _, p := range u.pool.procs {
				if p.busy {
					n++
				}
			}
			return n
		}
	}
	return 0
}

// DialLegacyAs is DialLegacy sending authorization as the Authorization
// header of every request (a caller the server's admission identifies).
func DialLegacyAs(ctx context.Context, url, authorization string, answer func(method string, params exactjson.Value) exactjson.Value) (*LegacyClient, error) {
	u := &UpstreamConfig{Name: "legacy-client", URL: url, Protocol: Version20251125}
	c, err := dial(ctx, u, nil, func(_ context.Context, h http.Header) error {
		h.Set("Authorization", authorization)
		return nil
	}, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	c.answer = answer
	return &LegacyClient{c: c}, nil
}
