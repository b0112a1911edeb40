package transport_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// TestRawDialectConformance: the raw dialect's messages to a bot are those
// raw_client.go documents, and its plugin events are byte for byte the
// server role's.
func TestRawDialectConformance(t *testing.T) {
	b := newBot(t, "raw", codec.Telephony, nil)
	got := opened(t, b)
	want := `{"event":"start","call_id":"` + callSid + `","stream_id":"` + streamSid + `","account_id":"` + accountSid +
		`","route":"support","params":{"lang":"en","pipeline":"loud"},"codec":"mulaw","rate":8000}`
	if len(got) != 1 || got[0] != (sent{transport.Text, want}) {
		t.Errorf("Open sent %v\nwant %s", got, want)
	}

	frame := tone(0, 160)
	if typ, msg := b.Audio(frame); typ != transport.Binary || &msg[0] != &frame[0] || len(msg) != len(frame) {
		t.Errorf("Audio gave type %d and %d bytes; want the frame itself as a binary message", typ, len(msg))
	}
	data := []byte(`{"energy": 0.5}`)
	_, wantEvent, _ := session(transport.Raw()).Event("vad", "speech_start", data, 1240)
	renders := []struct {
		name string
		got  sent
		want string
	}{
		{"dtmf", render(t)(b.DTMF('#')), `{"event":"dtmf","digit":"#"}`},
		{"mark played", render(t)(b.MarkPlayed("turn \"1\"")), `{"event":"mark","name":"turn \"1\""}`},
		{"event", render(t)(b.Event("vad", "speech_start", data, 1240)), string(wantEvent)},
		{"stop", render(t)(b.Stop()), `{"event":"stop"}`},
	}
	for _, r := range renders {
		if r.got != (sent{transport.Text, r.want}) {
			t.Errorf("%s: rendered %v, want %s", r.name, r.got, r.want)
		}
	}

	send, bargeIns := collect()
	if err := b.Interrupted(1830, false, send); err != nil {
		t.Fatal(err)
	}
	// The bot asked for this one: it knows, and its marks say what was
	// heard.
	if err := b.Interrupted(1990, true, send); err != nil {
		t.Fatal(err)
	}
	if want := []sent{{transport.Text, `{"event":"clear","heard_ms":1830}`}}; !reflect.DeepEqual(*bargeIns, want) {
		t.Errorf("Interrupted sent %v, want %v", *bargeIns, want)
	}
}

// render returns a function that turns a render's results into a sent,
// failing the test when nothing was rendered.
func render(t *testing.T) func(transport.MessageType, []byte, bool) sent {
	return func(typ transport.MessageType, msg []byte, ok bool) sent {
		t.Helper()
		if !ok {
			t.Fatal("no message rendered")
		}
		return sent{typ, string(msg)}
	}
}

// The start message names the route's format, so an L16 bot knows its rate.
func TestRawDialectStartNamesTheFormat(t *testing.T) {
	d, _ := transport.LookupDialect("raw")
	b := d.NewBotSession(transport.BotConfig{Format: codec.Format{Encoding: codec.L16, Rate: 16000}, MaxAudio: maxAudio,
		Call: transport.CallInfo{CallID: "c-1", Route: "r"}})
	want := `{"event":"start","call_id":"c-1","stream_id":"c-1","account_id":"","route":"r","params":{},"codec":"l16","rate":16000}`
	if got := opened(t, b); len(got) != 1 || got[0].msg != want {
		t.Errorf("Open sent %v\nwant %s", got, want)
	}
}

func TestRawDialectDecode(t *testing.T) {
	b := newBot(t, "raw", l16At24k, nil)
	pcm := pcm24k(482)
	decodeSteps(t, b, []decodeStep{
		{transport.Binary, string(pcm), transport.Inbound{Kind: transport.KindAudio, Audio: pcm}},
		{transport.Text, `{"event":"mark","name":"reply \"1\""}`, transport.Inbound{Kind: transport.KindMark, Mark: `reply "1"`}},
		{transport.Text, `{"event":"clear"}`, transport.Inbound{Kind: transport.KindClear}},
		// A key the bot presses, for the caller.
		{transport.Text, `{"event":"dtmf","digit":"5"}`, transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}},
		{transport.Text, `{"event":"hello","version":2}`, transport.Inbound{Kind: transport.KindIgnore}},
		{transport.Text, `{"event":"stop"}`, transport.Inbound{Kind: transport.KindStop}},
	})
}

func TestRawDialectErrors(t *testing.T) {
	decodeErrors(t, "raw", func(t *testing.T) transport.BotSession { return newBot(t, "raw", l16At24k, nil) }, []decodeError{
		{"empty audio", transport.Binary, "", "raw: empty audio frame", false},
		{"half a sample", transport.Binary, "abc", "raw: audio of 3 bytes is not a whole number of 2-byte l16 samples", false},
		{"audio too long", transport.Binary, string(pcm24k(maxAudio + 2)), "raw: audio frame of 1602 bytes exceeds the limit of 1600", false},
		{"not JSON", transport.Text, "clear", "raw: invalid JSON at byte 0: expected a value", false},
		{"no event", transport.Text, `{"name":"x"}`, `raw: text message without an "event" member`, false},
		{"mark without a name", transport.Text, `{"event":"mark"}`, `raw: mark message without a string "name"`, false},
		{"dtmf without a digit", transport.Text, `{"event":"dtmf"}`, `raw: dtmf message without a string "digit"`, false},
		{"dtmf not a key", transport.Text, `{"event":"dtmf","digit":"E"}`, `raw: dtmf digit "E" is not one of 0-9 * # A-D`, false},
		{"mark name too long", transport.Text, `{"event":"mark","name":"` + strings.Repeat("n", transport.MaxMarkBytes+1) + `"}`,
			"raw: mark name of 257 bytes is longer than 256", true},
		{"unknown message type", 3, "x", "raw: message of unknown WebSocket type 3", false},
	})
}

// What the dialect sends, the raw server role reads as a caller's; what the
// server role sends, the dialect reads as a bot's. The one message the
// roles do not share is clear: the host's to send, so the server role
// passes over a caller's.
func TestRawDialectRoundTrip(t *testing.T) {
	bot := newBot(t, "raw", codec.Telephony, nil)
	srv := session(transport.Raw())
	decode := serverDecode(t, srv)

	if got := decode(opened(t, bot)[0]); got.Kind != transport.KindIgnore {
		t.Errorf("start decoded as %v", got.Kind)
	}
	send, clears := collect()
	if err := bot.Interrupted(100, false, send); err != nil {
		t.Fatal(err)
	}
	if got := decode((*clears)[0]); got.Kind != transport.KindIgnore {
		t.Errorf("the host's clear, sent by a caller, decoded as %v; the server role ignores it", got.Kind)
	}
	typ, msg, _ := srv.Event("vad", "speech_start", nil, 20)
	if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindIgnore {
		t.Errorf("server plugin event decoded as %v", got.Kind)
	}
	checkRoundTrip(t, bot, srv)
}

// decodeRawControl reads clear for the client role; the server role still
// passes over a caller's, as it did before bots could send one.
func TestRawServerIgnoresClear(t *testing.T) {
	s := session(transport.Raw())
	for _, msg := range []string{`{"event":"clear"}`, `{"event":"clear","heard_ms":20}`} {
		var in transport.Inbound
		if err := s.Decode(transport.Text, []byte(msg), &in); err != nil || in.Kind != transport.KindIgnore {
			t.Errorf("%s: %v %v, want ignore", msg, in.Kind, err)
		}
	}
}
