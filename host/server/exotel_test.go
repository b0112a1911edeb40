package server_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
)

// An Exotel Voicebot stream as Exotel opens it
// (developer.exotel.com/docs/agentstream/websocket-protocol), its
// custom_parameters picking the route; media comes about every 100 ms.
const exotelSid = "MZ18ad3ab5a668481ce02b83e7395059f0"

func exotelStart(rate int) string {
	return fmt.Sprintf(`{"event":"start","sequence_number":"1","stream_sid":%q,"start":{"stream_sid":%q,"call_sid":"CA1","account_sid":"AC1","from":"+919876543210","to":"+918047491899","custom_parameters":{"pipeline":"bot"},"media_format":{"encoding":"audio/x-raw","sample_rate":"%d","bit_rate":"16"}}}`,
		exotelSid, exotelSid, rate)
}

func exotelCaller(rate int, query string) carrierCaller {
	f := codec.Format{Encoding: codec.L16, Rate: rate}
	chunk := 0
	return carrierCaller{
		path: "/exotel" + query,
		open: []string{`{"event":"connected"}`, exotelStart(rate)},
		media: func(audio []byte) string {
			chunk++
			return fmt.Sprintf(`{"event":"media","sequence_number":"%d","stream_sid":%q,"media":{"chunk":"%d","timestamp":"%d","payload":%q}}`,
				chunk+1, exotelSid, chunk, (chunk-1)*100, base64.StdEncoding.EncodeToString(audio))
		},
		dtmf:       `{"event":"dtmf","sequence_number":"7","stream_sid":"` + exotelSid + `","dtmf":{"digit":"5","duration":"100"}}`,
		stop:       `{"event":"stop","sequence_number":"20","stream_sid":"` + exotelSid + `","stop":{"call_sid":"CA1","account_sid":"AC1","reason":"callended"}}`,
		in:         f,
		out:        f,
		frameMs:    100,
		mediaEvent: "media",
		clearEvent: "clear",
		id:         exotelSid,
	}
}

// TestExotelEchoCall: L16 at 8 kHz, Exotel's default, and at 16 kHz as the
// applet URL's ?sample-rate= asks.
func TestExotelEchoCall(t *testing.T) {
	t.Run("8 kHz", func(t *testing.T) { carrierEcho(t, exotelCaller(8000, "")) })
	t.Run("16 kHz", func(t *testing.T) { carrierEcho(t, exotelCaller(16000, "?sample-rate=16000")) })
}

func TestExotelMalformedEndsOnlyThatCall(t *testing.T) {
	start := exotelStart(8000)
	carrierMalformedEndsOnlyThatCall(t, []carrierMalformed{
		{"custom_parameters of numbers", "/exotel", []string{strings.Replace(start, `"bot"`, `1`, 1)}, false, websocket.StatusInvalidFramePayloadData, "custom_parameters"},
		{"8-bit audio", "/exotel", []string{strings.Replace(start, `"bit_rate":"16"`, `"bit_rate":"8"`, 1)}, false, websocket.StatusUnsupportedData, "8 bits"},
		{"a long call_sid", "/exotel", []string{strings.Replace(start, `"CA1"`, `"`+strings.Repeat("C", 65)+`"`, 1)}, false, websocket.StatusPolicyViolation, "call_sid"},
		{"a bad dtmf", "/exotel", []string{start, `{"event":"dtmf","dtmf":{"digit":"55"}}`}, false, websocket.StatusInvalidFramePayloadData, "dtmf.digit"},
	})
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	if got := httpStatus(t, h.url+"/exotel?sample-rate=11025", nil); got != 400 {
		t.Fatalf("a sample-rate Exotel does not stream: HTTP %d, want 400", got)
	}
}

// TestExotelBotBehindARelay: a bot written for Exotel serves a raw L16
// call.
func TestExotelBotBehindARelay(t *testing.T) {
	carrierRelay(t, carrierBot{
		dialect: "exotel",
		format:  codec.Format{Encoding: codec.L16, Rate: 8000},
		media: func(audio []byte) string {
			return `{"event":"media","stream_sid":"call-7","media":{"payload":"` + base64.StdEncoding.EncodeToString(audio) + `"}}`
		},
		mark: func(name string) string {
			return `{"event":"mark","stream_sid":"call-7","mark":{"name":"` + name + `"}}`
		},
		ackEvent:   "mark",
		startEvent: "start",
		stopEvent:  "stop",
		checkStart: func(t *testing.T, m carrierMsg) {
			var st struct {
				CallSid     string `json:"call_sid"`
				MediaFormat struct {
					Encoding   string `json:"encoding"`
					SampleRate string `json:"sample_rate"`
				} `json:"media_format"`
			}
			carrierStart(t, m, &st)
			if m.StreamSid == "" || st.CallSid != "call-7" || st.MediaFormat.Encoding != "audio/x-raw" || st.MediaFormat.SampleRate != "8000" {
				t.Errorf("the bot's start: stream_sid %q, %+v", m.StreamSid, st)
			}
		},
		callerQuery: "?codec=l16&rate=8000&call_id=call-7",
	})
}
