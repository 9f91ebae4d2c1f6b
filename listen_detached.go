package weft

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Detached listen streams.
//
// A subscriptions/listen stream acknowledged over HTTP/1.1 on net/http's own
// ResponseWriter does not keep its request's goroutine: once the
// acknowledgement is written, the handler returns (middleware, the Observer
// and the request log see the request complete), the connection is hijacked
// from net/http and the stream is held by a detachedStream registered with
// the bus. Its frames are written as HTTP/1.1 chunks by the bus's writers (at
// most maxListenWriters goroutines for all streams, started when there is
// something to write), and one small reader goroutine per stream notices the
// client leaving. HTTP/2, stdio, HTTP/1.0, TLS and writers wrapped by other
// handlers keep the stream on the request's goroutine (listenLoop).

// listenWriteSlice bounds the first attempt of a writer at one stream's
// write: a write that does not complete within it (the client stopped
// reading and its socket buffer is full) is finished by a goroutine of its
// own, up to WriteTimeout, so that the shared writers are not held.
const listenWriteSlice = 20 * time.Millisecond

// maxIgnoredListenBytes is how much a client may send on a detached
// stream's connection (a pipelined request, which would never be answered
// on the request goroutine either) before the stream is closed.
const maxIgnoredListenBytes = 64 << 10

// maxListenWriters bounds the goroutines that write detached streams'
// frames.
func maxListenWriters() int { return max(2, runtime.GOMAXPROCS(0)) }

// pendingDetach is a listen stream acknowledged on a responder that will
// detach it once its handler has returned (httpResponder.detachPending).
type pendingDetach struct {
	s   *Server
	req *Request
	st  *listenState
}

// detachedStream is one listen stream held without its request's
// goroutine.
type detachedStream struct {
	s    *Server
	conn net.Conn
	st   *listenState
	// sub and tail are st's, kept here for the writers (one pointer less
	// to follow per stream on the fan-out's path).
	sub  *subscriber
	tail string
	id   ID // the request's, for the closing result
	// req is kept for the per-event authorization of task notifications
	// (nil without taskIds).
	req *Request

	// wmu serialises the writes on conn; closed is set once, by whichever
	// ends the stream first.
	wmu    sync.Mutex
	closed atomic.Bool
	ka     *time.Timer
	// raw, on a plain TCP connection, lets the writers try a write without
	// blocking (and without a deadline to set); nil on TLS.
	raw syscall.RawConn
}

// errWouldBlock reports a write the socket could not take whole at once.
var errWouldBlock = errors.New("weft: the connection's send buffer is full")

// canDetach reports whether the listen stream of this request may be
// detached once acknowledged: an HTTP/1.1 request without TLS (a TLS
// connection's state does not survive a timed-out write, which the writers
// rely on) on net/http's own ResponseWriter (a wrapper could transform the
// body, which the hijacked connection would bypass).
func (h *httpResponder) canDetach() bool { return h.detachable }

// isNetHTTPWriter reports whether w is net/http's own HTTP/1.x
// ResponseWriter, which can be hijacked and writes the body as it is.
func isNetHTTPWriter(w http.ResponseWriter) bool {
	_, ok := w.(http.Hijacker)
	return ok && reflect.TypeOf(w).String() == "*http.response"
}

// detachPending takes over the stream acknowledged on h once its handler
// has returned: it hijacks the connection and registers the stream with the
// bus. Called by ServeHTTP, on the request's goroutine, while the request
// is still being served.
func (h *httpResponder) detachPending(p *pendingDetach) {
	s := p.s
	defer s.inflight.Done() // taken by handleListen for the hand-over
	h.mu.Lock()
	h.done = true // nothing more goes through net/http
	if h.ka != nil {
		h.ka.Stop()
	}
	conn, brw, err := h.rc.Hijack()
	h.mu.Unlock()
	if err != nil {
		// Not expected (canDetach checked the writer): the response ends
		// here, without its closing result; the client listens again.
		s.log.Warn("weft: detaching a subscriptions/listen stream failed; ending it", "err", err)
		p.st.release(s)
		return
	}
	ignored := brw.Reader.Buffered()
	_, _ = brw.Reader.Discard(ignored) // sent after the request: never answered (as on the request goroutine)
	ds := &detachedStream{s: s, conn: conn, st: p.st, sub: p.st.sub, tail: p.st.tail, id: p.req.ID}
	if len(p.st.taskIDs) > 0 {
		ds.req = p.req
	}
	ds.raw = rawConnOf(conn)
	// Armed once assigned: the first tick reads ds.ka.
	ds.ka = time.AfterFunc(time.Duration(math.MaxInt64), ds.keepAlive)
	ds.ka.Reset(s.opts.KeepAlive)
	if !s.bus.attach(ds) {
		ds.finish() // Shutdown has begun: the closing result now
		return
	}
	go ds.watch(ignored)
	if p.st.taskEvents != nil {
		go ds.taskLoop()
	}
}

// release ends what an open stream holds in the bus: its subscription, its
// reservations in its shares and its task subscription.
func (st *listenState) release(s *Server) {
	s.bus.unsubscribe(st.sub)
	s.bus.unreserve(st.share, st.caller)
	if st.cancel != nil {
		st.cancel()
	}
}

// attach registers ds with the bus, scheduling what its subscription has
// gathered since the acknowledgement; false once Shutdown has ended the
// detached streams.
func (b *bus) attach(ds *detachedStream) bool {
	b.mu.Lock()
	if b.detachClosed {
		b.mu.Unlock()
		return false
	}
	sub := ds.sub
	sub.mu.Lock()
	sub.ds = ds
	sub.f = ds.st.f
	// Events that reached the subscription before it was detached: keep
	// those the filter wants, in order.
	for _, ev := range sub.drainLocked() {
		if sub.f.wants(ev) {
			sub.addLocked(ev)
		}
	}
	run := len(sub.order) > 0
	sub.queued = run
	sub.mu.Unlock()
	b.mu.Unlock()
	if run {
		b.enqueue([]*subscriber{sub})
	}
	return true
}

// enqueue adds detached streams with pending events to the writers' queue
// (each is queued at most once: subscriber.queued) and starts writers up to
// maxListenWriters.
func (b *bus) enqueue(subs []*subscriber) {
	if len(subs) == 0 {
		return
	}
	b.qmu.Lock()
	b.runq = append(b.runq, subs...)
	start := min(maxListenWriters()-b.writers, len(b.runq)-b.qhead)
	b.writers += max(start, 0)
	b.qmu.Unlock()
	for range start {
		go b.writeStreams()
	}
}

// writeStreams is one of the bus's writers: it writes the pending events of
// queued detached streams until the queue is empty.
func (b *bus) writeStreams() {
	var w listenWriter
	for {
		b.qmu.Lock()
		if b.qhead == len(b.runq) {
			clear(b.runq)
			b.runq, b.qhead = b.runq[:0], 0
			b.writers--
			b.qmu.Unlock()
			return
		}
		sub := b.runq[b.qhead]
		b.runq[b.qhead] = nil
		b.qhead++
		b.qmu.Unlock()
		sub.ds.flush(&w, listenWriteSlice)
	}
}

// listenWriter is a writer's scratch, reused from stream to stream: the
// events taken from a stream and the bytes of one write.
type listenWriter struct {
	evs []event
	buf []byte
	try rawWrite
}

// take appends the events gathered since the last take to dst[:0] (the
// subscriber keeps its slice for the next ones); with none, the stream
// leaves the writers' queue (queued is cleared), so the next event queues
// it again.
func (sub *subscriber) take(dst []event) []event {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	dst = append(dst[:0], sub.order...)
	if cap(sub.order) > pendingScan {
		sub.order = nil // a burst's array is not kept
	} else {
		clear(sub.order)
		sub.order = sub.order[:0]
	}
	sub.pending = nil
	if len(dst) == 0 {
		sub.queued = false
	}
	return dst
}

// flush writes the stream's pending events until none is left, with w's
// scratch. With slice > 0 (a shared writer) no write blocks: what the
// socket does not take at once is handed, with the events after it, to a
// goroutine of its own (finishFlush), which keeps the stream until it is
// caught up.
func (ds *detachedStream) flush(w *listenWriter, slice time.Duration) {
	for {
		w.evs = ds.sub.take(w.evs)
		if len(w.evs) == 0 {
			return
		}
		if !ds.writeEvents(w, w.evs, slice) {
			return
		}
	}
}

// listenBatchBytes bounds one write of a stream's pending events (each
// event is one chunk; a batch holds at least one).
const listenBatchBytes = 32 << 10

// errStreamBusy reports a stream another goroutine is writing to.
var errStreamBusy = errors.New("weft: the stream is being written")

// writeEvents writes evs, as many chunks per write as fit in
// listenBatchBytes. It reports false when the stream was closed or handed
// to finishFlush (slice > 0 only): the caller then leaves it.
func (ds *detachedStream) writeEvents(w *listenWriter, evs []event, slice time.Duration) bool {
	for len(evs) > 0 {
		buf := w.buf[:0]
		i := 0
		for i < len(evs) && (i == 0 || len(buf) < listenBatchBytes) {
			buf = appendListenChunk(buf, evs[i].open, ds.tail)
			i++
		}
		w.buf = buf
		evs = evs[i:]
		n, err := ds.writeBatch(w, buf, slice)
		switch {
		case err == nil:
		case slice > 0 && (err == errStreamBusy || err == errWouldBlock || errors.Is(err, os.ErrDeadlineExceeded)) && !ds.closed.Load():
			// The scratch stays with this writer: the goroutine gets copies.
			go ds.finishFlush(slices.Clone(buf[n:]), slices.Clone(evs))
			return false
		default:
			ds.close()
			ds.sub.take(nil) // leave the queue
			return false
		}
	}
	return true
}

// writeBatch writes b: without blocking when slice > 0 (errStreamBusy when a
// keep-alive or task notification is being written, errWouldBlock or a
// deadline error when the socket does not take it all within slice), else
// within WriteTimeout. w is the writer's scratch (used when slice > 0).
func (ds *detachedStream) writeBatch(w *listenWriter, b []byte, slice time.Duration) (int, error) {
	if slice == 0 {
		ds.wmu.Lock()
	} else if !ds.wmu.TryLock() {
		return 0, errStreamBusy
	}
	defer ds.wmu.Unlock()
	if slice > 0 && ds.raw != nil {
		return ds.tryWriteLocked(w, b)
	}
	return ds.writeLocked(b, slice)
}

// finishFlush writes rest, the unwritten end of a write, and then evs,
// each within WriteTimeout, then keeps flushing the stream on this
// goroutine until it is caught up.
func (ds *detachedStream) finishFlush(rest []byte, evs []event) {
	if _, err := ds.writeBatch(nil, rest, 0); err != nil {
		ds.close()
		ds.sub.take(nil)
		return
	}
	var w listenWriter
	if ds.writeEvents(&w, evs, 0) {
		ds.flush(&w, 0)
	}
}

// writeLocked writes b with a deadline of slice (0: WriteTimeout). Caller
// holds ds.wmu. A closed stream writes nothing.
func (ds *detachedStream) writeLocked(b []byte, slice time.Duration) (int, error) {
	if ds.closed.Load() {
		return 0, net.ErrClosed
	}
	d := ds.s.opts.WriteTimeout
	if slice > 0 && slice < d {
		d = slice
	}
	_ = ds.conn.SetWriteDeadline(time.Now().Add(d))
	n, err := ds.conn.Write(b)
	if err == nil && ds.raw != nil {
		// The writers' attempts (tryWriteLocked) honour deadlines too.
		_ = ds.conn.SetWriteDeadline(time.Time{})
	}
	return n, err
}

// write writes b within WriteTimeout, closing the stream when it fails.
func (ds *detachedStream) write(b []byte) {
	ds.wmu.Lock()
	_, err := ds.writeLocked(b, 0)
	ds.wmu.Unlock()
	if err != nil {
		ds.close()
	}
}

// keepAlive writes one keep-alive comment and arms the next. A write in
// progress is as good as a comment: then nothing is written.
func (ds *detachedStream) keepAlive() {
	if ds.closed.Load() {
		return
	}
	if ds.wmu.TryLock() {
		_, err := ds.writeLocked(appendChunk(nil, ": keep-alive\n\n"), 0)
		ds.wmu.Unlock()
		if err != nil {
			ds.close()
			return
		}
	}
	ds.ka.Reset(ds.s.opts.KeepAlive)
}

// watch reads the connection until the client closes it (or sends more
// than maxIgnoredListenBytes), then ends the stream. It is the stream's only
// goroutine: a small buffer and a shallow stack.
func (ds *detachedStream) watch(ignored int) {
	var b [64]byte
	for ignored <= maxIgnoredListenBytes {
		n, err := ds.conn.Read(b[:])
		if err != nil {
			break
		}
		ignored += n
	}
	ds.close()
}

// taskLoop sends the notifications/tasks of the stream's task ids, each
// authorized again, until the stream ends.
func (ds *detachedStream) taskLoop() {
	ctx := ds.st.taskCtx
	for id := range ds.st.taskEvents {
		if !ds.st.taskIDs[id] || ds.closed.Load() {
			continue
		}
		f, ok := ds.s.taskFrame(ctx, ds.req, ds.st, id)
		if !ok {
			continue
		}
		b, err := appendFrame(append(make([]byte, 0, 256), "data: "...), f)
		if err != nil {
			continue
		}
		ds.write(appendChunk(nil, string(append(b, '\n', '\n'))))
	}
}

// close ends the stream without a closing result (the client left, or a
// write failed or timed out).
func (ds *detachedStream) close() {
	if ds.closed.Swap(true) {
		return
	}
	ds.ka.Stop()
	_ = ds.conn.Close()
	ds.st.release(ds.s)
}

// finish ends the stream at Shutdown: the closing result, the response's
// last chunk, and the connection closed.
func (ds *detachedStream) finish() {
	if ds.closed.Swap(true) {
		return
	}
	ds.ka.Stop()
	s := ds.s
	id := ds.id
	_, wire, buf, err := s.encodeResultIn(&EmptyResult{Meta: ds.st.subMeta}, eraModern, &id)
	if err == nil {
		msg := append(append(append(make([]byte, 0, len(wire)+16), "data: "...), wire...), '\n', '\n')
		out := append(appendChunk(nil, string(msg)), "0\r\n\r\n"...)
		s.putWire(buf)
		ds.wmu.Lock()
		_ = ds.conn.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		_, _ = ds.conn.Write(out)
		ds.wmu.Unlock()
	}
	_ = ds.conn.Close()
	ds.st.release(s)
}

// endDetached ends every detached stream with its closing result (Shutdown)
// and refuses those detached from now on (they end the same way), writing
// from up to maxListenWriters goroutines; it returns when all are written,
// or when ctx is done, after closing the connections of the rest.
func (b *bus) endDetached(ctx context.Context) error {
	b.mu.Lock()
	b.detachClosed = true
	var all []*detachedStream
	for sub := range b.subs {
		sub.mu.Lock()
		if sub.ds != nil {
			all = append(all, sub.ds)
		}
		sub.mu.Unlock()
	}
	b.mu.Unlock()
	if len(all) == 0 {
		return nil
	}
	next := make(chan *detachedStream)
	var wg sync.WaitGroup
	for range min(maxListenWriters(), len(all)) {
		wg.Go(func() {
			for ds := range next {
				ds.finish()
			}
		})
	}
	defer wg.Wait() // whatever was handed out is finished (each write bounded by WriteTimeout)
	defer close(next)
	for _, ds := range all {
		select {
		case next <- ds:
		case <-ctx.Done():
			// Out of time: the streams not handed out yet are closed, and
			// so are the connections of those being finished (a write
			// blocked on a client that stopped reading returns at once).
			for _, ds := range all {
				ds.close()
				_ = ds.conn.Close()
			}
			return ctx.Err()
		}
	}
	return nil
}

// appendListenChunk appends the SSE event of a listen notification (its
// shared encoding open and the stream's tail) as one HTTP/1.1 chunk.
func appendListenChunk(dst []byte, open, tail string) []byte {
	n := len("data: ") + len(open) + len(tail) + 2
	dst = strconv.AppendUint(dst, uint64(n), 16)
	dst = append(dst, "\r\ndata: "...)
	dst = append(dst, open...)
	dst = append(dst, tail...)
	return append(dst, "\n\n\r\n"...)
}

// appendChunk appends p as one HTTP/1.1 chunk.
func appendChunk(dst []byte, p string) []byte {
	dst = strconv.AppendUint(dst, uint64(len(p)), 16)
	dst = append(dst, '\r', '\n')
	dst = append(dst, p...)
	return append(dst, '\r', '\n')
}
