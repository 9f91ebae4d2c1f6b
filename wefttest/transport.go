package wefttest

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"sync"

	"github.com/weftmcp/weft/exactjson"
)

// responseLimits bound the JSON the client accepts from the server: the
// largest response a weft server can be configured to send.
var responseLimits = exactjson.Limits{
	MaxInputBytes:  exactjson.MaxInputBytesCeiling,
	MaxStringBytes: exactjson.MaxStringBytesCeiling,
}

// recorder is the in-process http.ResponseWriter and http.Flusher handed to
// the server. It captures the status and headers, and either buffers a JSON
// body or parses SSE events as they are written.
type recorder struct {
	hdr    http.Header // the live map the handler mutates; only its goroutine touches it
	onNote func(Notification)

	mu      sync.Mutex
	snap    http.Header // headers as they were when the status was written
	status  int
	sse     bool
	body    []byte            // JSON body, or not yet consumed SSE bytes
	data    [][]byte          // data lines of the SSE event being read
	msgs    []exactjson.Value // SSE messages in order
	err     error             // first malformed SSE event
	closed  bool              // Call returned: no more callbacks
	aborted any               // the handler panicked with this value
}

func newRecorder(onNote func(Notification)) *recorder {
	return &recorder{hdr: http.Header{}, onNote: onNote}
}

// Header implements http.ResponseWriter.
func (r *recorder) Header() http.Header { return r.hdr }

// WriteHeader implements http.ResponseWriter.
func (r *recorder) WriteHeader(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writeHeaderLocked(code)
}

func (r *recorder) writeHeaderLocked(code int) {
	if r.status != 0 || (code >= 100 && code < 200 && code != http.StatusSwitchingProtocols) {
		return // superfluous, or an informational status
	}
	r.status = code
	r.snap = r.hdr.Clone()
	mt, _, _ := mime.ParseMediaType(r.snap.Get("Content-Type"))
	r.sse = mt == "text/event-stream"
}

// Write implements http.ResponseWriter.
func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	if r.status == 0 {
		r.writeHeaderLocked(http.StatusOK)
	}
	r.body = append(r.body, p...)
	var notes []Notification
	if r.sse {
		notes = r.parseEvents()
	}
	closed := r.closed
	r.mu.Unlock()
	if r.onNote != nil && !closed {
		for _, n := range notes {
			r.onNote(n)
		}
	}
	return len(p), nil
}

// Flush implements http.Flusher. Everything written is already visible.
func (r *recorder) Flush() {
	r.mu.Lock()
	if r.status == 0 {
		r.writeHeaderLocked(http.StatusOK)
	}
	r.mu.Unlock()
}

// parseEvents consumes the complete lines of r.body as an SSE stream
// (data fields, comments, blank-line dispatch) and returns the
// notifications among the dispatched events. Caller holds r.mu.
func (r *recorder) parseEvents() []Notification {
	var notes []Notification
	for {
		i := bytes.IndexByte(r.body, '\n')
		if i < 0 {
			return notes
		}
		line := bytes.TrimSuffix(r.body[:i], []byte{'\r'})
		r.body = r.body[i+1:]
		switch {
		case len(line) == 0:
			if r.data == nil {
				continue
			}
			payload := bytes.Join(r.data, []byte{'\n'})
			r.data = nil
			v, err := exactjson.Parse(payload, responseLimits)
			if err != nil {
				if r.err == nil {
					r.err = fmt.Errorf("%w: SSE event data is not JSON: %v", ErrProtocol, err)
				}
				continue
			}
			r.msgs = append(r.msgs, v)
			if n, ok := asNotification(v); ok {
				notes = append(notes, n)
			}
		case line[0] == ':':
			// A comment (keep-alive).
		default:
			field, value, _ := bytes.Cut(line, []byte{':'})
			value = bytes.TrimPrefix(value, []byte{' '})
			if string(field) == "data" {
				r.data = append(r.data, bytes.Clone(value))
			}
			// event, id and retry carry nothing for MCP 2026-07-28.
		}
	}
}

// asNotification reports whether v is a JSON-RPC notification (a method and
// no id).
func asNotification(v exactjson.Value) (Notification, bool) {
	mv, ok := v.Get("method")
	method, isStr := mv.AsString()
	if !ok || !isStr || v.Has("id") {
		return Notification{}, false
	}
	p, _ := v.Get("params")
	return Notification{Method: method, Params: p}, true
}

// close stops callbacks: Call has returned.
func (r *recorder) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// partial returns what was received so far, for a cancelled call.
func (r *recorder) partial(id exactjson.Value) *Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	resp := &Response{ID: id, HTTPStatus: r.status, Header: r.snap, Streamed: r.sse}
	for _, m := range r.msgs {
		if n, ok := asNotification(m); ok {
			resp.Notifications = append(resp.Notifications, n)
		}
	}
	return resp
}

// response decodes the finished exchange. wantID is the id the response
// must echo (null when unknown); notification is true when the request was a
// notification, which gets no JSON-RPC response.
func (r *recorder) response(wantID exactjson.Value, notification bool) (*Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborted != nil {
		return nil, fmt.Errorf("wefttest: the handler panicked: %v", r.aborted)
	}
	if r.status == 0 {
		r.writeHeaderLocked(http.StatusOK) // what net/http sends for an empty handler
	}
	resp := &Response{ID: wantID, HTTPStatus: r.status, Header: r.snap, Streamed: r.sse}
	var msgs []exactjson.Value
	if r.sse {
		if r.err != nil {
			return resp, r.err
		}
		if r.data != nil || len(bytes.TrimSpace(r.body)) > 0 {
			return resp, fmt.Errorf("%w: the SSE stream ended inside an event", ErrProtocol)
		}
		msgs = r.msgs
	} else if len(bytes.TrimSpace(r.body)) > 0 {
		if mt, _, _ := mime.ParseMediaType(r.snap.Get("Content-Type")); mt != "application/json" {
			return resp, fmt.Errorf("%w: response Content-Type is %q, want application/json or text/event-stream", ErrProtocol, r.snap.Get("Content-Type"))
		}
		v, err := exactjson.Parse(r.body, responseLimits)
		if err != nil {
			return resp, fmt.Errorf("%w: response body is not JSON: %v", ErrProtocol, err)
		}
		if _, ok := asNotification(v); ok {
			return resp, fmt.Errorf("%w: a JSON response body holds a notification", ErrProtocol)
		}
		msgs = []exactjson.Value{v}
	}

	var final exactjson.Value
	haveFinal := false
	for _, m := range msgs {
		if haveFinal {
			return resp, fmt.Errorf("%w: a message follows the JSON-RPC response", ErrProtocol)
		}
		if m.Kind() != exactjson.KindObject {
			return resp, fmt.Errorf("%w: a message is not a JSON object", ErrProtocol)
		}
		if n, ok := asNotification(m); ok {
			resp.Notifications = append(resp.Notifications, n)
			continue
		}
		if m.Has("method") {
			return resp, fmt.Errorf("%w: the server sent a JSON-RPC request (%s)", ErrProtocol, m)
		}
		final, haveFinal = m, true
	}
	if !haveFinal {
		if notification {
			return resp, nil
		}
		return resp, fmt.Errorf("%w: no JSON-RPC response (HTTP %d)", ErrProtocol, r.status)
	}
	return resp, decodeEnvelope(resp, final, wantID)
}

// decodeEnvelope checks a JSON-RPC response object and fills resp.Result or
// resp.Error.
func decodeEnvelope(resp *Response, m, wantID exactjson.Value) error {
	if v, ok := m.Get("jsonrpc"); !ok || !isStr(v, "2.0") {
		return fmt.Errorf(`%w: response lacks "jsonrpc": "2.0"`, ErrProtocol)
	}
	result, hasResult := m.Get("result")
	errv, hasError := m.Get("error")
	if hasResult == hasError {
		return fmt.Errorf("%w: a response needs exactly one of result and error", ErrProtocol)
	}
	id, hasID := m.Get("id")
	if !hasID {
		return fmt.Errorf("%w: response has no id", ErrProtocol)
	}
	// An error response may carry a null id when the request's id could not
	// be read.
	if !(hasError && id.Kind() == exactjson.KindNull) && wantID.Kind() != exactjson.KindNull && !sameID(id, wantID) {
		return fmt.Errorf("%w: response id %s does not echo the request id %s", ErrProtocol, id, wantID)
	}
	if hasResult {
		if result.Kind() != exactjson.KindObject {
			return fmt.Errorf("%w: result is not an object", ErrProtocol)
		}
		resp.Result = result
		return nil
	}
	cv, _ := errv.Get("code")
	n, isNum := cv.AsNumber()
	code, isInt := n.Int64()
	mv, _ := errv.Get("message")
	msg, isMsg := mv.AsString()
	if !isNum || !isInt || !isMsg {
		return fmt.Errorf("%w: error object needs an integer code and a string message: %s", ErrProtocol, errv)
	}
	data, _ := errv.Get("data")
	resp.Error = &RPCError{Code: int(code), Message: msg, Data: data, HTTPStatus: resp.HTTPStatus, Header: resp.Header}
	return nil
}

// sameID compares ids by kind and exact spelling.
func sameID(a, b exactjson.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case exactjson.KindString:
		x, _ := a.AsString()
		y, _ := b.AsString()
		return x == y
	case exactjson.KindNumber:
		x, _ := a.AsNumber()
		y, _ := b.AsNumber()
		return x.String() == y.String()
	}
	return false
}

func isStr(v exactjson.Value, want string) bool {
	s, ok := v.AsString()
	return ok && s == want
}
