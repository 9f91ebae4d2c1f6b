package weft

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/digestcache"
	"github.com/weftmcp/weft/internal/stateplain"
	"github.com/weftmcp/weft/seal"
)

// Domain-separation strings of the request-state binding (docs/request-state.md).
const (
	bindingDomain = "weft-request-state-binding-v1"
	paramsDomain  = "weft-request-state-params-v1"
)

// stateMeta is the framework metadata sealed next to the application state
// (internal/stateplain writes and reads the plaintext).
type stateMeta = stateplain.Meta

// stateKey is one issued input key and the method of its request.
type stateKey = stateplain.Key

// paramsDigest is SHA-256 over the domain string, a zero byte, the length
// and the canonical JSON of params minus inputResponses, requestState and the
// transient _meta members progressToken, traceparent, tracestate and baggage.
func paramsDigest(params exactjson.Value) ([32]byte, error) {
	d, _, err := paramsDigestBuf(nil, params)
	return d, err
}

// paramsDigestBuf is paramsDigest writing the hash input into scratch,
// which it returns (grown if needed) for reuse. The canonical form is written
// straight into the buffer with the unstable members left out, not copied
// out first.
func paramsDigestBuf(scratch []byte, params exactjson.Value) ([32]byte, []byte, error) {
	buf := append(scratch[:0], paramsDomain...)
	buf = append(buf, 0, 0, 0, 0, 0)
	at := len(buf) - 4
	buf, err := exactjson.AppendCanonicalWithout(buf, params, 1, unstableMember)
	if err != nil {
		return [32]byte{}, buf, fmt.Errorf("canonicalize params: %w", err)
	}
	binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	return sha256.Sum256(buf), buf, nil
}

// unstableMember reports the params members that may change between rounds
// and so are not bound: top-level inputResponses and requestState, and the
// transient members of _meta.
func unstableMember(depth int, parent, name string) bool {
	switch depth {
	case 0:
		return name == "inputResponses" || name == "requestState"
	case 1:
		return parent == "_meta" && (name == "progressToken" || name == "traceparent" || name == "tracestate" || name == "baggage")
	}
	return false
}

func appendLP(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// stateBinding builds the associated data that sealed state is bound to.
func stateBinding(endpoint, version, method, partition string, params exactjson.Value) ([]byte, error) {
	d, err := paramsDigest(params)
	if err != nil {
		return nil, err
	}
	return appendBinding(nil, endpoint, version, method, partition, d), nil
}

// appendBinding appends the associated data to b.
func appendBinding(b []byte, endpoint, version, method, partition string, d [32]byte) []byte {
	b = append(b, bindingDomain...)
	b = append(b, 0)
	b = appendLP(b, endpoint)
	b = appendLP(b, version)
	b = appendLP(b, method)
	if partition == "" {
		b = append(b, 0)
	} else {
		b = append(b, 1)
	}
	b = appendLP(b, partition)
	return append(b, d[:]...)
}

// maxPooledScratch bounds the buffers Server.scratch keeps: a rare huge
// params object does not pin its buffer.
const maxPooledScratch = 64 << 10

// stateScratch is the pooled scratch space of opening and sealing request
// state: one pool round trip for both.
type stateScratch struct {
	buf []byte           // the binding's hash input, then the binding
	ps  exactjson.Parser // state plaintexts only, so its limits never change
}

// binding builds the associated data for req in pooled scratch, which the
// caller hands back with putScratch once it is done with the binding (a
// Protector does not retain it) and with the scratch's parser. The params
// digest comes from the digest cache or is computed in the same buffer;
// remember (sealing) adds it to the cache for the retry.
func (s *Server) binding(req *Request, remember bool) ([]byte, *stateScratch, error) {
	b0 := req.bound()
	sc, _ := s.scratch.Get().(*stateScratch)
	if sc == nil {
		sc = new(stateScratch)
	}
	key, err := exactjson.AppendJSONWithout(sc.buf[:0], b0.params, 1, unstableMember)
	if err != nil {
		sc.buf = key
		s.putScratch(sc)
		return nil, nil, fmt.Errorf("encode params: %w", err)
	}
	d, hit := s.digests.Lookup(key)
	buf := key
	if !hit {
		var keep string
		if remember && len(key) <= digestcache.MaxKey {
			keep = string(key)
		}
		d, buf, err = paramsDigestBuf(key, b0.params)
		if err != nil {
			sc.buf = buf
			s.putScratch(sc)
			return nil, nil, err
		}
		if keep != "" {
			s.digests.Remember(keep, d)
		}
	}
	b := appendBinding(buf[:0], b0.endpoint, b0.version, b0.method, b0.partition, d)
	sc.buf = b
	return b, sc, nil
}

// putScratch returns scratch from binding to the pool, without a buffer
// grown past maxPooledScratch.
func (s *Server) putScratch(sc *stateScratch) {
	if sc == nil {
		return
	}
	if cap(sc.buf) > maxPooledScratch {
		sc.buf = nil
	}
	sc.buf = sc.buf[:0]
	s.scratch.Put(sc)
}

// openState verifies and exposes the retry state of req for op's mode. Every
// failure is the same -32602; the reason is logged for the server only.
func (s *Server) openState(ctx context.Context, req *Request, op *operation) *Error {
	rsv, present := req.bound().params.Get("requestState")
	if !present {
		return nil
	}
	fail := func(reason string) *Error {
		s.log.Debug("weft: request state rejected", "reason", reason, "method", req.Method, "name", req.Name)
		return errInvalidState(errors.New(reason))
	}
	token, ok := rsv.AsString()
	if !ok {
		return fail("not a string")
	}
	switch op.stateMode {
	case StateNone:
		return fail("state sent to an operation without state")
	case StateApplication:
		if token == "" || len(token) > maxApplicationStateBytes || !utf8.ValidString(token) {
			return fail("application state empty or too large")
		}
		req.retried().appState, req.retry.hasAppState = token, true
		return nil
	}
	if len(token) > s.state.MaxEncodedBytes {
		return fail("too large")
	}
	binding, scratch, err := s.binding(req, false)
	if err != nil {
		return fail("binding: " + err.Error())
	}
	plain, err := s.stateProtector().Open(ctx, token, binding)
	if err != nil {
		s.putScratch(scratch)
		reason := seal.Reason(err)
		if reason == "" {
			reason = err.Error()
		}
		return fail("open: " + reason)
	}
	if len(plain) > s.state.MaxDecodedBytes {
		s.putScratch(scratch)
		return fail("decoded too large")
	}
	rs := req.retried()
	m := &rs.meta
	state, err := stateplain.DecodeInto(&scratch.ps, plain, m)
	s.putScratch(scratch)
	if err != nil {
		return fail(err.Error())
	}
	now := s.now().UnixMilli()
	switch {
	case m.IssuedAt >= m.ExpiresAt:
		return fail("issued after expiry")
	case m.ExpiresAt-m.IssuedAt > s.state.Lifetime.Milliseconds():
		return fail("lifetime longer than configured")
	case now >= m.ExpiresAt:
		return fail("expired")
	case m.Round < 1 || m.Round > s.state.Rounds:
		return fail("round out of range")
	case ID{m.RequestID}.Equal(req.bound().id):
		return fail("retry reuses the emitting request id")
	}
	rs.fwState, rs.hasFwState, rs.stateMeta = state, true, m
	return nil
}

// sealState seals framework state for an input_required result. Failures are
// a sanitized -32603 with HTTP 200 (the response is still uncommitted).
func (s *Server) sealState(ctx context.Context, req *Request, ir *InputRequired) (string, *Error) {
	fail := func(err error) (string, *Error) {
		s.log.Error("weft: sealing request state failed", "method", req.Method, "name", req.Name, "err", err)
		return "", withFault(internalError(err), faultAnswered)
	}
	now := s.now()
	m := &stateMeta{IssuedAt: now.UnixMilli(), ExpiresAt: now.Add(s.state.Lifetime).UnixMilli(), Round: 1, RequestID: req.bound().id.v, Keys: make([]stateKey, 0, len(ir.keys))}
	if prev := req.stateMeta(); prev != nil {
		m.ExpiresAt = prev.ExpiresAt
		m.Round = prev.Round + 1
		if m.IssuedAt >= m.ExpiresAt {
			return fail(errors.New("request state lifetime is exhausted"))
		}
	}
	if m.Round > s.state.Rounds {
		return fail(fmt.Errorf("request state round limit (%d) is exhausted", s.state.Rounds))
	}
	if req.argsChecked && req.op != nil {
		m.Args = req.op.argsFingerprint
	}
	for i, k := range ir.keys {
		m.Keys = append(m.Keys, stateKey{Name: k, Method: ir.requests[i].Method()})
	}
	stateplain.SortKeys(m.Keys)
	// State whose numbers the server's own parser would refuse could never
	// be redeemed: refuse it now, before anything is sealed.
	if err := s.limits.JSON.CheckNumbers(ir.fwState); err != nil {
		return fail(fmt.Errorf("framework state: %w", err))
	}
	plain, err := stateplain.Encode(m, ir.fwState)
	if err != nil {
		return fail(err)
	}
	if len(plain) > s.state.MaxDecodedBytes {
		return fail(fmt.Errorf("request state plaintext of %d bytes exceeds MaxDecodedBytes", len(plain)))
	}
	binding, scratch, err := s.binding(req, true)
	if err != nil {
		return fail(err)
	}
	token, err := s.stateProtector().Seal(ctx, binding, plain)
	s.putScratch(scratch)
	if err != nil {
		return fail(err)
	}
	if len(token) > s.state.MaxEncodedBytes {
		return fail(fmt.Errorf("request state of %d bytes exceeds MaxEncodedBytes", len(token)))
	}
	return token, nil
}
