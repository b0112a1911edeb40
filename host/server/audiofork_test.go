package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

// The callers here speak as FreeSWITCH's mod_audio_fork and
// mod_audio_stream and jambonz's listen verb do (see
// host/transport/audiofork.go and jambonz.go): one text frame of
// metadata, then binary L16 frames of 20 ms.

// offlineL16 is what the inline pipeline spec makes of L16 audio at rate,
// fed in 20 ms frames as a call feeds it.
func offlineL16(t *testing.T, spec string, rate int, pcm []byte) []byte {
	t.Helper()
	p := hosttest.Pipeline(t, hosttest.Catalog(t), spec, pipeline.CallConfig{InputRate: rate, MaxFrameMs: 100})
	return hosttest.Process(t, p, pcm, 20*rate/1000*2)
}

// dialFork dials a module's endpoint offering its subprotocols, as the
// module's client does.
func dialFork(t *testing.T, url string, subprotocols ...string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: subprotocols})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(1 << 20)
	return c
}

// TestForkEchoCalls places a call of each module on an echo route: the
// audio must come back in the module's playback form, byte for byte as
// the pipeline makes it offline; a key must reach the plugin, whose event
// comes back as the module's json event and whose clear as killAudio,
// where the module has them; mod_audio_fork's
// graceful shutdown (an empty binary frame) ends the call in order, with
// disconnect before the close.
func TestForkEchoCalls(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough", "bot": "gain db=-6 | " + testdataPlugin("clear_on_dtmf")}, nil)
	for _, tc := range []struct {
		name, path, metadata string
		rate                 int
		clear, end           string // what a key and the end bring back; "" for nothing
	}{
		{"audiofork", "/audiofork?rate=16k", `{"to":"6173333456","from":"2061236666","pipeline":"bot"}`, 16000, `{"type":"killAudio"}`, `{"type":"disconnect"}`},
		{"audiostream", "/audiostream?rate=8000&pipeline=bot", "caller 2061236666", 8000, "", ""},
		{"jambonz", "/jambonz", `{"sampleRate":16000,"mixType":"mono","callSid":"b7a8c2e4-4f2a-4d9e-9c1b-6f0e2d3a1b5c","pipeline":"bot","customerData":{"x":1}}`, 16000, `{"type":"killAudio"}`, `{"type":"disconnect"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcm := signal.Speech(tc.rate, 1)
			want := offlineL16(t, "gain db=-6", tc.rate, pcm)
			c := dial(t, h.url+tc.path)
			defer c.CloseNow()
			ctx := context.Background()
			writeText(t, c, tc.metadata)
			frame := 20 * tc.rate / 1000 * 2
			audio := func(typ websocket.MessageType, msg []byte) []byte {
				t.Helper()
				if tc.name == "jambonz" {
					if typ != websocket.MessageBinary {
						t.Fatalf("jambonz streams binary audio back; got %v %q", typ, msg)
					}
					return msg
				}
				var m struct {
					Type string
					Data map[string]any
				}
				if err := json.Unmarshal(msg, &m); err != nil || typ != websocket.MessageText {
					t.Fatalf("%v %q: %v", typ, msg, err)
				}
				content, _ := m.Data["audioContent"].(string)
				if m.Type == "streamAudio" {
					content, _ = m.Data["audioData"].(string)
				}
				if m.Data["sampleRate"] != float64(tc.rate) {
					t.Fatalf("playback at %v Hz, want %d: %.100s", m.Data["sampleRate"], tc.rate, msg)
				}
				b, err := base64.StdEncoding.DecodeString(content)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			var got []byte
			for off := 0; off+frame <= len(pcm); off += frame {
				if err := c.Write(ctx, websocket.MessageBinary, pcm[off:off+frame]); err != nil {
					t.Fatal(err)
				}
				got = append(got, audio(readMessage(t, c))...)
				if off == 20*frame {
					writeText(t, c, `{"event":"dtmf","dtmf":"5","duration":"1600"}`)
					// The plugin emits "key", then clear: the event
					// reaches a FreeSWITCH application as the module's
					// json event (jambonz has no place for it).
					if tc.name != "jambonz" {
						const event = `{"type":"json","event":"plugin","plugin":"clear_on_dtmf.wasm","name":"key","data":"5","t_ms":420}`
						if typ, msg := readMessage(t, c); typ != websocket.MessageText || string(msg) != event {
							t.Fatalf("after the key: %v %q, want the plugin's event as %s", typ, msg, event)
						}
					}
					if tc.clear != "" {
						if typ, msg := readMessage(t, c); typ != websocket.MessageText || string(msg) != tc.clear {
							t.Fatalf("after the key: %v %q, want the plugin's clear as %s", typ, msg, tc.clear)
						}
					}
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the call's audio (%d bytes) differs from the pipeline's offline (%d bytes)", len(got), len(want))
			}
			if tc.name != "audiofork" {
				c.Close(websocket.StatusNormalClosure, "")
				return
			}
			if err := c.Write(ctx, websocket.MessageBinary, nil); err != nil { // graceful shutdown
				t.Fatal(err)
			}
			if typ, msg := readMessage(t, c); typ != websocket.MessageText || string(msg) != tc.end {
				t.Fatalf("after the graceful shutdown: %v %q, want %s", typ, msg, tc.end)
			}
			if code, _ := closeOf(t, c); code != websocket.StatusNormalClosure {
				t.Fatalf("close %v, want a normal closure", code)
			}
		})
	}
	for _, p := range []string{"audiofork", "audiostream", "jambonz"} {
		assertMetric(t, h, `voxhost_calls_total{outcome="completed",protocol="`+p+`"} 1`)
	}
}

// TestForkMalformedEndsOnlyThatCall: audio before the metadata, jambonz
// metadata that is not JSON, a fork of unknown rate and a stereo stream
// each end their call with a close code and reason; a bystander call goes
// on.
func TestForkMalformedEndsOnlyThatCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	bystander := dial(t, h.url+"/jambonz")
	defer bystander.CloseNow()
	writeText(t, bystander, `{"sampleRate":8000}`)
	ctx := context.Background()
	for _, tc := range []struct {
		name, path string
		binary     bool
		msg        string
		code       websocket.StatusCode
		reason     string
	}{
		{"audio before the metadata", "/audiofork?rate=8000", true, string(make([]byte, 320)), websocket.StatusInvalidFramePayloadData, "audio before the metadata"},
		{"jambonz text", "/jambonz", false, "hello", websocket.StatusInvalidFramePayloadData, "not a JSON object"},
		{"no rate", "/audiofork", false, `{"to":"6173333456"}`, websocket.StatusUnsupportedData, "?rate="},
		{"stereo", "/jambonz", false, `{"sampleRate":8000,"mixType":"stereo"}`, websocket.StatusUnsupportedData, "stereo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, h.url+tc.path)
			defer c.CloseNow()
			typ := websocket.MessageText
			if tc.binary {
				typ = websocket.MessageBinary
			}
			if err := c.Write(ctx, typ, []byte(tc.msg)); err != nil {
				t.Fatal(err)
			}
			if code, reason := closeOf(t, c); code != tc.code || !strings.Contains(reason, tc.reason) {
				t.Fatalf("close %v %q, want %v with %q", code, reason, tc.code, tc.reason)
			}
		})
	}
	if got := httpStatus(t, h.url+"/audiostream?rate=44100", nil); got != 400 {
		t.Fatalf("?rate=44100: HTTP %d, want 400", got)
	}
	frame := signal.Speech(8000, 0.02)
	if err := bystander.Write(ctx, websocket.MessageBinary, frame); err != nil {
		t.Fatal(err)
	}
	if typ, msg := readMessage(t, bystander); typ != websocket.MessageBinary || !bytes.Equal(msg, frame) {
		t.Fatal("the bystander call was disturbed")
	}
}

// TestForkSubprotocols: jambonz's docs say the server "should be prepared
// to accept websocket connections with a subprotocol name of
// 'audio.jambonz.org'", and mod_audio_fork's client asks for
// audio.drachtio.org. The server must accept each module's.
func TestForkSubprotocols(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	for path, sub := range map[string]string{"/jambonz": "audio.jambonz.org", "/audiofork?rate=8000": "audio.drachtio.org"} {
		c := dialFork(t, h.url+path, sub)
		got := c.Subprotocol()
		c.CloseNow()
		if got != sub {
			t.Errorf("%s: subprotocol %q, want %q", path, got, sub)
		}
	}
}

// TestRelayThroughAJambonzBot relays a jambonz call to a bot written for
// jambonz's listen verb (the jambonz dialect) at 16 kHz: the bot must get
// the metadata with the call's ids and rate, the caller's audio byte for
// byte and its key in passDtmf's form; its answer, one binary message,
// must reach the caller paced in 20 ms frames byte for byte, and its mark
// come back as played.
func TestRelayThroughAJambonzBot(t *testing.T) {
	f := codec.Format{Encoding: codec.L16, Rate: 16000}
	callerAudio := signal.Speech(16000, 0.4)
	answer := signal.Speech(16000, 0.6)
	type botLog struct {
		metadata map[string]any
		audio    []byte
		dtmf     string
		played   bool
	}
	got := make(chan botLog, 1)
	bot := startBot(t, func(conn *gorilla.Conn) {
		var log botLog
		defer func() { got <- log }()
		answered := false
		for {
			typ, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if typ == gorilla.BinaryMessage {
				log.audio = append(log.audio, msg...)
				if len(log.audio) == len(callerAudio) && !answered {
					answered = true
					conn.WriteMessage(gorilla.BinaryMessage, answer)
					conn.WriteMessage(gorilla.TextMessage, []byte(`{"type":"mark","data":{"name":"answer-done"}}`))
				}
				continue
			}
			var m map[string]any
			json.Unmarshal(msg, &m)
			switch {
			case log.metadata == nil:
				log.metadata = m
			case m["event"] == "dtmf":
				log.dtmf, _ = m["dtmf"].(string)
			case m["type"] == "mark":
				data, _ := m["data"].(map[string]any)
				log.played = data["name"] == "answer-done" && data["event"] == "playout"
			}
		}
	})
	d, err := transport.LookupDialect("jambonz")
	if err != nil {
		t.Fatal(err)
	}
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough", upstream: &server.Upstream{URL: bot.url, Dialect: d, Format: f, ConnectTimeout: 2 * time.Second}},
	}, nil)
	c := dial(t, h.url+"/jambonz")
	defer c.CloseNow()
	ctx := context.Background()
	writeText(t, c, `{"sampleRate":16000,"mixType":"mono","callSid":"b7a8c2e4-4f2a-4d9e-9c1b-6f0e2d3a1b5c","accountSid":"9351f46a-678c-43f5-b8a6-d4eb58d131af","from":"+15083084809"}`)
	writeText(t, c, `{"event":"dtmf","dtmf":"7","duration":"1600"}`)
	for off := 0; off < len(callerAudio); off += 640 {
		if err := c.Write(ctx, websocket.MessageBinary, callerAudio[off:off+640]); err != nil {
			t.Fatal(err)
		}
	}
	var heard []byte
	for len(heard) < len(answer) {
		typ, msg := readMessage(t, c)
		if typ != websocket.MessageBinary || len(msg) != 640 {
			t.Fatalf("the caller got %v of %d bytes, want 20 ms binary frames", typ, len(msg))
		}
		heard = append(heard, msg...)
	}
	if !bytes.Equal(heard, answer) {
		t.Fatal("the caller heard other audio than the bot's answer")
	}
	waitFor(t, func() bool { return strings.Contains(metrics(t, h), `voxhost_marks_total{result="played"} 1`) })
	c.Close(websocket.StatusNormalClosure, "")
	log := <-got
	if log.metadata["sampleRate"] != float64(16000) || log.metadata["callSid"] != "b7a8c2e4-4f2a-4d9e-9c1b-6f0e2d3a1b5c" ||
		log.metadata["accountSid"] != "9351f46a-678c-43f5-b8a6-d4eb58d131af" || log.metadata["from"] != "+15083084809" {
		t.Errorf("the bot's metadata: %v", log.metadata)
	}
	if !bytes.Equal(log.audio, callerAudio) {
		t.Errorf("the bot got %d bytes of audio, not the caller's %d", len(log.audio), len(callerAudio))
	}
	if log.dtmf != "7" || !log.played {
		t.Errorf("the bot's key %q, mark played %v", log.dtmf, log.played)
	}
}
