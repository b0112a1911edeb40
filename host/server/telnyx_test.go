package server_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
)

// A Telnyx stream as Telnyx opens it (developers.telnyx.com, "Media
// Streaming over Websockets"), its custom_parameters picking the route.
const (
	telnyxStreamID = "32DE0DEA-53CB-4B21-89A4-9E1819C043BC"
	telnyxCallID   = "v3:2EC-70CTEjlUq3tDM0CxKXIt5-5N4iP4wo7_-PfH-qub97Sk4EqO5w"
)

func telnyxStart(encoding string, rate int) string {
	return fmt.Sprintf(`{"event":"start","sequence_number":"1","stream_id":%q,"start":{"user_id":"3E6F995F-85F7-4705-9741-53B116D28237","call_control_id":%q,"from":"+13122010094","to":"+13122123456","custom_parameters":{"pipeline":"bot"},"media_format":{"encoding":%q,"sample_rate":%d,"channels":1}}}`,
		telnyxStreamID, telnyxCallID, encoding, rate)
}

// telnyxCaller is a Telnyx stream in the given media_format; query goes on
// the stream_url.
func telnyxCaller(encoding string, in, out codec.Format, query string) carrierCaller {
	chunk := 0
	return carrierCaller{
		path: "/telnyx" + query,
		open: []string{`{"event":"connected","version":"1.0.0"}`, telnyxStart(encoding, in.Rate)},
		media: func(audio []byte) string {
			chunk++
			return fmt.Sprintf(`{"event":"media","sequence_number":"%d","media":{"track":"inbound","chunk":"%d","timestamp":"%d","payload":%q},"stream_id":%q}`,
				chunk+1, chunk, (chunk-1)*20, base64.StdEncoding.EncodeToString(audio), telnyxStreamID)
		},
		dtmf:       `{"event":"dtmf","stream_id":"` + telnyxStreamID + `","occurred_at":"2025-06-05T08:54:19.698408Z","sequence_number":"5","dtmf":{"digit":"5"}}`,
		stop:       `{"event":"stop","sequence_number":"99","stop":{"user_id":"3E6F995F-85F7-4705-9741-53B116D28237","call_control_id":"` + telnyxCallID + `"},"stream_id":"` + telnyxStreamID + `"}`,
		in:         in,
		out:        out,
		frameMs:    20,
		mediaEvent: "media",
		clearEvent: "clear",
	}
}

// TestTelnyxEchoCall: a PCMU stream, and a PCMA one (a European call)
// answered in PCMU, Telnyx's default stream_bidirectional_codec, or in
// PCMA when the stream_url says so.
func TestTelnyxEchoCall(t *testing.T) {
	alaw := codec.Format{Encoding: codec.Alaw, Rate: 8000}
	for name, c := range map[string]carrierCaller{
		"PCMU":            telnyxCaller("PCMU", codec.Telephony, codec.Telephony, ""),
		"PCMA, PCMU back": telnyxCaller("PCMA", alaw, codec.Telephony, ""),
		"PCMA both ways":  telnyxCaller("PCMA", alaw, alaw, "?stream_bidirectional_codec=PCMA"),
	} {
		t.Run(name, func(t *testing.T) { carrierEcho(t, c) })
	}
}

func TestTelnyxMalformedEndsOnlyThatCall(t *testing.T) {
	start := telnyxStart("PCMU", 8000)
	carrierMalformedEndsOnlyThatCall(t, []carrierMalformed{
		{"bad base64", "/telnyx", []string{start, `{"event":"media","media":{"payload":"!!!not base64!!!"}}`}, false, websocket.StatusInvalidFramePayloadData, "base64"},
		{"an unsupported codec", "/telnyx", []string{strings.Replace(start, "PCMU", "OPUS", 1)}, false, websocket.StatusUnsupportedData, `"OPUS"`},
		{"binary", "/telnyx", []string{start, string(make([]byte, 160))}, true, websocket.StatusUnsupportedData, "Telnyx sends JSON text messages only"},
		{"a call id that is no id", "/telnyx", []string{strings.Replace(start, telnyxCallID, "v3:a b", 1)}, false, websocket.StatusPolicyViolation, "call_control_id"},
	})
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	if got := httpStatus(t, h.url+"/telnyx?stream_bidirectional_codec=G729", nil); got != 400 {
		t.Fatalf("a stream_bidirectional_codec voxhost cannot send: HTTP %d, want 400", got)
	}
}

// TestTelnyxBotBehindARelay: a bot written for Telnyx serves a raw call.
func TestTelnyxBotBehindARelay(t *testing.T) {
	carrierRelay(t, carrierBot{
		dialect: "telnyx",
		format:  codec.Telephony,
		media: func(audio []byte) string {
			return `{"event":"media","media":{"payload":"` + base64.StdEncoding.EncodeToString(audio) + `"}}`
		},
		mark:       func(name string) string { return `{"event":"mark","mark":{"name":"` + name + `"}}` },
		ackEvent:   "mark",
		startEvent: "start",
		stopEvent:  "stop",
		checkStart: func(t *testing.T, m carrierMsg) {
			var st struct {
				CallControlID string `json:"call_control_id"`
				From          string `json:"from"`
				MediaFormat   struct {
					Encoding   string `json:"encoding"`
					SampleRate int    `json:"sample_rate"`
				} `json:"media_format"`
			}
			carrierStart(t, m, &st)
			if m.StreamID == "" || st.CallControlID != "call-7" || st.From != "+4930123" || st.MediaFormat.Encoding != "PCMU" || st.MediaFormat.SampleRate != 8000 {
				t.Errorf("the bot's start: stream_id %q, %+v", m.StreamID, st)
			}
		},
		callerQuery: "?call_id=call-7&from=%2B4930123",
	})
}
