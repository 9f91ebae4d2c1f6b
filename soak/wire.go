// Package soak holds the bounded soak test of issue #8 (item 5): two
// `weft serve` instances on a throwaway PostgreSQL cluster of their own
// under a couple of hundred concurrent loopback clients, while that cluster
// is restarted once and the instances are sent SIGTERM and SIGKILL. Run it
// with `make soak` (it is skipped unless WEFT_SOAK is set); each run writes
// its report to a file it names in the log, and docs/reliability.md
// describes the soak and a recorded run.
//
// This file is the client side's independent view of the wire: a
// RoundTripper that spreads requests over the instances like a load
// balancer and checks every response it carries (JSON or SSE) as JSON-RPC,
// classifying each exchange as ok, a JSON-RPC error, a clean refusal, a
// client cancellation, a cut response, or malformed.
package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// Class is the outcome class of one HTTP exchange.
type Class string

// The outcome classes.
const (
	ClassOK        Class = "ok"        // a JSON-RPC result
	ClassRPCError  Class = "rpc-error" // a well-formed JSON-RPC error other than a refusal
	ClassRefused   Class = "refused"   // not accepted: connection refused, 503, 429
	ClassCancelled Class = "cancelled" // the client cancelled (or closed a listen stream)
	ClassCut       Class = "cut"       // the response started, then the connection broke before it ended
	ClassLost      Class = "no-answer" // the connection broke before any response byte
	ClassMalformed Class = "malformed" // not valid JSON-RPC, wrong id, missing resultType...
)

// Event is one classified exchange that was not a plain success.
type Event struct {
	At     time.Time
	Method string
	Class  Class
	Detail string
}

// Stats collects the classified exchanges of a run.
type Stats struct {
	mu        sync.Mutex
	counts    map[[3]string]int64 // method, class, detail
	events    []Event
	samples   []string // malformed responses (at most 20)
	notes     map[string]int64
	requests  atomic.Int64
	retried   atomic.Int64
	maxEvents int
}

// NewStats returns empty statistics.
func NewStats() *Stats {
	return &Stats{counts: map[[3]string]int64{}, notes: map[string]int64{}, maxEvents: 1_000_000}
}

func (s *Stats) record(method string, c Class, detail string, sample []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[[3]string{method, string(c), detail}]++
	if c != ClassOK && len(s.events) < s.maxEvents {
		s.events = append(s.events, Event{At: time.Now(), Method: method, Class: c, Detail: detail})
	}
	if c == ClassMalformed && len(s.samples) < 20 {
		if len(sample) > 600 {
			sample = append(sample[:600:600], "..."...)
		}
		s.samples = append(s.samples, fmt.Sprintf("%s: %s: %q", method, detail, sample))
	}
}

func (s *Stats) note(what string) {
	s.mu.Lock()
	s.notes[what]++
	s.mu.Unlock()
}

// Count is one row of the counters.
type Count struct {
	Method, Class, Detail string
	N                     int64
}

// Counts returns the counters sorted by method, class and detail.
func (s *Stats) Counts() []Count {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Count, 0, len(s.counts))
	for k, n := range s.counts {
		out = append(out, Count{k[0], k[1], k[2], n})
	}
	slices.SortFunc(out, func(a, b Count) int {
		return strings.Compare(a.Method+"\x00"+a.Class+"\x00"+a.Detail, b.Method+"\x00"+b.Class+"\x00"+b.Detail)
	})
	return out
}

// Events returns the non-ok events.
func (s *Stats) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Samples returns up to 20 malformed responses.
func (s *Stats) Samples() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// Notes returns the counters of notifications seen on streams.
func (s *Stats) Notes() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.notes))
	for k, v := range s.notes {
		out[k] = v
	}
	return out
}

// Requests returns how many HTTP exchanges were sent (retries included).
func (s *Stats) Requests() int64 { return s.requests.Load() }

// Retried returns how many requests were refused by a down instance and
// sent to the other one.
func (s *Stats) Retried() int64 { return s.retried.Load() }

// Balancer picks an instance for each request, avoiding none: a down
// instance shows up as a refused connection, which is retried once on the
// other instance (the request never reached a server, so that is safe).
type Balancer struct {
	Addrs []string // host:port of each instance
}

// Checker is the checking, balancing RoundTripper.
type Checker struct {
	Base  http.RoundTripper
	Stats *Stats
	LB    *Balancer
	// Fixed, when set, sends every request to this address (no balancing).
	Fixed string
}

// RoundTrip implements http.RoundTripper.
func (c *Checker) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	method, id := requestInfo(body, req.Header)
	addrs := c.order()
	var lastErr error
	for i, addr := range addrs {
		r := req.Clone(req.Context())
		u := *req.URL
		u.Host = addr
		r.URL, r.Host = &u, addr
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
		c.Stats.requests.Add(1)
		resp, err := c.Base.RoundTrip(r)
		if err == nil {
			resp.Body = &checkedBody{rc: resp.Body, stats: c.Stats, ctx: req.Context(), method: method, id: id,
				status: resp.StatusCode, sse: isSSE(resp.Header)}
			if cb := resp.Body.(*checkedBody); !cb.sse {
				cb.contentType = resp.Header.Get("Content-Type")
			}
			return resp, nil
		}
		lastErr = err
		switch {
		case req.Context().Err() != nil:
			c.Stats.record(method, ClassCancelled, "cancelled before the response", nil)
			return nil, err
		case errors.Is(err, syscall.ECONNREFUSED):
			if i+1 < len(addrs) {
				c.Stats.record(method, ClassRefused, "connection refused (sent to the other instance)", nil)
				c.Stats.retried.Add(1)
				continue
			}
			c.Stats.record(method, ClassRefused, "connection refused", nil)
		default:
			c.Stats.record(method, ClassLost, transportDetail(err), nil)
		}
		return nil, err
	}
	return nil, lastErr
}

func (c *Checker) order() []string {
	if c.Fixed != "" {
		return []string{c.Fixed}
	}
	a := slices.Clone(c.LB.Addrs)
	rand.Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
	return a
}

func transportDetail(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before the response headers"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset before the response headers"
	case errors.Is(err, context.DeadlineExceeded):
		return "client deadline before the response headers"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return "transport: " + s
}

func isSSE(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// requestInfo reads the method and id of a request body (the client
// package sends integer ids).
func requestInfo(body []byte, h http.Header) (string, string) {
	v, err := exactjson.Parse(body, exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling})
	if err != nil {
		return h.Get("Mcp-Method"), ""
	}
	m, _ := v.Get("method")
	method, _ := m.AsString()
	if name, ok := v.Get("params"); ok && method == "tools/call" {
		if n, ok := name.Get("name"); ok {
			if s, ok := n.AsString(); ok {
				method += " " + s
			}
		}
	}
	idv, _ := v.Get("id")
	id, _ := exactjson.Encode(idv, 0)
	return method, string(id)
}

// checkedBody validates the response as the client reads it.
type checkedBody struct {
	rc          io.ReadCloser
	stats       *Stats
	ctx         context.Context
	method, id  string
	status      int
	sse         bool
	contentType string

	mu       sync.Mutex
	buf      []byte // JSON body, or the pending SSE line
	data     []byte // SSE event data
	hasData  bool
	response bool // SSE: the response frame arrived
	done     bool
}

const maxChecked = 16 << 20

func (b *checkedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return n, err
	}
	if n > 0 {
		if b.sse {
			b.feedSSE(p[:n])
		} else if len(b.buf)+n <= maxChecked {
			b.buf = append(b.buf, p[:n]...)
		}
	}
	switch {
	case b.done:
	case errors.Is(err, io.EOF):
		b.finish(true, nil)
	case err != nil:
		b.finish(false, err)
	}
	return n, err
}

func (b *checkedBody) Close() error {
	b.mu.Lock()
	if !b.done {
		b.finish(false, nil)
	}
	b.mu.Unlock()
	return b.rc.Close()
}

// feedSSE splits event-stream bytes into lines and events. Caller holds mu.
func (b *checkedBody) feedSSE(p []byte) {
	b.buf = append(b.buf, p...)
	for {
		i := bytes.IndexByte(b.buf, '\n')
		if i < 0 {
			if len(b.buf) > maxChecked {
				b.malformed("an SSE line exceeds 16 MiB", nil)
			}
			return
		}
		line := bytes.TrimSuffix(b.buf[:i], []byte("\r"))
		b.buf = b.buf[i+1:]
		switch {
		case len(line) == 0:
			if b.hasData {
				b.frame(b.data)
			}
			b.data, b.hasData = b.data[:0], false
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if b.hasData {
				b.data = append(b.data, '\n')
			}
			b.data = append(b.data, v...)
			b.hasData = true
		case bytes.HasPrefix(line, []byte("event:")), bytes.HasPrefix(line, []byte("id:")), bytes.HasPrefix(line, []byte("retry:")):
		default:
			b.malformed("not an SSE line", line)
		}
		if b.done {
			return
		}
	}
}

// frame checks one SSE event. Caller holds mu.
func (b *checkedBody) frame(data []byte) {
	if b.response {
		b.malformed("a frame after the response", data)
		return
	}
	v, err := exactjson.Parse(data, exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling})
	if err != nil {
		b.malformed("an SSE frame that is not JSON", data)
		return
	}
	if m, ok := v.Get("method"); ok {
		name, isStr := m.AsString()
		if !isStr || v.Has("id") || !isJSONRPC(v) {
			b.malformed("a malformed notification", data)
			return
		}
		b.stats.note(name)
		return
	}
	b.response = true
	b.classify(v, data)
}

func isJSONRPC(v exactjson.Value) bool {
	j, _ := v.Get("jsonrpc")
	s, ok := j.AsString()
	return ok && s == "2.0"
}

// classify checks a JSON-RPC response and records it. Caller holds mu.
func (b *checkedBody) classify(v exactjson.Value, raw []byte) {
	if v.Kind() != exactjson.KindObject || !isJSONRPC(v) {
		b.malformed(`not a JSON-RPC 2.0 object`, raw)
		return
	}
	idv, ok := v.Get("id")
	id, _ := exactjson.Encode(idv, 0)
	if !ok || string(id) != b.id {
		b.malformed(fmt.Sprintf("response id %s for request id %s", id, b.id), raw)
		return
	}
	res, hasRes := v.Get("result")
	ev, hasErr := v.Get("error")
	b.done = true
	switch {
	case hasRes == hasErr:
		b.done = false
		b.malformed("not exactly one of result and error", raw)
	case hasRes:
		rt, _ := res.Get("resultType")
		if _, isStr := rt.AsString(); res.Kind() != exactjson.KindObject || !isStr {
			b.done = false
			b.malformed("a result without a string resultType", raw)
			return
		}
		if !b.sse && b.status != http.StatusOK {
			b.done = false
			b.malformed(fmt.Sprintf("a result with HTTP %d", b.status), raw)
			return
		}
		b.stats.record(b.method, ClassOK, "", nil)
	default:
		code, _ := ev.Get("code")
		msg, _ := ev.Get("message")
		n, isNum := code.AsNumber()
		text, isStr := msg.AsString()
		c, isInt := n.Int64()
		if !isNum || !isInt || !isStr {
			b.done = false
			b.malformed("a malformed error object", raw)
			return
		}
		status := b.status
		detail := fmt.Sprintf("%d HTTP %d %s", c, status, text)
		class := ClassRPCError
		if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
			class = ClassRefused
		}
		b.stats.record(b.method, class, detail, nil)
	}
}

func (b *checkedBody) malformed(detail string, raw []byte) {
	b.done = true
	b.stats.record(b.method, ClassMalformed, detail, raw)
}

// finish classifies the exchange when the body ends (eof), breaks (err) or
// is closed early (neither). Caller holds mu.
func (b *checkedBody) finish(eof bool, err error) {
	if b.done {
		return
	}
	cancelled := b.ctx.Err() != nil
	if b.sse {
		switch {
		case b.response:
			// classified with its frame
		case cancelled:
			b.done = true
			detail := "cancelled by the client during the stream"
			if strings.HasPrefix(b.method, "subscriptions/listen") {
				detail = "listen stream closed by the client"
			}
			b.stats.record(b.method, ClassCancelled, detail, nil)
		case eof:
			b.done = true
			b.stats.record(b.method, ClassCut, "stream ended before the response", nil)
		case err != nil:
			b.done = true
			b.stats.record(b.method, ClassCut, "stream broken: "+shortErr(err), nil)
		default:
			b.done = true
			b.stats.record(b.method, ClassCancelled, "stream closed by the client before the response", nil)
		}
		b.done = true
		return
	}
	switch {
	case eof:
		mt, _, _ := mime.ParseMediaType(b.contentType)
		if mt != "application/json" {
			b.malformed(fmt.Sprintf("HTTP %d with Content-Type %q", b.status, b.contentType), b.buf)
			return
		}
		v, perr := exactjson.Parse(b.buf, exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling})
		if perr != nil {
			b.malformed("a body that is not JSON", b.buf)
			return
		}
		b.classify(v, b.buf)
	case cancelled:
		b.done = true
		b.stats.record(b.method, ClassCancelled, "cancelled by the client during the body", nil)
	case err != nil:
		b.done = true
		b.stats.record(b.method, ClassCut, "body broken: "+shortErr(err), nil)
	default:
		b.done = true
		b.stats.record(b.method, ClassCancelled, "body closed by the client before its end", nil)
	}
	b.done = true
}

func shortErr(err error) string {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}
