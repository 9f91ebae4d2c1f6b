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
}

func (t *HTTPTransport) setNegotiated(v string) {
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

// SessionID returns the session the server assigned (2025-11-25), or "".
func (t *HTTPTransport) SessionID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// ResetSession forgets the session (the server ended it).
func (t *HTTPTransport) ResetSession() {
	t.mu.Lock()
	t.session = ""
	t.mu.Unlock()
}

func (t *HTTPTransport) noteSession(resp *http.Response) {
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.mu.Lock()
		t.session = id
		t.mu.Unlock()
	}
}

// newPost builds a POST of body to the endpoint with the common headers.
func (t *HTTPTransport) newRequest(ctx context.Context, method string, body []byte, version string, extra http.Header) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
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
	data, _ := readBounded(resp.Body, 64<<10)
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return httpError(resp, data)
	}
	return nil
}

// HTTPOption configures an [HTTPTransport].
type HTTPOption func(*HTTPTransport)

// WithBearerToken sends "Authorization: Bearer <token>" on every request.
func WithBearerToken(token string) HTTPOption {
	return WithHeaderFunc(func(_ context.Context, h http.Header) error {
		h.Set("Authorization", "Bearer "+token)
		return nil
	})
}

// WithHeaderFunc lets f add headers (authorization, tracing, ...) to every
// request; an error from f fails the request. Several header funcs run in
// the order given.
func WithHeaderFunc(f func(ctx context.Context, h http.Header) error) HTTPOption {
	return func(t *HTTPTransport) {
		prev := t.headerFunc
		if prev == nil {
			t.headerFunc = f
			return
		}
		t.headerFunc = func(ctx context.Context, h http.Header) error {
			if err := prev(ctx, h); err != nil {
				return err
			}
			return f(ctx, h)
		}
	}
}

// WithMaxMessageBytes bounds each message read from the server (a JSON
// response body or one SSE event). Default and ceiling: 16 MiB.
func WithMaxMessageBytes(n int) HTTPOption {
	return func(t *HTTPTransport) {
		if n > 0 && n < exactjson.MaxInputBytesCeiling {
			t.maxMessage = n
		}
	}
}

// NewHTTPTransport returns a transport posting to the MCP endpoint url.
// A nil httpClient means http.DefaultClient. Do not give the client a
// Timeout shorter than your longest call: SSE responses stay open until the
// final response (use contexts instead).
func NewHTTPTransport(url string, httpClient *http.Client, opts ...HTTPOption) *HTTPTransport {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	t := &HTTPTransport{url: url, hc: httpClient, maxMessage: exactjson.MaxInputBytesCeiling}
	for _, o := range opts {
		o(t)
	}
	return t
}

// MirrorsParamHeaders reports true: Streamable HTTP carries x-mcp-header
// arguments as Mcp-Param-{Name} headers.
func (t *HTTPTransport) MirrorsParamHeaders() bool { return true }

// Close releases idle connections. Requests in flight are not affected.
func (t *HTTPTransport) Close() error {
	t.mu.Lock()
	stop, session, version := t.stopGet, t.session, t.negotiated
	t.stopGet, t.session = nil, ""
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	if session != "" {
		// End the 2025-era session (best effort: a server may refuse).
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
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

// openListenStream opens the 2025-era GET stream on which the server
// sends the requests and notifications that belong to no request, and
// reads it until Close, resuming it (Last-Event-ID, after the server's
// retry time) when it breaks, at most MaxSSEResumes times in a row. It
// returns once the stream is open, or with the reason it is not (a
// server without one answers 405).
func (t *HTTPTransport) openListenStream(onNote func(Notification), onReq func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error)) error {
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
		if lastID != "" {
			hr.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := t.hc.Do(hr)
		if err != nil {
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
	req := &Request{Header: http.Header{}, OnServerRequest: onReq}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	go func() {
		defer cancel()
		var wg sync.WaitGroup
		defer wg.Wait()
		answers := make(chan struct{}, MaxServerRequests)
		failures := 0
		for {
			sr := jsonrpc.NewSSEReader(resp.Body, t.maxMessage)
			_, err := t.readEvents(ctx, sr, req, onNote, &wg, answers)
			resp.Body.Close()
			if err != nil || ctx.Err() != nil || sr.LastEventID() == "" {
				return
			}
			wait := min(max(sr.Retry(), DefaultSSERetry), MaxSSERetry)
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				if resp, err = open(sr.LastEventID()); err == nil {
					failures = 0
					break
				}
				if failures++; failures > MaxSSEResumes {
					return
				}
			}
		}
	}()
	return nil
}

// Do posts req and reads its JSON or SSE response.
func (t *HTTPTransport) Do(ctx context.Context, req *Request, notify func(Notification)) (*Response, error) {
	body, err := encodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("client: encoding %s: %w", req.Method, err)
	}
	version := str(metaOf(req.Params), metaProtocolVersion)
	if version == "" {
		version = ProtocolVersion
	}
	hr, err := t.newRequest(ctx, http.MethodPost, body, version, req.Header)
	if err != nil {
		return nil, err
	}
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
	t.noteSession(resp)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch {
	case mt == "text/event-stream" && ok2xx:
		out, err := t.readSSE(ctx, resp.Body, req, notify)
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
		m, perr := parseMessage(data)
		if perr == nil && m.kind == msgResponse {
			if err := checkID(m, req.ID); err != nil {
				return nil, err
			}
			if m.resp.Error != nil && !ok2xx {
				m.resp.Error.HTTPStatus = resp.StatusCode
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
func (t *HTTPTransport) readSSE(ctx context.Context, body io.Reader, req *Request, notify func(Notification)) (*Response, error) {
	var (
		wg      sync.WaitGroup
		answers = make(chan struct{}, MaxServerRequests)
	)
	defer wg.Wait()
	version := str(metaOf(req.Params), metaProtocolVersion)
	if v := req.Header.Get("MCP-Protocol-Version"); v != "" {
		version = v
	}
	for resumes := 0; ; resumes++ {
		sr := jsonrpc.NewSSEReader(body, t.maxMessage)
		resp, err := t.readEvents(ctx, sr, req, notify, &wg, answers)
		if resp != nil || err != nil {
			return resp, err
		}
		// The stream ended before the response.
		if sr.LastEventID() == "" || resumes >= MaxSSEResumes {
			return nil, protocolErrorf("the SSE stream ended before the response")
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
