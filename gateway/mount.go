package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/weftmcp/weft"
)

// Mount fronts child, another MCP server of this process (a *weft.Server
// or any http.Handler serving MCP 2026-07-28), on parent: the child's tools
// and prompts appear under prefix, its resource and template URIs under
// opts.ResourcePrefix (by default prefix without its trailing "_", "." and
// "-": "billing." puts ui://chart at ui://billing/chart; see
// [UpstreamConfig.ResourcePrefix]), its skills and MCP Apps with them, its list
// changes propagate, and every operation runs through the child's own
// pipeline (admission, visibility, middleware) after the parent's, with
// multi-round input and tasks relayed both ways. No socket is opened: each
// request is handed to child.ServeHTTP in memory, streams included. The
// downstream Authorization header is passed to the child. The lists are
// read as the caller: the mount registers what the child lists for
// opts.ListAuthorization (default: an anonymous caller), and each caller's
// lists show only the child's items the child lists for the caller's own
// Authorization header.
// name identifies the mount in logs and errors. Close the returned Gateway
// to unmount.
func Mount(ctx context.Context, parent *weft.Server, name, prefix string, child http.Handler, o *Options) (*Gateway, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if child == nil {
		return nil, errors.New("gateway: Mount: nil child")
	}
	cfg := &Config{Upstreams: []UpstreamConfig{{Name: name, URL: "http://127.0.0.1/mcp", Protocol: Version20260728,
		Prefix: prefix, ResourcePrefix: opts.ResourcePrefix, Authorization: "passthrough"}}}
	opts.HTTPClient = &http.Client{Transport: handlerTransport{child}}
	opts.callerLists = true
	return New(ctx, parent, cfg, &opts)
}

// handlerTransport is an http.RoundTripper that serves each request with
// an http.Handler in process, streaming the response body.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	sreq := req.Clone(req.Context())
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "127.0.0.1:1"
	sreq.Host = req.URL.Host
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			pw.Close()
		}()
		t.h.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: w.code, Status: http.StatusText(w.code), Header: w.sent, Body: pr,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req, ContentLength: -1}, nil
}

// pipeWriter is the http.ResponseWriter of an in-process request.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	code   int
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush commits the header; written data is already with the reader.
func (w *pipeWriter) Flush() { w.WriteHeader(http.StatusOK) }
