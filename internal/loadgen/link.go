package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/transport"
)

// maxMessage bounds a message a call reads from the server: ten times the
// server's own default limit, so that only a runaway message is refused.
const maxMessage = 640 << 10

// link is one call's connection: a WebSocket, or a TCP stream whose
// protocol frames its own messages (AudioSocket). Its reader is one
// goroutine; writes are one at a time (call.wmu), and close may come from
// any goroutine.
type link struct {
	ws     *websocket.Conn
	tcp    net.Conn
	r      *bufio.Reader
	framer transport.Framer
	sip    *sipLink
	once   sync.Once
}

// dial opens a connection to the run's server.
func (r *runner) dial(ctx context.Context) (*link, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DialTimeout)
	defer cancel()
	if r.sip != nil {
		return r.sip.dial(ctx)
	}
	if f := r.proto.framer; f != nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", r.url)
		if err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
		return &link{tcp: conn, r: bufio.NewReaderSize(conn, 4096), framer: f}, nil
	}
	conn, resp, err := websocket.Dial(ctx, r.url, &websocket.DialOptions{HTTPHeader: r.header, Subprotocols: transport.SubprotocolsOf(r.proto.client)})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, fmt.Errorf("connect: HTTP %d", resp.StatusCode)
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	conn.SetReadLimit(maxMessage)
	return &link{ws: conn}, nil
}

// read reads one whole message into *buf, growing it as needed up to
// maxMessage; a protocol decodes whole messages only.
func (l *link) read(buf *[]byte) (transport.MessageType, []byte, error) {
	if l.sip != nil {
		return l.sip.read(buf)
	}
	if l.framer != nil {
		return l.framer.ReadMessage(l.r, buf, maxMessage)
	}
	typ, rd, err := l.ws.Reader(bg)
	if err != nil {
		return 0, nil, err
	}
	b, n := *buf, 0
	for {
		if n == len(b) {
			b = append(b, make([]byte, len(b))...) // the read limit bounds it
			*buf = b
		}
		m, err := rd.Read(b[n:])
		n += m
		if err == io.EOF {
			return transport.MessageType(typ), b[:n], nil
		}
		if err != nil {
			return 0, nil, err
		}
	}
}

// write sends one message.
func (l *link) write(typ transport.MessageType, msg []byte) error {
	if l.sip != nil {
		return l.sip.write(typ, msg)
	}
	if l.tcp != nil {
		_, err := l.tcp.Write(msg)
		return err
	}
	return l.ws.Write(bg, websocket.MessageType(typ), msg)
}

// close ends the connection: with a WebSocket's close handshake when
// normal, at once otherwise. A TCP stream just closes.
func (l *link) close(normal bool) {
	l.once.Do(func() {
		switch {
		case l.sip != nil:
			l.sip.close()
		case l.tcp != nil:
			_ = l.tcp.Close()
		case normal:
			_ = l.ws.Close(websocket.StatusNormalClosure, "")
		default:
			_ = l.ws.CloseNow()
		}
	})
}

// readError says how a read ended, for the call's error: a WebSocket's
// close status and reason as coder/websocket words them, and the end of a
// TCP stream in words.
func readError(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("the server closed the connection")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the server closed the connection inside a frame")
	}
	return err
}
