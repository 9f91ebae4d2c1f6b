//go:build !unix

package weft

import (
	"net"
	"syscall"
)

// rawConnOf is nil here: the writers bound their writes with a deadline
// instead (tryWriteLocked is not used).
func rawConnOf(net.Conn) syscall.RawConn { return nil }

// rawWrite holds nothing here (see the unix version).
type rawWrite struct{}

// tryWriteLocked is not used without a raw connection.
func (ds *detachedStream) tryWriteLocked(_ *listenWriter, b []byte) (int, error) {
	return ds.writeLocked(b, listenWriteSlice)
}
