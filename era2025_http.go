package weft

import (
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/weftmcp/weft/internal/localsess"
)

// serveHTTP is the adapter's HTTP entry (eraAdapter) for the 2025 era's
// GET (the session's event stream) and DELETE (session termination). It
// reports false for requests without Mcp-Session-Id, which keep the
// 2026-07-28 answer (405).
func (l *legacyServer) serveHTTP(w http.ResponseWriter, r *http.Request) bool {
	sids := r.Header.Values("Mcp-Session-Id")
	if len(sids) == 0 {
		return false
	}
	if len(sids) > 1 {
		writePlainError(w, http.StatusBadRequest, "Mcp-Session-Id appears more than once")
		return true
	}
	if l.stateless() && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
		writeReply(w, errNoSession()) // this server gives 2025-era HTTP clients no sessions
		return true
	}
	switch r.Method {
	case http.MethodGet:
		l.serveGet(w, r, sids[0])
	case http.MethodDelete:
		l.serveDelete(w, r, sids[0])
	default:
		return false
	}
	return true
}

// writeReply writes a reply that ends an HTTP exchange before any stream.
func writeReply(w http.ResponseWriter, rep reply) {
	status := replyHeader(w.Header(), rep)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(appendErrorResponse(nil, rep.id, rep.err))
}

// openHTTP admits r and loads its session.
func (l *legacyServer) openHTTP(w http.ResponseWriter, r *http.Request, sid string) *legacyConn {
	in := &inbound{header: r.Header, endpoint: path.Clean("/" + r.URL.Path), transport: "http", remoteAddr: r.RemoteAddr}
	ident, rej := l.env.core.admit(r.Context(), in, "", "")
	if rej != nil {
		writeReply(w, *rej)
		return nil
	}
	c, rep := l.open(r.Context(), in, sid, l.store, ident, "http")
	if c == nil {
		writeReply(w, rep)
	}
	return c
}

// serveDelete ends a session: its record goes, and so does what this
// instance holds for it (its GET stream, its in-flight calls). With a fleet
// bus the other instances end theirs too; without one they notice at their
// next store read.
func (l *legacyServer) serveDelete(w http.ResponseWriter, r *http.Request, sid string) {
	c := l.openHTTP(w, r, sid)
	if c == nil {
		return
	}
	if _, err := l.store.Delete(r.Context(), sid); err != nil {
		l.env.log.Error("weft: deleting a legacy session failed", "err", err)
		writePlainError(w, http.StatusServiceUnavailable, "Session could not be deleted")
		return
	}
	l.local.End(sid)
	l.publishCancel(r.Context(), "session "+localsess.SessionDigest(sid))
	w.WriteHeader(http.StatusNoContent)
}

// legacyStream is a session's GET event stream on this instance.
type legacyStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// writeTimeout bounds each write (Options.WriteTimeout), so a client
	// that stops reading cannot hold the stream.
	writeTimeout time.Duration

	mu      sync.Mutex
	done    bool
	ended   chan struct{}
	endOnce sync.Once
}

// End ends the stream (its session was deleted).
func (st *legacyStream) End() { st.endOnce.Do(func() { close(st.ended) }) }

func (st *legacyStream) write(b []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return errNoStream
	}
	st.deadline()
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	return st.rc.Flush()
}

// deadline bounds the next write. Caller holds st.mu.
func (st *legacyStream) deadline() {
	if st.writeTimeout > 0 {
		_ = st.rc.SetWriteDeadline(time.Now().Add(st.writeTimeout))
	}
}

func (st *legacyStream) canStream() bool { return true }

// send writes one frame as an SSE event.
func (st *legacyStream) send(f frame) error {
	b, err := appendFrame([]byte("data: "), f)
	if err != nil {
		return err
	}
	return st.write(append(b, '\n', '\n'))
}

// serveGet holds the session's event stream: list-changed notifications,
// resources/updated for the session's subscriptions, and server requests
// that cannot travel on their call's own stream. It ends when the client
// leaves, the session ends or the server shuts down.
func (l *legacyServer) serveGet(w http.ResponseWriter, r *http.Request, sid string) {

	if !acceptsSSE(r.Header.Values("Accept")) {
		writePlainError(w, http.StatusNotAcceptable, "Accept must include text/event-stream")
		return
	}
	c := l.openHTTP(w, r, sid)
	if c == nil {
		return
	}
	st := &legacyStream{w: w, rc: http.NewResponseController(w), writeTimeout: l.env.writeTimeout, ended: make(chan struct{})}
	// Hold the stream's lock until the headers are out: once registered,
	// server requests of the session's calls may be written to it.
	st.mu.Lock()
	if !l.local.AddStream(sid, st) {
		st.mu.Unlock()
		writePlainError(w, http.StatusConflict, "Conflict: this session already has an event stream open")
		return
	}
	defer l.local.RemoveStream(sid, st)
	defer func() {
		st.mu.Lock()
		st.done = true
		st.mu.Unlock()
	}()
	sub := l.env.bus.subscribe()
	defer l.env.bus.unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	st.deadline()
	_ = st.rc.Flush()
	st.mu.Unlock()

	l.pumpEvents(r.Context(), eventPump{
		sid: sid, store: l.store, sub: sub, subs: c.sess.Subscriptions, out: st, ended: st.ended,
		keepAlive: func() error { return st.write([]byte(": keep-alive\n\n")) },
		check:     max(min(l.opts.IdleTimeout/3, 30*time.Second), 10*time.Millisecond),
	})
}
