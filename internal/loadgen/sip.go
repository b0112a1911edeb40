package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// ProtocolSIP places SIP calls: an INVITE with an SDP offer of PCMU or
// PCMA to Config.SIPAddr, then RTP to the port the answer names, at the
// run's frame rate; the call ends with a BYE. The audio rides the raw
// dialect's client role, whose binary messages are the RTP payloads.
const ProtocolSIP = "sip"

// sipRole is SIP's server role as the run sees it: no endpoint path, the
// stream starts with the answer, the host paces.
type sipRole struct{}

func (sipRole) Name() string          { return ProtocolSIP }
func (sipRole) Path() string          { return "" }
func (sipRole) StartsOnConnect() bool { return true }
func (sipRole) Buffers() bool         { return false }
func (sipRole) NewSession(transport.SessionConfig) (transport.Session, error) {
	return nil, errors.New("loadgen: SIP's server role is the host's")
}

// sipProtocol is the protocol of a SIP run.
func (c Config) sipProtocol() (protocol, error) {
	raw, err := transport.LookupDialect(ProtocolRaw)
	if err != nil {
		return protocol{}, err
	}
	if c.SIPAddr == "" {
		return protocol{}, errors.New("loadgen: a SIP run needs the server's sip.listen address (SIPAddr, --sip-addr host:port)")
	}
	if _, err := netip.ParseAddrPort(c.SIPAddr); err != nil {
		return protocol{}, fmt.Errorf("loadgen: SIP address %q: want ip:port: %v", c.SIPAddr, err)
	}
	if f := c.Format; f != (codec.Format{}) && f != codec.Telephony && f != (codec.Format{Encoding: codec.Alaw, Rate: 8000}) {
		return protocol{}, fmt.Errorf("loadgen: SIP carries μ-law or A-law at 8 kHz, not %v", f)
	}
	return protocol{server: sipRole{}, client: raw, sip: true}, nil
}

// sipDialer places a run's SIP calls from one user agent, which also
// answers the host's BYEs.
type sipDialer struct {
	target netip.AddrPort
	local  netip.Addr
	dua    *sipgo.DialogUA
	ua     *sipgo.UserAgent
	pc     net.PacketConn
	route  string
	pt     uint8

	mu    sync.Mutex
	links map[string]*sipLink // by Call-ID
}

func newSIPDialer(cfg Config) (*sipDialer, error) {
	target := netip.MustParseAddrPort(cfg.SIPAddr)
	local := netip.MustParseAddr("127.0.0.1")
	if !target.Addr().IsLoopback() {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(target))
		if err != nil {
			return nil, err
		}
		local = c.LocalAddr().(*net.UDPAddr).AddrPort().Addr()
		c.Close()
	}
	pc, err := net.ListenPacket("udp", netip.AddrPortFrom(local, 0).String())
	if err != nil {
		return nil, err
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	// sipgo's own log lines (a socket's reference count at close) are
	// not the run's.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("voxhost-loadgen"),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(quiet)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(quiet)))
	if err != nil {
		pc.Close()
		return nil, err
	}
	client, err := sipgo.NewClient(ua, sipgo.WithClientAddr(net.JoinHostPort(local.String(), strconv.Itoa(port))))
	if err != nil {
		pc.Close()
		return nil, err
	}
	srv, err := sipgo.NewServer(ua)
	if err != nil {
		pc.Close()
		return nil, err
	}
	d := &sipDialer{target: target, local: local, ua: ua, pc: pc, route: cfg.Pipeline, pt: 0, links: map[string]*sipLink{},
		dua: &sipgo.DialogUA{Client: client, ContactHDR: sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: "loadgen", Host: local.String(), Port: port}}}}
	if cfg.Format.Encoding == codec.Alaw {
		d.pt = 8
	}
	srv.OnBye(func(req *sip.Request, tx sip.ServerTransaction) {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
		d.mu.Lock()
		l := d.links[req.CallID().Value()]
		d.mu.Unlock()
		if l != nil {
			l.hungUp()
		}
	})
	go func() { _ = srv.ServeUDP(pc) }()
	return d, nil
}

func (d *sipDialer) close() {
	_ = d.pc.Close()
	_ = d.ua.Close()
}

// sipLink is one SIP call's media: RTP both ways on a socket of its own.
type sipLink struct {
	d      *sipDialer
	dialog *sipgo.DialogClientSession
	conn   *net.UDPConn
	remote netip.AddrPort
	pkt    rtp.Packet
	out    [1500]byte
	in     [1500]byte
	ended  chan struct{}
	once   sync.Once
}

// dial places a call: INVITE, the answer, ACK. The time it takes is the
// call's set-up time.
func (d *sipDialer) dial(ctx context.Context) (*link, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(d.local, 0)))
	if err != nil {
		return nil, err
	}
	port := conn.LocalAddr().(*net.UDPAddr).Port
	enc := map[uint8]string{0: "PCMU", 8: "PCMA"}[d.pt]
	offer := fmt.Sprintf("v=0\r\no=loadgen 1 1 IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\nm=audio %d RTP/AVP %d 101\r\na=rtpmap:%d %s/8000\r\na=rtpmap:101 telephone-event/8000\r\na=ptime:20\r\na=sendrecv\r\n",
		d.local, d.local, port, d.pt, d.pt, enc)
	var hdrs []sip.Header
	if d.route != "" {
		hdrs = append(hdrs, sip.NewHeader("X-Voxhost-Route", d.route))
	}
	to := sip.Uri{Scheme: "sip", User: "loadgen", Host: d.target.Addr().String(), Port: int(d.target.Port())}
	dialog, err := d.dua.Invite(ctx, to, []byte(offer), hdrs...)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("INVITE: %w", err)
	}
	if err := dialog.WaitAnswer(ctx, sipgo.AnswerOptions{}); err != nil {
		conn.Close()
		_ = dialog.Close()
		var re *sipgo.ErrDialogResponse
		if errors.As(err, &re) {
			return nil, fmt.Errorf("INVITE: %d %s", re.Res.StatusCode, re.Res.Reason)
		}
		return nil, fmt.Errorf("INVITE: %w", err)
	}
	if err := dialog.Ack(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ACK: %w", err)
	}
	remote, err := answerAddr(dialog.InviteResponse.Body())
	if err != nil {
		conn.Close()
		bctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = dialog.Bye(bctx)
		cancel()
		return nil, err
	}
	l := &sipLink{d: d, dialog: dialog, conn: conn, remote: remote, ended: make(chan struct{})}
	l.pkt.Header = rtp.Header{Version: 2, PayloadType: d.pt, SSRC: uint32(port) * 2654435761}
	d.mu.Lock()
	d.links[dialog.InviteRequest.CallID().Value()] = l
	d.mu.Unlock()
	return &link{sip: l}, nil
}

// answerAddr is where an SDP answer asks for RTP.
func answerAddr(body []byte) (netip.AddrPort, error) {
	var sd sdp.SessionDescription
	if err := sd.Unmarshal(body); err != nil {
		return netip.AddrPort{}, fmt.Errorf("answer: %w", err)
	}
	conn := sd.ConnectionInformation
	for _, m := range sd.MediaDescriptions {
		if m.MediaName.Media != "audio" {
			continue
		}
		if m.ConnectionInformation != nil {
			conn = m.ConnectionInformation
		}
		if conn == nil || conn.Address == nil {
			break
		}
		ip, err := netip.ParseAddr(strings.TrimSpace(conn.Address.Address))
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("answer: c= %q: %v", conn.Address.Address, err)
		}
		return netip.AddrPortFrom(ip, uint16(m.MediaName.Port.Value)), nil
	}
	return netip.AddrPort{}, errors.New("answer: no audio stream")
}

// read returns the next RTP payload of the call's codec as a binary
// message; io.EOF once the host hung up.
func (l *sipLink) read(buf *[]byte) (transport.MessageType, []byte, error) {
	var p rtp.Packet
	for {
		n, _, err := l.conn.ReadFromUDPAddrPort(l.in[:])
		if err != nil {
			select {
			case <-l.ended:
				return 0, nil, io.EOF
			default:
				return 0, nil, err
			}
		}
		if p.Unmarshal(l.in[:n]) != nil || p.PayloadType != l.d.pt {
			continue // telephone-events, comfort silence of another type
		}
		*buf = append((*buf)[:0], p.Payload...)
		return transport.Binary, *buf, nil
	}
}

// write sends a binary message as one RTP packet; the raw dialect's text
// events have no place in RTP.
func (l *sipLink) write(typ transport.MessageType, msg []byte) error {
	if typ != transport.Binary {
		return nil
	}
	l.pkt.Payload = msg
	n, err := l.pkt.MarshalTo(l.out[:])
	if err != nil {
		return err
	}
	l.pkt.SequenceNumber++
	l.pkt.Timestamp += uint32(len(msg))
	_, err = l.conn.WriteToUDPAddrPort(l.out[:n], l.remote)
	return err
}

// hungUp is the host's BYE.
func (l *sipLink) hungUp() {
	l.once.Do(func() {
		close(l.ended)
		_ = l.conn.Close()
	})
}

// close hangs up and frees the socket. A call is hung up with a BYE even
// when it is cut short (replies overdue): without one the host would hold
// it until its media timeout.
func (l *sipLink) close() {
	select {
	case <-l.ended:
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = l.dialog.Bye(ctx)
		cancel()
	}
	l.hungUp()
	l.d.mu.Lock()
	delete(l.d.links, l.dialog.InviteRequest.CallID().Value())
	l.d.mu.Unlock()
	_ = l.dialog.Close()
}
