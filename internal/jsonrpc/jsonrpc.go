// Package jsonrpc is Weft's one JSON-RPC 2.0 codec, shared by the server
// (package weft), the MCP client (package client) and the gateway's upstream
// connections: request, notification and response encoding, the routing
// key of ids and progress tokens, line reading for stdio and SSE, and the
// table of requests in flight.
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

// IDKey is the routing key of a JSON-RPC id or progress token: a number in
// canonical form (5, 5.0 and 5E0 are one id), a string as its JSON (so that
// 5 and "5" stay distinct); "" for any other value, which is no id.
func IDKey(v exactjson.Value) string {
	switch v.Kind() {
	case exactjson.KindNumber:
		n, _ := v.AsNumber()
		if i, ok := n.Int64(); ok {
			return strconv.FormatInt(i, 10)
		}
		return n.Canonical()
	case exactjson.KindString:
		b, err := exactjson.AppendJSON(nil, v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	return ""
}

// AppendResponse appends the success response to request id whose result
// is the JSON in result; an id that is not a string or number is written as
// null.
func AppendResponse(dst []byte, id exactjson.Value, result []byte) []byte {
	dst = AppendResponsePrefix(dst, id)
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendResponsePrefix appends a success response up to its result, for an
// encoder that writes the result in place.
func AppendResponsePrefix(dst []byte, id exactjson.Value) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	return append(dst, `,"result":`...)
}

// AppendError appends the error response to request id (null when it could
// not be read, as JSON-RPC 2.0 requires); data is left out when it is JSON
// null (the zero Value) or does not encode.
func AppendError(dst []byte, id exactjson.Value, code int64, message string, data exactjson.Value) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, code, 10)
	dst = append(dst, `,"message":`...)
	dst, _ = exactjson.AppendJSON(dst, exactjson.String(message))
	if !data.IsNull() {
		if b, err := exactjson.AppendJSON(nil, data); err == nil {
			dst = append(dst, `,"data":`...)
			dst = append(dst, b...)
		}
	}
	return append(dst, "}}"...)
}

func appendID(dst []byte, id exactjson.Value) []byte {
	if k := id.Kind(); k != exactjson.KindString && k != exactjson.KindNumber {
		return append(dst, "null"...)
	}
	b, err := exactjson.AppendJSON(dst, id)
	if err != nil {
		return append(dst, "null"...)
	}
	return b
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
	b, err := exactjson.Encode(result, exactjson.MaxInputBytesCeiling)
	if err != nil {
		return nil, err
	}
	return AppendResponse(make([]byte, 0, len(b)+48), id, b), nil
}

// EncodeError returns the compact JSON of an error response to request id
// (see [AppendError]).
func EncodeError(id exactjson.Value, code int, message string, data exactjson.Value) ([]byte, error) {
	return AppendError(nil, id, int64(code), message, data), nil
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
