//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package httpguard

// Where the door cannot peek at a socket, every connection goes on to
// net/http.
func peek(uintptr, []byte) int { return 0 }

func consume(uintptr, []byte) {}

func send(uintptr, []byte) {}
