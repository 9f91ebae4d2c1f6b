// Package jsonrpc holds the JSON-RPC wire details shared by the MCP client
// (package client) and the gateway's upstream connections: request and
// notification encoding, the routing key of ids and progress tokens, line
// reading for stdio and SSE, and the table of requests in flight.
package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/weftmcp/weft/exactjson"
)

// ErrLineTooLong is returned by [ReadLine] for a line over its bound.
var ErrLineTooLong = errors.New("line too long")

// IDKey is the routing key of a JSON-RPC id or progress token: its compact
// JSON, so that 5 and "5" stay distinct.
func IDKey(v exactjson.Value) string {
	if n, ok := v.AsNumber(); ok {
		if i, ok := n.Int64(); ok {
			return strconv.FormatInt(i, 10)
		}
	}
	b, err := exactjson.Encode(v, 0)
	if err != nil {
		return v.String()
	}
	return string(b)
}

// EncodeRequest returns the compact JSON of a request; params that are not
// an object are sent as {}.
func EncodeRequest(id int64, method string, params exactjson.Value) ([]byte, error) {
	if params.Kind() != exactjson.KindObject {
		params = exactjson.Object()
	}
	return exactjson.Encode(exactjson.Object(
		exactjson.Field("jsonrpc", exactjson.String("2.0")),
		exactjson.Field("id", exactjson.Int(id)),
		exactjson.Field("method", exactjson.String(method)),
		exactjson.Field("params", params)), exactjson.MaxInputBytesCeiling)
}

// EncodeNotification returns the compact JSON of a notification; params
// that are not an object are left out.
func EncodeNotification(method string, params exactjson.Value) ([]byte, error) {
	m := []exactjson.Member{
		exactjson.Field("jsonrpc", exactjson.String("2.0")),
		exactjson.Field("method", exactjson.String(method))}
	if params.Kind() == exactjson.KindObject {
		m = append(m, exactjson.Field("params", params))
	}
	return exactjson.Encode(exactjson.Object(m...), exactjson.MaxInputBytesCeiling)
}

// EncodeResult returns the compact JSON of a success response to request
// id; a result that is not an object is sent as {}.
func EncodeResult(id, result exactjson.Value) ([]byte, error) {
	if result.Kind() != exactjson.KindObject {
		result = exactjson.Object()
	}
	return exactjson.Encode(exactjson.Object(
		exactjson.Field("jsonrpc", exactjson.String("2.0")),
		exactjson.Field("id", id),
		exactjson.Field("result", result)), exactjson.MaxInputBytesCeiling)
}

// EncodeError returns the compact JSON of an error response to request id;
// data is left out when it is JSON null (the zero Value).
func EncodeError(id exactjson.Value, code int, message string, data exactjson.Value) ([]byte, error) {
	e := []exactjson.Member{
		exactjson.Field("code", exactjson.Int(int64(code))),
		exactjson.Field("message", exactjson.String(message))}
	if !data.IsNull() {
		e = append(e, exactjson.Field("data", data))
	}
	return exactjson.Encode(exactjson.Object(
		exactjson.Field("jsonrpc", exactjson.String("2.0")),
		exactjson.Field("id", id),
		exactjson.Field("error", exactjson.Object(e...))), exactjson.MaxInputBytesCeiling)
}

// Cancelled returns notifications/cancelled for request id.
func Cancelled(id int64, reason string) ([]byte, error) {
	return EncodeNotification("notifications/cancelled", exactjson.Object(
		exactjson.Field("requestId", exactjson.Int(id)),
		exactjson.Field("reason", exactjson.String(reason))))
}

// ReadLine reads one line (LF, CRLF) without its terminator. A line longer
// than max bytes is an error wrapping [ErrLineTooLong]; at EOF the last,
// unterminated line is returned with io.EOF.
func ReadLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max+2 {
			return nil, fmt.Errorf("%w: a line exceeds %d bytes", ErrLineTooLong, max)
		}
		buf = append(buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if len(buf) > max {
			return nil, fmt.Errorf("%w: a line exceeds %d bytes", ErrLineTooLong, max)
		}
		return buf, err
	}
}

// Calls are the requests in flight on one connection, by id key and by
// progress token key ([IDKey]). It is not safe for concurrent use: its
// owner guards it with the lock that guards the connection's state. The
// zero value is empty and ready to use.
type Calls[C comparable] struct {
	byID    map[string]C
	byToken map[string]C
}

// Add registers c under id and, when token is not "", under the progress
// token. It reports false, registering nothing, when id is in flight.
func (t *Calls[C]) Add(id, token string, c C) bool {
	if _, dup := t.byID[id]; dup {
		return false
	}
	if t.byID == nil {
		t.byID, t.byToken = map[string]C{}, map[string]C{}
	}
	t.byID[id] = c
	if token != "" {
		t.byToken[token] = c
	}
	return true
}

// Remove unregisters c from id and token, if they still name it.
func (t *Calls[C]) Remove(id, token string, c C) {
	if t.byID[id] == c {
		delete(t.byID, id)
	}
	if token != "" && t.byToken[token] == c {
		delete(t.byToken, token)
	}
}

// Take unregisters and returns the call of id (a response arrived) with
// its progress tokens.
func (t *Calls[C]) Take(id string) (C, bool) {
	c, ok := t.byID[id]
	if !ok {
		return c, false
	}
	delete(t.byID, id)
	for k, tc := range t.byToken {
		if tc == c {
			delete(t.byToken, k)
		}
	}
	return c, true
}

// ByID returns the call of id.
func (t *Calls[C]) ByID(id string) (C, bool) {
	c, ok := t.byID[id]
	return c, ok
}

// ByToken returns the call of a progress token.
func (t *Calls[C]) ByToken(token string) (C, bool) {
	c, ok := t.byToken[token]
	return c, ok
}

// All yields the calls in flight.
func (t *Calls[C]) All() iter.Seq[C] {
	return func(yield func(C) bool) {
		for _, c := range t.byID {
			if !yield(c) {
				return
			}
		}
	}
}

// Len is the number of calls in flight.
func (t *Calls[C]) Len() int { return len(t.byID) }
