package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
)

// twilioCaller is a Twilio stream, to try the auto endpoint with the
// carrier every other one copied.
func twilioCaller() carrierCaller {
	const sid = "MZ00000000000000000000000000000001"
	return carrierCaller{
		open: []string{`{"event":"connected","protocol":"Call","version":"1.0.0"}`,
			string(twilioMsg("start", 1, `"start":{"accountSid":"AC1","streamSid":"`+sid+`","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{"pipeline":"bot"}}`))},
		media:      func(audio []byte) string { return string(twilioMedia(sid, audio)) },
		dtmf:       string(twilioMsg("dtmf", 3, `"dtmf":{"track":"inbound_track","digit":"5"}`)),
		stop:       string(twilioMsg("stop", 99, `"stop":{"accountSid":"AC1","callSid":"CA1"}`)),
		in:         codec.Telephony,
		out:        codec.Telephony,
		frameMs:    20,
		mediaEvent: "media",
		clearEvent: "clear",
		id:         sid,
	}
}

// TestAutoEndpointTakesEveryCarrier: each carrier's call on /auto is the
// call it is on its own path, audio, key, clear and stop, the carrier's
// own query included (Exotel's ?sample-rate=).
func TestAutoEndpointTakesEveryCarrier(t *testing.T) {
	for name, c := range map[string]carrierCaller{
		"twilio":          twilioCaller(),
		"telnyx":          telnyxCaller("PCMU", codec.Telephony, codec.Telephony, ""),
		"telnyx PCMA":     telnyxCaller("PCMA", codec.Format{Encoding: codec.Alaw, Rate: 8000}, codec.Telephony, ""),
		"plivo":           plivoCaller("audio/x-mulaw", codec.Telephony),
		"exotel at 16kHz": exotelCaller(16000, "?sample-rate=16000"),
	} {
		t.Run(name, func(t *testing.T) {
			_, query, _ := strings.Cut(c.path, "?")
			if c.path = "/auto"; query != "" {
				c.path += "?" + query
			}
			carrierEcho(t, c)
		})
	}
}

func TestAutoEndpointMalformedEndsOnlyThatCall(t *testing.T) {
	carrierMalformedEndsOnlyThatCall(t, []carrierMalformed{
		{"audio first", "/auto", []string{string(make([]byte, 160))}, true, websocket.StatusUnsupportedData, "its protocol's own path"},
		{"no carrier's first message", "/auto", []string{`{"event":"hello"}`}, false, websocket.StatusInvalidFramePayloadData, "none a carrier opens with"},
		{"greetings only", "/auto", []string{`{"event":"connected"}`, `{"event":"connected"}`, `{"event":"connected"}`}, false,
			websocket.StatusInvalidFramePayloadData, "no carrier recognised in the first 3 messages"},
		{"a carrier's malformed media", "/auto", []string{telnyxStart("PCMU", 8000), `{"event":"media","media":{"payload":"!!"}}`}, false,
			websocket.StatusInvalidFramePayloadData, "telnyx: bad base64"},
		{"a query the carrier refuses", "/auto?sample-rate=5", []string{`{"event":"connected"}`, exotelStart(8000)}, false,
			websocket.StatusUnsupportedData, fmt.Sprintf("recognised exotel, but exotel: sample-rate=%q", "5")},
	})
}
