package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// The caller side speaks as Asterisk's chan_websocket does
// (asterisk/documentation docs/Configuration/Channel-Drivers/WebSocket.md):
// MEDIA_START in the plain-text or JSON form, then 160-byte ulaw frames
// every 20 ms, DTMF_END for keys, MEDIA_XOFF/MEDIA_XON for flow control.
const (
	asteriskPlainStart = "MEDIA_START connection_id:e226e283-c90a-4ea9-9e37-389000b9ef47 channel:WebSocket/connectionid channel_id:pbx1-123456789.999 format:ulaw optimal_frame_size:160 ptime:20"
	asteriskJSONStart  = `{"event":"MEDIA_START","connection_id":"e226e283-c90a-4ea9-9e37-389000b9ef47","channel":"WebSocket/connectionid","channel_id":"pbx1-123456789.999","format":"ulaw","optimal_frame_size":160,"ptime":20,"channel_variables":{"pipeline":"bot"}}`
)

// writeText sends one text message, failing the test on an error.
func writeText(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// TestAsteriskEchoCall places an Asterisk call in each control form on an
// echo route: its audio must come back as voxhost run makes it, a key
// must reach the plugin, whose clear comes back as FLUSH_MEDIA in the
// call's form; the JSON call picks its route by a channel variable and
// asks the host to answer.
func TestAsteriskEchoCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough", "bot": "gain db=-6 | " + testdataPlugin("clear_on_dtmf")}, nil)
	ulaw := ulawSpeech(1)
	want := hosttest.OfflineUlaw(t, "gain db=-6", ulaw)
	for _, tc := range []struct {
		name, path, start   string
		answer, dtmf, flush string
	}{
		{"plain-text", "/asterisk?pipeline=bot", asteriskPlainStart, "", "DTMF_END digit:5 channel_id:pbx1-123456789.999", "FLUSH_MEDIA"},
		{"json", "/asterisk?answer=1", asteriskJSONStart, `{"command":"ANSWER"}`,
			`{"event":"DTMF_END","channel_id":"pbx1-123456789.999","digit":"5"}`, `{"command":"FLUSH_MEDIA"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, h.url+tc.path)
			defer c.CloseNow()
			ctx := context.Background()
			writeText(t, c, tc.start)
			if tc.answer != "" {
				if typ, msg := readMessage(t, c); typ != websocket.MessageText || string(msg) != tc.answer {
					t.Fatalf("first message %v %q, want %s", typ, msg, tc.answer)
				}
			}
			var got []byte
			for off := 0; off < len(ulaw); off += 160 {
				if err := c.Write(ctx, websocket.MessageBinary, ulaw[off:off+160]); err != nil {
					t.Fatal(err)
				}
				typ, msg := readMessage(t, c)
				if typ != websocket.MessageBinary || len(msg) != 160 {
					t.Fatalf("frame %d answered with %v %q", off/160, typ, msg)
				}
				got = append(got, msg...)
				if off == 160*20 {
					writeText(t, c, tc.dtmf)
					if typ, msg := readMessage(t, c); typ != websocket.MessageText || string(msg) != tc.flush {
						t.Fatalf("after DTMF_END: %v %q, want the plugin's clear as %s", typ, msg, tc.flush)
					}
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatal("the Asterisk call's audio differs from voxhost run's for the same input")
			}
			// Asterisk hangs up by closing the socket.
			c.Close(websocket.StatusNormalClosure, "")
		})
	}
	assertMetric(t, h, `voxhost_calls_total{outcome="completed",protocol="asterisk"} 2`)
}

// TestAsteriskMalformedEndsOnlyThatCall: audio before MEDIA_START, a
// codec the host does not carry and a message over Asterisk's limit each
// end their call with a close code and reason; a call already started
// hears HANGUP first; a bystander call goes on.
func TestAsteriskMalformedEndsOnlyThatCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	bystander := dial(t, h.url+"/asterisk")
	defer bystander.CloseNow()
	writeText(t, bystander, asteriskPlainStart)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		send   func(c *websocket.Conn)
		hangup bool
		code   websocket.StatusCode
		reason string
	}{
		{"audio before MEDIA_START", func(c *websocket.Conn) { c.Write(ctx, websocket.MessageBinary, make([]byte, 160)) },
			false, websocket.StatusInvalidFramePayloadData, "audio before MEDIA_START"},
		{"opus", func(c *websocket.Conn) { writeText(t, c, strings.Replace(asteriskPlainStart, "ulaw", "opus", 1)) },
			false, websocket.StatusUnsupportedData, `format "opus"`},
		{"odd frame after start", func(c *websocket.Conn) {
			writeText(t, c, asteriskPlainStart)
			c.Write(ctx, websocket.MessageBinary, make([]byte, 161))
		}, true, websocket.StatusInvalidFramePayloadData, "161 bytes"},
		{"over 65,500 bytes", func(c *websocket.Conn) {
			writeText(t, c, asteriskPlainStart)
			c.Write(ctx, websocket.MessageBinary, make([]byte, 65504))
		}, true, websocket.StatusPolicyViolation, "65500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, h.url+"/asterisk")
			defer c.CloseNow()
			tc.send(c)
			if tc.hangup {
				if typ, msg := readMessage(t, c); typ != websocket.MessageText || string(msg) != "HANGUP" {
					t.Fatalf("before the close: %v %q, want HANGUP", typ, msg)
				}
			}
			if code, reason := closeOf(t, c); code != tc.code || !strings.Contains(reason, tc.reason) {
				t.Fatalf("close %v %q, want %v with %q", code, reason, tc.code, tc.reason)
			}
		})
	}
	frame := ulawSpeech(0.02)
	if err := bystander.Write(ctx, websocket.MessageBinary, frame); err != nil {
		t.Fatal(err)
	}
	if typ, msg := readMessage(t, bystander); typ != websocket.MessageBinary || !bytes.Equal(msg, hosttest.OfflineUlaw(t, "passthrough", frame)) {
		t.Fatal("the bystander call was disturbed")
	}
}

// TestAsteriskFlowControlHoldsARelay relays an Asterisk call to a bot that
// speaks the asterisk dialect and answers with a two-second burst and a
// mark. The host paces Asterisk; once the caller sends MEDIA_XOFF no more
// audio may come (but a frame already on its way) until MEDIA_XON, and
// then the rest, in order, byte for byte, then the bot's mark as
// MARK_MEDIA, which the bot hears played.
func TestAsteriskFlowControlHoldsARelay(t *testing.T) {
	const frames = 100
	answer := make([]byte, 0, frames*160)
	for i := range frames {
		answer = append(answer, bytes.Repeat([]byte{byte(i + 1)}, 160)...) // a frame's bytes name it
	}
	type botLog struct {
		start struct {
			Event, Format    string
			ConnectionID     string `json:"connection_id"`
			ChannelID        string `json:"channel_id"`
			OptimalFrameSize int    `json:"optimal_frame_size"`
		}
		played bool
	}
	got := make(chan botLog, 1)
	bot := startBot(t, func(conn *gorilla.Conn) {
		var log botLog
		defer func() { got <- log }()
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		json.Unmarshal(msg, &log.start)
		// As an Asterisk application: all at once, in one message of any
		// length, then a mark.
		conn.WriteMessage(gorilla.BinaryMessage, answer)
		conn.WriteMessage(gorilla.TextMessage, []byte(`{"command":"MARK_MEDIA","correlation_id":"answer-done"}`))
		for {
			typ, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if typ == gorilla.TextMessage && strings.Contains(string(msg), `"MEDIA_MARK_PROCESSED"`) && strings.Contains(string(msg), `"answer-done"`) {
				log.played = true
			}
		}
	})
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough", upstream: upstream(t, bot.url, "asterisk")},
	}, nil)
	c := dial(t, h.url+"/asterisk")
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writeText(t, c, asteriskPlainStart)
	go feedSilence(ctx, c)

	type message struct {
		typ websocket.MessageType
		msg []byte
		at  time.Time
	}
	msgs := make(chan message, 256)
	go func() {
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- message{typ, msg, time.Now()}
		}
	}()
	next := func(within time.Duration) (message, bool) {
		t.Helper()
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the call ended")
			}
			return m, true
		case <-time.After(within):
			return message{}, false
		}
	}
	var heard []byte
	var xoff, xon time.Time
	for len(heard) < len(answer) {
		m, ok := next(5 * time.Second)
		if !ok {
			t.Fatalf("no audio after %d frames", len(heard)/160)
		}
		if m.typ != websocket.MessageBinary {
			t.Fatalf("a %v message %q before the answer ended", m.typ, m.msg)
		}
		if !xon.IsZero() || xoff.IsZero() {
			heard = append(heard, m.msg...)
		} else if m.at.Sub(xoff) > 60*time.Millisecond {
			t.Fatalf("a frame %v after MEDIA_XOFF", m.at.Sub(xoff))
		} else {
			heard = append(heard, m.msg...) // already on its way
		}
		if len(heard) == 10*160 && xoff.IsZero() {
			writeText(t, c, "MEDIA_XOFF")
			xoff = time.Now()
			// Whatever the host sent before it read the XOFF arrives at
			// once; then nothing, for as long as the caller holds it.
			for {
				m, ok := next(600 * time.Millisecond)
				if !ok {
					break
				}
				if m.at.Sub(xoff) > 60*time.Millisecond || m.typ != websocket.MessageBinary {
					t.Fatalf("%v message %v after MEDIA_XOFF", m.typ, m.at.Sub(xoff))
				}
				heard = append(heard, m.msg...)
			}
			writeText(t, c, "MEDIA_XON")
			xon = time.Now()
		}
	}
	if !bytes.Equal(heard, hosttest.OfflineUlaw(t, "passthrough", answer)) {
		for i := 0; i+160 <= len(heard); i += 160 {
			if heard[i] != byte(i/160+1) {
				t.Fatalf("frame %d is frame %d of the answer: out of order", i/160, int(heard[i])-1)
			}
		}
		t.Fatal("the answer differs from the bot's")
	}
	m, ok := next(5 * time.Second)
	if !ok || m.typ != websocket.MessageText || string(m.msg) != "MARK_MEDIA answer-done" {
		t.Fatalf("after the answer: %v %q, want MARK_MEDIA answer-done", m.typ, m.msg)
	}
	cancel()
	c.Close(websocket.StatusNormalClosure, "")
	log := <-got
	if log.start.Event != "MEDIA_START" || log.start.Format != "ulaw" || log.start.OptimalFrameSize != 160 ||
		log.start.ConnectionID != "e226e283-c90a-4ea9-9e37-389000b9ef47" || log.start.ChannelID != "pbx1-123456789.999" {
		t.Errorf("the bot's MEDIA_START: %+v", log.start)
	}
	if !log.played {
		t.Error("the bot never heard its mark played")
	}
}
