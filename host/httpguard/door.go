package httpguard

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Door returns ln with a refusal at the door. Each connection it accepts
// is looked at before net/http sees it: if the client's whole request
// head has already arrived, its request line is shown to judge. When
// judge returns an answer (Answer formats one) the head is consumed, the
// answer written and the connection closed, in the accepting goroutine.
// When it holds the request instead, the connection goes on marked as
// held, and Let tells net/http's ConnState hook of it once its request
// has been read: the connections between the door and their handler are
// what a judge must count, since a surge's are accepted far faster than
// their handlers run. Anything else — no data yet, a head larger than the
// door reads, a connection that is not a plain socket (TLS) — goes on to
// net/http as before.
//
// That is what a surge costs the calls already admitted: net/http spends
// a goroutine, a grown stack, buffers, a parsed request, headers and a
// response on every connection it serves, and a refusal that takes that
// path is paid for by the frames of the admitted calls queued behind it on
// the same core (RATIONALE.md, "A surge refused at the door"). The door
// reads and writes without blocking, so a slow client cannot stall the
// accept loop; Accept is called from one goroutine, as net/http does. On
// Linux the listener hands over a connection only once its first data has
// arrived (TCP_DEFER_ACCEPT), so the head is there to judge.
func Door(ln net.Listener, judge func(method, target []byte) (answer []byte, hold bool)) net.Listener {
	deferAccept(ln, doorDeferSeconds)
	return &door{Listener: ln, judge: judge, head: make([]byte, doorHeadBytes)}
}

// doorDeferSeconds is how long the kernel holds a connection that has
// sent nothing before handing it over anyway: net/http's ReadHeaderTimeout
// then bounds it as before.
const doorDeferSeconds = 5

// doorHeadBytes is the largest request head the door reads: a WebSocket
// upgrade's is ~300 bytes; a larger one goes on to net/http.
const doorHeadBytes = 2048

type door struct {
	net.Listener
	judge func(method, target []byte) ([]byte, bool)
	head  []byte // owned by the accepting goroutine
}

func (d *door) Accept() (net.Conn, error) {
	for {
		c, err := d.Listener.Accept()
		if err != nil {
			return nil, err
		}
		switch answer, hold, raw := d.look(c); {
		case answer != nil:
			d.refuse(c, raw, answer)
		case hold:
			return &heldConn{Conn: c}, nil
		default:
			return c, nil
		}
	}
}

// look judges c's request if its head has arrived.
func (d *door) look(c net.Conn) (answer []byte, hold bool, raw syscall.RawConn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false, nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, false, nil
	}
	n := 0
	if raw.Read(func(fd uintptr) bool { n = peek(fd, d.head); return true }) != nil || n <= 0 {
		return nil, false, nil
	}
	head := d.head[:n]
	if !bytes.Contains(head, []byte("\r\n\r\n")) {
		return nil, false, nil
	}
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	method, rest, ok1 := bytes.Cut(line, []byte(" "))
	target, _, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 {
		return nil, false, nil
	}
	answer, hold = d.judge(method, target)
	return answer, hold, raw
}

// refuse writes answer on c and closes it. What c sent is consumed first
// so that the close is a FIN after the answer, not a reset for unread
// data that could overtake it.
func (d *door) refuse(c net.Conn, raw syscall.RawConn, answer []byte) {
	_ = raw.Read(func(fd uintptr) bool { consume(fd, d.head); return true })
	_ = raw.Write(func(fd uintptr) bool { send(fd, answer); return true })
	_ = c.Close()
}

// heldConn is a connection whose request the door's judge held.
type heldConn struct {
	net.Conn
	let atomic.Bool
}

// CloseWrite lets net/http half-close the connection as it does a bare
// TCP one.
func (c *heldConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Let says, once, of a connection as net/http's ConnState sees it, that
// it was held at the door: true the first time it is asked of a held
// connection (through the cap on a source's connections, which wraps it),
// false after and for any other.
func Let(c net.Conn) bool {
	if cc, ok := c.(*countedConn); ok {
		c = cc.Conn
	}
	h, ok := c.(*heldConn)
	return ok && h.let.CompareAndSwap(false, true)
}

// Answer is a complete HTTP/1.1 response refusing a request: status, a
// Retry-After of retryAfter seconds if it is not empty, the connection
// closed, and msg as a plain-text body, as http.Error writes it.
func Answer(status int, retryAfter, msg string) []byte {
	b := make([]byte, 0, 160+len(msg))
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n"...)
	if retryAfter != "" {
		b = append(b, "Retry-After: "...)
		b = append(b, retryAfter...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(msg)+1), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, msg...)
	return append(b, '\n')
}
