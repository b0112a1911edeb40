package server

import (
	"errors"
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
