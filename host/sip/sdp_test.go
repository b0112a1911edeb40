package sip

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
)

const offerBoth = "v=0\r\no=- 42 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\n" +
	"m=audio 4000 RTP/AVP 8 0 101\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-15\r\n"

// TestParseOfferPrefers: the host's preference picks the codec, the
// offer's order does not; the telephone-event type and the address are
// the offer's.
func TestParseOfferPrefers(t *testing.T) {
	o, err := parseOffer([]byte(offerBoth), []uint8{ptPCMU, ptPCMA})
	if err != nil {
		t.Fatal(err)
	}
	if o.pt != ptPCMU || o.format != codec.Telephony || o.eventPT != 101 || o.dir != sendrecv {
		t.Fatalf("offer %+v", o)
	}
	if o.remote != netip.MustParseAddrPort("192.0.2.10:4000") {
		t.Fatalf("remote %v", o.remote)
	}
	o, err = parseOffer([]byte(offerBoth), []uint8{ptPCMA})
	if err != nil || o.pt != ptPCMA || o.format.Encoding != codec.Alaw {
		t.Fatalf("pcma only: %+v %v", o, err)
	}
}

// TestParseOfferRefuses: offers the host cannot answer say why.
func TestParseOfferRefuses(t *testing.T) {
	for name, c := range map[string]struct{ sdp, want string }{
		"g729 only": {strings.Replace(offerBoth, "RTP/AVP 8 0 101", "RTP/AVP 18", 1), "no RTP/AVP audio"},
		"srtp":      {strings.Replace(offerBoth, "RTP/AVP", "RTP/SAVP", 1), "no RTP/AVP audio"},
		"video":     {strings.Replace(offerBoth, "m=audio", "m=video", 1), "no RTP/AVP audio"},
		"hostname":  {strings.ReplaceAll(offerBoth, "IN IP4 192.0.2.10", "IN IP4 pbx.example"), "not an IP address"},
		"not sdp":   {"hello", "SDP"},
		"huge":      {offerBoth + strings.Repeat("a=x\r\n", 1000), "more than"},
		"remapped":  {strings.Replace(offerBoth, "a=rtpmap:0 PCMU/8000", "a=rtpmap:0 G722/8000", 1), ""},
	} {
		o, err := parseOffer([]byte(c.sdp), []uint8{ptPCMU})
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: took payload type 0 mapped to another codec: %+v", name, o)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", name, err, c.want)
		}
	}
}

// TestAnswerDirections: a hold offer is answered in kind, and the answer
// is an offer the host itself would take.
func TestAnswerDirections(t *testing.T) {
	for offered, want := range map[direction]direction{sendrecv: sendrecv, sendonly: recvonly, inactive: inactive, recvonly: sendonly} {
		sdp := strings.Replace(offerBoth, "a=fmtp:101 0-15\r\n", "a=fmtp:101 0-15\r\na="+string(offered)+"\r\n", 1)
		o, err := parseOffer([]byte(sdp), []uint8{ptPCMU})
		if err != nil {
			t.Fatal(err)
		}
		if o.dir.held() != (offered == sendonly || offered == inactive) {
			t.Errorf("%s: held %v", offered, o.dir.held())
		}
		ans := answer(o, netip.MustParseAddrPort("198.51.100.7:20000"), 1, 1)
		back, err := parseOffer(ans, []uint8{ptPCMU})
		if err != nil {
			t.Fatalf("answer does not parse: %v\n%s", err, ans)
		}
		if back.dir != want || back.eventPT != 101 || back.remote != netip.MustParseAddrPort("198.51.100.7:20000") {
			t.Errorf("%s answered %+v, want %s", offered, back, want)
		}
	}
}

// FuzzParseOffer: no SDP makes the offer parser panic, and whatever it
// takes it answers with SDP it takes back.
func FuzzParseOffer(f *testing.F) {
	f.Add([]byte(offerBoth))
	f.Add([]byte(strings.Replace(offerBoth, "c=IN IP4 192.0.2.10\r\n", "", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := parseOffer(data, []uint8{ptPCMU, ptPCMA})
		if err != nil {
			return
		}
		if _, err := parseOffer(answer(o, netip.MustParseAddrPort("127.0.0.1:20000"), 1, 1), []uint8{o.pt}); err != nil {
			t.Fatalf("the answer to %q does not parse: %v", data, err)
		}
	})
}
