package weft

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/progerr"
)

// Code is a JSON-RPC error code.
//
// Codes from -32768 to -32000 are reserved by JSON-RPC and MCP; application
// code can never emit them through [NewError]. The framework emits them itself.
type Code int

// String returns the code's name for the codes Weft defines ("invalid
// params") and its number otherwise.
func (c Code) String() string {
	switch c {
	case CodeParseError:
		return "parse error"
	case CodeInvalidRequest:
		return "invalid request"
	case CodeMethodNotFound:
		return "method not found"
	case CodeInvalidParams:
		return "invalid params"
	case CodeInternalError:
		return "internal error"
	case CodeHeaderMismatch:
		return "header mismatch"
	case CodeMissingRequiredCapability:
		return "missing required capability"
	case CodeUnsupportedProtocolVersion:
		return "unsupported protocol version"
	case CodeRateLimited:
		return "rate limited"
	}
	return strconv.Itoa(int(c))
}

// The JSON-RPC and MCP error codes Weft emits.
const (
	CodeParseError                 Code = -32700 // body is not valid JSON
	CodeInvalidRequest             Code = -32600 // not a valid JSON-RPC request
	CodeMethodNotFound             Code = -32601 // unknown, removed or unadvertised method
	CodeInvalidParams              Code = -32602 // malformed params, unknown tool, bad request state
	CodeInternalError              Code = -32603 // unexpected server failure
	CodeHeaderMismatch             Code = -32020 // HTTP metadata header missing or differing from the body
	CodeMissingRequiredCapability  Code = -32021 // the request needs a client capability it did not declare
	CodeUnsupportedProtocolVersion Code = -32022 // the protocol version is not served here
	// CodeRateLimited is the code Weft uses for rate limiting (HTTP 429).
	// It lies just outside the JSON-RPC reserved range, and NewError refuses
	// it like a reserved code so that only the framework can emit it.
	CodeRateLimited Code = -31999
)

// CodeOf returns the code the client sees for err when a handler returns
// it: the Code of the first [*Error] in err's chain, [CodeInternalError] for
// any other error, and 0 for nil. A [*ToolError] is not a JSON-RPC error; it
// too gives 0.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	if _, ok := errors.AsType[*ToolError](err); ok {
		return 0
	}
	return CodeInternalError
}

// Fixed client-facing sentences. Security-relevant failures always use one
// fixed sentence so that no oracle distinguishes why a request failed.
const (
	msgInternal     = "Internal error"
	msgInvalidState = "Invalid request state"
)

// Error is a JSON-RPC error returned to the client.
//
// Handlers return an *Error (built with [NewError]) to send an
// application-defined error. Any other Go error returned by a handler reaches
// the client only as the fixed sentence "Internal error"; the original error is
// logged on the server.
type Error struct {
	Code    Code
	Message string
	Data    exactjson.Value // optional; null when absent (see [Error.WithData])

	fault    fault // what failed, beyond the code; faultNone: the code says
	reserved bool  // built by the framework
	notFound bool  // resource-not-found (-32002 for 2025-era clients)
	cause    error // server-side detail, never sent
	// retryAfter, when positive, is sent as the Retry-After header (whole
	// seconds, rounded up) of an HTTP error response.
	retryAfter time.Duration
}

// RateLimited returns the framework's rate-limit error (CodeRateLimited,
// HTTP 429) with a Retry-After hint, for middleware that limits requests
// itself (see the middleware package's RateLimit).
func RateLimited(retryAfter time.Duration) *Error {
	e := protocolError(CodeRateLimited, "Rate limited", exactjson.Value{})
	e.retryAfter = max(retryAfter, 0)
	return e
}

// NewError returns an application error with the given code and message;
// [Error.WithData] adds data.
//
// Codes in the reserved range -32768..-32000 (and CodeRateLimited) are refused: the returned error
// then carries CodeInternalError, so application code can never impersonate a
// protocol error. Use codes outside that range (for example -31000 or 1000).
func NewError(code Code, message string) *Error {
	if reservedCode(code) {
		return &Error{Code: CodeInternalError, Message: msgInternal, reserved: true,
			cause: fmt.Errorf("weft: application tried to emit reserved error code %d", code)}
	}
	return &Error{Code: code, Message: message}
}

// WithData returns a copy of e whose data member is data: an
// [exactjson.Value] as it is, any other value as encoding/json/v2 marshals
// it. A value that does not marshal makes the copy the sanitized internal
// error, with the marshal error as its server-side cause. The sanitized
// internal error (what NewError returns for a reserved code) stays as it
// is: it never carries data.
func (e *Error) WithData(data any) *Error {
	if e.reserved && e.Code == CodeInternalError {
		return e
	}
	c := *e
	switch d := data.(type) {
	case exactjson.Value:
		c.Data = d
	case nil:
		c.Data = exactjson.Value{}
	default:
		v, err := exactjson.FromGo(d)
		if err != nil {
			return internalError(fmt.Errorf("weft: data of error %d (%q): %w", e.Code, e.Message, err))
		}
		c.Data = v
	}
	return &c
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("jsonrpc error %d: %s: %v", e.Code, e.Message, e.cause)
	}
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Unwrap returns the server-side cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// fault says what failed, beyond an error's code, to a transport that can
// say more than JSON-RPC: the HTTP transports map it to a status
// (httpStatus), stdio has nothing more to say. faultNone leaves it to the
// code.
type fault uint8

const (
	faultNone          fault = iota
	faultAnswered            // a JSON-RPC error is the whole answer: the exchange itself succeeded
	faultBadRequest          // the request, its headers or its session id are malformed
	faultNoSession           // the 2025-era session is unknown, ended or another caller's
	faultNotAcceptable       // the client does not accept the form the answer needs (an event stream)
	faultUnavailable         // the server cannot serve now: shutting down, busy, a store failing
	faultDeadline            // the request's deadline passed before its answer
)

// protocolError builds a framework error with a reserved code.
func protocolError(code Code, message string, data exactjson.Value) *Error {
	return &Error{Code: code, Message: message, Data: data, reserved: true}
}

func withFault(e *Error, f fault) *Error { e.fault = f; return e }

func withCause(e *Error, cause error) *Error { e.cause = cause; return e }

// internalError is the sanitized error for unexpected failures.
func internalError(cause error) *Error {
	return &Error{Code: CodeInternalError, Message: msgInternal, reserved: true, cause: cause}
}

// InvalidParams returns a -32602 error with the given message, for handlers
// that reject malformed parameters (for example a missing prompt argument).
func InvalidParams(message string) *Error {
	return protocolError(CodeInvalidParams, message, exactjson.Value{})
}

// ResourceNotFound returns the error for a resources/read of an unknown URI:
// -32602 with data {"uri": uri} on 2026-07-28 (and -32002 for 2025-era clients).
func ResourceNotFound(uri string) *Error {
	e := protocolError(CodeInvalidParams, "Resource not found",
		exactjson.Object(exactjson.Field("uri", exactjson.String(uri))))
	e.notFound = true
	return e
}

// errInvalidState is the single response for every request-state failure.
func errInvalidState(cause error) *Error {
	return withCause(protocolError(CodeInvalidParams, msgInvalidState, exactjson.Value{}), cause)
}

func errMissingCapabilities(required exactjson.Value) *Error {
	return protocolError(CodeMissingRequiredCapability, "Missing required client capability",
		exactjson.Object(exactjson.Field("requiredCapabilities", required)))
}

// ToolError is returned by a tool handler to report a tool execution failure
// to the model: the call answers a CallToolResult with isError set and the
// message as its text content. Unlike other errors its message IS shown to
// the client, so it must not contain secrets.
type ToolError struct{ Message string }

// Error implements error.
func (e *ToolError) Error() string { return e.Message }

// ToolErrorf formats a [ToolError].
func ToolErrorf(format string, args ...any) error {
	return &ToolError{Message: fmt.Sprintf(format, args...)}
}

// ProgrammingError is a mistake in the application's code that shows only
// when a request runs: an input request the operation does not declare,
// state of a kind its StateMode does not allow, two input requests under
// one key, structured content that does not match the tool's output
// schema, an application error posing with a reserved code, a handler that
// panics. The client gets the sanitized -32603 "Internal error"; the server
// logs the error at Error (a panic with its stack, as "weft: handler
// panic") and reports the ProgrammingError to a client in the same process
// (package wefttest fails the test with it). Its message says what to
// change.
type ProgrammingError struct {
	// Method is the request's method (tools/call, prompts/get, ...).
	Method string
	// Name is the tool, prompt, resource or template the request named;
	// "" when there is none.
	Name string
	// Err is what is wrong, naming the setting or call that fixes it.
	Err error
}

// Error implements error.
func (e *ProgrammingError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("weft: programming error in %s: %v", e.Method, e.Err)
	}
	return fmt.Sprintf("weft: programming error in %s %q: %v", e.Method, e.Name, e.Err)
}

// Unwrap returns Err.
func (e *ProgrammingError) Unwrap() error { return e.Err }

// programmingError logs err as a programming error of the application,
// reports it to the in-process client that sent the request (package
// wefttest, through the request's context) and returns the sanitized error
// for the client.
func (s *Server) programmingError(ctx context.Context, req *Request, err error) *Error {
	pe := &ProgrammingError{Method: req.Method, Name: req.Name, Err: err}
	s.log.Error("weft: programming error", "method", req.Method, "name", req.Name, "err", err)
	progerr.Report(ctx, pe)
	return internalError(pe)
}

// declaringType names the Go type whose fields declare an operation of kind
// k (its Inputs and StateMode), for the messages of programming errors.
func declaringType(k ItemKind) string {
	switch k {
	case KindPrompt:
		return "weft.Prompt"
	case KindResource:
		return "weft.Resource"
	case KindResourceTemplate:
		return "weft.ResourceTemplate"
	}
	return "weft.Tool"
}

// declarationCall names the call that declares input requests of kind k.
func declarationCall(k inputKind) string {
	switch k {
	case inputForm:
		return "weft.Form(...) or weft.FormOf[T](...)"
	case inputURL:
		return "weft.URL(...)"
	case inputSampling:
		return "weft.Sampling(...)"
	case inputSamplingTools:
		return "weft.Sampling(...).WithTools()"
	case inputRoots:
		return "weft.Roots(...)"
	}
	return k.String()
}

// stateModeName is the Go name of a StateMode.
func stateModeName(m StateMode) string {
	switch m {
	case StateApplication:
		return "weft.StateApplication"
	case StateFramework:
		return "weft.StateFramework"
	}
	return "weft.StateNone"
}
