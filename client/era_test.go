package client

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// TestLegacyProbeAnswer: the fallback rule of the 2026-07-28 transport
// pages, not keyed to one error code.
func TestLegacyProbeAnswer(t *testing.T) {
	supported := func(vs ...string) exactjson.Value {
		var a []exactjson.Value
		for _, v := range vs {
			a = append(a, exactjson.String(v))
		}
		return exactjson.Object(exactjson.Field("supported", exactjson.Array(a...)))
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"method not found", &RPCError{Code: CodeMethodNotFound, Message: "Method not found"}, true},
		{"server not initialized over HTTP", &RPCError{Code: -32000, Message: "Bad Request: Server not initialized", HTTPStatus: 400}, true},
		{"invalid params", &RPCError{Code: -32602}, true},
		{"unsupported version naming only 2025", &RPCError{Code: CodeUnsupportedProtocolVersion, Data: supported("2025-11-25", "2025-06-18")}, true},
		{"unsupported version naming 2026-07-28", &RPCError{Code: CodeUnsupportedProtocolVersion, Data: supported("2026-07-28")}, false},
		{"header mismatch", &RPCError{Code: CodeHeaderMismatch, HTTPStatus: 400}, false},
		{"missing capability", &RPCError{Code: CodeMissingRequiredClientCapability}, false},
		{"400 with a page", &HTTPError{StatusCode: 400, Body: []byte("bad")}, true},
		{"404", &HTTPError{StatusCode: 404}, true},
		{"405", &HTTPError{StatusCode: 405}, true},
		{"401", &HTTPError{StatusCode: 401}, false},
		{"403 with a JSON-RPC body", &RPCError{Code: -32600, HTTPStatus: 403}, false},
		{"429", &HTTPError{StatusCode: 429}, false},
		{"502", &HTTPError{StatusCode: 502}, false},
		{"not a 2026-07-28 answer", fmt.Errorf("%w: no result", ErrProtocol), true},
		{"unreachable", &net.OpError{Op: "dial", Err: errors.New("refused")}, false},
		{"closed", ErrClosed, false},
	} {
		if got := LegacyProbeAnswer(c.err); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
