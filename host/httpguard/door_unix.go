//go:build linux || darwin || freebsd || netbsd || openbsd

package httpguard

import "syscall"

// peek reads what has arrived on fd into p without consuming it or
// waiting; 0 if nothing has.
func peek(fd uintptr, p []byte) int {
	n, _, err := syscall.Recvfrom(int(fd), p, syscall.MSG_PEEK)
	if err != nil {
		return 0
	}
	return n
}

// consume reads what has arrived, up to len(p) bytes, without waiting.
func consume(fd uintptr, p []byte) { _, _, _ = syscall.Recvfrom(int(fd), p, syscall.MSG_DONTWAIT) }

// send writes p without waiting: a fresh connection's send buffer takes
// it whole; a client that does not read loses its answer, not the door's time.
func send(fd uintptr, p []byte) { _, _ = syscall.Write(int(fd), p) }
