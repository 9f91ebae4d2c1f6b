package wefttest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/weftmcp/weft/internal/progerr"
)

// RoundTripper returns an http.RoundTripper that serves every request with
// h in this process, for an *http.Client (the client package's
// NewHTTPTransport takes one): no socket is opened, the response streams as
// the handler writes it (each server-sent event reaches the client when the
// handler flushes it), and the handler's context ends when the request's
// context does or the response body is closed. Every request appears to
// come from [RemoteAddr]. report, when not nil, receives each programming
// error the server finds while it serves a request (a
// *weft.ProgrammingError: the client itself gets the sanitized -32603);
// it must be safe for concurrent use.
func RoundTripper(h http.Handler, report func(error)) http.RoundTripper {
	return &roundTripper{h: h, report: report}
}

type roundTripper struct {
	h      http.Handler
	report func(error)
}

// RoundTrip implements http.RoundTripper.
func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if rt.report != nil {
		ctx = progerr.WithReporter(ctx, rt.report)
	}
	ctx, cancel := context.WithCancel(ctx)
	sreq := req.Clone(ctx)
	sreq.RemoteAddr = RemoteAddr
	sreq.RequestURI = req.URL.RequestURI()
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	// As net/http's transport does, the end of the request's context breaks
	// the body being read.
	context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	w := &streamWriter{ctx: ctx, hdr: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				// As net/http does, a panic ends the response; the client
				// sees the body break.
				w.commit(http.StatusInternalServerError)
				pw.CloseWithError(fmt.Errorf("wefttest: the handler panicked: %v", p))
				return
			}
			w.commit(http.StatusOK)
			pw.Close()
		}()
		rt.h.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		cancel()
		pr.Close()
		return nil, ctx.Err()
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.snap,
		Body:          &streamBody{r: pr, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}, nil
}

// streamWriter is the in-process http.ResponseWriter and http.Flusher: the
// status and headers are published when the handler writes the status,
// the body goes through a pipe to the client.
type streamWriter struct {
	ctx  context.Context // the request's: once it ends, nothing more is delivered
	hdr  http.Header     // the live map the handler mutates
	pw   *io.PipeWriter
	once sync.Once
	// status and snap are set once, before ready is closed.
	status int
	snap   http.Header
	ready  chan struct{}
}

func (w *streamWriter) commit(code int) {
	w.once.Do(func() {
		w.status = code
		w.snap = w.hdr.Clone()
		close(w.ready)
	})
}

// Header implements http.ResponseWriter.
func (w *streamWriter) Header() http.Header { return w.hdr }

// WriteHeader implements http.ResponseWriter; informational statuses are
// not the response's.
func (w *streamWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 {
		return
	}
	w.commit(code)
}

// Write implements http.ResponseWriter: it returns once the client has
// read p, or with an error once the request's context ended or the client
// closed the body (what a real connection gives a handler then).
func (w *streamWriter) Write(p []byte) (int, error) {
	w.commit(http.StatusOK)
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.pw.Write(p)
}

// Flush implements http.Flusher: what was written has been read already.
func (w *streamWriter) Flush() { w.commit(http.StatusOK) }

// streamBody is the response body: closing it ends the handler's context,
// as a client closing its connection does on a real server.
type streamBody struct {
	r      *io.PipeReader
	cancel context.CancelFunc
}

func (b *streamBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *streamBody) Close() error {
	b.cancel()
	return b.r.Close()
}
