package weft

import (
	"errors"

	"github.com/weftmcp/weft/exactjson"
)

// The root API the gateway package needs beyond the rest of the public API.

// ReleaseOutput lets the handler stream progress and log messages although
// the client lacks a capability of an input kind the operation declares
// conditionally. By default such output is held back, so that an input
// request the client cannot answer can still be refused with -32021 before
// anything is sent. A handler calling ReleaseOutput promises to emit only
// input requests the client supports (check with [Request.ClientSupports]);
// if it emits another, the -32021 error may follow output already sent.
// A proxy calls it: it relays only what its upstream asks.
func (r *Request) ReleaseOutput() {
	r.mu.Lock()
	r.holdOutput = false
	r.mu.Unlock()
}

// MissingCapabilities returns the -32021 error "Missing required client
// capability" with data.requiredCapabilities set to required (a
// ClientCapabilities object), for a handler relaying a server's refusal.
func MissingCapabilities(required exactjson.Value) *Error {
	return errMissingCapabilities(required)
}

// Relay returns the input request of in carrying params exactly as another
// server sent them, for a proxy that passes that server's
// elicitation/create, sampling/createMessage or roots/list on to its own
// client. The request is checked with the handler's result like one built
// by Ask: its kind must be declared (sampling that offers tools needs
// Sampling(...).WithTools()), and forms and URLs must pass the server's
// elicitation policies.
func Relay(in Input, params exactjson.Value) InputRequest {
	d := in.input()
	if d.err != nil {
		return d.decl.failed(d.err)
	}
	r := InputRequest{decl: d.decl, kind: d.decl.kind, params: params}
	if d.decl.kind == inputSampling && (params.Has("tools") || params.Has("toolChoice")) {
		r.kind = inputSamplingTools
		r.err = errors.New("weft: a relayed sampling request offers tools but the operation declared weft.Sampling without WithTools")
	}
	return r
}
