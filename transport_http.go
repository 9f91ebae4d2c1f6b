package weft

import (
	"errors"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ServeHTTP serves MCP Streamable HTTP (2026-07-28) at whatever path the
// server is mounted on: POST only, one JSON-RPC message per request, a JSON
// response by default and a request-scoped SSE stream as soon as the handler
// reports progress or logs (and for subscriptions/listen). The client closing
// the stream cancels the handler's context. A subscriptions/listen stream
// over HTTP/1.1 without TLS is taken over from net/http (the connection
// hijacked) once acknowledged; see docs/architecture.md.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Cache-Control"] = []string{"no-store"} // canonical already: no Header.Set
	if !s.hostAllowed(r.Host) {
		writePlainError(w, http.StatusForbidden, "Host not allowed")
		return
	}
	if origin := headerValue(r.Header, "Origin"); origin != "" && !s.originAllowed(origin) {
		writePlainError(w, http.StatusForbidden, "Origin not allowed")
		return
	}
	if r.Method != http.MethodPost && s.adaptersServeHTTP(w, r) {
		return
	}
	if r.Method != http.MethodPost {
		h.Set("Allow", http.MethodPost)
		writePlainError(w, http.StatusMethodNotAllowed, "Method not allowed: use POST")
		return
	}
	if len(r.Header) > s.limits.MaxHeaderCount {
		writePlainError(w, http.StatusRequestHeaderFieldsTooLarge, "Too many header fields")
		return
	}
	if ct := headerValue(r.Header, "Content-Type"); ct != "application/json" && !isJSONMediaType(ct) {
		writePlainError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	// One allocation for the exchange's state (inbound message, responder,
	// response controller) instead of three.
	x := &httpExchange{}
	x.rc = *http.NewResponseController(w)
	rc := &x.rc
	// Bound the body read (slow clients), then clear the deadline so that
	// long-lived streams are not cut.
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	var rd io.Reader = r.Body
	if r.ContentLength <= 0 || r.ContentLength > int64(s.limits.MaxBodyBytes) {
		// A declared length within the limit is enforced by net/http itself
		// (readBody reads exactly that many bytes); any other body is cut
		// at the limit.
		rd = http.MaxBytesReader(w, r.Body, int64(s.limits.MaxBodyBytes))
	}
	body, err := readBody(rd, r.ContentLength, s.limits.MaxBodyBytes)
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writePlainError(w, http.StatusRequestEntityTooLarge, "Request body too large")
			return
		}
		writePlainError(w, http.StatusBadRequest, "Could not read the request body")
		return
	}
	resp := &x.resp
	*resp = httpResponder{w: w, rc: rc, srv: s, writeTimeout: s.opts.WriteTimeout, keepAlive: s.opts.KeepAlive,
		sseOK:      acceptsSSE(r.Header["Accept"]),
		detachable: r.ProtoMajor == 1 && r.ProtoMinor >= 1 && r.TLS == nil && isNetHTTPWriter(w)}
	endpoint := r.URL.Path
	if endpoint == "" || endpoint[0] != '/' || path.Clean(endpoint) != endpoint {
		endpoint = path.Clean("/" + endpoint)
	}
	x.in = inbound{body: body, owned: true, header: r.Header, endpoint: endpoint, transport: "http", early: resp,
		remoteAddr: r.RemoteAddr, out: resp}
	rep := s.serve(r.Context(), &x.in)
	if p := resp.pending; p != nil {
		// A subscriptions/listen stream, acknowledged: the request is
		// complete and the stream goes on without this goroutine.
		s.putWire(rep.wireBuf)
		resp.detachPending(p)
		return
	}
	resp.finish(rep)
}

// httpExchange is the state of one HTTP request, allocated together.
type httpExchange struct {
	in   inbound
	resp httpResponder
	rc   http.ResponseController
}

// headerValue is h.Get(key) for a key already in canonical form, without
// canonicalizing it again.
func headerValue(h http.Header, key string) string {
	if vs := h[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// isJSONMediaType reports whether a Content-Type is application/json
// (with parameters such as charset allowed).
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// acceptsSSE reports whether an Accept header admits text/event-stream.
func acceptsSSE(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			// The media type without its parameters, as mime.ParseMediaType
			// would read it, without its allocations.
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.TrimSpace(mt)
			if strings.EqualFold(mt, "text/event-stream") || mt == "*/*" || strings.EqualFold(mt, "text/*") {
				return true
			}
		}
	}
	return false
}

func writePlainError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b := appendErrorResponse(nil, ID{}, &Error{Code: CodeInvalidRequest, Message: msg})
	_, _ = w.Write(b)
}

func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if isLoopbackHost(host) {
		return true
	}
	for _, a := range s.opts.AllowedHosts {
		if strings.EqualFold(a, hostport) || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

func (s *Server) originAllowed(origin string) bool {
	for _, a := range s.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackHost(u.Hostname())
}

// httpResponder writes one HTTP response: JSON, or an SSE stream once the
// first notification is sent.
type httpResponder struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	srv       *Server // takes the response buffer back (putWire)
	keepAlive time.Duration
	sseOK     bool
	// writeTimeout bounds each write (Options.WriteTimeout).
	writeTimeout time.Duration
	// detachable reports an HTTP/1.1 request on net/http's own writer,
	// whose listen stream can be detached (listen_detached.go); pending is
	// the stream its handler acknowledged for detaching.
	detachable bool
	pending    *pendingDetach

	mu   sync.Mutex
	sse  bool
	done bool
	// ka writes the next keep-alive comment: a timer, not a goroutine, so
	// an idle stream holds no goroutine of its own.
	ka *time.Timer
}

func (h *httpResponder) canStream() bool { return h.sseOK }

// send writes one frame, switching the response to SSE on the first. The
// frame is encoded straight into its SSE event.
func (h *httpResponder) send(f frame) error {
	b := append(make([]byte, 0, 8+frameSizeHint(f)), "data: "...)
	b, err := appendFrame(b, f)
	if err != nil {
		return err
	}
	b = append(b, '\n', '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done || !h.sseOK {
		return errNoStream
	}
	if !h.sse {
		h.startSSE()
	}
	return h.writeEvent(b)
}

// startSSE commits the response as an event stream. Caller holds h.mu.
func (h *httpResponder) startSSE() {
	hd := h.w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	h.w.WriteHeader(http.StatusOK)
	h.sse = true
	_ = h.rc.Flush()
	h.ka = time.AfterFunc(h.keepAlive, h.keepAliveTick)
}

// keepAliveTick writes one keep-alive comment and arms the next.
func (h *httpResponder) keepAliveTick() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.deadline()
	_, _ = io.WriteString(h.w, ": keep-alive\n\n")
	_ = h.rc.Flush()
	h.ka.Reset(h.keepAlive)
}

// writeFrame writes msg, one encoded message, as an SSE event.
func (h *httpResponder) writeFrame(msg []byte) error {
	buf := make([]byte, 0, len(msg)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, msg...)
	return h.writeEvent(append(buf, '\n', '\n'))
}

// writeEvent writes and flushes one complete SSE event. Caller holds h.mu.
func (h *httpResponder) writeEvent(ev []byte) error {
	h.deadline()
	if _, err := h.w.Write(ev); err != nil {
		return err
	}
	return h.rc.Flush()
}

// deadline bounds the next write, so a client that stops reading cannot hold
// the connection (and the handler writing to it) past WriteTimeout.
func (h *httpResponder) deadline() {
	if h.writeTimeout > 0 {
		_ = h.rc.SetWriteDeadline(time.Now().Add(h.writeTimeout))
	}
}

// finish writes the final reply.
func (h *httpResponder) finish(rep reply) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	if h.ka != nil {
		h.ka.Stop()
	}
	var msg []byte
	switch {
	case rep.none:
		if !h.sse {
			h.w.WriteHeader(http.StatusAccepted)
		}
		return
	case rep.err != nil:
		msg = appendErrorResponse(nil, rep.id, rep.err)
	default:
		msg = responseBytes(rep)
	}
	if h.sse {
		_ = h.writeFrame(msg) // copies msg
		h.srv.putWire(rep.wireBuf)
		return
	}
	status := replyHeader(h.w.Header(), rep)
	h.w.Header()["Content-Type"] = []string{"application/json"}
	h.w.WriteHeader(status)
	h.deadline()
	_, _ = h.w.Write(msg) // net/http copies msg into its buffer
	h.srv.putWire(rep.wireBuf)
}

// NewHTTPServer returns an *http.Server for h with Weft's transport limits:
// header read timeout 10s, header bytes 64 KiB (431 past it) and an idle
// timeout. The body read is bounded per request by [Options.BodyTimeout];
// there is no server-wide read or write timeout, because SSE streams are
// long-lived (keep-alive comments detect dead peers).
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: defaultReadHeaderTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    defaultMaxHeaderBytes,
	}
}

// readBody reads a request body. With a declared length within max (net/http
// delivers exactly that many bytes) it reads into one buffer of that size;
// otherwise (chunked, or a length the MaxBytesReader will refuse) it reads
// to EOF.
func readBody(body io.Reader, contentLength int64, max int) ([]byte, error) {
	if contentLength <= 0 || contentLength > int64(max) {
		return io.ReadAll(body)
	}
	buf := make([]byte, contentLength+1)
	if _, err := io.ReadFull(body, buf[:contentLength]); err != nil {
		return nil, err
	}
	// Confirm the end (into the spare byte), so a body longer than
	// declared is not cut silently.
	if n, err := body.Read(buf[contentLength:]); n > 0 || (err != nil && err != io.EOF) {
		if err == nil {
			err = errors.New("request body longer than its Content-Length")
		}
		return nil, err
	}
	return buf[:contentLength], nil
}

// replyHeader sets the headers of a reply that ends an HTTP exchange before
// any stream (an admission's challenge and headers, Retry-After, the
// 2025-era session id) and returns its status: where the core's fault and
// error codes meet HTTP.
func replyHeader(h http.Header, rep reply) int {
	if ae := rep.refusal; ae != nil {
		for k, vs := range ae.Header {
			h[k] = vs
		}
		if ae.Challenge != "" {
			h.Set("WWW-Authenticate", ae.Challenge)
		}
	}
	if e := rep.err; e != nil && (e.retryAfter > 0 || e.reserved && e.Code == CodeRateLimited) {
		h["Retry-After"] = []string{strconv.Itoa(int(math.Ceil(e.retryAfter.Seconds())))}
	}
	if rep.sessionID != "" {
		h["Mcp-Session-Id"] = []string{rep.sessionID}
	}
	return httpStatus(rep)
}

// httpStatus is the status of a reply that ends an HTTP exchange before any
// stream.
func httpStatus(rep reply) int {
	if rep.refusal != nil && rep.refusal.Status != 0 {
		return rep.refusal.Status
	}
	e := rep.err
	if e == nil {
		return http.StatusOK
	}
	f := rep.fault
	if f == faultNone {
		f = e.fault
	}
	switch f {
	case faultAnswered:
		return http.StatusOK
	case faultBadRequest:
		return http.StatusBadRequest
	case faultNoSession:
		return http.StatusNotFound
	case faultNotAcceptable:
		return http.StatusNotAcceptable
	case faultUnavailable:
		return http.StatusServiceUnavailable
	case faultDeadline:
		return http.StatusGatewayTimeout
	}
	if !e.reserved {
		return http.StatusOK
	}
	switch e.Code {
	case CodeParseError, CodeInvalidRequest, CodeInvalidParams, CodeHeaderMismatch,
		CodeMissingRequiredCapability, CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	case CodeMethodNotFound:
		return http.StatusNotFound
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeInternalError:
		return http.StatusInternalServerError
	}
	return http.StatusOK
}
