package main

import (
	"bytes"
	"fmt"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// fanReader holds the client ends of many idle streams and reads one
// fan-out's event from all of them with one epoll loop on one goroutine.
//
// The reading client shares the machine's two CPUs with the server, so its
// own cost is part of a fan-out's measured time. A goroutine per stream
// costs a wake-up, a scheduling and a cold stack per stream; this loop
// costs one read system call per stream, and when fewer than
// fanReadBatch streams are ready it naps for fanReadNap (instead of being
// woken by every stream that becomes readable), which bounds how late it
// can notice the last stream.
type fanReader struct {
	ep   int
	fds  []int
	seen [][]byte // per stream: what it has read of the awaited event so far
	got  []bool
	evs  []syscall.EpollEvent
	buf  []byte
}

const (
	fanReadBatch = 64
	fanReadNap   = 200 * time.Microsecond
	// fanReadMax bounds what a stream may send before the awaited event.
	fanReadMax = 64 << 10
)

// newFanReader takes over conns: each is replaced by a duplicate of its
// descriptor, registered (edge-triggered) with an epoll instance of the
// reader's own, and the net.Conn is closed, so Go's poller no longer
// watches it. The streams must have nothing buffered on the client side.
func newFanReader(conns []net.Conn) (*fanReader, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	r := &fanReader{ep: ep, seen: make([][]byte, len(conns)), got: make([]bool, len(conns)),
		evs: make([]syscall.EpollEvent, 512), buf: make([]byte, 4096)}
	for i, c := range conns {
		sc, ok := c.(syscall.Conn)
		if !ok {
			r.close()
			return nil, fmt.Errorf("stream %d: %T has no descriptor", i, c)
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			r.close()
			return nil, err
		}
		fd := -1
		var derr error
		if err := rc.Control(func(s uintptr) { fd, derr = syscall.Dup(int(s)) }); err != nil || derr != nil {
			r.close()
			return nil, fmt.Errorf("stream %d: dup: %v %v", i, err, derr)
		}
		c.Close()
		r.fds = append(r.fds, fd)
		if err := syscall.SetNonblock(fd, true); err != nil {
			r.close()
			return nil, err
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | (syscall.EPOLLET & 0xffffffff), Fd: int32(i)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			r.close()
			return nil, fmt.Errorf("stream %d: epoll_ctl: %w", i, err)
		}
	}
	return r, nil
}

// await returns once every stream has read marker (each stream's bytes
// are searched as they come, across reads), or fails when a stream ends,
// sends more than fanReadMax bytes without it, or deadline passes.
func (r *fanReader) await(marker []byte, deadline time.Time) error {
	clear(r.got)
	left := len(r.fds)
	for left > 0 {
		n, err := r.poll()
		if err != nil {
			return err
		}
		for _, ev := range r.evs[:n] {
			i := int(ev.Fd)
			found, err := r.read(i, marker)
			if err != nil {
				return fmt.Errorf("stream %d: %w", i, err)
			}
			if found && !r.got[i] {
				r.got[i] = true
				left--
			}
		}
		if n < fanReadBatch {
			if time.Now().After(deadline) {
				return fmt.Errorf("%d of %d streams had not read %q by the deadline", left, len(r.fds), marker)
			}
			time.Sleep(fanReadNap)
		}
	}
	return nil
}

// poll takes the ready streams without waiting: epoll_wait with a zero
// timeout never blocks, so it is a raw system call.
func (r *fanReader) poll() (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(r.ep), uintptr(unsafe.Pointer(&r.evs[0])), uintptr(len(r.evs)), 0, 0, 0)
	switch e {
	case 0:
		return int(n), nil
	case syscall.EINTR:
		return 0, nil
	}
	return 0, fmt.Errorf("epoll_wait: %w", e)
}

// read drains stream i (edge-triggered: until a short read or EAGAIN) and
// reports whether what it has read since its last marker now holds one.
func (r *fanReader) read(i int, marker []byte) (bool, error) {
	found := false
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(r.fds[i]), uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)))
		switch {
		case e == syscall.EAGAIN:
			return found, nil
		case e == syscall.EINTR:
			continue
		case e != 0:
			return found, e
		case n == 0:
			return found, fmt.Errorf("the server closed the stream")
		}
		r.seen[i] = append(r.seen[i], r.buf[:n]...)
		if bytes.Contains(r.seen[i], marker) {
			found = true
			r.seen[i] = r.seen[i][:0]
		} else if len(r.seen[i]) > fanReadMax {
			return found, fmt.Errorf("%d bytes without %q", len(r.seen[i]), marker)
		}
		if int(n) < len(r.buf) {
			return found, nil
		}
	}
}

// close closes every descriptor the reader holds.
func (r *fanReader) close() {
	for _, fd := range r.fds {
		syscall.Close(fd)
	}
	r.fds = nil
	syscall.Close(r.ep)
}
