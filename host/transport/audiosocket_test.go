package transport_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// The AudioSocket conformance tests are built from the protocol as
// Asterisk documents it
// (https://docs.asterisk.org/Configuration/Channel-Drivers/AudioSocket/,
// the same text as github.com/CyCoreSystems/audiosocket's README):
//
//	Each packet contains a three-byte header and a variable payload. The
//	header is composed of a one-byte type and a two-byte length indicator.
//	The minimum message length is three bytes: type and payload-length.
//	Hangup indication, for instance, is 0x00 0x00 0x00.
//
//	0x00 - Terminate the connection (socket closure is also sufficient)
//	0x01 - Payload will contain the UUID (16-byte binary representation) for the audio stream
//	0x03 - Payload is 1 byte (ascii) DTMF (dual-tone multi-frequency) digit
//	0x10 - Payload is signed linear, 16-bit, 8kHz, mono PCM (little-endian)
//	0x11 - Payload is signed linear, 16-bit, 12kHz, mono PCM (little-endian)
//	0x12 - Payload is signed linear, 16-bit, 16kHz, mono PCM (little-endian)
//	0x13 - Payload is signed linear, 16-bit, 24kHz, mono PCM (little-endian)
//	0x14 - … 32kHz   0x15 - … 44.1kHz   0x16 - … 48kHz   0x17 - … 96kHz   0x18 - … 192kHz
//	0xff - An error has occurred; payload is the (optional) application-specific error code.
//
//	The payload length is a 16-bit unsigned integer (big endian) indicating
//	how many bytes are in the payload.
//
//	Error codes ... for Asterisk are single-byte, bit-packed error codes:
//	0x01 - hangup of calling party
//	0x02 - frame forwarding error
//	0x04 - memory (allocation) error
//
// and from the README's dialplan example, whose call has the UUID
// 40325ec2-5efd-4bd3-805f-53576e581d13:
//
//	same = n,AudioSocket(40325ec2-5efd-4bd3-805f-53576e581d13,server.example.com:9092)
//
// (An earlier edit of Asterisk's page, documentation PR 158, named 0x11
// slin16; the page and res_audiosocket.c as merged have 0x11 at 12 kHz
// and 0x12 at 16 kHz, which is what this follows.)

const asUUIDText = "40325ec2-5efd-4bd3-805f-53576e581d13"

// asUUIDBytes is the README's UUID in its 16-byte binary representation.
var asUUIDBytes = []byte{0x40, 0x32, 0x5e, 0xc2, 0x5e, 0xfd, 0x4b, 0xd3, 0x80, 0x5f, 0x53, 0x57, 0x6e, 0x58, 0x1d, 0x13}

// asFrame builds a frame by hand from the documented layout: type, big-
// endian length, payload.
func asFrame(kind byte, payload []byte) []byte {
	f := []byte{kind, byte(len(payload) >> 8), byte(len(payload))}
	return append(f, payload...)
}

// slin returns n bytes of L16 at rate: a 440 Hz sine (and half a sample
// more for an odd n).
func slin(rate, n int) []byte {
	pcm := make([]byte, n)
	for i := range n / 2 {
		v := 12000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(v)))
	}
	if n%2 == 1 {
		pcm[n-1] = 0x5a
	}
	return pcm
}

func audioSocket(t testing.TB, query url.Values) transport.Session {
	t.Helper()
	s, err := transport.AudioSocket().NewSession(transport.SessionConfig{MaxFrameMs: maxAudio / 8, Query: query})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAudioSocketProtocol(t *testing.T) {
	p, err := transport.LookupProtocol("audiosocket")
	if err != nil {
		t.Fatal(err)
	}
	if p.Path() != "" || p.StartsOnConnect() || p.Buffers() {
		t.Errorf("Path %q, StartsOnConnect %v, Buffers %v; want \"\" (its own TCP listener), false (the UUID starts it), false (the host paces)",
			p.Path(), p.StartsOnConnect(), p.Buffers())
	}
	if _, ok := p.(transport.Framer); !ok {
		t.Error("audiosocket does not frame its own messages")
	}
}

// A call as Asterisk sends it: the UUID, audio, a digit, more audio, the
// hang-up frame.
func TestAudioSocketConformance(t *testing.T) {
	s := audioSocket(t, nil)
	a, b := slin(8000, 320), slin(8000, 160)
	decodeSteps(t, s, []decodeStep{
		{transport.Binary, string(asFrame(0x01, asUUIDBytes)), transport.Inbound{Kind: transport.KindStart, Start: &transport.Start{CallID: asUUIDText}}},
		{transport.Binary, string(asFrame(0x10, a)), transport.Inbound{Kind: transport.KindAudio, Audio: a}},
		{transport.Binary, "\x03\x00\x01#", transport.Inbound{Kind: transport.KindDTMF, Digit: '#'}},
		{transport.Binary, string(asFrame(0x10, b)), transport.Inbound{Kind: transport.KindAudio, Audio: b}},
		{transport.Binary, "\x02\x00\x00", transport.Inbound{}}, // the Go library's "silence": not Asterisk's, ignored
		{transport.Binary, "\x00\x00\x00", transport.Inbound{Kind: transport.KindStop}},
	})
	if f := s.Format(); f != (codec.Format{Encoding: codec.L16, Rate: 8000}) {
		t.Errorf("Format %v, want 8 kHz L16", f)
	}
	// The host answers in the caller's type, byte for byte.
	if typ, msg := s.Audio(a); typ != transport.Binary || !bytes.Equal(msg, asFrame(0x10, a)) {
		t.Errorf("Audio rendered %v % x…, want the 0x10 frame", typ, msg[:3])
	}
	if typ, msg, ok := s.Hangup(); !ok || typ != transport.Binary || string(msg) != "\x00\x00\x00" {
		t.Errorf("Hangup rendered %v %q %v, want 00 00 00", typ, msg, ok)
	}
	for name, ok := range map[string]bool{
		"Mark":  third(s.Mark("m")),
		"Clear": third(s.Clear()),
		"Event": third(s.Event("vad", "speech_start", nil, 0)),
	} {
		if ok {
			t.Errorf("%s rendered a message; AudioSocket has none", name)
		}
	}
}

// The first audio frame's type fixes the stream's rate; the host carries
// 8, 16 and 24 kHz and names any other rate it refuses.
func TestAudioSocketRates(t *testing.T) {
	for _, tt := range []struct {
		kind byte
		rate int
		want string // "" means carried
	}{
		{0x10, 8000, ""},
		{0x11, 12000, "audiosocket: slin at 12 kHz (type 0x11) is not carried; voxhost takes slin at 8, 16 or 24 kHz (types 0x10, 0x12, 0x13)"},
		{0x12, 16000, ""},
		{0x13, 24000, ""},
		{0x14, 32000, "audiosocket: slin at 32 kHz (type 0x14) is not carried; voxhost takes slin at 8, 16 or 24 kHz (types 0x10, 0x12, 0x13)"},
		{0x15, 44100, "audiosocket: slin at 44.1 kHz (type 0x15) is not carried; voxhost takes slin at 8, 16 or 24 kHz (types 0x10, 0x12, 0x13)"},
		{0x16, 48000, "audiosocket: slin at 48 kHz (type 0x16) is not carried; voxhost takes slin at 8, 16 or 24 kHz (types 0x10, 0x12, 0x13)"},
		{0x17, 96000, "audiosocket: slin at 96 kHz (type 0x17) is not carried; voxhost takes slin at 8, 16 or 24 kHz (types 0x10, 0x12, 0x13)"},
		{0x18, 192000, "audiosocket: slin at 192 kHz (type 0x18) is not carried; voxhost takes slin at 8, 16 or 24 kHz (types 0x10, 0x12, 0x13)"},
	} {
		s := audioSocket(t, nil)
		var in transport.Inbound
		if err := s.Decode(transport.Binary, asFrame(0x01, asUUIDBytes), &in); err != nil {
			t.Fatal(err)
		}
		frame := slin(tt.rate, tt.rate/1000*2*20) // 20 ms
		err := s.Decode(transport.Binary, asFrame(tt.kind, frame), &in)
		if tt.want != "" {
			if perr := wantProtocolError(t, err, "audiosocket", tt.want); !perr.Unsupported {
				t.Errorf("type 0x%02x: refused, but not as unsupported", tt.kind)
			}
			continue
		}
		if err != nil || in.Kind != transport.KindAudio || !bytes.Equal(in.Audio, frame) {
			t.Fatalf("type 0x%02x: %v %v", tt.kind, err, in.Kind)
		}
		if f := s.Format(); f != (codec.Format{Encoding: codec.L16, Rate: tt.rate}) {
			t.Errorf("type 0x%02x: Format %v", tt.kind, f)
		}
		if _, msg := s.Audio(frame); !bytes.Equal(msg, asFrame(tt.kind, frame)) {
			t.Errorf("type 0x%02x: Audio rendered type 0x%02x", tt.kind, msg[0])
		}
		// The rate is the stream's: a frame of another type is refused.
		other := byte(0x10)
		if tt.kind == 0x10 {
			other = 0x12
		}
		if err := s.Decode(transport.Binary, asFrame(other, slin(16000, 640)), &in); err == nil || !strings.Contains(err.Error(), "on a stream of slin at") {
			t.Errorf("type 0x%02x, then 0x%02x: %v, want a refusal", tt.kind, other, err)
		}
	}
}

// Once the host has read the format, it is the stream's, so audio never
// reaches a pipeline built for another rate; a host that reads it after
// the first audio frame gets that frame's. A query's rate fixes it from
// the start.
func TestAudioSocketFormatIsFixedOnceRead(t *testing.T) {
	var in transport.Inbound
	s := audioSocket(t, nil)
	_ = s.Decode(transport.Binary, asFrame(0x01, asUUIDBytes), &in)
	if f := s.Format(); f.Rate != 8000 {
		t.Fatalf("Format after the UUID: %v", f)
	}
	wantProtocolError(t, s.Decode(transport.Binary, asFrame(0x12, slin(16000, 640)), &in), "audiosocket",
		"audiosocket: slin at 16 kHz (type 0x12) on a stream of slin at 8 kHz")

	s = audioSocket(t, url.Values{"rate": {"24000"}})
	if f := s.Format(); f != (codec.Format{Encoding: codec.L16, Rate: 24000}) {
		t.Errorf("Format with ?rate=24000: %v", f)
	}
	_ = s.Decode(transport.Binary, asFrame(0x01, asUUIDBytes), &in)
	wantProtocolError(t, s.Decode(transport.Binary, asFrame(0x10, slin(8000, 320)), &in), "audiosocket",
		"audiosocket: slin at 8 kHz (type 0x10) on a stream of slin at 24 kHz")
	if err := s.Decode(transport.Binary, asFrame(0x13, slin(24000, 960)), &in); err != nil || in.Kind != transport.KindAudio {
		t.Errorf("24 kHz audio on a 24 kHz stream: %v %v", err, in.Kind)
	}

	_, err := transport.AudioSocket().NewSession(transport.SessionConfig{MaxFrameMs: 20, Query: url.Values{"rate": {"44100"}}})
	if err == nil || err.Error() != "audiosocket: L16 is carried at 8000, 16000 or 24000 Hz, not 44100" {
		t.Errorf("?rate=44100: %v", err)
	}
	_, err = transport.AudioSocket().NewSession(transport.SessionConfig{MaxFrameMs: 1400})
	if err == nil || !strings.Contains(err.Error(), "more than a frame's 16-bit length carries") {
		t.Errorf("frames of 1400 ms: %v, want a refusal", err)
	}
}

// Asterisk's error frames: the hang-up bit ends the stream, the others are
// reported and the call goes on.
func TestAudioSocketErrorFrames(t *testing.T) {
	for _, tt := range []struct {
		payload []byte
		want    transport.Inbound
	}{
		{[]byte{0x01}, transport.Inbound{Kind: transport.KindStop}},
		{[]byte{0x03}, transport.Inbound{Kind: transport.KindStop}},
		{[]byte{0x02}, transport.Inbound{Kind: transport.KindError, Text: "Asterisk reported frame forwarding error"}},
		{[]byte{0x04}, transport.Inbound{Kind: transport.KindError, Text: "Asterisk reported memory allocation error"}},
		{[]byte{0x16}, transport.Inbound{Kind: transport.KindError, Text: "Asterisk reported frame forwarding error, memory allocation error, unknown code bits 0x10"}},
		{nil, transport.Inbound{Kind: transport.KindError, Text: "error frame without a code"}},
		{[]byte{0xbe, 0xef}, transport.Inbound{Kind: transport.KindError, Text: "error frame with code beef"}},
	} {
		s := audioSocket(t, nil)
		var in transport.Inbound
		if err := s.Decode(transport.Binary, asFrame(0xff, tt.payload), &in); err != nil || !reflect.DeepEqual(in, tt.want) {
			t.Errorf("error frame % x: %v %+v, want %+v", tt.payload, err, in, tt.want)
		}
	}
}

func TestAudioSocketMalformed(t *testing.T) {
	uuid := string(asFrame(0x01, asUUIDBytes))
	for _, tt := range []struct {
		name        string
		typ         transport.MessageType
		before      string // a frame decoded first, if any
		msg         string
		want        string
		unsupported bool
	}{
		{"text", transport.Text, "", "hello", "audiosocket: text message: AudioSocket frames are binary", true},
		{"short", transport.Binary, "", "\x10\x00", "audiosocket: frame of 2 bytes is shorter than its 3-byte header", false},
		{"length past the payload", transport.Binary, "", "\x10\x00\x04ab", "audiosocket: frame of type 0x10 says its payload is 4 bytes but carries 2", false},
		{"length short of the payload", transport.Binary, "", "\x00\x00\x00\x00", "audiosocket: frame of type 0x00 says its payload is 0 bytes but carries 1", false},
		{"audio before the UUID", transport.Binary, "", string(asFrame(0x10, slin(8000, 320))), "audiosocket: audio before the UUID frame: Asterisk sends the call's UUID first", false},
		{"DTMF before the UUID", transport.Binary, "", "\x03\x00\x015", "audiosocket: DTMF before the UUID frame: Asterisk sends the call's UUID first", false},
		{"short UUID", transport.Binary, "", string(asFrame(0x01, asUUIDBytes[:15])), "audiosocket: UUID frame with a 15-byte payload, want the 16 bytes of a UUID", false},
		{"UUID as text", transport.Binary, "", string(asFrame(0x01, []byte(asUUIDText))), "audiosocket: UUID frame with a 36-byte payload, want the 16 bytes of a UUID", false},
		{"second UUID", transport.Binary, uuid, uuid, "audiosocket: a second UUID frame on one stream", false},
		{"bad digit", transport.Binary, uuid, "\x03\x00\x01x", `audiosocket: DTMF frame payload "x" is not one of 0-9 * # A-D`, false},
		{"two digits", transport.Binary, uuid, "\x03\x00\x0212", `audiosocket: DTMF frame payload "12" is not one of 0-9 * # A-D`, false},
		{"empty audio", transport.Binary, uuid, "\x10\x00\x00", "audiosocket: empty audio frame", false},
		{"half a sample", transport.Binary, uuid, string(asFrame(0x10, slin(8000, 321))), "audiosocket: audio frame of 321 bytes is not a multiple of 16 (whole milliseconds of 8 kHz L16)", false},
		{"too long", transport.Binary, uuid, string(asFrame(0x10, slin(8000, 2*maxAudio+16))), "audiosocket: audio frame of 3216 bytes exceeds the limit of 3200", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := audioSocket(t, nil)
			var in transport.Inbound
			if tt.before != "" {
				if err := s.Decode(transport.Binary, []byte(tt.before), &in); err != nil {
					t.Fatal(err)
				}
			}
			in = transport.Inbound{Kind: transport.KindStop, Audio: []byte{1}}
			perr := wantProtocolError(t, s.Decode(tt.typ, []byte(tt.msg), &in), "audiosocket", tt.want)
			if perr.Unsupported != tt.unsupported || perr.Limit {
				t.Errorf("Unsupported %v Limit %v, want %v false", perr.Unsupported, perr.Limit, tt.unsupported)
			}
			if !reflect.DeepEqual(in, transport.Inbound{}) {
				t.Errorf("a failed Decode left %+v", in)
			}
		})
	}
}

// ReadMessage frames a byte stream as the documented layout says, however
// the stream arrives, and tells a peer that closed between frames from one
// that vanished inside one.
func TestAudioSocketReadMessage(t *testing.T) {
	framer := transport.AudioSocket().(transport.Framer)
	frames := [][]byte{asFrame(0x01, asUUIDBytes), asFrame(0x10, slin(8000, 320)), asFrame(0x03, []byte("7")), asFrame(0x13, slin(24000, 4800)), asFrame(0x00, nil)}
	stream := bytes.Join(frames, nil)
	for name, r := range map[string]func() io.Reader{
		"whole":       func() io.Reader { return bytes.NewReader(stream) },
		"byte a read": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"half reads":  func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
	} {
		t.Run(name, func(t *testing.T) {
			var buf []byte
			r := r()
			for i, want := range frames {
				typ, msg, err := framer.ReadMessage(r, &buf, 64<<10)
				if err != nil || typ != transport.Binary || !bytes.Equal(msg, want) {
					t.Fatalf("frame %d: %v %v %d bytes, want %d", i, err, typ, len(msg), len(want))
				}
			}
			if _, _, err := framer.ReadMessage(r, &buf, 64<<10); err != io.EOF {
				t.Errorf("after the last frame: %v, want io.EOF", err)
			}
		})
	}

	for _, tt := range []struct {
		name   string
		stream []byte
	}{
		{"half a header", []byte{0x10, 0x01}},
		{"a header alone", []byte{0x10, 0x01, 0x40}},
		{"half a payload", asFrame(0x10, slin(8000, 320))[:163]},
	} {
		var buf []byte
		if _, _, err := framer.ReadMessage(bytes.NewReader(tt.stream), &buf, 64<<10); err != io.ErrUnexpectedEOF {
			t.Errorf("%s: %v, want io.ErrUnexpectedEOF", tt.name, err)
		}
	}

	var buf []byte
	_, _, err := framer.ReadMessage(bytes.NewReader(asFrame(0x10, slin(8000, 3200))), &buf, 3202)
	perr := wantProtocolError(t, err, "audiosocket", "audiosocket: frame of type 0x10 with a 3200-byte payload exceeds the limit of 3202 bytes")
	if !perr.Limit {
		t.Error("a frame over the limit is not a Limit error")
	}
	// At the limit exactly, it is read.
	if _, msg, err := framer.ReadMessage(bytes.NewReader(asFrame(0x10, slin(8000, 3200))), &buf, 3203); err != nil || len(msg) != 3203 {
		t.Errorf("a frame at the limit: %v, %d bytes", err, len(msg))
	}
}

// The audiosocket dialect speaks as Asterisk does: the UUID frame first,
// then slin of the leg's rate, DTMF as one ASCII byte and the hang-up
// frame; it reads an app's slin, hang-up and errors.
func TestAudioSocketDialect(t *testing.T) {
	f16 := codec.Format{Encoding: codec.L16, Rate: 16000}
	d, err := transport.LookupDialect("audiosocket")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []codec.Format{codec.Telephony, {Encoding: codec.Alaw, Rate: 8000}, {Encoding: codec.L16, Rate: 44100}} {
		if err := d.CheckFormat(f); err == nil {
			t.Errorf("CheckFormat(%v) accepted", f)
		}
	}
	if err := d.CheckFormat(codec.Format{Encoding: codec.L16, Rate: 8000}); err != nil {
		t.Error(err)
	}
	if err := d.CheckFormat(codec.Telephony); err.Error() != "the audiosocket dialect carries slin (L16) at 8000, 16000 or 24000 Hz, not 8 kHz μ-law" {
		t.Error(err)
	}

	// A call id that is a UUID goes as it is; another maps onto its name-
	// based UUID, the same every time (RFC 9562 version 5: Python's
	// uuid.uuid5(uuid.NAMESPACE_URL, "voxhost:call:" + callSid) gives the
	// value below).
	call := testCall
	call.CallID = strings.ToUpper(asUUIDText)
	b := d.NewBotSession(transport.BotConfig{Format: f16, MaxAudio: maxAudio, Call: call})
	if got := opened(t, b); len(got) != 1 || got[0].typ != transport.Binary || got[0].msg != string(asFrame(0x01, asUUIDBytes)) {
		t.Errorf("Open with a UUID call id sent %+v", got)
	}
	b = newBot(t, "audiosocket", f16, nil)
	got := opened(t, b)
	var in transport.Inbound
	srv := audioSocket(t, nil)
	if err := srv.Decode(got[0].typ, []byte(got[0].msg), &in); err != nil || in.Start.CallID != "65a6fa39-49f1-56ad-bac0-bffd64d31ad8" {
		t.Errorf("Open with call id %s: %v %+v", callSid, err, in.Start)
	}

	pcm := slin(16000, 640)
	if typ, msg := b.Audio(pcm); typ != transport.Binary || !bytes.Equal(msg, asFrame(0x12, pcm)) {
		t.Errorf("Audio rendered type 0x%02x, want a 0x12 frame", msg[0])
	}
	if typ, msg, ok := b.DTMF('9'); !ok || typ != transport.Binary || string(msg) != "\x03\x00\x019" {
		t.Errorf("DTMF rendered %q %v", msg, ok)
	}
	if typ, msg, ok := b.Stop(); !ok || typ != transport.Binary || string(msg) != "\x00\x00\x00" {
		t.Errorf("Stop rendered %q %v", msg, ok)
	}
	for name, ok := range map[string]bool{
		"DTMF x":     third(b.DTMF('x')),
		"MarkPlayed": third(b.MarkPlayed("m")),
		"Event":      third(b.Event("vad", "speech_start", nil, 0)),
	} {
		if ok {
			t.Errorf("%s rendered a message", name)
		}
	}
	if err := b.Interrupted(100, false, func(transport.MessageType, []byte) error { return errors.New("sent") }); err != nil {
		t.Errorf("Interrupted sent something: AudioSocket has no barge-in message")
	}

	odd := pcm[:6] // a bot's audio need be whole samples only
	decodeSteps(t, b, []decodeStep{
		{transport.Binary, string(asFrame(0x12, pcm)), transport.Inbound{Kind: transport.KindAudio, Audio: pcm}},
		{transport.Binary, string(asFrame(0x12, odd)), transport.Inbound{Kind: transport.KindAudio, Audio: odd}},
		{transport.Binary, "\x03\x00\x015", transport.Inbound{}},
		{transport.Binary, "\xff\x00\x01\x04", transport.Inbound{Kind: transport.KindError, Text: "Asterisk reported memory allocation error"}},
		{transport.Binary, "\x00\x00\x00", transport.Inbound{Kind: transport.KindStop}},
	})
	decodeErrors(t, "audiosocket", func(t *testing.T) transport.BotSession { return newBot(t, "audiosocket", f16, nil) }, []decodeError{
		{"other rate", transport.Binary, string(asFrame(0x10, pcm)), "audiosocket: slin at 8 kHz (type 0x10) on a leg of slin at 16 kHz", false},
		{"half a sample", transport.Binary, string(asFrame(0x12, pcm[:3])), "audiosocket: audio of 3 bytes is not a whole number of 2-byte l16 samples", false},
		{"too long", transport.Binary, string(asFrame(0x12, slin(16000, maxAudio+2))), "audiosocket: audio frame of 1602 bytes exceeds the limit of 1600", false},
		{"length wrong", transport.Binary, "\x12\x00\x09ab", "audiosocket: frame of type 0x12 says its payload is 9 bytes but carries 2", false},
		{"text", transport.Text, "{}", "audiosocket: text message: AudioSocket frames are binary", false},
	})
}

// What the client role sends, the server role reads back, and the other
// way round.
func TestAudioSocketRoundTrip(t *testing.T) {
	for _, rate := range []int{8000, 16000, 24000} {
		f := codec.Format{Encoding: codec.L16, Rate: rate}
		bot := newBot(t, "audiosocket", f, nil)
		srv := audioSocket(t, nil)
		var in transport.Inbound
		for _, m := range opened(t, bot) {
			if err := srv.Decode(m.typ, []byte(m.msg), &in); err != nil || in.Kind != transport.KindStart {
				t.Fatal(err, in.Kind)
			}
		}
		pcm := slin(rate, f.BytesPerMs()*20)
		typ, msg := bot.Audio(pcm)
		if err := srv.Decode(typ, msg, &in); err != nil || !bytes.Equal(in.Audio, pcm) {
			t.Fatalf("%d Hz: caller audio: %v", rate, err)
		}
		if srv.Format() != f {
			t.Errorf("%d Hz: server Format %v", rate, srv.Format())
		}
		typ, msg = srv.Audio(pcm)
		if err := bot.Decode(typ, msg, &in); err != nil || !bytes.Equal(in.Audio, pcm) {
			t.Fatalf("%d Hz: host audio: %v", rate, err)
		}
		typ, msg, _ = bot.DTMF('*')
		if err := srv.Decode(typ, msg, &in); err != nil || in.Kind != transport.KindDTMF || in.Digit != '*' {
			t.Errorf("%d Hz: DTMF: %v %+v", rate, err, in)
		}
		typ, msg, _ = srv.Hangup()
		if err := bot.Decode(typ, msg, &in); err != nil || in.Kind != transport.KindStop {
			t.Errorf("%d Hz: host hang-up: %v %v", rate, err, in.Kind)
		}
		typ, msg, _ = bot.Stop()
		if err := srv.Decode(typ, msg, &in); err != nil || in.Kind != transport.KindStop {
			t.Errorf("%d Hz: caller hang-up: %v %v", rate, err, in.Kind)
		}
	}
}

// loopReader replays one stream forever, so that reading frames from it
// allocates nothing of its own.
type loopReader struct {
	b   []byte
	pos int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.b[l.pos:])
	l.pos = (l.pos + n) % len(l.b)
	return n, nil
}

func TestAudioSocketAudioPathDoesNotAllocate(t *testing.T) {
	pcm := slin(16000, 640)
	frame := asFrame(0x12, pcm)
	srv := audioSocket(t, nil)
	var in transport.Inbound
	_ = srv.Decode(transport.Binary, asFrame(0x01, asUUIDBytes), &in)
	bot := newBot(t, "audiosocket", codec.Format{Encoding: codec.L16, Rate: 16000}, nil)
	framer := transport.AudioSocket().(transport.Framer)
	r := &loopReader{b: frame}
	buf := make([]byte, 16)
	_, _, _ = framer.ReadMessage(r, &buf, 64<<10) // grows the buffer once

	for _, tt := range []struct {
		name string
		run  func()
	}{
		{"read a frame", func() {
			if _, msg, err := framer.ReadMessage(r, &buf, 64<<10); err != nil || len(msg) != len(frame) {
				t.Fatal(err)
			}
		}},
		{"server decode audio", func() {
			if err := srv.Decode(transport.Binary, frame, &in); err != nil || in.Kind != transport.KindAudio {
				t.Fatal(err, in.Kind)
			}
		}},
		{"server render audio", func() { srv.Audio(pcm) }},
		{"bot render audio", func() { bot.Audio(pcm) }},
		{"bot decode audio", func() {
			if err := bot.Decode(transport.Binary, frame, &in); err != nil || in.Kind != transport.KindAudio {
				t.Fatal(err, in.Kind)
			}
		}},
	} {
		if n := testing.AllocsPerRun(200, tt.run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, n)
		}
	}
}

// checkAudioSocketDecode fails the test unless err is a *ProtocolError
// that left the zero Inbound, or the frame decoded to something the
// layout holds: audio is the frame's payload.
func checkAudioSocketDecode(t *testing.T, err error, msg []byte, in *transport.Inbound) {
	t.Helper()
	if err != nil {
		var perr *transport.ProtocolError
		if !errors.As(err, &perr) {
			t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
		}
		if !reflect.DeepEqual(*in, transport.Inbound{}) {
			t.Fatalf("a failed Decode left %+v", *in)
		}
		return
	}
	if len(msg) < 3 || int(binary.BigEndian.Uint16(msg[1:3])) != len(msg)-3 {
		t.Fatalf("accepted % x, which is not one whole frame", msg)
	}
	if in.Kind == transport.KindAudio && !bytes.Equal(in.Audio, msg[3:]) {
		t.Fatalf("audio is not the frame's payload")
	}
}

// FuzzAudioSocketDecode feeds the server role a UUID and then any frame:
// it never panics, refuses with a *ProtocolError or decodes what the
// layout says, and audio it accepts goes back out byte for byte.
func FuzzAudioSocketDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := audioSocket(t, nil)
		var in transport.Inbound
		if err := s.Decode(transport.Binary, asFrame(0x01, asUUIDBytes), &in); err != nil {
			t.Fatal(err)
		}
		err := s.Decode(transport.Binary, msg, &in)
		checkAudioSocketDecode(t, err, msg, &in)
		if err == nil && in.Kind == transport.KindAudio {
			if _, out := s.Audio(in.Audio); !bytes.Equal(out, msg) {
				t.Fatalf("rendered % x…, not the frame it decoded", out[:3])
			}
		}
	})
}

// FuzzAudioSocketBotDecode does the same for the client role, what an app
// controls.
func FuzzAudioSocketBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg []byte) {
		b := newBot(t, "audiosocket", codec.Format{Encoding: codec.L16, Rate: 8000}, nil)
		var in transport.Inbound
		err := b.Decode(transport.Binary, msg, &in)
		checkAudioSocketDecode(t, err, msg, &in)
		if err == nil && in.Kind == transport.KindAudio {
			wantBotAudio(t, in.Audio, codec.Format{Encoding: codec.L16, Rate: 8000})
		}
	})
}

// FuzzAudioSocketReadMessage reads frames from any stream, through a
// reader that can peek as the server's does: each is whole and within the
// limit (a UUID frame with the next frame's type after it), and the stream
// ends in io.EOF at a frame boundary, io.ErrUnexpectedEOF inside one or a
// Limit error.
func FuzzAudioSocketReadMessage(f *testing.F) {
	const limit = 1 << 10
	framer := transport.AudioSocket().(transport.Framer)
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(stream), 16)
		var buf []byte
		read := 0
		for {
			_, msg, err := framer.ReadMessage(r, &buf, limit)
			var perr *transport.ProtocolError
			switch {
			case err == io.EOF:
				if read != len(stream) {
					t.Fatalf("io.EOF after %d of %d bytes", read, len(stream))
				}
				return
			case err == io.ErrUnexpectedEOF:
				if len(stream)-read >= 3 && 3+int(binary.BigEndian.Uint16(stream[read+1:])) <= len(stream)-read {
					t.Fatalf("io.ErrUnexpectedEOF with a whole frame left")
				}
				return
			case errors.As(err, &perr) && perr.Limit:
				if 3+int(binary.BigEndian.Uint16(stream[read+1:])) <= limit {
					t.Fatalf("refused a frame within the limit: %v", err)
				}
				return
			case err != nil:
				t.Fatalf("error %v (%T)", err, err)
			}
			n := len(msg)
			if n == 20 && msg[0] == 0x01 && msg[2] == 16 {
				n = 19 // the UUID frame and the next frame's type, unread
			}
			if n > limit || n < 3 || len(msg) > len(stream)-read || !bytes.Equal(msg, stream[read:read+len(msg)]) || int(binary.BigEndian.Uint16(msg[1:3])) != n-3 {
				t.Fatalf("read % x, not the next whole frame", msg)
			}
			read += n
		}
	})
}

// Read through a reader that can peek, as the server reads a TCP leg, the
// UUID frame knows the type of the frame after it, so that the stream's
// rate is fixed as the call starts: the host builds its pipeline then.
func TestAudioSocketRateKnownAtTheStart(t *testing.T) {
	framer := transport.AudioSocket().(transport.Framer)
	for _, tt := range []struct {
		name string
		next []byte // what follows the UUID frame
		rate int
		want string // the start's error, if any
	}{
		{"16 kHz", asFrame(0x12, slin(16000, 640)), 16000, ""},
		{"24 kHz", asFrame(0x13, slin(24000, 960)), 24000, ""},
		{"8 kHz", asFrame(0x10, slin(8000, 320)), 8000, ""},
		{"a digit first", asFrame(0x03, []byte("1")), 8000, ""},
		{"nothing", nil, 8000, ""},
		{"48 kHz", asFrame(0x16, slin(48000, 1920)), 0,
			"audiosocket: slin at 48 kHz (type 0x16) is not carried; voxhost takes slin at 8, 16 or 24 kHz (types 0x10, 0x12, 0x13)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := bufio.NewReader(bytes.NewReader(append(asFrame(0x01, asUUIDBytes), tt.next...)))
			var buf []byte
			typ, msg, err := framer.ReadMessage(r, &buf, 64<<10)
			if err != nil {
				t.Fatal(err)
			}
			s := audioSocket(t, nil)
			var in transport.Inbound
			err = s.Decode(typ, msg, &in)
			if tt.want != "" {
				if perr := wantProtocolError(t, err, "audiosocket", tt.want); !perr.Unsupported {
					t.Error("refused, but not as unsupported")
				}
				return
			}
			if err != nil || in.Kind != transport.KindStart || in.Start.CallID != asUUIDText {
				t.Fatalf("%v %+v", err, in)
			}
			if f := s.Format(); f.Rate != tt.rate {
				t.Errorf("Format at the start %v, want %d Hz", f, tt.rate)
			}
			// The frame after is still to be read, and decodes.
			typ, msg, err = framer.ReadMessage(r, &buf, 64<<10)
			if tt.next == nil {
				if err != io.EOF {
					t.Errorf("after the UUID: %v, want io.EOF", err)
				}
				return
			}
			if err != nil || !bytes.Equal(msg, tt.next) {
				t.Fatalf("the next frame: %v, % x", err, msg[:3])
			}
			if err := s.Decode(typ, msg, &in); err != nil {
				t.Error(err)
			}
		})
	}
}
