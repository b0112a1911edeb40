package server

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/transport"
)

// legConn is a caller leg's connection: a WebSocket, or a stream socket
// whose protocol frames its own messages (AudioSocket over TCP). The call
// loop reads from one goroutine; writes come from the call's goroutines
// one at a time (callerMu).
type legConn interface {
	// read reads one whole message into *buf, growing it up to limit
	// bytes: errTooBig past it, errPeerClosed when the peer ended the
	// connection in order.
	read(buf *[]byte, limit int) (transport.MessageType, []byte, error)
	// write sends one message.
	write(typ transport.MessageType, msg []byte) error
	// close ends the connection with a status and reason where the
	// transport has them. It never blocks: a peer that does not answer
	// the close is cut off after a moment.
	close(status websocket.StatusCode, reason string)
	// closeNow cuts the connection at once.
	closeNow()
}

// errPeerClosed is a read's error when the peer closed the connection in
// order: a WebSocket close of normal closure or going away, or end of
// stream.
var errPeerClosed = errors.New("the peer closed the connection")

// Buffers of a hijacked caller connection, sized to a call's messages:
// coder/websocket reads and writes every frame through them, and net/http's
// own are 4 KiB each. A read larger than the buffer goes straight into the
// message; a write larger than it costs a second write system call, which
// only the 200 ms messages of Genesys and Exotel reach.
const (
	hijackReadBytes  = 1 << 10
	hijackWriteBytes = 2 << 10
)

// leanHijack is the ResponseWriter an upgrade is given: its Hijack hands
// coder/websocket the connection with buffers of hijackReadBytes and
// hijackWriteBytes instead of net/http's, which the connection then no
// longer holds (5 KiB per call; RATIONALE.md, "Density").
type leanHijack struct{ http.ResponseWriter }

func (w leanHijack) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		conn.Close()
		return nil, nil, err
	}
	if brw.Reader.Buffered() > 0 {
		// The client wrote frames with its request, and net/http read them
		// with it: they are in its reader, where coder/websocket looks for
		// them. Rare enough to keep its buffers for.
		return conn, brw, nil
	}
	return conn, bufio.NewReadWriter(bufio.NewReaderSize(conn, hijackReadBytes), bufio.NewWriterSize(conn, hijackWriteBytes)), nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w leanHijack) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wsConn is a caller leg over coder/websocket.
type wsConn struct{ c *websocket.Conn }

func (w wsConn) read(buf *[]byte, limit int) (transport.MessageType, []byte, error) {
	typ, msg, err := readMessage(w.c, buf, limit)
	if err != nil { // CloseStatus allocates: not on the frame path
		if st := websocket.CloseStatus(err); st == websocket.StatusNormalClosure || st == websocket.StatusGoingAway {
			err = errPeerClosed
		}
	}
	return transport.MessageType(typ), msg, err
}

func (w wsConn) write(typ transport.MessageType, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageType(typ), msg)
}

func (w wsConn) close(status websocket.StatusCode, reason string) { closeSocket(w.c, status, reason) }

func (w wsConn) closeNow() { _ = w.c.CloseNow() }

// closeSocket closes conn with status and reason. The close handshake
// waits for the peer's close frame; whoever ends a call must not block on
// it, so the peer is given a moment and then the socket goes.
func closeSocket(conn *websocket.Conn, status websocket.StatusCode, reason string) {
	if status == websocket.StatusAbnormalClosure {
		_ = conn.CloseNow()
		return
	}
	go func() { _ = conn.Close(status, closeReason(reason)) }()
	time.AfterFunc(closeGrace, func() { _ = conn.CloseNow() })
}

// closeGrace is how long a peer has to answer a close.
const closeGrace = 2 * time.Second
