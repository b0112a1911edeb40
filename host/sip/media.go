package sip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
)

// rtcpEvery is how often the host sends its RTCP report.
const rtcpEvery = 5 * time.Second

// comfortAfter is how long the host may send the peer nothing before it
// sends a silent frame: a frame and a half, so that a host frame a little
// late does not get silence beside it.
const comfortAfter = 30 * time.Millisecond

// eventTicks is how many ticks an outbound telephone-event lasts (100 ms),
// and eventEnds how many times its end packet is sent (RFC 4733 §2.5.1.4).
const (
	eventTicks = 5
	eventEnds  = 3
)

// maxLag is how far the play clock may fall behind before it starts
// again from now rather than play the missed frames at once.
const maxLag = 100 * time.Millisecond

// maxControls bounds the control messages (digits, hold) waiting for the
// call loop; a peer sending more digits than a call can take loses some.
const maxControls = 16

// ssrcSwitchGap is how long the peer's stream must have been quiet for
// another SSRC from its address to replace it; while it runs, packets of
// another SSRC are ignored.
const ssrcSwitchGap = 3 * frameMs * time.Millisecond

// errMediaTimeout ends a call whose RTP stopped.
var errMediaTimeout = errors.New("no RTP from the peer")

// errSessionExpired ends a call whose session timer ran out.
var errSessionExpired = errors.New("the session timer expired without a refresh")

// media is one call's RTP and RTCP: the leg the host's call reads frames
// from and writes frames to (server.Leg). A goroutine reads RTP into the
// jitter buffer, another RTCP; the call loop's ReadMessage plays the
// buffer out on a 20 ms tick, and on that tick sends comfort silence, the
// host's telephone-events and RTCP reports.
type media struct {
	m       *metrics
	rtp     *net.UDPConn
	rtcp    *net.UDPConn
	ports   *portPool
	port    int
	format  codec.Format
	pt      uint8
	eventPT uint8
	timeout time.Duration
	epoch   time.Time

	mu sync.Mutex
	jb *jitterBuffer
	// remote is where RTP goes: the offer's address until the peer's
	// first packet, from then on where its packets come from (symmetric
	// RTP). allowed are the addresses a first packet may come from: the
	// offer's and the signalling's.
	remote     netip.AddrPort
	latched    bool
	allowed    []netip.Addr
	remoteSSRC uint32
	haveSSRC   bool
	held       bool
	lastEvent  uint32
	haveEvent  bool
	lastRTP    time.Time
	rtcpFrom   netip.AddrPort
	peerReport rtcp.ReceptionReport
	reports    int

	// clock wakes the call loop when the next frame is due, nextPlay.
	clock    *time.Timer
	nextPlay time.Time

	// failure is why the media ended the call, if it did.
	failure error

	ctl    chan [2]byte
	ended  chan struct{}
	endErr error
	// byeReason, with hostEnded, is why the host ended the call: shutdown
	// sends the BYE.
	byeReason string
	hostEnded bool
	once      sync.Once
	bye       func(reason string)
	closed    atomic.Bool
	// ignored counts the packets dropped before the jitter buffer.
	ignored atomic.Uint64

	// expires is the session timer's deadline in Unix nanoseconds; 0
	// when the call has none.
	expires atomic.Int64

	send    sync.Mutex
	ssrc    uint32
	seq     uint16
	ts      uint32
	pkt     rtp.Packet
	out     [12 + maxPayload]byte
	silence [frameSamples]byte
	sent    time.Time
	packets uint32
	octets  uint32
	digits  []byte
	evTick  int
	evTS    uint32
	nextRR  time.Time
}

// mediaStats is what a call's record says of its media.
type mediaStats struct {
	jitterStats
	Ignored         uint64
	PeerLostPercent float64
	PeerJitterMs    float64
	PeerReports     int
	// Failure is why the media ended the call (no RTP, the session
	// timer), or nil.
	Failure error
}

func newMedia(m *metrics, ports *portPool, f codec.Format, pt, eventPT uint8, jitterMax, timeout time.Duration) (*media, error) {
	conn, ctl, port, err := ports.open()
	if err != nil {
		return nil, err
	}
	md := &media{
		m: m, rtp: conn, rtcp: ctl, ports: ports, port: port, format: f, pt: pt, eventPT: eventPT, timeout: timeout,
		epoch: time.Now(),
		jb:    newJitterBuffer(f, int(jitterMax/(frameMs*time.Millisecond))),
		ctl:   make(chan [2]byte, maxControls),
		ended: make(chan struct{}),
		ssrc:  rand.Uint32(), seq: uint16(rand.Uint32()), ts: rand.Uint32(),
	}
	for i := range md.silence {
		md.silence[i] = f.Silence()
	}
	md.lastRTP = md.epoch
	md.clock = time.NewTimer(time.Hour)
	md.nextPlay = md.epoch
	return md, nil
}

// start begins receiving, towards the peer o describes; signalling is the
// address its SIP came from.
func (md *media) start(o offer, signalling netip.Addr, bye func(string)) {
	md.bye = bye
	md.update(o, signalling)
	go md.readRTP()
	go md.readRTCP()
}

// update takes a new offer (a re-INVITE): the peer's address, which the
// next packet latches again, and its direction (hold or resume).
func (md *media) update(o offer, signalling netip.Addr) {
	md.mu.Lock()
	wasHeld := md.held
	md.remote, md.latched, md.haveSSRC = o.remote, false, false
	md.allowed = []netip.Addr{o.remote.Addr(), signalling.Unmap()}
	md.held = o.dir.held() || o.remote.Port() == 0
	held := md.held
	md.lastRTP = time.Now()
	md.mu.Unlock()
	if held != wasHeld {
		c := [2]byte{ctlResume}
		if held {
			c[0] = ctlHold
		}
		md.control(c)
	}
}

func (md *media) control(c [2]byte) {
	select {
	case md.ctl <- c:
	default:
	}
}

func (md *media) arrival(now time.Time) int64 { return int64(now.Sub(md.epoch) / (time.Second / 8000)) }

func (md *media) readRTP() {
	buf := make([]byte, 1500)
	var p rtp.Packet
	for {
		n, from, err := md.rtp.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if err := p.Unmarshal(buf[:n]); err != nil || p.Version != 2 {
			md.m.rtpIgnored.WithLabelValues("malformed").Inc()
			continue
		}
		md.receive(&p, netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), time.Now())
	}
}

// receive takes one RTP packet from from.
func (md *media) receive(p *rtp.Packet, from netip.AddrPort, now time.Time) {
	md.mu.Lock()
	defer md.mu.Unlock()
	if !md.latched {
		ok := false
		for _, a := range md.allowed {
			ok = ok || a == from.Addr()
		}
		if !ok {
			md.ignore("address")
			return
		}
		md.remote, md.latched = from, true
	} else if from != md.remote {
		md.ignore("address")
		return
	}
	switch {
	case !md.haveSSRC:
		md.remoteSSRC, md.haveSSRC = p.SSRC, true
	case p.SSRC != md.remoteSSRC && now.Sub(md.lastRTP) >= ssrcSwitchGap:
		// The peer's stream went quiet and another began from the same
		// address (a PBX playing a prompt, then bridging): follow it.
		md.remoteSSRC = p.SSRC
		md.jb.reset(p.SequenceNumber)
	case p.SSRC != md.remoteSSRC:
		md.ignore("ssrc")
		return
	}
	event := md.eventPT != 0 && p.PayloadType == md.eventPT
	if !event && p.PayloadType != md.pt {
		md.ignore("payload_type")
		return
	}
	md.lastRTP = now
	md.m.rtpIn.Inc()
	if event {
		if len(p.Payload) < 4 {
			md.ignore("malformed")
			return
		}
		if !md.haveEvent || p.Timestamp != md.lastEvent {
			md.lastEvent, md.haveEvent = p.Timestamp, true
			if d := eventDigit(p.Payload[0]); d != 0 {
				md.m.dtmf.WithLabelValues("in").Inc()
				md.control([2]byte{ctlDigit, d})
			}
		}
	}
	if len(p.Payload) > maxPayload {
		md.ignore("malformed")
		return
	}
	md.jb.push(p.SequenceNumber, p.Timestamp, p.Payload, event, md.arrival(now))
}

func (md *media) ignore(reason string) {
	md.ignored.Add(1)
	md.m.rtpIgnored.WithLabelValues(reason).Inc()
}

func (md *media) readRTCP() {
	buf := make([]byte, 1500)
	for {
		n, from, err := md.rtcp.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		pkts, err := rtcp.Unmarshal(buf[:n])
		if err != nil {
			continue
		}
		md.mu.Lock()
		if !md.latched || from.Addr().Unmap() != md.remote.Addr() {
			md.mu.Unlock()
			continue
		}
		md.rtcpFrom = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		for _, pk := range pkts {
			var reps []rtcp.ReceptionReport
			switch r := pk.(type) {
			case *rtcp.SenderReport:
				md.m.rtcp.WithLabelValues("sr").Inc()
				reps = r.Reports
			case *rtcp.ReceiverReport:
				md.m.rtcp.WithLabelValues("rr").Inc()
				reps = r.Reports
			}
			for _, rep := range reps {
				if rep.SSRC == md.ssrc {
					md.peerReport, md.reports = rep, md.reports+1
					md.m.remoteLoss.Observe(float64(rep.FractionLost) / 256)
				}
			}
		}
		md.mu.Unlock()
	}
}

// ReadMessage plays the jitter buffer out, a frame a tick, and hands the
// call loop the peer's digits and holds as they come.
func (md *media) ReadMessage(buf *[]byte, _ int) (transport.MessageType, []byte, error) {
	if cap(*buf) < maxPayload {
		*buf = make([]byte, maxPayload)
	}
	b := (*buf)[:maxPayload]
	for {
		select {
		case <-md.ended: // before a frame that may also be due
			return 0, nil, md.endErr
		default:
		}
		now := time.Now()
		if md.nextPlay.Before(now.Add(-maxLag)) {
			md.nextPlay = now // after a hold, or a call loop held up
		}
		md.clock.Reset(md.nextPlay.Sub(now))
		select {
		case c := <-md.ctl:
			n := 1
			if c[0] == ctlDigit {
				n = 2
			}
			copy(b, c[:n])
			return transport.Text, b[:n], nil
		case <-md.ended:
			return 0, nil, md.endErr
		case now = <-md.clock.C:
			md.onTick(now)
			if exp := md.expires.Load(); exp != 0 && now.UnixNano() > exp {
				return 0, nil, md.fail(errSessionExpired)
			}
			md.mu.Lock()
			if md.held {
				md.mu.Unlock()
				md.nextPlay = md.nextPlay.Add(frameMs * time.Millisecond)
				continue
			}
			if now.Sub(md.lastRTP) > md.timeout {
				md.mu.Unlock()
				return 0, nil, md.fail(fmt.Errorf("%w for %v", errMediaTimeout, md.timeout))
			}
			what, n := md.jb.pop(b)
			md.mu.Unlock()
			// The next frame is due when this one has played: packets of
			// 30 ms are played every 30 ms.
			md.nextPlay = md.nextPlay.Add(max(time.Duration(n), frameSamples) * time.Second / 8000)
			if what == playedConcealed {
				md.m.concealed.Inc()
			}
			if what != playedNothing {
				return transport.Binary, b[:n], nil
			}
		}
	}
}

// onTick sends what the host owes the peer this tick: a telephone-event's
// packets, silence when the host sent nothing for a while, an RTCP report.
func (md *media) onTick(now time.Time) {
	md.send.Lock()
	defer md.send.Unlock()
	md.mu.Lock()
	to, held := md.remote, md.held
	md.mu.Unlock()
	if held || !to.IsValid() || to.Port() == 0 {
		return
	}
	if len(md.digits) > 0 {
		md.sendEventLocked(to)
	}
	if now.Sub(md.sent) > comfortAfter {
		md.sendAudioLocked(to, md.silence[:], now)
		md.m.comfort.Inc()
	}
	if now.After(md.nextRR) {
		md.nextRR = now.Add(rtcpEvery)
		if !md.sendReportLocked(to, now) {
			// Nothing of the peer's to report yet: ask again soon, so
			// that the first report carries its stream.
			md.nextRR = now.Add(rtcpEvery / 5)
		}
	}
}

// WriteMessage sends the host's audio to the peer, or queues a digit as a
// telephone-event.
func (md *media) WriteMessage(typ transport.MessageType, msg []byte) error {
	if md.closed.Load() {
		return net.ErrClosed
	}
	md.send.Lock()
	defer md.send.Unlock()
	if typ == transport.Text && len(msg) == 2 && msg[0] == ctlDigit {
		if md.eventPT == 0 || len(md.digits) >= maxControls {
			return nil // the peer takes no telephone-events, or is flooded
		}
		md.digits = append(md.digits, msg[1])
		return nil
	}
	md.mu.Lock()
	to, held := md.remote, md.held
	md.mu.Unlock()
	if held || !to.IsValid() || to.Port() == 0 {
		return nil
	}
	return md.sendAudioLocked(to, msg, time.Now())
}

func (md *media) sendAudioLocked(to netip.AddrPort, frame []byte, now time.Time) error {
	md.pkt.Header = rtp.Header{Version: 2, PayloadType: md.pt, SequenceNumber: md.seq, Timestamp: md.ts, SSRC: md.ssrc,
		Marker: md.packets == 0}
	md.pkt.Payload = frame
	md.seq++
	md.ts += uint32(len(frame))
	md.sent = now
	return md.writeLocked(to)
}

func (md *media) writeLocked(to netip.AddrPort) error {
	n, err := md.pkt.MarshalTo(md.out[:])
	if err != nil {
		return err
	}
	md.packets++
	md.octets += uint32(len(md.pkt.Payload))
	md.m.rtpOut.Inc()
	_, err = md.rtp.WriteToUDPAddrPort(md.out[:n], to)
	return err
}

// sendEventLocked sends the current telephone-event's packet of this
// tick: eventTicks of growing duration, then its end, eventEnds times.
func (md *media) sendEventLocked(to netip.AddrPort) {
	code := byte(eventCode(md.digits[0]))
	if md.evTick == 0 {
		md.evTS = md.ts
		md.m.dtmf.WithLabelValues("out").Inc()
	}
	md.evTick++
	dur := uint16(min(md.evTick, eventTicks) * frameSamples)
	flags := byte(10) // volume -10 dBm0
	if md.evTick >= eventTicks {
		flags |= 0x80
	}
	var payload [4]byte
	payload[0], payload[1] = code, flags
	binary.BigEndian.PutUint16(payload[2:], dur)
	sends := 1
	if md.evTick == eventTicks {
		sends = eventEnds
	}
	for range sends {
		md.pkt.Header = rtp.Header{Version: 2, PayloadType: md.eventPT, SequenceNumber: md.seq, Timestamp: md.evTS, SSRC: md.ssrc,
			Marker: md.evTick == 1}
		md.pkt.Payload = payload[:]
		md.seq++
		_ = md.writeLocked(to)
	}
	if md.evTick == eventTicks {
		md.digits, md.evTick = md.digits[1:], 0
	}
}

// finishDigits sends the rest of the telephone-events the host still
// owes, at their pace (a packet a frame), before the host's BYE: a bot
// that presses a key and hangs up must not lose the key, or leave the
// peer without its end, with the call's last ticks. A peer that reads
// its BYE before RTP that came just before it (baresip) would miss the
// end if it were sent in a burst. It takes at most maxControls keys of
// eventTicks frames (1.6 s).
func (md *media) finishDigits() {
	tick := time.NewTicker(frameMs * time.Millisecond)
	defer tick.Stop()
	for {
		md.send.Lock()
		md.mu.Lock()
		to, held := md.remote, md.held
		md.mu.Unlock()
		if len(md.digits) == 0 || held || !to.IsValid() || to.Port() == 0 {
			md.send.Unlock()
			return
		}
		md.sendEventLocked(to)
		md.send.Unlock()
		<-tick.C
	}
}

// sendReportLocked sends a sender report with a reception report of the
// peer's stream, and says whether it had the peer's stream to report.
func (md *media) sendReportLocked(to netip.AddrPort, now time.Time) bool {
	md.mu.Lock()
	st := md.jb.stats
	ssrc, have := md.remoteSSRC, md.haveSSRC
	highest := md.jb.highest
	dst := md.rtcpFrom
	md.mu.Unlock()
	if !dst.IsValid() {
		dst = netip.AddrPortFrom(to.Addr(), to.Port()+1)
	}
	sr := &rtcp.SenderReport{SSRC: md.ssrc, NTPTime: ntpTime(now), RTPTime: md.ts, PacketCount: md.packets, OctetCount: md.octets}
	if have {
		expected := st.Received - st.Duplicates + st.Lost
		frac := uint8(0)
		if expected > 0 {
			frac = uint8(min(255, st.Lost*256/expected))
		}
		sr.Reports = []rtcp.ReceptionReport{{SSRC: ssrc, FractionLost: frac, TotalLost: uint32(min(st.Lost, 1<<23-1)),
			LastSequenceNumber: uint32(highest), Jitter: uint32(st.Jitter)}}
	}
	b, err := sr.Marshal()
	if err == nil {
		_, _ = md.rtcp.WriteToUDPAddrPort(b, dst)
	}
	return have
}

// MediaStats says what the call's RTP did so far, for the console's view
// of the call (server.MediaReporter): the peer's stream as received, and
// the peer's last RTCP report of the host's.
func (md *media) MediaStats() server.MediaStats {
	md.mu.Lock()
	defer md.mu.Unlock()
	st := md.jb.stats
	ms := server.MediaStats{Packets: st.Received, Lost: st.Lost, Late: st.Late, Concealed: st.Concealed,
		JitterMs: st.Jitter / 8, BufferMs: meanDepthMs(st), PeerReports: md.reports, Held: md.held}
	if md.reports > 0 {
		ms.PeerLostPercent, ms.PeerJitterMs = peerFigures(md.peerReport)
	}
	return ms
}

// peerFigures are what a peer's RTCP reception report says of the host's
// stream: the fraction lost, in percent, and the jitter, in ms.
func peerFigures(r rtcp.ReceptionReport) (lostPercent, jitterMs float64) {
	return float64(r.FractionLost) / 256 * 100, float64(r.Jitter) / 8
}

// ntpTime is t as RTCP's 64-bit NTP timestamp.
func ntpTime(t time.Time) uint64 {
	const ntpEpochOffset = 2208988800
	secs := uint64(t.Unix()) + ntpEpochOffset
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	return secs<<32 | frac
}

// fail records why the media ended the call, for its record.
func (md *media) fail(err error) error {
	md.mu.Lock()
	md.failure = err
	md.mu.Unlock()
	return err
}

// Close ends the call from the host's side: the call loop's next read
// returns, and shutdown sends the BYE once the keys the host was
// pressing have ended.
func (md *media) Close(reason string) { md.end(io.ErrUnexpectedEOF, reason, true) }

// peerEnded ends the call from the peer's side (its BYE).
func (md *media) peerEnded() { md.end(io.EOF, "", false) }

// end records why the call ended and wakes the call loop, once; sendBye
// says the host ended it, so that shutdown sends the BYE.
func (md *media) end(err error, reason string, sendBye bool) {
	md.once.Do(func() {
		md.endErr = err
		md.byeReason, md.hostEnded = reason, sendBye
		close(md.ended)
	})
}

// shutdown frees the call's sockets once the call is over and returns
// what its media did.
func (md *media) shutdown() mediaStats {
	md.end(io.EOF, "", false)
	if md.closed.CompareAndSwap(false, true) && md.hostEnded {
		// The keys the host was pressing end before the call does.
		md.finishDigits()
		if md.bye != nil {
			go md.bye(md.byeReason)
		}
	}
	_ = md.rtp.Close()
	_ = md.rtcp.Close()
	md.ports.release(md.port)
	md.mu.Lock()
	defer md.mu.Unlock()
	st := mediaStats{jitterStats: md.jb.stats, Ignored: md.ignored.Load(), PeerReports: md.reports, Failure: md.failure}
	if md.reports > 0 {
		st.PeerLostPercent, st.PeerJitterMs = peerFigures(md.peerReport)
	}
	md.m.rtpLost.Add(float64(st.Lost))
	md.m.rtpLate.Add(float64(st.Late))
	md.m.drained.Add(float64(st.Drained))
	md.m.jitter.Observe(st.Jitter / 8000)
	if st.Played > 0 {
		md.m.depth.Observe(float64(st.DepthFrames) / float64(st.Played) * frameMs / 1000)
	}
	return st
}
