package sip

import (
	"testing"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// TestSessionCarriesDigitsAndHold: the call loop reads the media's frames,
// digits and holds; a plugin's dtmf event goes back as a digit for the
// media to send as telephone-events, as does a bot's key, and other
// events have no place.
func TestSessionCarriesDigitsAndHold(t *testing.T) {
	s, err := protocol{format: codec.Telephony}.NewSession(transport.SessionConfig{MaxFrameMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	var in transport.Inbound
	for _, c := range []struct {
		typ  transport.MessageType
		msg  string
		kind transport.Kind
	}{
		{transport.Binary, "\xff\xff", transport.KindAudio},
		{transport.Text, "d7", transport.KindDTMF},
		{transport.Text, "h", transport.KindPause},
		{transport.Text, "r", transport.KindResume},
	} {
		if err := s.Decode(c.typ, []byte(c.msg), &in); err != nil || in.Kind != c.kind {
			t.Fatalf("%q: %v %v", c.msg, in.Kind, err)
		}
	}
	if in := (transport.Inbound{}); s.Decode(transport.Text, []byte("x"), &in) == nil || s.Decode(transport.Text, nil, &in) == nil {
		t.Fatal("an unknown control decoded")
	}
	if typ, msg, ok := s.Event("dtmf", abi.EmitDTMF, []byte(`"#"`), 0); !ok || typ != transport.Text || string(msg) != "d#" {
		t.Fatalf("dtmf event rendered %v %q %v", typ, msg, ok)
	}
	for _, data := range []string{`"x"`, `"12"`, `5`} {
		if _, _, ok := s.Event("dtmf", abi.EmitDTMF, []byte(data), 0); ok {
			t.Fatalf("dtmf event %s rendered", data)
		}
	}
	// A bot's key, through transport.DigitSender.
	ds, ok := s.(transport.DigitSender)
	if !ok {
		t.Fatal("the SIP session carries no bot's keys")
	}
	if typ, msg, ok := ds.Digit('9'); !ok || typ != transport.Text || string(msg) != "d9" {
		t.Fatalf("bot digit rendered %v %q %v", typ, msg, ok)
	}
	if _, _, ok := ds.Digit('x'); ok {
		t.Fatal("a bot's x rendered as a key")
	}
	if _, _, ok := s.Event("vad", abi.EmitSpeechStart, nil, 0); ok {
		t.Fatal("speech_start rendered for RTP")
	}
	for d := range byte(16) {
		if c := eventCode(eventDigit(d)); c != int(d) {
			t.Fatalf("event %d round-trips to %d", d, c)
		}
	}
}
