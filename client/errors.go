package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// JSON-RPC and MCP error codes.
const (
	CodeParseError                      = -32700
	CodeInvalidRequest                  = -32600
	CodeMethodNotFound                  = -32601
	CodeInvalidParams                   = -32602
	CodeInternalError                   = -32603
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022
)

// RPCError is a JSON-RPC error returned by the server, also the error of a
// failed task.
type RPCError struct {
	Code    int
	Message string
	Data    exactjson.Value // JSON null when absent
	// HTTPStatus is the HTTP status the error came with (0 on stdio and
	// inside a task).
	HTTPStatus int
	// Header holds the headers of the HTTP response that carried a
	// non-2xx error (Retry-After with 429, the WWW-Authenticate challenge
	// with 401 and 403); nil otherwise.
	Header http.Header
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("mcp error %d: %s", e.Code, e.Message)
}

// parseRPCError decodes a JSON-RPC error object leniently.
func parseRPCError(v exactjson.Value) *RPCError {
	e := &RPCError{}
	if c, ok := v.Get("code"); ok {
		if n, ok := c.AsNumber(); ok {
			if i, ok := n.Int64(); ok {
				e.Code = int(i)
			}
		}
	}
	e.Message = str(v, "message")
	e.Data, _ = v.Get("data")
	if e.Message == "" && v.Kind() != exactjson.KindObject {
		e.Message = "malformed error object"
	}
	return e
}

// HTTPError is a non-success HTTP response that carried no JSON-RPC error.
type HTTPError struct {
	StatusCode int
	Status     string
	Header     http.Header
	Body       []byte // at most 64 KiB
}

// Error implements error.
func (e *HTTPError) Error() string {
	body := strings.TrimSpace(string(e.Body))
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	if body == "" {
		return "client: HTTP " + e.Status
	}
	return "client: HTTP " + e.Status + ": " + body
}

// ErrSessionExpired marks a request of a 2025-era session that the server
// refused because it no longer knows the session (it restarted, or
// expired it): HTTP 404, as the specification asks, or HTTP 400 whose body
// speaks of the session, as the TypeScript SDK's servers and the many
// built on them answer ("Bad Request: No valid session ID provided"). The
// request was not run; a new session must be initialized. The error also
// wraps the [*HTTPError] (or [*RPCError]) the server answered.
var ErrSessionExpired = errors.New("client: the server no longer knows the session")

// ErrStreamEnded marks a request whose SSE response stream ended before
// its response and could not be resumed (the server gave its events no
// ids, or MaxSSEResumes was reached): the server may have stopped. It is
// wrapped together with [ErrProtocol].
var ErrStreamEnded = errors.New("the SSE stream ended before the response")

// MissingHandlerError reports an input request (MRTR or task) whose method
// has no registered handler.
type MissingHandlerError struct {
	Method string // e.g. "sampling/createMessage"
	Key    string // the inputRequests key
}

// Error implements error.
func (e *MissingHandlerError) Error() string {
	return fmt.Sprintf("client: the server requested %s (input %q) but no handler for %s is registered", e.Method, e.Key, e.Method)
}

// ErrTooManyRounds is returned (wrapped) when the server still asks for
// input after Options.MaxRounds retries, or after too many state-only
// retries in a row.
var ErrTooManyRounds = errors.New("client: too many input rounds")

// TaskError is returned when a task ends in failed or cancelled, or when the
// client stops following it (context ended, an input handler failed).
type TaskError struct {
	TaskID        string
	Status        string // failed, cancelled, or the last observed status when abandoned
	StatusMessage string
	// Err is the task's JSON-RPC error (*RPCError) for failed tasks, or the
	// reason the client stopped following the task.
	Err error
}

// Error implements error.
func (e *TaskError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client: task %s %s", e.TaskID, e.Status)
	if e.StatusMessage != "" {
		fmt.Fprintf(&b, " (%s)", e.StatusMessage)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the task's JSON-RPC error, if any.
func (e *TaskError) Unwrap() error { return e.Err }
