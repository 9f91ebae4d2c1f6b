//go:build unix

package weft

import (
	"io"
	"net"
	"syscall"
)

// rawConnOf is the raw connection of a TCP or Unix socket, for writes that
// never block (tryWriteLocked); nil for any other net.Conn (a listener's
// wrapper), which the writers bound with a deadline instead.
func rawConnOf(c net.Conn) syscall.RawConn {
	var sc syscall.Conn
	switch c := c.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// rawWrite is one writer's attempt at a write that does not block, reused
// from stream to stream: its callback (fn, the method value of do) is made
// once per writer, so an attempt allocates nothing.
type rawWrite struct {
	b   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// do writes what the socket takes of b at once; it never waits for the
// socket (it reports true to RawWrite whatever happened).
func (rw *rawWrite) do(fd uintptr) bool {
	for rw.n < len(rw.b) {
		m, e := writeNonblocking(int(fd), rw.b[rw.n:])
		if m > 0 {
			rw.n += m
		}
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			rw.err = errWouldBlock
		case e != nil:
			rw.err = e
		case m <= 0:
			rw.err = io.ErrShortWrite
		}
		if rw.err != nil {
			break
		}
	}
	return true
}

// tryWriteLocked writes what the socket takes of b at once, without
// blocking: errWouldBlock when that is not all. Caller holds ds.wmu; w is
// the writer's scratch.
func (ds *detachedStream) tryWriteLocked(w *listenWriter, b []byte) (int, error) {
	if ds.closed.Load() {
		return 0, net.ErrClosed
	}
	rw := &w.try
	if rw.fn == nil {
		rw.fn = rw.do
	}
	rw.b, rw.n, rw.err = b, 0, nil
	err := ds.raw.Write(rw.fn)
	n, werr := rw.n, rw.err
	rw.b, rw.err = nil, nil
	if err != nil {
		return n, err
	}
	return n, werr
}
