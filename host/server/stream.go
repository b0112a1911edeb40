package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/transport"
)

// streamConn is a caller leg over a byte stream (TCP) whose protocol
// frames its own messages: Asterisk's AudioSocket.
type streamConn struct {
	c      net.Conn
	r      *bufio.Reader
	framer transport.Framer
	once   sync.Once
}

func (s *streamConn) read(buf *[]byte, limit int) (transport.MessageType, []byte, error) {
	typ, msg, err := s.framer.ReadMessage(s.r, buf, limit)
	if errors.Is(err, io.EOF) {
		err = errPeerClosed
	}
	var perr *transport.ProtocolError
	if errors.As(err, &perr) && perr.Limit {
		err = errTooBig
	}
	return typ, msg, err
}

func (s *streamConn) write(_ transport.MessageType, msg []byte) error {
	_, err := s.c.Write(msg)
	return err
}

// close ends the stream: the protocol's own end of call (a hang-up frame)
// went out before, and a byte stream has no status to send.
func (s *streamConn) close(websocket.StatusCode, string) { s.closeNow() }

func (s *streamConn) closeNow() { s.once.Do(func() { _ = s.c.Close() }) }

// ServeStream accepts the calls of proto, a protocol that frames its own
// messages over a byte stream (transport.Framer: Asterisk's AudioSocket),
// on l until ctx ends, each on the route named route ("" for the
// default). Such a protocol has no authentication, origins or query: bind
// l to an address only the PBX can reach. Calls are admitted, limited and
// drained as WebSocket calls are, and capped per source address as they
// are (Options.HTTP.MaxConnsPerIP); Serve's drain covers them.
func (s *Server) ServeStream(ctx context.Context, l net.Listener, proto transport.Protocol, route string) error {
	framer, ok := proto.(transport.Framer)
	if !ok {
		return fmt.Errorf("server: %s frames no messages of its own; it runs over WebSocket", proto.Name())
	}
	if route != "" {
		if r, _ := s.route(route, 0); r == nil {
			names, _ := s.Routes()
			return fmt.Errorf("server: unknown pipeline %q for %s (have %v)", route, proto.Name(), names)
		}
	}
	// A PBX's calls all come from its address: the cap is the one
	// WebSocket connections have (by default max_calls and some), which
	// stops a flood from one address before it costs a goroutine each.
	l = s.opts.HTTP.Listener(l, func(net.Addr) { s.metrics.rejected.WithLabelValues("conns_per_ip").Inc() })
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go s.serveStream(conn, framer, proto, route)
	}
}

// streamReadBuffer is a byte-stream call's read buffer: large enough to
// take in a whole frame the call then refuses (AudioSocket's at 48 kHz),
// so that closing the socket after the hang-up leaves nothing unread, which
// would reset the connection instead of ending it.
const streamReadBuffer = 4 << 10

func (s *Server) serveStream(conn net.Conn, framer transport.Framer, proto transport.Protocol, route string) {
	if why, msg, ok := s.admit(route); !ok {
		// No status to send over a byte stream: the PBX gets the
		// protocol's hang-up, and the log and metric say why.
		s.metrics.rejected.WithLabelValues(why).Inc()
		s.log.Info("call refused", "protocol", proto.Name(), "remote", conn.RemoteAddr().String(), "reason", msg)
		if sess, err := proto.NewSession(transport.SessionConfig{MaxFrameMs: s.opts.MaxFrameMs}); err == nil {
			if _, hangup, ok := sess.Hangup(); ok {
				_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = conn.Write(hangup)
			}
		}
		_ = conn.Close()
		return
	}
	defer s.release()
	c, err := s.newCall(proto, route, nil, conn.RemoteAddr().String())
	if err != nil {
		s.log.Info("call refused", "protocol", proto.Name(), "remote", conn.RemoteAddr().String(), "err", err)
		_ = conn.Close()
		return
	}
	defer c.releaseSetup()
	c.conn = &streamConn{c: conn, r: bufio.NewReaderSize(conn, streamReadBuffer), framer: framer}
	s.serve(c)
}
