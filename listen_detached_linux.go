package weft

import (
	"syscall"
	"unsafe"
)

// writeNonblocking writes b to fd, a socket in non-blocking mode, as one
// write system call. It is a raw system call: the call cannot block, so the
// goroutine keeps its P, and the scheduler's entry and exit bookkeeping
// (and sysmon's retaking of a P in a system call) are spared on the
// fan-out's hot path, one call per stream.
func writeNonblocking(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
