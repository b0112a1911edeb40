package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

// The caller side speaks as Vonage's Voice API does to the WebSocket of an
// NCCO connect action (developer.vonage.com/en/voice/voice-api/concepts/websockets):
// websocket:connected with the content-type and the NCCO's headers at the
// top level, then 640-byte binary frames of L16 at 16 kHz every 20 ms,
// websocket:dtmf for keys and websocket:notify with the payload of each
// notify once the audio before it has played.
const vonageCallerConnected = `{"event":"websocket:connected","content-type":"audio/l16;rate=16000","pipeline":"bot","caller-id":"447700900123"}`

// TestVonageEchoCall places a Vonage call on an echo route picked by an
// NCCO header: its 16 kHz audio must come back as voxhost run makes it, a
// notify Vonage returns is answered in kind, and a key reaches the plugin,
// whose clear comes back as Vonage's {"action":"clear"}.
func TestVonageEchoCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough", "bot": "gain db=-6 | " + testdataPlugin("clear_on_dtmf")}, nil)
	pcm := signal.Speech(16000, 1)
	want := hosttest.OfflinePCM(t, "gain db=-6", pcm, 16000)
	c := dial(t, h.url+"/vonage")
	defer c.CloseNow()
	ctx := context.Background()
	writeText(t, c, vonageCallerConnected)
	var got []byte
	for off := 0; off < len(pcm); off += 640 {
		if err := c.Write(ctx, websocket.MessageBinary, pcm[off:off+640]); err != nil {
			t.Fatal(err)
		}
		typ, msg := readMessage(t, c)
		if typ != websocket.MessageBinary || len(msg) != 640 {
			t.Fatalf("frame %d answered with %v of %d bytes", off/640, typ, len(msg))
		}
		got = append(got, msg...)
		switch off / 640 {
		case 10:
			writeText(t, c, `{"event":"websocket:notify","payload":{"name":"after-10"}}`)
			if typ, msg := readMessage(t, c); typ != websocket.MessageText || string(msg) != `{"action":"notify","payload":{"name":"after-10"}}` {
				t.Fatalf("after the notify: %v %q, want it echoed", typ, msg)
			}
		case 20:
			writeText(t, c, `{"event":"websocket:dtmf","digit":"5","duration":260}`)
			if typ, msg := readMessage(t, c); typ != websocket.MessageText || string(msg) != `{"action":"clear"}` {
				t.Fatalf("after the key: %v %q, want the plugin's clear", typ, msg)
			}
			writeText(t, c, `{"event":"websocket:cleared"}`)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the Vonage call's audio differs from voxhost run's for the same input")
	}
	// Vonage hangs up by closing the socket.
	c.Close(websocket.StatusNormalClosure, "")
	waitFor(t, func() bool {
		return strings.Contains(metrics(t, h), `voxhost_calls_total{outcome="completed",protocol="vonage"} 1`)
	})
}

// TestVonageMalformedEndsOnlyThatCall: audio before websocket:connected, a
// content-type the host does not carry, a frame of half a sample and a
// header past its bound each end their call with a close code and reason;
// a bystander call goes on.
func TestVonageMalformedEndsOnlyThatCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	bystander := dial(t, h.url+"/vonage")
	defer bystander.CloseNow()
	writeText(t, bystander, `{"event":"websocket:connected","content-type":"audio/l16;rate=8000"}`)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		send   func(c *websocket.Conn)
		code   websocket.StatusCode
		reason string
	}{
		{"audio before connected", func(c *websocket.Conn) { c.Write(ctx, websocket.MessageBinary, make([]byte, 640)) },
			websocket.StatusInvalidFramePayloadData, "audio before websocket:connected"},
		{"μ-law", func(c *websocket.Conn) {
			writeText(t, c, `{"event":"websocket:connected","content-type":"audio/pcmu;rate=8000"}`)
		}, websocket.StatusUnsupportedData, `unsupported content-type "audio/pcmu;rate=8000"`},
		{"half a sample", func(c *websocket.Conn) {
			writeText(t, c, `{"event":"websocket:connected","content-type":"audio/l16;rate=16000"}`)
			c.Write(ctx, websocket.MessageBinary, make([]byte, 641))
		}, websocket.StatusInvalidFramePayloadData, "641 bytes"},
		{"long header", func(c *websocket.Conn) {
			writeText(t, c, `{"event":"websocket:connected","content-type":"audio/l16;rate=16000","x":"`+strings.Repeat("y", 600)+`"}`)
		}, websocket.StatusPolicyViolation, "longer than 512"},
		{"bad JSON", func(c *websocket.Conn) { writeText(t, c, `{"event":"websocket:connected",`) },
			websocket.StatusInvalidFramePayloadData, "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, h.url+"/vonage")
			defer c.CloseNow()
			tc.send(c)
			if code, reason := closeOf(t, c); code != tc.code || !strings.Contains(reason, tc.reason) {
				t.Fatalf("close %v %q, want %v with %q", code, reason, tc.code, tc.reason)
			}
		})
	}
	frame := signal.Speech(8000, 0.02)
	if err := bystander.Write(ctx, websocket.MessageBinary, frame); err != nil {
		t.Fatal(err)
	}
	if typ, msg := readMessage(t, bystander); typ != websocket.MessageBinary || !bytes.Equal(msg, frame) {
		t.Fatal("the bystander call was disturbed")
	}
}

// TestRelayThroughAVonageBot relays a Vonage caller to a bot that speaks
// the vonage dialect's far side, as an app behind Vonage does (it reads
// with voxhost's own server role): the bot must see Vonage's connected
// with the caller's headers and the caller's audio; its answer must reach
// the caller as 20 ms frames, its notify come back once the caller's
// notify says the audio before it played, with the bot's payload intact,
// and its clear reach the caller as Vonage's clear.
func TestRelayThroughAVonageBot(t *testing.T) {
	answer := signal.Speech(16000, 0.3)
	type botLog struct {
		start    *transport.Start
		frames   int
		notified string
		cleared  bool
	}
	got := make(chan botLog, 1)
	var log botLog
	bot := startBot(t, serveAsApp(t, transport.Vonage(), func() { got <- log }, func(conn *gorilla.Conn, _ transport.Session, in *transport.Inbound, msg []byte) {
		switch in.Kind {
		case transport.KindStart:
			log.start = in.Start
		case transport.KindAudio:
			if log.frames++; log.frames == 5 {
				// The answer at once, then a notify of the bot's own.
				for off := 0; off < len(answer); off += 640 {
					conn.WriteMessage(gorilla.BinaryMessage, answer[off:off+640])
				}
				conn.WriteMessage(gorilla.TextMessage, []byte(`{"action":"notify","payload":{"reply_id":"r1","n":1}}`))
			}
		case transport.KindIgnore:
			var e struct {
				Event   string          `json:"event"`
				Payload json.RawMessage `json:"payload"`
			}
			json.Unmarshal(msg, &e)
			switch e.Event {
			case "websocket:notify":
				log.notified = string(e.Payload)
				conn.WriteMessage(gorilla.TextMessage, []byte(`{"action":"clear"}`))
			case "websocket:cleared":
				log.cleared = true
			}
		}
	}))
	up := upstream(t, bot.url, "vonage")
	up.Format = codec.Format{Encoding: codec.L16, Rate: 16000}
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough"},
		"bot":  {inbound: "passthrough", upstream: up},
	}, nil)

	c := dial(t, h.url+"/vonage")
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writeText(t, c, vonageCallerConnected)
	var writes sync.Mutex
	write := func(typ websocket.MessageType, msg []byte) error {
		writes.Lock()
		defer writes.Unlock()
		return c.Write(ctx, typ, msg)
	}
	go func() {
		frame := make([]byte, 640)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if write(websocket.MessageBinary, frame) != nil {
					return
				}
			}
		}
	}()
	var heard []byte
	for {
		typ, msg := readMessage(t, c)
		if typ == websocket.MessageBinary {
			if len(msg) != 640 {
				t.Fatalf("a %d-byte frame; Vonage takes 640", len(msg))
			}
			heard = append(heard, msg...)
			continue
		}
		var notify struct {
			Action  string `json:"action"`
			Payload struct {
				Name string `json:"name"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(msg, &notify); err != nil || notify.Action != "notify" {
			t.Fatalf("caller got %s, want audio or the bot's notify", msg)
		}
		if !bytes.Equal(heard, answer) {
			t.Fatalf("the caller heard %d bytes before the notify, not the bot's %d", len(heard), len(answer))
		}
		// Vonage returns the notify's payload once the audio has played.
		back, _ := json.Marshal(map[string]any{"event": "websocket:notify", "payload": map[string]string{"name": notify.Payload.Name}})
		if err := write(websocket.MessageText, back); err != nil {
			t.Fatal(err)
		}
		break
	}
	for {
		typ, msg := readMessage(t, c)
		if typ == websocket.MessageText {
			if string(msg) != `{"action":"clear"}` {
				t.Fatalf("caller got %s, want the bot's clear", msg)
			}
			break
		}
	}
	write(websocket.MessageText, []byte(`{"event":"websocket:cleared"}`))
	waitFor(t, func() bool { return strings.Contains(metrics(t, h), `voxhost_marks_total{result="played"} 1`) })
	cancel()
	c.Close(websocket.StatusNormalClosure, "")

	log = <-got
	if log.start == nil || log.start.Params["caller-id"] != "447700900123" || log.start.Params["pipeline"] != "bot" {
		t.Fatalf("the bot's websocket:connected: %+v", log.start)
	}
	if log.frames < 5 || !jsonSameText(log.notified, `{"reply_id":"r1","n":1}`) || !log.cleared {
		t.Fatalf("bot: %d frames, notify %q back, cleared %v", log.frames, log.notified, log.cleared)
	}
}

// serveAsApp returns a bot that reads what a dialect sends with the
// server role of proto, as an app behind the carrier reads the carrier:
// the replies the session makes go back at once, and handle gets each
// decoded message and the session to render answers with; done runs when
// the socket ends.
func serveAsApp(t *testing.T, proto transport.Protocol, done func(), handle func(conn *gorilla.Conn, app transport.Session, in *transport.Inbound, msg []byte)) func(*gorilla.Conn) {
	return func(conn *gorilla.Conn) {
		defer done()
		app, err := proto.NewSession(transport.SessionConfig{MaxFrameMs: 200})
		if err != nil {
			t.Error(err)
			return
		}
		var in transport.Inbound
		for {
			typ, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if err := app.Decode(transport.MessageType(typ), msg, &in); err != nil {
				t.Errorf("bot: %v in %q", err, msg)
				return
			}
			if in.Reply != nil {
				conn.WriteMessage(gorilla.TextMessage, in.Reply)
			}
			handle(conn, app, &in, msg)
		}
	}
}

// jsonSameText reports whether a and b hold the same JSON value.
func jsonSameText(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}
