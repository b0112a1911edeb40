package sip

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// peer is the far end of a call's RTP: a socket that sends and reads.
type peer struct {
	t    *testing.T
	conn *net.UDPConn
	seq  uint16
	ts   uint32
	ssrc uint32
}

func newPeer(t *testing.T) *peer {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &peer{t: t, conn: c, ssrc: 0x1234}
}

func (p *peer) addr() netip.AddrPort { return p.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (p *peer) send(to netip.AddrPort, pt uint8, payload []byte) {
	pkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: pt, SequenceNumber: p.seq, Timestamp: p.ts, SSRC: p.ssrc}, Payload: payload}
	b, _ := pkt.Marshal()
	p.seq++
	p.ts += uint32(len(payload))
	if _, err := p.conn.WriteToUDPAddrPort(b, to); err != nil {
		p.t.Fatal(err)
	}
}

// recv reads RTP until one of payload type pt arrives.
func (p *peer) recv(pt uint8) *rtp.Packet {
	p.t.Helper()
	buf := make([]byte, 1500)
	_ = p.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		n, err := p.conn.Read(buf)
		if err != nil {
			p.t.Fatalf("no RTP of type %d: %v", pt, err)
		}
		var pkt rtp.Packet
		if pkt.Unmarshal(buf[:n]) == nil && pkt.PayloadType == pt {
			return &pkt
		}
	}
}

func testMedia(t *testing.T, to *peer) (*media, *metrics, netip.AddrPort) {
	t.Helper()
	m := newMetrics(prometheus.NewRegistry())
	ports := newPortPool(netip.MustParseAddr("127.0.0.1"), 40000+2*(int(time.Now().UnixNano()/1000)%2000), 44999)
	md, err := newMedia(m, ports, codec.Telephony, ptPCMU, 101, 100*time.Millisecond, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	md.start(offer{remote: to.addr(), pt: ptPCMU, format: codec.Telephony, eventPT: 101, dir: sendrecv}, to.addr().Addr(), nil)
	t.Cleanup(func() { md.shutdown() })
	return md, m, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(md.port))
}

// readAudio reads the call loop's next audio frame.
func readAudio(t *testing.T, md *media) []byte {
	t.Helper()
	var buf []byte
	for {
		typ, msg, err := md.ReadMessage(&buf, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if typ == transport.Binary {
			return append([]byte(nil), msg...)
		}
	}
}

// TestMediaSymmetricAndStrangers: the media answers where the peer's
// packets come from, and ignores, counting them, packets from another
// address and of another stream.
func TestMediaSymmetricAndStrangers(t *testing.T) {
	p := newPeer(t)
	md, m, local := testMedia(t, p)
	stranger := newPeer(t)
	frame := bytes.Repeat([]byte{0x42}, frameSamples)
	p.send(local, ptPCMU, frame)
	if got := readAudio(t, md); !bytes.Equal(got, frame) {
		t.Fatalf("played %x, want the peer's frame", got[:8])
	}
	// The stranger's audio must never play: the peer's silence and
	// concealment may, until the peer's next frame.
	stranger.send(local, ptPCMU, bytes.Repeat([]byte{0x66}, frameSamples))
	other := &peer{t: t, conn: p.conn, ssrc: 0x9999, seq: 5000}
	other.send(local, ptPCMU, bytes.Repeat([]byte{0x77}, frameSamples))
	p.send(local, 13, frame) // comfort noise: not negotiated
	waitFor(t, "the stranger's, the other SSRC's and the comfort noise's packets counted", func() bool {
		return testutil.ToFloat64(m.rtpIgnored.WithLabelValues("address")) >= 1 && testutil.ToFloat64(m.rtpIgnored.WithLabelValues("ssrc")) >= 1 &&
			testutil.ToFloat64(m.rtpIgnored.WithLabelValues("payload_type")) >= 1
	})
	next := bytes.Repeat([]byte{0x43}, frameSamples)
	p.send(local, ptPCMU, next)
	for {
		got := readAudio(t, md)
		if got[0] == 0x66 || got[0] == 0x77 {
			t.Fatal("played a stranger's audio")
		}
		if bytes.Equal(got, next) {
			break
		}
	}
	// The host's audio goes back to the peer's address.
	if err := md.WriteMessage(transport.Binary, frame); err != nil {
		t.Fatal(err)
	}
	if got := p.recv(ptPCMU); !bytes.Equal(got.Payload, frame) && !bytes.Equal(got.Payload, md.silence[:]) {
		t.Fatalf("the peer got %x", got.Payload[:8])
	}
}

// TestMediaDigitsBothWays: the peer's telephone-event reaches the call
// loop once as a digit; a digit the host sends goes out as RFC 4733
// packets of growing duration, its end marked, on one timestamp.
func TestMediaDigitsBothWays(t *testing.T) {
	p := newPeer(t)
	md, _, local := testMedia(t, p)
	for i := range 4 { // one event: its packets share a timestamp
		ts := p.ts
		ev := []byte{5, 10, 0, byte(160 * (i + 1))}
		if i == 3 {
			ev[1] |= 0x80
		}
		p.send(local, 101, ev)
		p.ts = ts
	}
	var buf []byte
	for {
		// The event's packets hold their places in the audio as silence;
		// the digit comes once, beside them.
		typ, msg, err := md.ReadMessage(&buf, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if typ == transport.Text {
			if string(msg) != "d5" {
				t.Fatalf("read %q, want the digit 5", msg)
			}
			break
		}
	}
	if err := md.WriteMessage(transport.Text, []byte("d#")); err != nil {
		t.Fatal(err)
	}
	go func() { // the call loop's reads send what is due
		for {
			if _, _, err := md.ReadMessage(&buf, 1<<16); err != nil {
				return
			}
		}
	}()
	var durs []uint16
	var ts uint32
	for {
		pkt := p.recv(101)
		if len(durs) == 0 {
			ts = pkt.Timestamp
			if !pkt.Marker {
				t.Fatal("the event's first packet is not marked")
			}
		}
		if pkt.Payload[0] != 11 || pkt.Timestamp != ts {
			t.Fatalf("event %d at %d, want 11 (#) at %d", pkt.Payload[0], pkt.Timestamp, ts)
		}
		durs = append(durs, uint16(pkt.Payload[2])<<8|uint16(pkt.Payload[3]))
		if pkt.Payload[1]&0x80 != 0 {
			break
		}
	}
	for i := 1; i < len(durs); i++ {
		if durs[i] <= durs[i-1] {
			t.Fatalf("durations %v do not grow", durs)
		}
	}
	md.Close("test")
}

// TestMediaReportsAndTimeout: the host sends RTCP sender reports with a
// reception report of the peer's stream, takes the peer's reports into
// its record and its live figures, and a peer that stops sending ends the
// call.
func TestMediaReportsAndTimeout(t *testing.T) {
	p := newPeer(t)
	m := newMetrics(prometheus.NewRegistry())
	ports := newPortPool(netip.MustParseAddr("127.0.0.1"), 45000+2*(int(time.Now().UnixNano()/1000)%2000), 49999)
	md, err := newMedia(m, ports, codec.Telephony, ptPCMU, 0, 100*time.Millisecond, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rtcpPeer, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(p.addr().Port()) + 1})
	if err != nil {
		t.Skipf("the port after the peer's is taken: %v", err)
	}
	defer rtcpPeer.Close()
	md.start(offer{remote: p.addr(), pt: ptPCMU, format: codec.Telephony, dir: sendrecv}, p.addr().Addr(), nil)
	local := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(md.port))
	p.send(local, ptPCMU, bytes.Repeat([]byte{0x42}, frameSamples))
	readAudio(t, md)
	// The peer reports a quarter of the host's packets lost.
	rr := &rtcp.ReceiverReport{SSRC: p.ssrc, Reports: []rtcp.ReceptionReport{{SSRC: md.ssrc, FractionLost: 64, Jitter: 80}}}
	b, _ := rr.Marshal()
	if _, err := rtcpPeer.WriteToUDPAddrPort(b, netip.AddrPortFrom(local.Addr(), local.Port()+1)); err != nil {
		t.Fatal(err)
	}
	// The host reports, once it has the peer's stream, on it. The call
	// loop's reads send the reports; the peer keeps sending meanwhile.
	sending := make(chan struct{})
	go func() {
		for {
			select {
			case <-sending:
				return
			case <-time.After(frameMs * time.Millisecond):
				p.send(local, ptPCMU, bytes.Repeat([]byte{0x42}, frameSamples))
			}
		}
	}()
	go func() {
		var rb []byte
		for {
			if _, _, err := md.ReadMessage(&rb, 1<<16); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 1500)
	_ = rtcpPeer.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		n, err := rtcpPeer.Read(buf)
		if err != nil {
			t.Fatalf("no RTCP about the peer's stream from the host: %v", err)
		}
		pkts, err := rtcp.Unmarshal(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		sr, ok := pkts[0].(*rtcp.SenderReport)
		if !ok || sr.SSRC != md.ssrc {
			t.Fatalf("host's RTCP %+v, want a sender report", pkts[0])
		}
		if len(sr.Reports) == 1 && sr.Reports[0].SSRC == p.ssrc {
			break
		}
	}
	close(sending)
	// No more RTP: the media timeout ends the call, saying why.
	waitFor(t, "the media timeout", func() bool {
		md.mu.Lock()
		defer md.mu.Unlock()
		return md.failure != nil
	})
	var rb []byte
	waitFor(t, "a receiver report", func() bool { return testutil.ToFloat64(m.rtcp.WithLabelValues("rr")) >= 1 })
	// What the console shows of the live call says the same.
	if live := md.MediaStats(); live.Packets < 1 || live.PeerReports != 1 || live.PeerLostPercent != 25 || live.PeerJitterMs != 10 || live.Held {
		t.Fatalf("live media %+v, want the packets received and the peer's report: 25%% lost, 10 ms jitter", live)
	}
	st := md.shutdown()
	if !errors.Is(st.Failure, errMediaTimeout) {
		t.Fatalf("ended by %v, want the media timeout", st.Failure)
	}
	if st.PeerReports != 1 || st.PeerLostPercent != 25 || st.PeerJitterMs != 10 {
		t.Fatalf("record %+v, want the peer's report: 25%% lost, 10 ms jitter", st)
	}
	if _, _, err := md.ReadMessage(&rb, 1<<16); !errors.Is(err, io.EOF) {
		t.Fatalf("read after shutdown: %v", err)
	}
}

// TestMediaFramePathAllocatesNothing: a packet in, its frame played, the
// host's frame out — every 20 ms of every call — allocate nothing.
func TestMediaFramePathAllocatesNothing(t *testing.T) {
	p := newPeer(t)
	md, _, _ := testMedia(t, p)
	frame := bytes.Repeat([]byte{0x42}, frameSamples)
	raw, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: ptPCMU, SSRC: p.ssrc}, Payload: frame}).Marshal()
	var pkt rtp.Packet
	dst := make([]byte, maxPayload)
	seq := uint16(0)
	from := p.addr()
	allocs := testing.AllocsPerRun(500, func() {
		binary.BigEndian.PutUint16(raw[2:], seq)
		binary.BigEndian.PutUint32(raw[4:], uint32(seq)*frameSamples)
		seq++
		if err := pkt.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		md.receive(&pkt, from, time.Now())
		md.mu.Lock()
		md.jb.pop(dst)
		md.mu.Unlock()
		if err := md.WriteMessage(transport.Binary, frame); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a frame", allocs)
	}
}

// TestMediaFinishesAKeyAtHangUp: a key the host was asked to press just
// before it ends the call still goes out whole, at its pace, its end three
// times, and the BYE only after it.
func TestMediaFinishesAKeyAtHangUp(t *testing.T) {
	p := newPeer(t)
	md, _, _ := testMedia(t, p)
	bye := make(chan struct{})
	md.bye = func(string) { close(bye) }
	if err := md.WriteMessage(transport.Text, []byte("d9")); err != nil {
		t.Fatal(err)
	}
	md.Close("the bot hung up")
	go md.shutdown()
	var ends int
	for ends < 3 {
		pkt := p.recv(101)
		if pkt.Payload[0] != 9 {
			t.Fatalf("event %d, want 9", pkt.Payload[0])
		}
		if pkt.Payload[1]&0x80 != 0 {
			ends++
		}
		select {
		case <-bye:
			if ends < 3 {
				t.Fatalf("the BYE went out with %d of the key's 3 ends sent", ends)
			}
		default:
		}
	}
	<-bye
}
