//go:build unix && !linux

package weft

import "syscall"

// writeNonblocking writes b to fd, a socket in non-blocking mode.
func writeNonblocking(fd int, b []byte) (int, error) { return syscall.Write(fd, b) }
