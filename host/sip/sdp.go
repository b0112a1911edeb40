package sip

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/pion/sdp/v3"

	"github.com/voxhost/voxhost/host/codec"
)

// Static payload types of RFC 3551: G.711 μ-law and A-law at 8 kHz.
const (
	ptPCMU = 0
	ptPCMA = 8
)

// direction is a media stream's a=sendrecv/sendonly/recvonly/inactive.
type direction string

const (
	sendrecv direction = "sendrecv"
	sendonly direction = "sendonly"
	recvonly direction = "recvonly"
	inactive direction = "inactive"
)

// held reports whether the peer's direction puts the call on hold: it
// sends no audio for the host to hear (inactive), or sends only what the
// host must not hear as the caller (sendonly: music on hold).
func (d direction) held() bool { return d == sendonly || d == inactive }

// answerTo is the direction the host answers d with (RFC 3264 §6.1).
func (d direction) answerTo() direction {
	switch d {
	case sendonly:
		return recvonly
	case recvonly:
		return sendonly
	case inactive:
		return inactive
	}
	return sendrecv
}

// offer is what the host takes from an SDP offer.
type offer struct {
	// remote is where the peer said it receives RTP; its port 0 rejects
	// the stream.
	remote netip.AddrPort
	// pt and format are the codec chosen: the first of the host's
	// preference that the offer lists.
	pt     uint8
	format codec.Format
	// eventPT is the payload type of telephone-event/8000, 0 if not
	// offered.
	eventPT uint8
	dir     direction
	// sessionID and sessionVersion are the offer's o= line, which a
	// re-offer of the same session repeats.
	sessionID uint64
}

// maxSDPBytes bounds an SDP body: an offer of a few audio codecs is about
// 400 bytes.
const maxSDPBytes = 4096

// errNoAudio is an offer with no audio stream the host can take.
var errNoAudio = errors.New("no RTP/AVP audio stream offering a codec the host answers")

// parseOffer reads an SDP offer and chooses, of its first audio stream, the
// first codec of prefer (payload types ptPCMU, ptPCMA) it lists, and
// telephone-event/8000 if it lists it.
func parseOffer(body []byte, prefer []uint8) (offer, error) {
	var o offer
	if len(body) > maxSDPBytes {
		return o, fmt.Errorf("SDP of %d bytes, more than %d", len(body), maxSDPBytes)
	}
	var sd sdp.SessionDescription
	if err := sd.Unmarshal(body); err != nil {
		return o, fmt.Errorf("SDP: %w", err)
	}
	o.sessionID = sd.Origin.SessionID
	conn := sd.ConnectionInformation
	o.dir = sessionDirection(sd.Attributes, sendrecv)
	for _, m := range sd.MediaDescriptions {
		if m.MediaName.Media != "audio" || !hasProto(m.MediaName.Protos, "RTP", "AVP") {
			continue
		}
		if m.ConnectionInformation != nil {
			conn = m.ConnectionInformation
		}
		if conn == nil || conn.Address == nil {
			return o, errors.New("SDP: the audio stream has no c= address")
		}
		ip, err := netip.ParseAddr(conn.Address.Address)
		if err != nil {
			return o, fmt.Errorf("SDP: c= address %q is not an IP address (names are not resolved)", conn.Address.Address)
		}
		port := m.MediaName.Port.Value
		if port < 0 || port > 65535 {
			return o, fmt.Errorf("SDP: port %d out of range", port)
		}
		o.remote = netip.AddrPortFrom(ip.Unmap(), uint16(port))
		o.dir = sessionDirection(m.Attributes, o.dir)
		rtpmap := map[uint8]string{}
		for _, a := range m.Attributes {
			if a.Key != "rtpmap" {
				continue
			}
			num, enc, ok := strings.Cut(a.Value, " ")
			if pt, err := strconv.ParseUint(num, 10, 7); ok && err == nil {
				rtpmap[uint8(pt)] = strings.ToLower(strings.TrimSpace(enc))
			}
		}
		offered := map[uint8]bool{}
		for _, f := range m.MediaName.Formats {
			pt, err := strconv.ParseUint(f, 10, 7)
			if err != nil {
				continue
			}
			offered[uint8(pt)] = true
			if rtpmap[uint8(pt)] == "telephone-event/8000" {
				o.eventPT = uint8(pt)
			}
		}
		for _, want := range prefer {
			name := map[uint8]string{ptPCMU: "pcmu/8000", ptPCMA: "pcma/8000"}[want]
			// A static type may come without its rtpmap; one mapped to
			// another codec is that codec.
			if m, ok := rtpmap[want]; offered[want] && (!ok || m == name) {
				o.pt = want
				o.format = codec.Format{Encoding: codec.Mulaw, Rate: 8000}
				if want == ptPCMA {
					o.format.Encoding = codec.Alaw
				}
				return o, nil
			}
		}
		return o, errNoAudio
	}
	return o, errNoAudio
}

func hasProto(protos []string, want ...string) bool {
	return len(protos) == len(want) && strings.EqualFold(protos[0], want[0]) && strings.EqualFold(protos[1], want[1])
}

// sessionDirection is the direction attributes say, or def.
func sessionDirection(attrs []sdp.Attribute, def direction) direction {
	for _, a := range attrs {
		switch d := direction(a.Key); d {
		case sendrecv, sendonly, recvonly, inactive:
			return d
		}
	}
	return def
}

// answer renders the host's SDP answer: the chosen codec, the telephone
// events if offered, 20 ms packets, the direction answering the offer's.
func answer(o offer, local netip.AddrPort, sessionID, version uint64) []byte {
	ip4 := "IP4"
	if local.Addr().Is6() {
		ip4 = "IP6"
	}
	enc := "PCMU"
	if o.pt == ptPCMA {
		enc = "PCMA"
	}
	addr := local.Addr().String()
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=voxhost %d %d IN %s %s\r\ns=voxhost\r\nc=IN %s %s\r\nt=0 0\r\n", sessionID, version, ip4, addr, ip4, addr)
	port := local.Port()
	if o.remote.Port() == 0 {
		port = 0
	}
	fmt.Fprintf(&b, "m=audio %d RTP/AVP %d", port, o.pt)
	if o.eventPT != 0 {
		fmt.Fprintf(&b, " %d", o.eventPT)
	}
	fmt.Fprintf(&b, "\r\na=rtpmap:%d %s/8000\r\n", o.pt, enc)
	if o.eventPT != 0 {
		fmt.Fprintf(&b, "a=rtpmap:%d telephone-event/8000\r\na=fmtp:%d 0-15\r\n", o.eventPT, o.eventPT)
	}
	fmt.Fprintf(&b, "a=ptime:20\r\na=%s\r\n", o.dir.answerTo())
	return []byte(b.String())
}
