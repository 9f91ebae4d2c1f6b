package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/jsonrpc"
)

// Request is one outgoing JSON-RPC request as a [Transport] sees it.
type Request struct {
	// ID is the JSON-RPC id. The [Client] gives every request, including
	// every MRTR retry, a fresh one.
	ID int64
	// Method is the JSON-RPC method.
	Method string
	// Params is the params object, _meta included.
	Params exactjson.Value
	// Header holds extra HTTP request-metadata headers, i.e. the
	// Mcp-Param-{Name} mirrors of x-mcp-header tool arguments. Transports
	// without a header layer ignore it. The standard headers
	// (MCP-Protocol-Version, Mcp-Method, Mcp-Name) are derived from the
	// body by the HTTP transport itself.
	Header http.Header
	// OnServerRequest answers the JSON-RPC requests the server sends while
	// this request is in flight: a 2025-era server asks for input that way
	// (elicitation/create, sampling/createMessage, roots/list) instead of
	// returning input_required. It runs on a goroutine of its own and may
	// block; ctx ends when the server cancels its request
	// (notifications/cancelled), when this request ends, or when the
	// transport closes. A returned *RPCError is sent as it is, any other
	// error as an internal error. Which request a server request belongs
	// to is up to the transport (see [StdioTransport]); transports that
	// receive no server requests (Streamable HTTP) ignore it.
	OnServerRequest func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error)
	// Attending, when set, reports whether the request takes, right now,
	// the server requests and notifications that name no request (no
	// progressToken echoed): [StdioTransport] gives such a message to the
	// only request in flight that attends (nil: always attends). A
	// connection carrying several calls of a 2025-era server at once keeps
	// at most one of them attending (the others wait for their own
	// answers), so that what the server asks goes to the call that can
	// have asked it. It is called with the transport's lock held and must
	// not block.
	Attending func() bool
}

// MaxServerRequests bounds the server requests a connection has
// unanswered at once (those being answered by OnServerRequest and pings
// whose answer is not yet written). A server past it is not speaking the
// protocol in good faith (one round of input asks for a handful); the
// connection breaks with an error wrapping [ErrProtocol] rather than
// holding a goroutine and a queue entry for each.
const MaxServerRequests = 64

// Response is a JSON-RPC response: exactly one of Result and Error is set.
type Response struct {
	Result exactjson.Value
	Error  *RPCError
}

// Notification is a JSON-RPC notification sent by the server: request
// scoped (notifications/progress, notifications/message) or delivered on a
// subscriptions/listen stream.
type Notification struct {
	Method string
	Params exactjson.Value
}

// Transport carries requests to one MCP server.
//
// Do sends req and waits for its response. Notifications the server sends
// for this request are passed to notify, in order and on the calling
// goroutine, before Do returns. When ctx ends first, Do cancels the request
// on the wire (closing the HTTP response stream, or sending
// notifications/cancelled on stdio) and returns ctx's error. Errors returned
// by Do are local (transport) errors; a JSON-RPC error from the server is a
// Response with Error set.
type Transport interface {
	Do(ctx context.Context, req *Request, notify func(Notification)) (*Response, error)
	Close() error
}

// ParamHeaderTransport is implemented by transports that mirror
// x-mcp-header tool arguments into Mcp-Param-{Name} headers (Streamable
// HTTP). For such a transport the [Client] keeps the tool input schemas from
// tools/list, lists the tools once before its first tools/call, drops tools
// whose x-mcp-header annotations are invalid, and fills [Request.Header].
type ParamHeaderTransport interface {
	Transport
	MirrorsParamHeaders() bool
}

// UnroutedNotifier is implemented by transports that can receive
// notifications no in-flight request claims (on stdio, a log message while
// several requests are running). [New] installs the client's notification
// dispatcher as the handler. The handler runs on the transport's reader and
// must not block.
type UnroutedNotifier interface {
	SetUnroutedHandler(func(Notification))
}

// ErrClosed is returned for requests on a closed or broken transport.
var ErrClosed = errors.New("client: transport closed")

// ErrProtocol marks a malformed or unexpected message from the server.
var ErrProtocol = errors.New("client: protocol error")

func protocolErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// parseLimits are the exactjson limits for server messages.
var parseLimits = exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling, MaxStringBytes: exactjson.MaxStringBytesCeiling}

// encodeRequest returns the compact JSON of req.
func encodeRequest(req *Request) ([]byte, error) {
	return jsonrpc.EncodeRequest(req.ID, req.Method, req.Params)
}

// message is a classified incoming JSON-RPC message.
type message struct {
	kind   msgKind
	id     exactjson.Value // responses and server requests
	method string          // notifications and server requests
	params exactjson.Value
	resp   *Response
}

type msgKind uint8

const (
	msgResponse msgKind = iota + 1
	msgNotification
	msgRequest // a server-to-client request (2025-era servers)
)

// parseMessage classifies one incoming message.
func parseMessage(data []byte) (message, error) {
	v, err := exactjson.Parse(data, parseLimits)
	if err != nil {
		return message{}, protocolErrorf("invalid JSON from server: %v", err)
	}
	if v.Kind() != exactjson.KindObject {
		return message{}, protocolErrorf("server message is not an object")
	}
	if str(v, "jsonrpc") != "2.0" {
		return message{}, protocolErrorf(`jsonrpc is not "2.0"`)
	}
	id, hasID := v.Get("id")
	if mv, ok := v.Get("method"); ok {
		method, isStr := mv.AsString()
		if !isStr || method == "" {
			return message{}, protocolErrorf("method is not a non-empty string")
		}
		params, _ := v.Get("params")
		if hasID {
			return message{kind: msgRequest, id: id, method: method, params: params}, nil
		}
		return message{kind: msgNotification, method: method, params: params}, nil
	}
	if !hasID {
		return message{}, protocolErrorf("a response without id")
	}
	if ev, ok := v.Get("error"); ok {
		return message{kind: msgResponse, id: id, resp: &Response{Error: parseRPCError(ev)}}, nil
	}
	if rv, ok := v.Get("result"); ok {
		// A result that is not an object fails its request, not the
		// connection: the client checks it (roundTrip).
		return message{kind: msgResponse, id: id, resp: &Response{Result: rv}}, nil
	}
	return message{}, protocolErrorf("message is neither a response nor a notification")
}

// isNoise reports whether a line that is not a valid JSON-RPC message is
// no attempt at one either (see [StdioOptions.Noise]).
func isNoise(line []byte) bool {
	v, err := exactjson.Parse(line, parseLimits)
	switch {
	case errors.Is(err, exactjson.ErrLimit):
		return false // JSON, maybe an answer too big to take
	case err != nil:
		return !bytes.Contains(line, []byte(`"jsonrpc"`))
	case v.Kind() == exactjson.KindObject:
		return !hasJSONRPC(v)
	case v.Kind() == exactjson.KindArray:
		for _, e := range v.Elements() {
			if hasJSONRPC(e) {
				return false // a batch
			}
		}
	}
	return true
}

// hasJSONRPC reports an object with a jsonrpc member: an attempt at a
// JSON-RPC message.
func hasJSONRPC(v exactjson.Value) bool {
	_, ok := v.Get("jsonrpc")
	return ok
}

// metaOf returns params._meta.
func metaOf(params exactjson.Value) exactjson.Value {
	m, _ := params.Get("_meta")
	return m
}

// targetMember names the params member mirrored into Mcp-Name.
func targetMember(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId"
	}
	return ""
}
