package weft

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
)

// Domain-separation strings of the request-state binding (docs/request-state.md).
const (
	bindingDomain = "weft-request-state-binding-v1"
	paramsDomain  = "weft-request-state-params-v1"
	plaintextV    = 1
)

// stateMeta is the framework metadata sealed next to the application state.
type stateMeta struct {
	IssuedAt  int64 // unix milliseconds
	ExpiresAt int64 // unix milliseconds
	Round     int
	RequestID ID
	Keys      map[string]string // issued input key -> method
}

// paramsDigest is SHA-256 over the domain string, a zero byte, the length
// and the canonical JSON of params minus inputResponses, requestState and the
// transient _meta members progressToken, traceparent, tracestate and baggage.
func paramsDigest(params exactjson.Value) ([32]byte, error) {
	p := params.Without("inputResponses", "requestState")
	if meta, ok := p.Get("_meta"); ok && meta.Kind() == exactjson.KindObject {
		p = p.With("_meta", meta.Without("progressToken", "traceparent", "tracestate", "baggage"))
	}
	canon, err := exactjson.Canonical(p)
	if err != nil {
		return [32]byte{}, fmt.Errorf("canonicalize params: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(paramsDomain))
	h.Write([]byte{0})
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(canon))))
	h.Write(canon)
	var d [32]byte
	h.Sum(d[:0])
	return d, nil
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
	b := make([]byte, 0, 128+len(endpoint)+len(partition))
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
	return append(b, d[:]...), nil
}

func (s *Server) binding(req *Request) ([]byte, error) {
	return stateBinding(req.Endpoint, req.ProtocolVersion, req.Method, req.Identity.Partition, req.Params)
}

// encodePlaintext builds the canonical plaintext object.
func encodePlaintext(m *stateMeta, state exactjson.Value) ([]byte, error) {
	keys := make([]exactjson.Member, 0, len(m.Keys))
	for k, v := range m.Keys {
		keys = append(keys, exactjson.Field(k, exactjson.String(v)))
	}
	return exactjson.Canonical(exactjson.Object(
		exactjson.Field("v", exactjson.Int(plaintextV)),
		exactjson.Field("iat", exactjson.Int(m.IssuedAt)),
		exactjson.Field("exp", exactjson.Int(m.ExpiresAt)),
		exactjson.Field("round", exactjson.Int(int64(m.Round))),
		exactjson.Field("rid", m.RequestID.v),
		exactjson.Field("keys", exactjson.Object(keys...)),
		exactjson.Field("state", state),
	))
}

func decodePlaintext(b []byte) (*stateMeta, exactjson.Value, error) {
	v, err := exactjson.Parse(b, exactjson.Limits{})
	if err != nil {
		return nil, exactjson.Value{}, err
	}
	get := func(name string) (int64, bool) {
		x, ok := v.Get(name)
		if !ok {
			return 0, false
		}
		n, ok := x.AsNumber()
		if !ok {
			return 0, false
		}
		return n.Int64()
	}
	ver, ok1 := get("v")
	iat, ok2 := get("iat")
	exp, ok3 := get("exp")
	round, ok4 := get("round")
	rid, ok5 := v.Get("rid")
	keys, ok6 := v.Get("keys")
	state, ok7 := v.Get("state")
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || ver != plaintextV || keys.Kind() != exactjson.KindObject {
		return nil, exactjson.Value{}, errors.New("malformed state plaintext")
	}
	if rid.Kind() != exactjson.KindString && !isInteger(rid) {
		return nil, exactjson.Value{}, errors.New("malformed state request id")
	}
	m := &stateMeta{IssuedAt: iat, ExpiresAt: exp, Round: int(round), RequestID: ID{rid}, Keys: map[string]string{}}
	for k, kv := range keys.All() {
		s, ok := kv.AsString()
		if !ok {
			return nil, exactjson.Value{}, errors.New("malformed state keys")
		}
		m.Keys[k] = s
	}
	return m, state, nil
}

// openState verifies and exposes the retry state of req for op's mode. Every
// failure is the same -32602; the reason is logged for the server only.
func (s *Server) openState(ctx context.Context, req *Request, op *operation) *Error {
	rsv, present := req.Params.Get("requestState")
	if !present {
		return nil
	}
	fail := func(reason string) *Error {
		s.log.Debug("weft: request state rejected", "reason", reason, "method", req.Method, "name", req.Name)
		return withStatus(errInvalidState(errors.New(reason)), http.StatusBadRequest)
	}
	token, ok := rsv.AsString()
	if !ok {
		return fail("not a string")
	}
	switch op.stateMode {
	case StateNone:
		return fail("state sent to an operation without state")
	case StateApplication:
		if token == "" || len(token) > MaxApplicationStateBytes || !utf8.ValidString(token) {
			return fail("application state empty or too large")
		}
		req.appState, req.hasAppState = token, true
		return nil
	}
	if len(token) > s.state.MaxEncodedBytes {
		return fail("too large")
	}
	binding, err := s.binding(req)
	if err != nil {
		return fail("binding: " + err.Error())
	}
	plain, err := s.stateProtector().Open(ctx, token, binding)
	if err != nil {
		reason := seal.Reason(err)
		if reason == "" {
			reason = err.Error()
		}
		return fail("open: " + reason)
	}
	if len(plain) > s.state.MaxDecodedBytes {
		return fail("decoded too large")
	}
	m, state, err := decodePlaintext(plain)
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
	case m.RequestID.Equal(req.ID):
		return fail("retry reuses the emitting request id")
	}
	req.fwState, req.hasFwState, req.stateMeta = state, true, m
	return nil
}

// sealState seals framework state for an input_required result. Failures are
// a sanitized -32603 with HTTP 200 (the response is still uncommitted).
func (s *Server) sealState(ctx context.Context, req *Request, ir *InputRequired) (string, *Error) {
	fail := func(err error) (string, *Error) {
		s.log.Error("weft: sealing request state failed", "method", req.Method, "name", req.Name, "err", err)
		return "", withStatus(internalError(err), http.StatusOK)
	}
	now := s.now()
	m := &stateMeta{IssuedAt: now.UnixMilli(), ExpiresAt: now.Add(s.state.Lifetime).UnixMilli(), Round: 1, RequestID: req.ID, Keys: map[string]string{}}
	if prev := req.stateMeta; prev != nil {
		m.ExpiresAt = prev.ExpiresAt
		m.Round = prev.Round + 1
		if m.IssuedAt >= m.ExpiresAt {
			return fail(errors.New("request state lifetime is exhausted"))
		}
	}
	if m.Round > s.state.Rounds {
		return fail(fmt.Errorf("request state round limit (%d) is exhausted", s.state.Rounds))
	}
	for i, k := range ir.keys {
		m.Keys[k] = ir.requests[i].Method()
	}
	plain, err := encodePlaintext(m, ir.fwState)
	if err != nil {
		return fail(err)
	}
	if len(plain) > s.state.MaxDecodedBytes {
		return fail(fmt.Errorf("request state plaintext of %d bytes exceeds MaxDecodedBytes", len(plain)))
	}
	binding, err := s.binding(req)
	if err != nil {
		return fail(err)
	}
	token, err := s.stateProtector().Seal(ctx, binding, plain)
	if err != nil {
		return fail(err)
	}
	if len(token) > s.state.MaxEncodedBytes {
		return fail(fmt.Errorf("request state of %d bytes exceeds MaxEncodedBytes", len(token)))
	}
	return token, nil
}
