package weft

import "github.com/weftmcp/weft/exactjson"

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
