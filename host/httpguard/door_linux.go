package httpguard

import (
	"net"
	"syscall"
)

// deferAccept has the kernel hand over a connection of ln only once its
// first data has arrived (TCP_DEFER_ACCEPT, up to the given seconds), so
// that the door finds a request where, in a surge, a connection is
// otherwise accepted in the microseconds between the client's handshake
// and its request. HTTP clients speak first, so nothing waits for it.
func deferAccept(ln net.Listener, seconds int) {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT, seconds)
	})
}
