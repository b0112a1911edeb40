package server_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
)

// A Plivo stream as Plivo opens it (plivo.com/docs/voice/audio-streaming,
// "Stream Event Protocol"), its extra_headers picking the route.
const plivoStreamID = "87654321-4321-4321-4321-cba987654321"

func plivoStart(contentType string, rate int) string {
	return fmt.Sprintf(`{"event":"start","sequenceNumber":1,"start":{"callId":"12345678-1234-1234-1234-123456789abc","streamId":%q,"accountId":"MAXXXXXXXXXXXXXXXXXX","tracks":["inbound"],"mediaFormat":{"encoding":%q,"sampleRate":%d}},"extra_headers":"pipeline=bot;userId=12345"}`,
		plivoStreamID, contentType, rate)
}

func plivoCaller(contentType string, f codec.Format) carrierCaller {
	seq := 1
	return carrierCaller{
		path: "/plivo",
		open: []string{plivoStart(contentType, f.Rate)},
		media: func(audio []byte) string {
			seq++
			return fmt.Sprintf(`{"event":"media","sequenceNumber":%d,"streamId":%q,"media":{"track":"inbound","timestamp":"%d","chunk":%d,"payload":%q},"extra_headers":"pipeline=bot;userId=12345"}`,
				seq, plivoStreamID, 1705312200000+int64(seq)*20, seq-1, base64.StdEncoding.EncodeToString(audio))
		},
		dtmf:       `{"event":"dtmf","sequenceNumber":3,"streamId":"` + plivoStreamID + `","dtmf":{"digit":"5"}}`,
		in:         f,
		out:        f,
		frameMs:    20,
		mediaEvent: "playAudio",
		clearEvent: "clearAudio",
		id:         plivoStreamID,
	}
}

// TestPlivoEchoCall: μ-law at 8 kHz, and L16 at 16 kHz; a Plivo stream
// ends with the socket's close.
func TestPlivoEchoCall(t *testing.T) {
	t.Run("audio/x-mulaw", func(t *testing.T) { carrierEcho(t, plivoCaller("audio/x-mulaw", codec.Telephony)) })
	t.Run("audio/x-l16", func(t *testing.T) {
		carrierEcho(t, plivoCaller("audio/x-l16", codec.Format{Encoding: codec.L16, Rate: 16000}))
	})
}

func TestPlivoMalformedEndsOnlyThatCall(t *testing.T) {
	start := plivoStart("audio/x-mulaw", 8000)
	carrierMalformedEndsOnlyThatCall(t, []carrierMalformed{
		{"media before start", "/plivo", []string{`{"event":"media","media":{"payload":"AAAA"}}`}, false, websocket.StatusInvalidFramePayloadData, "media before start"},
		{"A-law", "/plivo", []string{strings.Replace(start, "audio/x-mulaw", "audio/x-alaw", 1)}, false, websocket.StatusUnsupportedData, "audio/x-alaw"},
		{"a half sample of L16", "/plivo", []string{plivoStart("audio/x-l16", 8000), `{"event":"media","media":{"payload":"AQID"}}`}, false,
			websocket.StatusInvalidFramePayloadData, "not a multiple of 16"},
		{"a long checkpoint name", "/plivo", []string{start, `{"event":"playedStream","name":"` + strings.Repeat("m", 300) + `"}`}, false,
			websocket.StatusPolicyViolation, "longer than 256"},
	})
}

// TestPlivoBotBehindARelay: a bot written for Plivo serves a raw call.
func TestPlivoBotBehindARelay(t *testing.T) {
	carrierRelay(t, carrierBot{
		dialect: "plivo",
		format:  codec.Telephony,
		media: func(audio []byte) string {
			return `{"event":"playAudio","media":{"contentType":"audio/x-mulaw","sampleRate":8000,"payload":"` + base64.StdEncoding.EncodeToString(audio) + `"}}`
		},
		mark:       func(name string) string { return `{"event":"checkpoint","streamId":"call-7","name":"` + name + `"}` },
		ackEvent:   "playedStream",
		startEvent: "start",
		checkStart: func(t *testing.T, m carrierMsg) {
			var st struct {
				CallID      string `json:"callId"`
				StreamID    string `json:"streamId"`
				MediaFormat struct {
					Encoding   string `json:"encoding"`
					SampleRate int    `json:"sampleRate"`
				} `json:"mediaFormat"`
			}
			carrierStart(t, m, &st)
			if st.CallID != "call-7" || st.StreamID == "" || st.MediaFormat.Encoding != "audio/x-mulaw" || st.MediaFormat.SampleRate != 8000 {
				t.Errorf("the bot's start: %+v", st)
			}
		},
		callerQuery: "?call_id=call-7",
	})
}
