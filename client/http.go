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
	t.hc.CloseIdleConnections()
	return nil
}

// Do posts req and reads its JSON or SSE response.
func (t *HTTPTransport) Do(ctx context.Context, req *Request, notify func(Notification)) (*Response, error) {
	body, err := encodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("client: encoding %s: %w", req.Method, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := hr.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	version := str(metaOf(req.Params), metaProtocolVersion)
	if version == "" {
		version = ProtocolVersion
	}
	h.Set("MCP-Protocol-Version", version)
	h.Set("Mcp-Method", req.Method)
	if m := targetMember(req.Method); m != "" {
		if v, ok := req.Params.Get(m); ok {
			if s, ok := v.AsString(); ok {
				h.Set("Mcp-Name", hdr.Encode(s))
			}
		}
	}
	for k, vs := range req.Header {
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
	resp, err := t.hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch {
	case mt == "text/event-stream" && ok2xx:
		out, err := t.readSSE(ctx, resp.Body, req.ID, notify)
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

// readSSE reads an SSE response stream until the response to id arrives.
// Comment lines (":") and the id/retry fields are ignored; events with a
// type other than "message" are skipped; server requests are ignored. An
// event not terminated by a blank line at the end is read (leniently).
func (t *HTTPTransport) readSSE(ctx context.Context, body io.Reader, id int64, notify func(Notification)) (*Response, error) {
	sr := jsonrpc.NewSSEReader(body, t.maxMessage)
	for {
		event, data, _, err := sr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil, protocolErrorf("the SSE stream ended before the response")
		case errors.Is(err, jsonrpc.ErrLineTooLong) || errors.Is(err, jsonrpc.ErrEventTooLarge):
			return nil, protocolErrorf("SSE event exceeds %d bytes", t.maxMessage)
		case err != nil:
			return nil, err
		}
		if event == "" || event == "message" {
			m, err := parseMessage(data)
			if err != nil {
				return nil, err
			}
			switch m.kind {
			case msgNotification:
				if notify != nil {
					notify(Notification{Method: m.method, Params: m.params})
				}
			case msgResponse:
				if err := checkID(m, id); err != nil {
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
