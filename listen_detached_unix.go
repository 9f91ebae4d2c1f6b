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

// tryWriteLocked writes what the socket takes of b at once, without
// blocking: errWouldBlock when that is not all. Caller holds ds.wmu.
func (ds *detachedStream) tryWriteLocked(b []byte) (int, error) {
	if ds.closed.Load() {
		return 0, net.ErrClosed
	}
	n := 0
	var werr error
	err := ds.raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, e := syscall.Write(int(fd), b[n:])
			if m > 0 {
				n += m
			}
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				werr = errWouldBlock
			case e != nil:
				werr = e
			case m <= 0:
				werr = io.ErrShortWrite
			}
			if werr != nil {
				break
			}
		}
		return true // never wait for the socket here
	})
	if err != nil {
		return n, err
	}
	return n, werr
}
