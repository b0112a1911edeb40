package transport_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// twilioBotMedia is a media message as a bot sends it to Twilio, shaped as
// on Twilio's page (WebSocket messages to Twilio, media): event, streamSid
// and media.payload, base64 μ-law at 8 kHz.
func twilioBotMedia(ulaw []byte) string {
	return fmt.Sprintf(`{
  "event": "media",
  "streamSid": %q,
  "media": {
    "payload": %q
  }
}`, streamSid, base64.StdEncoding.EncodeToString(ulaw))
}

// jsonEqual reports whether a and b hold the same JSON value, whatever
// their spacing and member order.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("%v in %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

// TestTwilioDialectConformance: the twilio dialect says to a bot what
// Twilio says to a WebSocket server, member for member and value for
// value, as the messages of twilio_test.go have them from Twilio's page
// ("Media Streams - WebSocket Messages",
// https://www.twilio.com/docs/voice/media-streams/websocket-messages):
//
//   - "Twilio sends the connected event once a WebSocket connection is
//     established. This is the first message your WebSocket server
//     receives": {"event": "connected", "protocol": "Call", "version": "1.0.0"}.
//   - "The start message contains metadata about the Stream and is sent
//     immediately after the connected message. It is only sent once at the
//     start of the Stream."
//   - sequenceNumber: "Number used to keep track of message sending order.
//     The first message has a value of 1 and then is incremented for each
//     subsequent message." (connected has none, so start is "1").
//   - media.chunk counts from "1"; media.timestamp is the ms since the
//     start of the stream, a string; media.track is "inbound".
//   - dtmf.track is "inbound_track"; a mark comes back with the name the
//     server gave it; stop carries the accountSid and callSid of start.
func TestTwilioDialectConformance(t *testing.T) {
	call := transport.CallInfo{CallID: callSid, StreamID: streamSid, AccountID: accountSid, Route: "loud",
		Params: map[string]string{"pipeline": "loud"}}
	d, _ := transport.LookupDialect("twilio")
	b := d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: maxAudio, Call: call})
	frames := [][]byte{tone(0, 160), tone(160, 160), tone(320, 160)}

	got := opened(t, b)
	if len(got) != 2 {
		t.Fatalf("Open sent %d messages, want connected and start", len(got))
	}
	render := func(typ transport.MessageType, msg []byte, ok bool) sent {
		if !ok {
			t.Fatal("no message rendered")
		}
		return sent{typ, string(msg)}
	}
	audio := func(f []byte) sent {
		typ, msg := b.Audio(f)
		return sent{typ, string(msg)}
	}
	steps := []struct {
		got  sent
		want string
	}{
		{got[0], connectedMsg},
		{got[1], startMsg},
		{audio(frames[0]), mediaMsg(2, 1, "inbound", frames[0])},
		{audio(frames[1]), mediaMsg(3, 2, "inbound", frames[1])},
		{render(b.DTMF('5')), dtmfMsg(4, "5")},
		{audio(frames[2]), mediaMsg(5, 3, "inbound", frames[2])},
		{render(b.DTMF('#')), dtmfMsg(6, "#")},
		{render(b.MarkPlayed("greeting \"done\" ✓")), markMsg(7, "greeting \"done\" ✓")},
		{render(b.Event("vad", "speech_start", []byte(`{"energy":0.5}`), 60)), markMsg(8, "voxhost:vad:speech_start")},
		{render(b.Stop()), stopMsg},
	}
	for i, st := range steps {
		if st.got.typ != transport.Text || !jsonEqual(t, st.got.msg, st.want) {
			t.Errorf("message %d (type %d):\n%s\nwant\n%s", i, st.got.typ, st.got.msg, st.want)
		}
	}

	wantNoBargeInMessage(t, b, "Twilio")
}

// TestTwilioDialectDecodesWhatBotsSend decodes the three messages the
// page lets a server of a bidirectional stream send Twilio (its "WebSocket
// messages to Twilio"), shaped as its examples: media with a base64
// payload, mark (returned once the media sent before it has played) and
// clear (which drops the media Twilio has buffered); and the dtmf voxhost
// takes besides.
func TestTwilioDialectDecodesWhatBotsSend(t *testing.T) {
	b := newBot(t, "twilio", codec.Telephony, nil)
	frame, odd := tone(0, 160), tone(0, 37)
	text := transport.Text
	decodeSteps(t, b, []decodeStep{
		{text, twilioBotMedia(frame), transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
		// A bot's audio is any whole number of samples, not only whole ms.
		{text, twilioBotMedia(odd), transport.Inbound{Kind: transport.KindAudio, Audio: odd}},
		{text, `{
  "event": "mark",
  "streamSid": "` + streamSid + `",
  "mark": {
    "name": "my label"
  }
}`, transport.Inbound{Kind: transport.KindMark, Mark: "my label"}},
		{text, `{
  "event": "clear",
  "streamSid": "` + streamSid + `"
}`, transport.Inbound{Kind: transport.KindClear}},
		// voxhost's one addition: a key the bot presses, shaped as the
		// dtmf message Twilio sends.
		{text, `{"event":"dtmf","streamSid":"` + streamSid + `","dtmf":{"digit":"#"}}`, transport.Inbound{Kind: transport.KindDTMF, Digit: '#'}},
		// Twilio accepts nothing else; a bot's stop or a future event is
		// passed over, as Twilio would.
		{text, `{"event":"stop","streamSid":"` + streamSid + `"}`, transport.Inbound{Kind: transport.KindIgnore}},
		{text, `{"event":"sendDigits","digits":"1"}`, transport.Inbound{Kind: transport.KindIgnore}},
	})
}

// What the dialect renders, the server role (which voxhost runs for
// Twilio itself) must read as Twilio's own, with the same ids, parameters
// and audio; and what the server role renders for Twilio the dialect must
// read as a bot's.
func TestTwilioDialectRoundTrip(t *testing.T) {
	bot := newBot(t, "twilio", codec.Telephony, nil)
	srv := session(transport.Twilio())
	decode := serverDecode(t, srv)

	wantStart := &transport.Start{StreamID: streamSid, CallID: callSid, AccountID: accountSid, Tracks: []string{"inbound"},
		Params: testCall.Params}
	open := opened(t, bot)
	if got := decode(open[0]); got.Kind != transport.KindIgnore {
		t.Errorf("connected decoded as %v", got.Kind)
	}
	if got := decode(open[1]); got.Kind != transport.KindStart || !reflect.DeepEqual(got.Start, wantStart) {
		t.Errorf("start decoded as %v %+v, want %+v", got.Kind, got.Start, wantStart)
	}
	if got := decode(render(t)(bot.Event("vad", "speech_start", nil, 0))); got.Kind != transport.KindMark || got.Mark != "voxhost:vad:speech_start" {
		t.Errorf("event decoded as %v %q", got.Kind, got.Mark)
	}
	checkRoundTrip(t, bot, srv)
}

func TestTwilioDialectStreamSidFallsBackToCallID(t *testing.T) {
	d, _ := transport.LookupDialect("twilio")
	b := d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: maxAudio, Call: transport.CallInfo{CallID: "call-7"}})
	var start struct {
		StreamSid string `json:"streamSid"`
		Start     struct {
			StreamSid        string            `json:"streamSid"`
			AccountSid       *string           `json:"accountSid"`
			CustomParameters map[string]string `json:"customParameters"`
		} `json:"start"`
	}
	if err := json.Unmarshal([]byte(opened(t, b)[1].msg), &start); err != nil {
		t.Fatal(err)
	}
	if start.StreamSid != "call-7" || start.Start.StreamSid != "call-7" || start.Start.AccountSid == nil ||
		*start.Start.AccountSid != "" || start.Start.CustomParameters == nil {
		t.Errorf("start %+v: want streamSid call-7, an empty accountSid and empty customParameters", start)
	}
}

func TestTwilioDialectErrors(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(tone(0, 160))
	decodeErrors(t, "twilio", func(t *testing.T) transport.BotSession { return newBot(t, "twilio", codec.Telephony, nil) }, []decodeError{
		{"binary", transport.Binary, string(tone(0, 160)), "twilio: binary message from a Twilio bot: Twilio takes JSON text messages only", false},
		{"invalid JSON", transport.Text, `{"event":"media"`, "twilio: invalid JSON at byte 16: message ends early, expected ',' or '}' after an object member", false},
		{"not an object", transport.Text, `"media"`, "twilio: message is JSON but not an object", false},
		{"no event", transport.Text, `{"media":{"payload":"` + good + `"}}`, `twilio: message without an "event" member`, false},
		{"event not a string", transport.Text, `{"event":1}`, `twilio: "event" is not a string`, false},
		{"no media object", transport.Text, `{"event":"media","media":"` + good + `"}`, "twilio: media message without a media object", false},
		{"no payload", transport.Text, `{"event":"media","media":{}}`, "twilio: media message without a string media.payload", false},
		{"bad base64", transport.Text, `{"event":"media","media":{"payload":"` + good[:12] + "*" + good[13:] + `"}}`,
			"twilio: bad base64 in media payload at byte 12", false},
		{"empty payload", transport.Text, twilioBotMedia(nil), "twilio: empty audio frame", false},
		{"payload too long", transport.Text, twilioBotMedia(tone(0, maxAudio+1)), "twilio: audio frame of 1601 bytes exceeds the limit of 1600", false},
		{"mark without a mark", transport.Text, `{"event":"mark"}`, "twilio: mark message without a mark object", false},
		{"dtmf without a dtmf", transport.Text, `{"event":"dtmf","digit":"1"}`, "twilio: dtmf message without a dtmf object", false},
		{"dtmf not a key", transport.Text, `{"event":"dtmf","dtmf":{"digit":"12"}}`, `twilio: dtmf.digit "12" is not one of 0-9 * # A-D`, false},
		{"mark name too long", transport.Text, `{"event":"mark","mark":{"name":"` + strings.Repeat("m", transport.MaxMarkBytes+1) + `"}}`,
			"twilio: mark.name of 257 bytes is longer than 256", true},
	})
}
