package weft

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// Identity is what admission made of a request: who is calling and which
// authorization partition their state, tasks and subscriptions belong to.
// Client-reported info, _meta and forwarded headers never make an identity.
type Identity struct {
	// Principal names the caller (for example a token subject). Empty for
	// anonymous callers.
	Principal string
	// Partition is the authorization partition: request state sealed for one
	// partition never opens in another, and tasks are visible only within the
	// partition (and principal) that created them. At most 256 bytes.
	Partition string
	// RateKey keys rate limiting; empty means Partition.
	RateKey string
	// Scopes are the granted OAuth scopes, if any.
	Scopes []string
	// Data carries application data from admission to handlers.
	Data any
}

// Anonymous reports whether the identity has no principal.
func (id Identity) Anonymous() bool { return id.Principal == "" }

// AdmissionRequest is what an [Admission] function sees.
type AdmissionRequest struct {
	Method string // JSON-RPC method
	// Name is the request's target taken from the body (tool or prompt
	// name, resource URI, task id), so admission can require per-operation
	// scopes; empty for methods without a target.
	Name       string
	Header     http.Header // nil on stdio
	RemoteAddr string      // empty on stdio
	Transport  string      // "http" or "stdio"
	// BearerToken is the token of an "Authorization: Bearer" header, if any.
	BearerToken string
	// Scopes are the scopes the target's registration declares
	// ([Tool].Scopes, [Prompt].Scopes, [Resource].Scopes or the matching
	// [ResourceTemplate].Scopes); nil for other methods and unknown targets.
	Scopes []string
}

// Admission turns a request into an identity, or rejects it. It runs for every
// structurally valid request, before the target is looked up, so known and
// unknown targets get the same rejection. Return an [*AdmissionError] to
// choose the HTTP status and challenge; any other error is a 401 without
// detail.
type Admission func(ctx context.Context, r *AdmissionRequest) (Identity, error)

// AdmissionError rejects a request at admission.
type AdmissionError struct {
	Status  int    // HTTP status: 401, 403, 429...
	Message string // client-visible sentence
	// Challenge is the WWW-Authenticate header value, if any.
	Challenge string
	// Header holds extra response headers (for example Retry-After).
	Header http.Header
}

// Error implements error.
func (e *AdmissionError) Error() string {
	return fmt.Sprintf("weft: request rejected at admission (%d): %s", e.Status, e.Message)
}

// admit runs Options.Admission for a request of method with the given
// target (tool or prompt name, resource URI, task id; "" for none).
func (s *Server) admit(ctx context.Context, in *inbound, method, target string) (Identity, *reply) {
	if s.opts.Admission == nil {
		return Identity{}, nil
	}
	ar := &AdmissionRequest{Method: method, Name: target, Header: in.header, RemoteAddr: in.remoteAddr, Transport: in.transport,
		Scopes: s.declaredScopes(method, target)}
	if in.header != nil {
		if len(in.header.Values("Authorization")) > 1 {
			// RFC 6750: one method of presenting a token per request.
			r := reply{err: protocolError(CodeInvalidRequest, "More than one Authorization header", exactjson.Value{}),
				refusal: &AdmissionError{Status: http.StatusBadRequest, Challenge: `Bearer error="invalid_request"`}}
			return Identity{}, &r
		}
		if a := in.header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			ar.BearerToken = strings.TrimSpace(a[7:])
		}
	}
	id, err := s.opts.Admission(ctx, ar)
	if err == nil {
		if len(id.Partition) > maxPartitionBytes {
			s.log.Error("weft: admission returned a partition longer than maxPartitionBytes")
			r := errReply(ID{}, internalError(errors.New("partition too long")))
			return Identity{}, &r
		}
		return id, nil
	}
	var ae *AdmissionError
	if !errors.As(err, &ae) {
		ae = &AdmissionError{Status: http.StatusUnauthorized, Message: "Unauthorized"}
	}
	r := reply{err: protocolError(CodeInvalidRequest, ae.Message, exactjson.Value{}), refusal: ae}
	return Identity{}, &r
}
