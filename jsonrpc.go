package weft

import (
	"fmt"
	"strings"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/jsonrpc"
)

// ID is a JSON-RPC request id: a string or an integer. The two kinds are
// distinct: the string "7" and the integer 7 are different ids.
type ID struct{ v exactjson.Value }

// StringID returns a string id.
func StringID(s string) ID { return ID{exactjson.String(s)} }

// IntID returns an integer id.
func IntID(i int64) ID { return ID{exactjson.Int(i)} }

// IsZero reports whether the id is absent (a notification has no id).
func (id ID) IsZero() bool { return id.v.Kind() == exactjson.KindNull }

// IsString reports whether the id is a JSON string.
func (id ID) IsString() bool { return id.v.Kind() == exactjson.KindString }

// Value returns the id as a JSON value (null when absent).
func (id ID) Value() exactjson.Value { return id.v }

// String renders the id for logs: strings quoted, integers bare.
func (id ID) String() string {
	switch id.v.Kind() {
	case exactjson.KindString:
		s, _ := id.v.AsString()
		return fmt.Sprintf("%q", s)
	case exactjson.KindNumber:
		n, _ := id.v.AsNumber()
		return n.String()
	}
	return "null"
}

// Equal reports whether two ids are the same id (same kind, same value).
func (id ID) Equal(o ID) bool {
	if id.v.Kind() != o.v.Kind() {
		return false
	}
	return exactjson.Equal(id.v, o.v)
}

// key is a map key that keeps the kinds distinct (jsonrpc.IDKey).
func (id ID) key() string { return jsonrpc.IDKey(id.v) }

// MarshalJSON encodes the id.
func (id ID) MarshalJSON() ([]byte, error) { return id.v.MarshalJSON() }

// message is one decoded inbound JSON-RPC message.
type message struct {
	id       ID
	hasID    bool
	method   string
	params   exactjson.Value // object (possibly empty); null when absent
	isNotify bool
}

// parseMessage validates the JSON-RPC 2.0 envelope of a decoded body.
// It returns the message and, on failure, a -32600 error (with the id when it
// could be read).
func parseMessage(v exactjson.Value) (message, *Error) {
	var m message
	if v.Kind() != exactjson.KindObject {
		if v.Kind() == exactjson.KindArray {
			return m, protocolError(CodeInvalidRequest, "Batch requests are not supported", exactjson.Value{})
		}
		return m, protocolError(CodeInvalidRequest, "Request must be a JSON object", exactjson.Value{})
	}
	if idv, ok := v.Get("id"); ok {
		switch idv.Kind() {
		case exactjson.KindString:
			m.id, m.hasID = ID{idv}, true
		case exactjson.KindNumber:
			n, _ := idv.AsNumber()
			if !n.IsInteger() || strings.ContainsAny(n.String(), ".eE") {
				return m, protocolError(CodeInvalidRequest, "Request id must be a string or an integer", exactjson.Value{})
			}
			m.id, m.hasID = ID{idv}, true
		default:
			return m, protocolError(CodeInvalidRequest, "Request id must be a string or an integer", exactjson.Value{})
		}
	}
	if jv, ok := v.Get("jsonrpc"); !ok || !isString(jv, "2.0") {
		return m, protocolError(CodeInvalidRequest, `Member "jsonrpc" must be "2.0"`, exactjson.Value{})
	}
	mv, ok := v.Get("method")
	if !ok {
		if v.Has("result") || v.Has("error") {
			return m, protocolError(CodeInvalidRequest, "Responses are not accepted by this server", exactjson.Value{})
		}
		return m, protocolError(CodeInvalidRequest, `Member "method" is required`, exactjson.Value{})
	}
	method, ok := mv.AsString()
	if !ok || method == "" {
		return m, protocolError(CodeInvalidRequest, `Member "method" must be a non-empty string`, exactjson.Value{})
	}
	m.method = method
	if pv, ok := v.Get("params"); ok {
		if pv.Kind() != exactjson.KindObject {
			return m, protocolError(CodeInvalidParams, `Member "params" must be an object`, exactjson.Value{})
		}
		m.params = pv
	}
	m.isNotify = !m.hasID
	return m, nil
}

func isString(v exactjson.Value, want string) bool {
	s, ok := v.AsString()
	return ok && s == want
}

// responseBytes returns the JSON-RPC success response of rep: the one its
// encoder built around the result when it did, else a new one.
func responseBytes(rep reply) []byte {
	if rep.wire != nil {
		return rep.wire
	}
	return jsonrpc.AppendResponse(make([]byte, 0, len(rep.result)+48), rep.id.v, rep.result)
}

// appendErrorResponse appends a JSON-RPC error response; an id that could not
// be read is written as null, as JSON-RPC 2.0 requires.
func appendErrorResponse(dst []byte, id ID, e *Error) []byte {
	return jsonrpc.AppendError(dst, id.v, int64(e.Code), e.Message, e.Data)
}
