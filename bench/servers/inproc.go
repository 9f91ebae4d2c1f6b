package servers

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
)

// InProc sends requests to a handler in memory, as go-peers.md §7 did:
// handler.ServeHTTP into an httptest.ResponseRecorder.
type InProc struct {
	H    http.Handler
	Call *Call
	buf  []byte
	rd   bytes.Reader
	tmpl http.Request
}

// NewInProc prepares in-memory calls of c to h. Requests look as they do on
// loopback (Host 127.0.0.1:8080, remote 127.0.0.1).
func NewInProc(h http.Handler, c *Call) *InProc {
	p := &InProc{H: h, Call: c}
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080"+Path, nil)
	r.RemoteAddr = "127.0.0.1:49152"
	r.Header = c.Header.Clone()
	p.tmpl = *r
	return p
}

// Do serves one request with id and returns the recorder.
func (p *InProc) Do(id int64) *httptest.ResponseRecorder {
	p.buf = p.Call.AppendBody(p.buf[:0], id)
	return p.DoBody(p.buf)
}

// DoBody serves one request with the given body.
func (p *InProc) DoBody(body []byte) *httptest.ResponseRecorder {
	p.rd.Reset(body)
	r := new(http.Request)
	*r = p.tmpl
	r.Body = io.NopCloser(&p.rd)
	r.ContentLength = int64(len(body))
	w := httptest.NewRecorder()
	p.H.ServeHTTP(w, r)
	return w
}

// Harness is a handler that reads the body and writes a fixed reply: the
// cost of the in-memory harness itself, to subtract from the others.
var Harness = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
})
