package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/jsonrpc"
)

// httpWire speaks the Streamable HTTP transport of the 2025 revisions: a
// session (Mcp-Session-Id) opened by initialize, every message POSTed, each
// request answered by JSON or by an SSE stream that may carry the server's
// requests for the call before its response, and the session's GET stream
// for what belongs to no call (see listen).
type httpWire struct {
	name    string
	url     string
	hc      *http.Client
	headers func(ctx context.Context, h http.Header) error
	nextID  atomic.Int64

	mu        sync.Mutex
	sessionID string
	version   string
	closed    bool
	doneCh    chan struct{}
	unrouted  func(method string, params exactjson.Value)
	// outside answers the server requests of no call (outside.go).
	outside outsideFunc
}

func newHTTPWire(name, url string, hc *http.Client, headers func(context.Context, http.Header) error, unrouted func(string, exactjson.Value)) *httpWire {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &httpWire{name: name, url: url, hc: hc, headers: headers, doneCh: make(chan struct{}), unrouted: unrouted}
}

// errSessionExpired marks a request the upstream refused for an unknown
// session: it was not run.
var errSessionExpired = errors.New("the session expired")

func (w *httpWire) done() <-chan struct{} { return w.doneCh }

func (w *httpWire) err() error {
	return fmt.Errorf("%w: upstream %q: the session ended", errUpstreamClosed, w.name)
}

func (w *httpWire) setSession(id, version string) {
	w.mu.Lock()
	if id != "" {
		w.sessionID = id
	}
	w.version = version
	w.mu.Unlock()
}

func (w *httpWire) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	w.mu.Lock()
	sid, version := w.sessionID, w.version
	w.mu.Unlock()
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if w.headers != nil {
		if err := w.headers(ctx, req.Header); err != nil {
			return nil, err
		}
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("gateway: upstream %q: %w", w.name, err)
	}
	if sid != "" {
		if why, ok := sessionUnknown(resp); ok {
			w.expire()
			return nil, fmt.Errorf("%w: %w: upstream %q (%s)", errUpstreamClosed, errSessionExpired, w.name, why)
		}
	}
	return resp, nil
}

// maxSessionErrorBody bounds what is read of an HTTP 400 answer to tell
// whether it refuses the session.
const maxSessionErrorBody = 4096

// sessionUnknown reports whether resp, the answer to a request carrying a
// session id, says the server does not know the session: HTTP 404, as the
// spec asks, or HTTP 400 whose body speaks of the session, as the
// TypeScript SDK's servers and the many built on them answer ("Bad
// Request: No valid session ID provided"). It closes the body of such an
// answer and leaves any other readable from the start; why quotes it.
func sessionUnknown(resp *http.Response) (why string, ok bool) {
	switch resp.StatusCode {
	case http.StatusNotFound:
		resp.Body.Close()
		return "HTTP 404", true
	case http.StatusBadRequest:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxSessionErrorBody))
		if bytes.Contains(bytes.ToLower(b), []byte("session")) {
			resp.Body.Close()
			return "HTTP 400 " + snippet(b), true
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	}
	return "", false
}

func (w *httpWire) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.doneCh)
	}
}

func (w *httpWire) notify(ctx context.Context, method string, params exactjson.Value) error {
	b, err := jsonrpc.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	return w.postNoReply(ctx, b)
}

// postNoReply posts a notification or a response (202 expected).
func (w *httpWire) postNoReply(ctx context.Context, b []byte) error {
	resp, err := w.post(ctx, b)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("gateway: upstream %q answered HTTP %s to a notification", w.name, resp.Status)
	}
	return nil
}

func (w *httpWire) call(ctx context.Context, method string, params exactjson.Value, s *sink) (exactjson.Value, error) {
	id := w.nextID.Add(1)
	b, err := encodeCall(id, method, params, s)
	if err != nil {
		return exactjson.Value{}, err
	}
	res, err := w.roundTrip(ctx, id, method, b, s)
	if err != nil && ctx.Err() != nil && method != "initialize" {
		// Tell the upstream; the stream we closed does not cancel in 2025.
		n, _ := jsonrpc.Cancelled(id, context.Cause(ctx).Error())
		go func() { _ = w.postNoReply(context.WithoutCancel(ctx), n) }()
		return exactjson.Value{}, ctx.Err()
	}
	return res, err
}

func (w *httpWire) roundTrip(ctx context.Context, id int64, method string, body []byte, s *sink) (exactjson.Value, error) {
	resp, err := w.post(ctx, body)
	if err != nil {
		return exactjson.Value{}, err
	}
	defer resp.Body.Close()
	if method == "initialize" {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			w.mu.Lock()
			w.sessionID = sid
			w.mu.Unlock()
		}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxLine+1))
		if err != nil {
			return exactjson.Value{}, fmt.Errorf("gateway: upstream %q: reading the response to %s: %w", w.name, method, err)
		}
		m, perr := parseMsg(data)
		if perr != nil || m.method != "" {
			if resp.StatusCode/100 != 2 {
				return exactjson.Value{}, fmt.Errorf("gateway: upstream %q answered %s with HTTP %s: %s", w.name, method, resp.Status, snippet(data))
			}
			return exactjson.Value{}, fmt.Errorf("gateway: upstream %q answered %s with something that is not a JSON-RPC response: %s", w.name, method, snippet(data))
		}
		return w.result(m, method)
	case mt == "text/event-stream" && resp.StatusCode/100 == 2:
		return w.readSSE(ctx, resp.Body, id, method, s)
	default:
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return exactjson.Value{}, fmt.Errorf("gateway: upstream %q answered %s with HTTP %s (%s): %s", w.name, method, resp.Status, resp.Header.Get("Content-Type"), snippet(data))
	}
}

func (w *httpWire) result(m msg, method string) (exactjson.Value, error) {
	if m.isError {
		return exactjson.Value{}, rpcError(m.errorObj)
	}
	if m.result.Kind() != exactjson.KindObject {
		return exactjson.Value{}, fmt.Errorf("gateway: upstream %q: the result of %s is not an object", w.name, method)
	}
	return m.result, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// readSSE reads the call's event stream: server requests are answered
// (their answers POSTed), notifications go to the sink, the response ends it.
func (w *httpWire) readSSE(ctx context.Context, body io.Reader, id int64, method string, s *sink) (exactjson.Value, error) {
	sr := jsonrpc.NewSSEReader(body, maxLine)
	var wg sync.WaitGroup
	defer wg.Wait()
	unanswered := make(chan struct{}, client.MaxServerRequests) // server requests being answered
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for {
		_, data, terminated, err := sr.Next()
		switch {
		case err == nil && (!terminated || len(data) == 0):
			continue // empty, or the stream ended inside it: the next read reports EOF
		case err != nil && ctx.Err() != nil:
			return exactjson.Value{}, ctx.Err()
		case errors.Is(err, io.EOF):
			return exactjson.Value{}, fmt.Errorf("%w: upstream %q closed the stream of %s before its response", errUpstreamClosed, w.name, method)
		case errors.Is(err, jsonrpc.ErrEventTooLarge):
			return exactjson.Value{}, fmt.Errorf("gateway: upstream %q: an event exceeds %d bytes", w.name, maxLine)
		case err != nil:
			return exactjson.Value{}, fmt.Errorf("gateway: upstream %q: reading the stream of %s: %w", w.name, method, err)
		}
		m, perr := parseMsg(data)
		if perr != nil {
			return exactjson.Value{}, fmt.Errorf("gateway: upstream %q sent an event that is not a JSON-RPC message on the stream of %s: %v", w.name, method, perr)
		}
		switch {
		case m.method == "":
			if n, ok := m.id.AsNumber(); ok {
				if i, ok := n.Int64(); ok && i == id {
					return w.result(m, method)
				}
			}
		case m.hasID:
			select {
			case unanswered <- struct{}{}:
			default:
				return exactjson.Value{}, fmt.Errorf("gateway: upstream %q has more than %d requests of its own unanswered during %s: %w",
					w.name, client.MaxServerRequests, method, client.ErrProtocol)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-unanswered }()
				_ = w.postNoReply(ctx, answerServerRequest(ctx, m, s, w.outside))
			}()
		case strings.HasSuffix(m.method, "/list_changed") || s == nil || s.notify == nil:
			if w.unrouted != nil {
				w.unrouted(m.method, m.params)
			}
		default:
			s.notify(m.method, m.params)
		}
	}
}

// close ends the session (DELETE, best effort).
func (w *httpWire) close() error {
	w.mu.Lock()
	sid := w.sessionID
	already := w.closed
	w.mu.Unlock()
	w.expire()
	if sid != "" && !already {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, w.url, nil)
		if err == nil {
			req.Header.Set("Mcp-Session-Id", sid)
			if w.headers != nil {
				_ = w.headers(ctx, req.Header)
			}
			if resp, err := w.hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	w.hc.CloseIdleConnections()
	return nil
}

// listen holds the session's GET stream open, on which a 2025 server sends
// what belongs to no call (list changes, resource updates; its requests get
// an error, its pings an answer), until the session ends. A server without
// one (405) is left alone; a broken stream is reopened after a pause.
// opened is called each time the stream is (re)established: what changed
// while none was open was sent to nobody, so the lists are read again.
func (w *httpWire) listen(log func(msg string, args ...any), opened func()) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-w.doneCh
		cancel()
	}()
	pause := time.Second
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		w.mu.Lock()
		sid, version := w.sessionID, w.version
		w.mu.Unlock()
		if sid == "" {
			return // a server without sessions has no GET stream
		}
		req.Header.Set("Mcp-Session-Id", sid)
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		if w.headers != nil {
			if err := w.headers(ctx, req.Header); err != nil {
				return
			}
		}
		resp, err := w.hc.Do(req)
		if err == nil {
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			why, unknown := sessionUnknown(resp)
			switch {
			case resp.StatusCode == http.StatusMethodNotAllowed:
				resp.Body.Close()
				return
			case unknown:
				// The server forgot the session (it restarted): the next
				// call, or the refresh opened asks for, opens another.
				log("gateway: the upstream no longer knows the session of its GET stream; opening another", "upstream", w.name, "answer", why)
				w.expire()
				if opened != nil {
					opened()
				}
				return
			case resp.StatusCode/100 == 2 && mt == "text/event-stream":
				pause = time.Second
				if opened != nil {
					opened()
				}
				_, err = w.readSSE(ctx, resp.Body, -1, "the session's GET stream", nil)
			default:
				err = fmt.Errorf("HTTP %s", resp.Status)
			}
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return
		}
		log("gateway: the upstream's GET stream ended; reopening", "upstream", w.name, "err", err, "in", pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Minute)
	}
}
