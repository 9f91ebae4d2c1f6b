//go:build !unix

package weft

import (
	"net"
	"syscall"
)

// rawConnOf is nil here: the writers bound their writes with a deadline
// instead (tryWriteLocked is not used).
func rawConnOf(net.Conn) syscall.RawConn { return nil }

// tryWriteLocked is not used without a raw connection.
func (ds *detachedStream) tryWriteLocked(b []byte) (int, error) {
	return ds.writeLocked(b, listenWriteSlice)
}
