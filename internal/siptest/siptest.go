// Package siptest places SIP calls for tests with a user agent of its
// own (sipgo), so that a test can send and read the RTP and RTCP of a
// call to a host's SIP endpoint packet by packet.
package siptest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
)

// Call is a call a test places to a host's SIP endpoint with a user
// agent of its own (sipgo), from loopback: the RTP and RTCP both ways are
// the test's to send and read packet by packet, which SIPp's scenarios
// cannot check.
type Call struct {
	// RTP is the caller's media socket: the host's RTP arrives on it.
	RTP *net.UDPConn
	// Remote is where the host's answer asks for RTP.
	Remote netip.AddrPort

	t      testing.TB
	dialog *sipgo.DialogClientSession
	rtcp   *net.UDPConn
	out    rtp.Packet
}

// EventPT is the payload type a Call offers telephone-event/8000 as.
const EventPT = 101

// Dial calls route at the host's SIP address, offering PCMU and
// telephone-events; it answers the host's BYE, and hangs up at the end of
// the test if the call is still up.
func Dial(t testing.TB, addr netip.AddrPort, route string) *Call {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("voxhost-test"),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(quiet)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(quiet)))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sigPort := sig.LocalAddr().(*net.UDPAddr).Port
	client, err := sipgo.NewClient(ua, sipgo.WithClientAddr(fmt.Sprintf("127.0.0.1:%d", sigPort)))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sipgo.NewServer(ua)
	if err != nil {
		t.Fatal(err)
	}
	srv.OnBye(func(req *sip.Request, tx sip.ServerTransaction) {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
	})
	go func() { _ = srv.ServeUDP(sig) }()
	media, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	control, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	offer := fmt.Sprintf("v=0\r\no=test 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"+
		"m=audio %d RTP/AVP 0 %d\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:%d telephone-event/8000\r\na=fmtp:%d 0-15\r\na=sendrecv\r\n",
		media.LocalAddr().(*net.UDPAddr).Port, EventPT, EventPT, EventPT)
	dua := &sipgo.DialogUA{Client: client, ContactHDR: sip.ContactHeader{
		Address: sip.Uri{Scheme: "sip", User: "test", Host: "127.0.0.1", Port: sigPort}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dialog, err := dua.Invite(ctx, sip.Uri{Scheme: "sip", User: route, Host: addr.Addr().String(), Port: int(addr.Port())}, []byte(offer))
	if err != nil {
		t.Fatal(err)
	}
	if err := dialog.WaitAnswer(ctx, sipgo.AnswerOptions{}); err != nil {
		t.Fatalf("INVITE: %v", err)
	}
	if err := dialog.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	remote, err := answerAddr(dialog.InviteResponse.Body())
	if err != nil {
		t.Fatal(err)
	}
	c := &Call{RTP: media, Remote: remote, t: t, dialog: dialog, rtcp: control}
	c.out.Header = rtp.Header{Version: 2, PayloadType: 0, SSRC: 0x7e57ca11}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = dialog.Bye(ctx)
		cancel()
		_ = dialog.Close()
		media.Close()
		control.Close()
		sig.Close()
		ua.Close()
	})
	return c
}

// answerAddr is where the host's SDP answer asks for RTP: its
// session's c= address and its one audio stream's port.
func answerAddr(body []byte) (netip.AddrPort, error) {
	var sd sdp.SessionDescription
	if err := sd.Unmarshal(body); err != nil {
		return netip.AddrPort{}, fmt.Errorf("answer: %w", err)
	}
	if sd.ConnectionInformation == nil || sd.ConnectionInformation.Address == nil || len(sd.MediaDescriptions) != 1 {
		return netip.AddrPort{}, fmt.Errorf("answer without a session address and one stream:\n%s", body)
	}
	ip, err := netip.ParseAddr(sd.ConnectionInformation.Address.Address)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("answer: %w", err)
	}
	return netip.AddrPortFrom(ip, uint16(sd.MediaDescriptions[0].MediaName.Port.Value)), nil
}

// SendAudio sends one frame of μ-law to the host as the call's next RTP
// packet. A goroutine of the test's may send, one at a time: a failure is
// reported with Errorf.
func (c *Call) SendAudio(ulaw []byte) {
	c.out.Payload = ulaw
	b, err := c.out.Marshal()
	if err == nil {
		_, err = c.RTP.WriteToUDPAddrPort(b, c.Remote)
	}
	if err != nil {
		c.t.Errorf("sending RTP: %v", err)
	}
	c.out.SequenceNumber++
	c.out.Timestamp += uint32(len(ulaw))
}

// Skip leaves out the caller's next n packets of 20 ms, as a network
// that loses them would: the host sees the gap in their numbers.
func (c *Call) Skip(n int) {
	c.out.SequenceNumber += uint16(n)
	c.out.Timestamp += uint32(n * 160)
}

// ReadRTP reads the host's next RTP packet, within a deadline.
func (c *Call) ReadRTP() *rtp.Packet {
	c.t.Helper()
	buf := make([]byte, 1500)
	_ = c.RTP.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := c.RTP.Read(buf)
	if err != nil {
		c.t.Fatalf("no RTP from the host: %v", err)
	}
	var p rtp.Packet
	if err := p.Unmarshal(buf[:n]); err != nil {
		c.t.Fatal(err)
	}
	return &p
}

// SendReport sends the host's RTCP port a receiver report of the host's
// stream ssrc: fractionLost/256 of its packets lost, jitter in samples.
// Like SendAudio, it may be called from a goroutine of the test's.
func (c *Call) SendReport(ssrc uint32, fractionLost uint8, jitter uint32) {
	rr := &rtcp.ReceiverReport{SSRC: c.out.SSRC, Reports: []rtcp.ReceptionReport{{SSRC: ssrc, FractionLost: fractionLost, Jitter: jitter}}}
	b, err := rr.Marshal()
	if err == nil {
		_, err = c.rtcp.WriteToUDPAddrPort(b, netip.AddrPortFrom(c.Remote.Addr(), c.Remote.Port()+1))
	}
	if err != nil {
		c.t.Errorf("sending RTCP: %v", err)
	}
}
