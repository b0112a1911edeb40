package sip_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/pion/rtp"

	"github.com/voxhost/voxhost/internal/siptest"
)

// keyBot is a bot on the raw dialect that, once the call starts, says
// speech (frames of one μ-law byte), presses key, then says after (frames
// of another), and hangs up if hangUp says so, else stays on the line.
func keyBot(t *testing.T, speech, after int, key string, hangUp bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		if _, _, err := c.Read(ctx); err != nil { // start
			return
		}
		for range speech {
			_ = c.Write(ctx, websocket.MessageBinary, bytes.Repeat([]byte{speechByte}, 160))
		}
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"event":"dtmf","digit":"`+key+`"}`))
		for range after {
			_ = c.Write(ctx, websocket.MessageBinary, bytes.Repeat([]byte{afterByte}, 160))
		}
		if hangUp {
			_ = c.Close(websocket.StatusNormalClosure, "goodbye")
			return
		}
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// keyHost starts a keyBot and a host whose route keys relays to it.
func keyHost(t *testing.T, speech, after int, key string, hangUp bool) *host {
	t.Helper()
	bot := keyBot(t, speech, after, key, hangUp)
	return sipHost(t, "", fmt.Sprintf(`
pipelines:
  keys:
    inbound: [{plugin: passthrough}]
    upstream: {url: %q, protocol: raw}
`, "ws"+strings.TrimPrefix(bot.URL, "http")))
}

// The μ-law bytes of keyBot's audio before and after its key: neither is
// silence, and each comes back from μ-law through PCM unchanged.
const (
	speechByte = 0x10
	afterByte  = 0x20
)

// TestBotKeyBecomesTelephoneEvents: a bot's dtmf reaches a SIP caller as
// RFC 4733 telephone-events, after the audio the bot sent before it: the
// caller's socket sees the event's packets on one timestamp, the first
// marked, durations growing, and its end sent three times with the final
// duration (RFC 4733 §2.5.1.4), numbered in line with the audio.
func TestBotKeyBecomesTelephoneEvents(t *testing.T) {
	const speech = 10
	h := keyHost(t, speech, 5, "7", false)
	call := siptest.Dial(t, h.sip, "keys")

	var got []*rtp.Packet
	ends, afterAudio := 0, 0
	for ends < 3 || afterAudio == 0 {
		p := call.ReadRTP()
		got = append(got, p)
		switch {
		case p.PayloadType == siptest.EventPT && p.Payload[1]&0x80 != 0:
			ends++
		case p.PayloadType == 0 && p.Payload[0] == afterByte:
			afterAudio++
		}
	}

	var events []*rtp.Packet
	lastSpeech, speechFrames, firstEvent := -1, 0, -1
	for i, p := range got {
		if i > 0 && p.SequenceNumber != got[i-1].SequenceNumber+1 {
			t.Fatalf("packet %d: sequence %d after %d: the events are not numbered in line with the audio", i, p.SequenceNumber, got[i-1].SequenceNumber)
		}
		switch {
		case p.PayloadType == siptest.EventPT:
			if firstEvent < 0 {
				firstEvent = i
			}
			events = append(events, p)
		case p.Payload[0] == speechByte:
			lastSpeech = i
			speechFrames++
		}
	}
	if speechFrames != speech || lastSpeech > firstEvent {
		t.Fatalf("%d of the bot's %d frames before its key, the last at packet %d, the event's first at %d: the key must follow them",
			speechFrames, speech, lastSpeech, firstEvent)
	}
	start := events[0].Timestamp
	if end := got[lastSpeech].Timestamp + 160; int32(start-end) < 0 {
		t.Fatalf("the event starts at timestamp %d, inside the speech before it (which ends at %d)", start, end)
	}
	var durations []uint16
	for i, e := range events {
		ev, flags, dur := e.Payload[0], e.Payload[1], binary.BigEndian.Uint16(e.Payload[2:])
		durations = append(durations, dur)
		switch {
		case ev != 7 || flags&0x3f != 10 || e.Timestamp != start:
			t.Fatalf("event packet %d: event %d, volume %d, timestamp %d; want 7, 10 (-10 dBm0), %d", i, ev, flags&0x3f, e.Timestamp, start)
		case e.Marker != (i == 0):
			t.Fatalf("event packet %d: marker %v; only the first is marked", i, e.Marker)
		case (flags&0x80 != 0) != (i >= len(events)-3):
			t.Fatalf("event packet %d of %d: end bit %v; the last three carry it", i, len(events), flags&0x80 != 0)
		case i > 0 && i < len(events)-2 && dur <= durations[i-1]:
			t.Fatalf("durations %v do not grow", durations)
		case i >= len(events)-2 && dur != durations[i-1]:
			t.Fatalf("durations %v: the end's retransmissions change its duration", durations)
		}
	}
	if final := int(durations[len(durations)-1]); final != (len(events)-2)*160 {
		t.Fatalf("durations %v: the end says %d samples for %d packets of 20 ms", durations, final, len(events)-2)
	}
	if n := h.metric(t, `voxhost_rtp_dtmf_total{direction="out"}`); n != 1 {
		t.Fatalf("voxhost_rtp_dtmf_total{out} = %v, want 1", n)
	}
	t.Logf("the bot's key 7 reached the caller as %d RTP packets (durations %v) after its %d frames of speech", len(events), durations, speech)
}
