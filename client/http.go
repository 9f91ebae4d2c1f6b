package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/textproto"
	"sync"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/hdr"
	"github.com/weftmcp/weft/internal/jsonrpc"
)

// HTTPTransport is the Streamable HTTP transport of MCP 2026-07-28: every
// request is its own POST to the MCP endpoint, answered by one JSON
// response or by an SSE stream scoped to the request (notifications, then
// the response). Cancelling a request closes its stream.
type HTTPTransport struct {
	url        string
	hc         *http.Client
	headerFunc func(ctx context.Context, h http.Header) error
	maxMessage int

	// The 2025-11-25 era: the session the server assigned at initialize
	// (sent as Mcp-Session-Id on every later request).
	mu         sync.Mutex
	session    string
	negotiated string // the 2025-era version, sent on notifications and answers
	stopGet    context.CancelFunc
	// ended says the session was forgotten (ResetSession, Close): until
	// an initialize opens another, requests are not sent without it.
	ended bool
	// cancels are the notifications/cancelled being sent; Close waits
	// for them, so that a program exiting after a cancelled request still
	// tells the server.
	cancels sync.WaitGroup
	closing bool // under mu: Close is waiting for cancels, so none is added
	trace   WireTrace
}

// SetProtocolVersion records the 2025-era revision initialize negotiated:
// it is sent as MCP-Protocol-Version on the session's later requests
// (unless their _meta names one), notifications, answers and GET stream.
func (t *HTTPTransport) SetProtocolVersion(v string) {
	t.mu.Lock()
	t.negotiated = v
	t.mu.Unlock()
}

// MaxSSEResumes bounds how often one request's SSE stream is resumed
// (a GET with Last-Event-ID, 2025-11-25) after it ended before the
// response.
const MaxSSEResumes = 5

// DefaultSSERetry is the wait before resuming an SSE stream that set no
// retry field.
const DefaultSSERetry = time.Second

// MaxSSERetry caps the wait a server's retry field can impose.
const MaxSSERetry = 30 * time.Second

// DeleteSessionTimeout bounds the DELETE with which Close ends a 2025-era
// session.
const DeleteSessionTimeout = 5 * time.Second

// SessionID returns the session the server assigned (2025-11-25), or "".
func (t *HTTPTransport) SessionID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// ResetSession forgets the session (the server ended it) and stops its
// GET stream.
func (t *HTTPTransport) ResetSession() {
	t.mu.Lock()
	stop := t.stopGet
	t.ended = t.ended || t.session != ""
	t.session, t.stopGet = "", nil
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (t *HTTPTransport) noteSession(resp *http.Response) {
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.mu.Lock()
		t.session, t.ended = id, false
		t.mu.Unlock()
	}
}

// newPost builds a POST of body to the endpoint with the common headers.
func (t *HTTPTransport) newRequest(ctx context.Context, method string, body []byte, version string, extra http.Header) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
		if t.trace != nil {
			t.trace(true, body)
		}
	}
	hr, err := http.NewRequestWithContext(ctx, method, t.url, rd)
	if err != nil {
		return nil, err
	}
	h := hr.Header
	if body != nil {
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
	} else {
		h.Set("Accept", "text/event-stream")
	}
	if version != "" {
		h.Set("MCP-Protocol-Version", version)
	}
	if s := t.SessionID(); s != "" {
		h.Set("Mcp-Session-Id", s)
	}
	for k, vs := range extra {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		h.Del(ck)
		for _, v := range vs {
			h.Add(ck, v)
		}
	}
	if t.headerFunc != nil {
		if err := t.headerFunc(ctx, h); err != nil {
			return nil, err
		}
	}
	return hr, nil
}

// Notify posts a notification (the 2025-11-25 era's
// notifications/initialized); the server answers 202 Accepted.
func (t *HTTPTransport) Notify(ctx context.Context, method string, params exactjson.Value) error {
	body, err := jsonrpc.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	return t.postMessage(ctx, body, nil)
}

// postMessage posts a notification or a response, expecting 202 (or
// another 2xx).
func (t *HTTPTransport) postMessage(ctx context.Context, body []byte, header http.Header) error {
	t.mu.Lock()
	version := t.negotiated
	t.mu.Unlock()
	hr, err := t.newRequest(ctx, http.MethodPost, body, version, header)
	if err != nil {
		return err
	}
	resp, err := t.hc.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := sessionRefused(resp, hr.Header.Get("Mcp-Session-Id") != ""); err != nil {
		return err
	}
	data, _ := readBounded(resp.Body, 64<<10)
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return httpError(resp, data)
	}
	return nil
}

// WireTrace receives every JSON-RPC message a transport sends (sent
// true) or receives, as the bytes on the wire, for debugging (weft
// --trace). It is called from the transport's goroutines, possibly at
// once from several, and must not keep or change msg.
type WireTrace func(sent bool, msg []byte)

// HTTPOptions configure an [HTTPTransport]. The zero value (or nil) is
// usable.
type HTTPOptions struct {
	// Client sends the requests; nil means http.DefaultClient. Do not give
	// it a Timeout shorter than your longest call: SSE responses stay open
	// until the call ends. Package client/oauth's RoundTripper, as its
	// Transport, runs the MCP authorization flow.
	Client *http.Client
	// BearerToken, when set, is sent as "Authorization: Bearer <token>" on
	// every request.
	BearerToken string
	// Header, when set, adds headers (authorization, tracing, ...) to every
	// request, after the transport's own and BearerToken's; an error from
	// it fails the request.
	Header func(ctx context.Context, h http.Header) error
	// MaxMessageBytes bounds each message read from the server (a JSON
	// response body or one SSE event). Default and ceiling: 16 MiB.
	MaxMessageBytes int
	// WireTrace, when set, receives every message the transport sends and
	// receives.
	WireTrace WireTrace
}

// NewHTTPTransport returns a transport posting to the MCP endpoint url.
// opts may be nil.
func NewHTTPTransport(url string, opts *HTTPOptions) *HTTPTransport {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	t := &HTTPTransport{url: url, hc: o.Client, maxMessage: exactjson.MaxInputBytesCeiling, trace: o.WireTrace}
	if t.hc == nil {
		t.hc = http.DefaultClient
	}
	if o.MaxMessageBytes > 0 && o.MaxMessageBytes < exactjson.MaxInputBytesCeiling {
		t.maxMessage = o.MaxMessageBytes
	}
	t.headerFunc = o.Header
	if token, header := o.BearerToken, o.Header; token != "" {
		t.headerFunc = func(ctx context.Context, h http.Header) error {
			h.Set("Authorization", "Bearer "+token)
			if header == nil {
				return nil
			}
			return header(ctx, h)
		}
	}
	return t
}

// MirrorsParamHeaders reports true: Streamable HTTP carries x-mcp-header
// arguments as Mcp-Param-{Name} headers.
func (t *HTTPTransport) MirrorsParamHeaders() bool { return true }

// Close waits for the notifications/cancelled being sent (at most
// cancelledTimeout), ends a 2025-era session with DELETE, and releases idle
// connections. Requests in flight are not affected.
func (t *HTTPTransport) Close() error {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	t.cancels.Wait()
	t.mu.Lock()
	stop, session, version := t.stopGet, t.session, t.negotiated
	t.ended = t.ended || session != ""
	t.stopGet, t.session = nil, ""
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	if session != "" {
		// End the 2025-era session (best effort: a server may refuse).
		ctx, cancel := context.WithTimeout(context.Background(), DeleteSessionTimeout)
		defer cancel()
		if hr, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil); err == nil {
			hr.Header.Set("Mcp-Session-Id", session)
			if version != "" {
				hr.Header.Set("MCP-Protocol-Version", version)
			}
			if t.headerFunc == nil || t.headerFunc(ctx, hr.Header) == nil {
				if resp, err := t.hc.Do(hr); err == nil {
					resp.Body.Close()
				}
			}
		}
	}
	t.hc.CloseIdleConnections()
	return nil
}

// SessionStreamHandlers receive what a 2025-era server sends on its
// session's GET stream: the requests and notifications that belong to no
// request of the client.
type SessionStreamHandlers struct {
	// Notify receives the notifications (list changes, resource updates,
	// log messages), in order, on the stream's reader: it must not block
	// for long.
	Notify func(Notification)
	// Request answers the server's requests (nil: refused with -32601).
	// It runs on a goroutine of its own; ctx ends with the stream.
	Request func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error)
	// Opened, when set, is called each time the stream is opened or
	// reopened: what the server sent while none was open reached nobody.
	Opened func()
	// Ended, when set, is called once when the stream ends for good: with
	// an error wrapping [ErrSessionExpired] when the server no longer
	// knows the session, nil when Close or ResetSession ended it.
	Ended func(err error)
}

// OpenSessionStream opens the GET stream of the 2025-era session and
// reads it until Close or ResetSession (opening another replaces it). A
// stream that ends or breaks is reopened after the server's retry time
// (DefaultSSERetry without one), resuming with Last-Event-ID when the
// server gave its events ids; a stream that brought nothing, and a
// reopening that fails, double the wait, up to MaxSSERetry. It returns
// once the stream is open, or with the reason it is not: a server without
// one answers 405, which is no failure of the session.
func (t *HTTPTransport) OpenSessionStream(h SessionStreamHandlers) error {
	ctx, cancel := context.WithCancel(context.Background())
	t.mu.Lock()
	if t.stopGet != nil {
		t.stopGet()
	}
	t.stopGet = cancel
	version := t.negotiated
	t.mu.Unlock()
	open := func(lastID string) (*http.Response, error) {
		hr, err := t.newRequest(ctx, http.MethodGet, nil, version, nil)
		if err != nil {
			return nil, err
		}
		if hr.Header.Get("Mcp-Session-Id") == "" {
			return nil, errors.New("client: no session: a GET stream belongs to a 2025-era session (initialize first)")
		}
		if lastID != "" {
			hr.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := t.hc.Do(hr)
		if err != nil {
			return nil, err
		}
		if err := sessionRefused(resp, true); err != nil {
			resp.Body.Close()
			return nil, err
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
			data, _ := readBounded(resp.Body, 64<<10)
			resp.Body.Close()
			return nil, httpError(resp, data)
		}
		return resp, nil
	}
	resp, err := open("")
	if err != nil {
		cancel()
		return err
	}
	req := &Request{Header: http.Header{}, OnServerRequest: h.Request}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	go func() {
		var ended error
		defer func() {
			cancel()
			if h.Ended != nil {
				h.Ended(ended)
			}
		}()
		var wg sync.WaitGroup
		defer wg.Wait()
		answers := make(chan struct{}, MaxServerRequests)
		pause := DefaultSSERetry
		lastID := ""
		for {
			if h.Opened != nil {
				h.Opened()
			}
			sr := jsonrpc.NewSSEReader(resp.Body, t.maxMessage)
			events := 0
			notify := func(n Notification) {
				events++
				if h.Notify != nil {
					h.Notify(n)
				}
			}
			_, _ = t.readEvents(ctx, sr, req, notify, &wg, answers)
			resp.Body.Close()
			if id := sr.LastEventID(); id != "" {
				lastID = id
			}
			wait := pause
			if events > 0 {
				wait = min(max(sr.Retry(), DefaultSSERetry), MaxSSERetry)
				pause = DefaultSSERetry
			} else {
				pause = min(2*pause, MaxSSERetry)
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				resp, err = open(lastID)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return
				}
				if errors.Is(err, ErrSessionExpired) {
					ended = err
					return
				}
				wait, pause = pause, min(2*pause, MaxSSERetry)
			}
		}
	}()
	return nil
}

// sessionRefused returns the error of resp, the answer to a request that
// carried a session (sent), when it says that the server no longer knows
// the session (see [ErrSessionExpired]); it reads such an answer's body.
// Any other answer's body stays readable from its start.
func sessionRefused(resp *http.Response, sent bool) error {
	if !sent {
		return nil
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("%w: %w", ErrSessionExpired, httpError(resp, data))
	case http.StatusBadRequest:
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if bytes.Contains(bytes.ToLower(data), []byte("session")) {
			return fmt.Errorf("%w: %w", ErrSessionExpired, httpError(resp, data))
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
	}
	return nil
}

// Do posts req and reads its JSON or SSE response.
func (t *HTTPTransport) Do(ctx context.Context, req *Request, notify func(Notification)) (*Response, error) {
	body, err := encodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("client: encoding %s: %w", req.Method, err)
	}
	version := str(metaOf(req.Params), metaProtocolVersion)
	t.mu.Lock()
	ended := t.ended
	if version == "" {
		version = t.negotiated
	}
	t.mu.Unlock()
	if ended && req.Method != "initialize" {
		// Sent without the session, a 2025-era request would reach the
		// server as another era's (or another session's) request.
		return nil, fmt.Errorf("%w: the session was reset or closed; initialize a new one (%s was not sent)", ErrSessionExpired, req.Method)
	}
	if version == "" && req.Method != "initialize" {
		version = ProtocolVersion
	}
	hr, err := t.newRequest(ctx, http.MethodPost, body, version, req.Header)
	if err != nil {
		return nil, err
	}
	resp, err := t.post(ctx, hr, req, notify)
	if err != nil && ctx.Err() != nil {
		if s := hr.Header.Get("Mcp-Session-Id"); s != "" && req.Method != "initialize" {
			// A 2025-era server is told: closing the stream does not
			// cancel the request in that era.
			t.sendCancelled(ctx, req.ID, hr.Header.Get("MCP-Protocol-Version"))
		}
		return nil, ctx.Err()
	}
	return resp, err
}

// cancelledTimeout bounds the notifications/cancelled of a 2025-era
// request.
const cancelledTimeout = 5 * time.Second

// sendCancelled tells the 2025-era server that request id is cancelled
// (best effort, in the background: the caller has given up already).
func (t *HTTPTransport) sendCancelled(ctx context.Context, id int64, version string) {
	msg, err := jsonrpc.Cancelled(id, context.Cause(ctx).Error())
	if err != nil {
		return
	}
	h := http.Header{}
	if version != "" {
		h.Set("MCP-Protocol-Version", version)
	}
	send := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelledTimeout)
		defer cancel()
		_ = t.postMessage(cctx, msg, h)
	}
	t.mu.Lock()
	closing := t.closing
	if !closing {
		t.cancels.Add(1) // before Close's Wait: ordered by mu
	}
	t.mu.Unlock()
	if closing {
		send() // Close is under way: send before returning
		return
	}
	go func() {
		defer t.cancels.Done()
		send()
	}()
}

// post sends the request hr of req and reads its answer.
func (t *HTTPTransport) post(ctx context.Context, hr *http.Request, req *Request, notify func(Notification)) (*Response, error) {
	h := hr.Header
	h.Set("Mcp-Method", req.Method)
	if m := targetMember(req.Method); m != "" {
		if v, ok := req.Params.Get(m); ok {
			if s, ok := v.AsString(); ok && h.Get("Mcp-Name") == "" {
				h.Set("Mcp-Name", hdr.Encode(s))
			}
		}
	}
	resp, err := t.hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	defer resp.Body.Close()
	if err := sessionRefused(resp, h.Get("Mcp-Session-Id") != ""); err != nil {
		return nil, err
	}
	t.noteSession(resp)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch {
	case mt == "text/event-stream" && ok2xx:
		out, err := t.readSSE(ctx, resp.Body, req, h.Get("MCP-Protocol-Version"), notify)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return out, err
	case mt == "application/json":
		data, err := readBounded(resp.Body, t.maxMessage)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if t.trace != nil {
			t.trace(false, data)
		}
		m, perr := parseMessage(data)
		if perr == nil && m.kind == msgResponse {
			if err := checkID(m, req.ID); err != nil {
				return nil, err
			}
			if m.resp.Error != nil && !ok2xx {
				m.resp.Error.HTTPStatus = resp.StatusCode
				m.resp.Error.Header = resp.Header
			}
			return m.resp, nil
		}
		if !ok2xx {
			return nil, httpError(resp, data)
		}
		if perr != nil {
			return nil, perr
		}
		return nil, protocolErrorf("expected a response to %s, got a %s", req.Method, kindName(m.kind))
	case !ok2xx:
		data, _ := readBounded(resp.Body, 64<<10)
		return nil, httpError(resp, data)
	case resp.StatusCode == http.StatusAccepted:
		return nil, protocolErrorf("server answered request %s with 202 Accepted", req.Method)
	default:
		return nil, protocolErrorf("unexpected response Content-Type %q", resp.Header.Get("Content-Type"))
	}
}

func kindName(k msgKind) string {
	switch k {
	case msgNotification:
		return "notification"
	case msgRequest:
		return "request"
	}
	return "response"
}

// checkID accepts a response to request id, or an error response without a
// usable id (the server could not read ours).
func checkID(m message, id int64) error {
	if m.id.Kind() == exactjson.KindNull && m.resp.Error != nil {
		return nil
	}
	if n, ok := m.id.AsNumber(); ok {
		if i, ok := n.Int64(); ok && i == id {
			return nil
		}
	}
	return protocolErrorf("response id %s does not match request id %d", m.id.String(), id)
}

func httpError(resp *http.Response, body []byte) error {
	if len(body) > 64<<10 {
		body = body[:64<<10]
	}
	return &HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header, Body: body}
}

func readBounded(r io.Reader, max int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return nil, protocolErrorf("message exceeds %d bytes", max)
	}
	return data, nil
}

// readSSE reads an SSE response stream until the response to req
// arrives. Comment lines and events without data are skipped, and so are
// events of a type other than "message". Server requests (2025-11-25) go
// to req.OnServerRequest, whose answer is posted back; without it they
// are refused. A stream that ends before the response is resumed with a
// GET carrying Last-Event-ID (after the server's retry time) when the
// server gave its events ids, at most MaxSSEResumes times.
func (t *HTTPTransport) readSSE(ctx context.Context, body io.Reader, req *Request, version string, notify func(Notification)) (*Response, error) {
	var (
		wg      sync.WaitGroup
		answers = make(chan struct{}, MaxServerRequests)
	)
	defer wg.Wait()
	for resumes := 0; ; resumes++ {
		sr := jsonrpc.NewSSEReader(body, t.maxMessage)
		resp, err := t.readEvents(ctx, sr, req, notify, &wg, answers)
		if resp != nil || err != nil {
			return resp, err
		}
		// The stream ended before the response.
		if sr.LastEventID() == "" || resumes >= MaxSSEResumes {
			return nil, fmt.Errorf("%w: %w", ErrProtocol, ErrStreamEnded)
		}
		wait := sr.Retry()
		if wait <= 0 {
			wait = DefaultSSERetry
		}
		wait = min(wait, MaxSSERetry)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		hr, err := t.newRequest(ctx, http.MethodGet, nil, version, nil)
		if err != nil {
			return nil, err
		}
		hr.Header.Set("Last-Event-ID", sr.LastEventID())
		gr, err := t.hc.Do(hr)
		if err != nil {
			return nil, err
		}
		defer gr.Body.Close()
		if err := sessionRefused(gr, hr.Header.Get("Mcp-Session-Id") != ""); err != nil {
			return nil, err
		}
		mt, _, _ := mime.ParseMediaType(gr.Header.Get("Content-Type"))
		if gr.StatusCode != http.StatusOK || mt != "text/event-stream" {
			data, _ := readBounded(gr.Body, 64<<10)
			return nil, httpError(gr, data)
		}
		body = gr.Body
	}
}

// readEvents reads one stream: (nil, nil) when it ends before the
// response.
func (t *HTTPTransport) readEvents(ctx context.Context, sr *jsonrpc.SSEReader, req *Request, notify func(Notification), wg *sync.WaitGroup, answers chan struct{}) (*Response, error) {
	for {
		event, data, _, err := sr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil, nil
		case errors.Is(err, jsonrpc.ErrLineTooLong) || errors.Is(err, jsonrpc.ErrEventTooLarge):
			return nil, protocolErrorf("SSE event exceeds %d bytes", t.maxMessage)
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if sr.LastEventID() == "" {
				return nil, err // a broken stream that cannot be resumed
			}
			return nil, nil // resumable like an ended one
		}
		if (event == "" || event == "message") && len(bytes.TrimSpace(data)) > 0 {
			if t.trace != nil {
				t.trace(false, data)
			}
			m, err := parseMessage(data)
			if err != nil {
				return nil, err
			}
			switch m.kind {
			case msgNotification:
				if notify != nil {
					notify(Notification{Method: m.method, Params: m.params})
				}
			case msgRequest:
				select {
				case answers <- struct{}{}:
				default:
					return nil, protocolErrorf("more than %d server requests on one stream", MaxServerRequests)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					t.answer(ctx, req, m)
				}()
			case msgResponse:
				if err := checkID(m, req.ID); err != nil {
					return nil, err
				}
				return m.resp, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// answer runs a server request through req.OnServerRequest and posts the
// response.
func (t *HTTPTransport) answer(ctx context.Context, req *Request, m message) {
	var (
		res exactjson.Value
		err error
	)
	if req.OnServerRequest == nil {
		err = &RPCError{Code: CodeMethodNotFound, Message: "the client does not answer " + m.method}
	} else {
		res, err = req.OnServerRequest(ctx, m.method, m.params)
	}
	h := http.Header{}
	if v := req.Header.Get("MCP-Protocol-Version"); v != "" {
		h.Set("MCP-Protocol-Version", v)
	}
	_ = t.postMessage(ctx, encodeAnswer(m.id, res, err), h)
}
