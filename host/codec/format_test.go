package codec

import (
	"bytes"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		codec string
		rate  int
		want  Format
		err   string
	}{
		{"", 0, Telephony, ""},
		{"pcmu", 8000, Telephony, ""},
		{"alaw", 0, Format{Alaw, 8000}, ""},
		{"PCMA", 8000, Format{Alaw, 8000}, ""},
		{"l16", 0, Format{L16, 16000}, ""},
		{"slin", 24000, Format{L16, 24000}, ""},
		{"mulaw", 16000, Format{}, "8000 Hz only, not 16000"},
		{"alaw", 16000, Format{}, "8000 Hz only, not 16000"},
		{"l16", 44100, Format{}, "not 44100"},
		{"opus", 0, Format{}, `unknown codec "opus"`},
	} {
		got, err := ParseFormat(tc.codec, tc.rate)
		switch {
		case tc.err != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.err))):
			t.Errorf("ParseFormat(%q, %d) = %v, want an error with %q", tc.codec, tc.rate, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseFormat(%q, %d) = %v, %v, want %v", tc.codec, tc.rate, got, err, tc.want)
		}
	}
}

// TestFormatsRoundTrip decodes and encodes a frame of every code (G.711)
// or a ramp (L16) through each format: every format's path must give back
// what it took, and none may allocate.
func TestFormatsRoundTrip(t *testing.T) {
	codes := make([]byte, 256)
	for i := range codes {
		codes[i] = byte(i)
	}
	ramp := make([]byte, 640)
	for i := range ramp {
		ramp[i] = byte(i * 7)
	}
	for _, tc := range []struct {
		f     Format
		frame []byte
	}{
		{Format{Alaw, 8000}, codes},
		{Format{L16, 16000}, ramp},
	} {
		pcm, back := make([]byte, 2*len(tc.frame)), make([]byte, len(tc.frame))
		n := tc.f.Decode(pcm, tc.frame)
		if m := tc.f.Encode(back, pcm[:n]); !bytes.Equal(back[:m], tc.frame) {
			t.Errorf("%v: a frame does not survive a decode and an encode", tc.f)
		}
		if allocs := testing.AllocsPerRun(100, func() { tc.f.Encode(back, pcm[:tc.f.Decode(pcm, tc.frame)]) }); allocs != 0 {
			t.Errorf("%v: %v allocations per frame", tc.f, allocs)
		}
	}
	if got := (Format{L16, 24000}).BytesPerMs(); got != 48 {
		t.Errorf("L16 at 24 kHz: %d bytes per ms, want 48", got)
	}
}

// TestSilence: each format's silence byte decodes to a zero sample.
func TestSilence(t *testing.T) {
	for _, f := range []Format{Telephony, {Alaw, 8000}, {L16, 16000}} {
		frame := bytes.Repeat([]byte{f.Silence()}, 2*f.SampleBytes())
		pcm := make([]byte, 4)
		f.Decode(pcm, frame)
		// A-law has no code for exactly zero: its silence is the smallest
		// positive step, 8.
		if want := map[Encoding][]byte{Mulaw: {0, 0, 0, 0}, Alaw: {8, 0, 8, 0}, L16: {0, 0, 0, 0}}[f.Encoding]; !bytes.Equal(pcm, want) {
			t.Errorf("%v: silence decodes to %v, want %v", f, pcm, want)
		}
	}
}
