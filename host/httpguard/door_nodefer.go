//go:build !linux

package httpguard

import "net"

// deferAccept is Linux's; elsewhere the door refuses the connections
// whose request has arrived when they are accepted, and net/http the rest.
func deferAccept(net.Listener, int) {}
