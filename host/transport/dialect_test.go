package transport_test

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// The call every dialect test serves: a Twilio caller's, with two custom
// parameters.
var testCall = transport.CallInfo{
	CallID:    callSid,
	StreamID:  streamSid,
	AccountID: accountSid,
	Route:     "support",
	Params:    map[string]string{"lang": "en", "pipeline": "loud"},
}

var l16At24k = codec.Format{Encoding: codec.L16, Rate: 24000}

// newBot makes a bot session of the named dialect, failing the test if
// the dialect refuses the format or options as a route's check would.
func newBot(t testing.TB, name string, f codec.Format, opts map[string]string) transport.BotSession {
	t.Helper()
	d, err := transport.LookupDialect(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CheckFormat(f); err != nil {
		t.Fatal(err)
	}
	if err := transport.CheckOptions(d, opts); err != nil {
		t.Fatal(err)
	}
	return d.NewBotSession(transport.BotConfig{Format: f, MaxAudio: maxAudio, Call: testCall, Options: opts})
}

// sent is what a render through a send function sent, copied, since the
// bytes view the session's buffer.
type sent struct {
	typ transport.MessageType
	msg string
}

// collect returns a send function that records every message, and the
// record.
func collect() (func(transport.MessageType, []byte) error, *[]sent) {
	var got []sent
	return func(typ transport.MessageType, msg []byte) error {
		got = append(got, sent{typ, string(msg)})
		return nil
	}, &got
}

// opened returns the messages Open sent.
func opened(t testing.TB, b transport.BotSession) []sent {
	t.Helper()
	send, got := collect()
	if err := b.Open(send); err != nil {
		t.Fatal(err)
	}
	return *got
}

// pcm24k returns n bytes of L16 at 24 kHz: a 440 Hz sine.
func pcm24k(n int) []byte {
	pcm := make([]byte, n&^1)
	for i := range len(pcm) / 2 {
		v := 12000 * math.Sin(2*math.Pi*440*float64(i)/24000)
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(v)))
	}
	return pcm
}

// decoder is what the server and client roles share: Session and
// BotSession both decode.
type decoder interface {
	Decode(typ transport.MessageType, msg []byte, in *transport.Inbound) error
}

// decodeStep is one message of a conversation and what it decodes to.
type decodeStep struct {
	typ  transport.MessageType
	msg  string
	want transport.Inbound
}

// decodeSteps decodes a conversation with one Inbound, as the call loop
// keeps it, so that each Decode must overwrite what the one before left.
func decodeSteps(t *testing.T, d decoder, steps []decodeStep) {
	t.Helper()
	var in transport.Inbound
	for i, st := range steps {
		if err := d.Decode(st.typ, []byte(st.msg), &in); err != nil {
			t.Fatalf("message %d: %v\n%s", i, err, st.msg)
		}
		if !reflect.DeepEqual(in, st.want) {
			t.Errorf("message %d decoded to %+v, want %+v", i, in, st.want)
		}
	}
}

// decodeError is a message a dialect refuses, and the refusal.
type decodeError struct {
	name  string
	typ   transport.MessageType
	msg   string
	want  string // the error's text
	limit bool   // the error breaks a bound
}

// decodeErrors checks that each message, decoded by a fresh session from
// newBot, fails with its error from protocol, leaving the zero Inbound.
func decodeErrors(t *testing.T, protocol string, newBot func(t *testing.T) transport.BotSession, tests []decodeError) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := transport.Inbound{Kind: transport.KindStop, Audio: []byte{1}, Mark: "m"}
			perr := wantProtocolError(t, newBot(t).Decode(tt.typ, []byte(tt.msg), &in), protocol, tt.want)
			if perr.Limit != tt.limit {
				t.Errorf("Limit %v, want %v", perr.Limit, tt.limit)
			}
			if !reflect.DeepEqual(in, transport.Inbound{}) {
				t.Errorf("a failed Decode left %+v, want the zero Inbound", in)
			}
		})
	}
}

// checkRoundTrip checks what a dialect and the server role of its protocol
// share: the dialect's audio, keys, mark acknowledgements and stop decode
// in the server role as a caller's, and the server role's audio, mark and
// clear decode in the dialect as a bot's. It ends with the stop, so a test
// checks the rest of its dialect's messages before.
func checkRoundTrip(t *testing.T, bot transport.BotSession, srv transport.Session) {
	t.Helper()
	var in transport.Inbound
	decode := func(typ transport.MessageType, msg []byte) transport.Inbound {
		t.Helper()
		if err := srv.Decode(typ, msg, &in); err != nil {
			t.Fatalf("server: %v\n%s", err, msg)
		}
		return in
	}
	for i := range 3 {
		frame := tone(160*i, 160)
		if got := decode(bot.Audio(frame)); got.Kind != transport.KindAudio || string(got.Audio) != string(frame) {
			t.Errorf("frame %d decoded as %v %x", i, got.Kind, got.Audio)
		}
	}
	for _, c := range []byte("0123456789*#ABCD") {
		typ, msg, _ := bot.DTMF(c)
		if got := decode(typ, msg); got.Kind != transport.KindDTMF || got.Digit != c {
			t.Errorf("dtmf %c decoded as %v %q", c, got.Kind, got.Digit)
		}
	}
	typ, msg, _ := bot.MarkPlayed("reply \"1\" ✓")
	if got := decode(typ, msg); got.Kind != transport.KindMark || got.Mark != "reply \"1\" ✓" {
		t.Errorf("mark decoded as %v %q", got.Kind, got.Mark)
	}

	frame := tone(0, 160)
	typ, msg = srv.Audio(frame)
	if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindAudio || string(got.Audio) != string(frame) {
		t.Errorf("server audio decoded as %v %x", got.Kind, got.Audio)
	}
	typ, msg, _ = srv.Mark("turn \"2\"")
	if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindMark || got.Mark != `turn "2"` {
		t.Errorf("server mark decoded as %v %q", got.Kind, got.Mark)
	}
	typ, msg, _ = srv.Clear()
	if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindClear {
		t.Errorf("server clear decoded as %v", got.Kind)
	}

	typ, msg, _ = bot.Stop()
	if got := decode(typ, msg); got.Kind != transport.KindStop {
		t.Errorf("stop decoded as %v", got.Kind)
	}
}

// wantNoBargeInMessage checks that a barge-in the host detected sends
// the bot of carrier nothing: the carrier has no message for one, and a
// bot learns of it by its marks coming back.
func wantNoBargeInMessage(t *testing.T, b transport.BotSession, carrier string) {
	t.Helper()
	send, sent := collect()
	if err := b.Interrupted(40, false, send); err != nil || len(*sent) != 0 {
		t.Errorf("Interrupted sent %v (%v); %s has no message for a barge-in", *sent, err, carrier)
	}
}

// serverDecode returns a function that decodes a dialect's message with
// the server role's srv, failing the test on an error.
func serverDecode(t *testing.T, srv transport.Session) func(sent) transport.Inbound {
	return func(m sent) transport.Inbound {
		t.Helper()
		var in transport.Inbound
		if err := srv.Decode(m.typ, []byte(m.msg), &in); err != nil {
			t.Fatalf("server: %v\n%s", err, m.msg)
		}
		return in
	}
}

// decodeBot decodes msg with b, failing the test on an error.
func decodeBot(t *testing.T, b transport.BotSession, typ transport.MessageType, msg []byte) transport.Inbound {
	t.Helper()
	var in transport.Inbound
	if err := b.Decode(typ, msg, &in); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	return in
}

// wantProtocolError checks that err is a *ProtocolError of protocol with
// exactly the reason want.
func wantProtocolError(t *testing.T, err error, protocol, want string) *transport.ProtocolError {
	t.Helper()
	var perr *transport.ProtocolError
	if !errors.As(err, &perr) {
		t.Fatalf("error %v (%T), want a *ProtocolError", err, err)
	}
	if perr.Protocol != protocol || err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	return perr
}

// Each protocol file registers its own dialect, so the list grows with
// them: these are the ones that must be there, sorted among the rest.
func TestDialectsRegistered(t *testing.T) {
	got := transport.DialectNames()
	if !slices.IsSorted(got) {
		t.Errorf("DialectNames() = %v, not sorted", got)
	}
	for _, name := range []string{"audiosocket", "deepgram-agent", "elevenlabs-agent", "gemini-live", "openai-realtime", "raw", "twilio"} {
		if !slices.Contains(got, name) {
			t.Errorf("DialectNames() = %v, without %s", got, name)
		}
		d, err := transport.LookupDialect(name)
		if err != nil || d.Name() != name {
			t.Errorf("LookupDialect(%q) = %v, %v", name, d, err)
		}
	}
	_, err := transport.LookupDialect("no-such-carrier")
	if want := `unknown upstream protocol "no-such-carrier" (have ` + strings.Join(got, ", ") + ")"; err == nil || err.Error() != want {
		t.Errorf("LookupDialect(no-such-carrier): %v, want %s", err, want)
	}
}

func TestDialectFormats(t *testing.T) {
	l16 := func(rate int) codec.Format { return codec.Format{Encoding: codec.L16, Rate: rate} }
	tests := []struct {
		dialect string
		f       codec.Format
		want    string // "" means accepted
	}{
		{"twilio", codec.Telephony, ""},
		{"twilio", l16(8000), "the twilio dialect carries μ-law at 8000 Hz only (Twilio's audio/x-mulaw), not 8 kHz L16"},
		{"twilio", l16(24000), "the twilio dialect carries μ-law at 8000 Hz only (Twilio's audio/x-mulaw), not 24 kHz L16"},
		{"raw", codec.Telephony, ""},
		{"raw", l16(8000), ""},
		{"raw", l16(16000), ""},
		{"raw", l16(24000), ""},
		{"raw", l16(44100), "L16 is carried at 8000, 16000 or 24000 Hz, not 44100"},
		{"raw", codec.Format{Encoding: codec.Mulaw, Rate: 16000}, "μ-law is carried at 8000 Hz only, not 16000"},
		{"openai-realtime", l16(24000), ""},
		{"openai-realtime", codec.Telephony, ""},
		{"openai-realtime", l16(16000), "the openai-realtime dialect carries L16 at 24000 Hz (audio/pcm) or μ-law at 8000 Hz (audio/pcmu), not 16 kHz L16"},
		{"openai-realtime", l16(8000), "the openai-realtime dialect carries L16 at 24000 Hz (audio/pcm) or μ-law at 8000 Hz (audio/pcmu), not 8 kHz L16"},
	}
	for _, tt := range tests {
		d, _ := transport.LookupDialect(tt.dialect)
		err := d.CheckFormat(tt.f)
		if got := ""; err != nil {
			got = err.Error()
			if got != tt.want {
				t.Errorf("%s %v: %q, want %q", tt.dialect, tt.f, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("%s %v accepted, want %q", tt.dialect, tt.f, tt.want)
		}
	}
}

// Only openai-realtime takes options; the others refuse any.
func TestDialectsWithoutOptions(t *testing.T) {
	for _, name := range []string{"twilio", "raw"} {
		d, _ := transport.LookupDialect(name)
		if err := transport.CheckOptions(d, nil); err != nil {
			t.Errorf("%s: no options refused: %v", name, err)
		}
		err := transport.CheckOptions(d, map[string]string{"voice": "alloy"})
		if want := "the " + name + ` dialect takes no options (got "voice")`; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", name, err, want)
		}
	}
}

// The call loop's budget holds on the bot leg too: no allocation to render
// the caller's audio for a bot or to decode a bot's audio, in any dialect.
func TestBotAudioPathDoesNotAllocate(t *testing.T) {
	frame, pcm := tone(0, 160), pcm24k(960)
	twilio := newBot(t, "twilio", codec.Telephony, nil)
	twilioMedia := []byte(twilioBotMedia(frame))
	raw := newBot(t, "raw", codec.Telephony, nil)
	rawL16 := newBot(t, "raw", l16At24k, nil)
	openai := newBot(t, "openai-realtime", l16At24k, nil)
	openaiDelta := []byte(openaiDeltaMsg("response.output_audio.delta", "item_C9k2", pcm))
	openaiBeta := newBot(t, "openai-realtime", codec.Telephony, map[string]string{"api": "beta"})
	openaiBetaDelta := []byte(openaiDeltaMsg("response.audio.delta", "item_C9k3", frame))
	gemini := newBot(t, "gemini-live", l16At24k, geminiOpts)
	geminiTurn := []byte(geminiAudioMsg(pcm))
	deepgram := newBot(t, "deepgram-agent", codec.Telephony, deepgramOpts)
	eleven := newBot(t, "elevenlabs-agent", codec.Format{Encoding: codec.L16, Rate: 16000}, nil)
	elevenAudio := []byte(elevenAudioMsg(12, pcm[:640]))
	var in transport.Inbound
	decode := func(b transport.BotSession, typ transport.MessageType, msg []byte) func() {
		return func() {
			if err := b.Decode(typ, msg, &in); err != nil || in.Kind != transport.KindAudio {
				t.Fatal(err, in.Kind)
			}
		}
	}

	tests := []struct {
		name string
		run  func()
	}{
		{"twilio render audio", func() { twilio.Audio(frame) }},
		{"twilio decode media", decode(twilio, transport.Text, twilioMedia)},
		{"raw render audio", func() { raw.Audio(frame) }},
		{"raw decode audio", decode(raw, transport.Binary, frame)},
		{"raw decode L16 audio", decode(rawL16, transport.Binary, pcm)},
		{"openai render append", func() { openai.Audio(pcm) }},
		{"openai decode delta", decode(openai, transport.Text, openaiDelta)},
		{"openai beta render append", func() { openaiBeta.Audio(frame) }},
		{"openai beta decode delta", decode(openaiBeta, transport.Text, openaiBetaDelta)},
		{"gemini render realtimeInput", func() { gemini.Audio(pcm) }},
		{"gemini decode modelTurn", decode(gemini, transport.Binary, geminiTurn)},
		{"deepgram render audio", func() { deepgram.Audio(frame) }},
		{"deepgram decode audio", decode(deepgram, transport.Binary, frame)},
		{"elevenlabs render user_audio_chunk", func() { eleven.Audio(pcm[:640]) }},
		{"elevenlabs decode audio", decode(eleven, transport.Text, elevenAudio)},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(200, tt.run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, n)
		}
	}
}

// A bot's audio need only be whole samples, any number of them, but not
// empty or longer than MaxAudio.
func TestBotAudioBounds(t *testing.T) {
	tests := []struct {
		name string
		f    codec.Format
		msg  []byte
		want string // "" means accepted
	}{
		{"one μ-law sample", codec.Telephony, tone(0, 1), ""},
		{"μ-law at the limit", codec.Telephony, tone(0, maxAudio), ""},
		{"μ-law past the limit", codec.Telephony, tone(0, maxAudio+1), "raw: audio frame of 1601 bytes exceeds the limit of 1600"},
		{"empty", codec.Telephony, nil, "raw: empty audio frame"},
		{"one L16 sample", l16At24k, pcm24k(2), ""},
		{"half an L16 sample", l16At24k, []byte{1, 2, 3}, "raw: audio of 3 bytes is not a whole number of 2-byte l16 samples"},
	}
	for _, tt := range tests {
		b := newBot(t, "raw", tt.f, nil)
		var in transport.Inbound
		err := b.Decode(transport.Binary, tt.msg, &in)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == "" && (in.Kind != transport.KindAudio || string(in.Audio) != string(tt.msg)):
			t.Errorf("%s: decoded %v of %d bytes", tt.name, in.Kind, len(in.Audio))
		case tt.want != "":
			t.Run(tt.name, func(t *testing.T) { wantProtocolError(t, err, "raw", tt.want) })
		}
	}
}

// Dialects without a message for something say so with ok false.
func TestBotUnsupportedRenders(t *testing.T) {
	openai := newBot(t, "openai-realtime", l16At24k, nil)
	for name, ok := range map[string]bool{
		"openai DTMF":       third(openai.DTMF('5')),
		"openai MarkPlayed": third(openai.MarkPlayed("m")),
		"openai Event":      third(openai.Event("vad", "speech_start", nil, 0)),
		"openai Stop":       third(openai.Stop()),
		"twilio DTMF x":     third(newBot(t, "twilio", codec.Telephony, nil).DTMF('x')),
		"raw DTMF x":        third(newBot(t, "raw", codec.Telephony, nil).DTMF('x')),
	} {
		if ok {
			t.Errorf("%s rendered a message", name)
		}
	}
}

func third(_ transport.MessageType, _ []byte, ok bool) bool { return ok }

// NewBotSession refuses a MaxAudio under which no frame could pass, as
// NewSession does.
func TestNewBotSessionRejectsTinyLimit(t *testing.T) {
	for _, name := range transport.DialectNames() {
		d, _ := transport.LookupDialect(name)
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "maxAudio") {
					t.Errorf("%s: NewBotSession with MaxAudio 7: panic %v, want one about maxAudio", name, r)
				}
			}()
			d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: 7})
		}()
	}
}
