package transport_test

import (
	"testing"

	"github.com/voxhost/voxhost/host/transport"
)

// The call loop's budget is zero allocations per audio frame, on either
// protocol, in both directions.
func TestAudioPathDoesNotAllocate(t *testing.T) {
	frame := tone(0, 160)
	twilio := started(t)
	media := []byte(mediaMsg(2, 1, "inbound", frame))
	raw := session(transport.Raw())
	dtmf, data := []byte(`{"event":"dtmf","digit":"7"}`), []byte(`{"energy":0.5}`)
	var in transport.Inbound

	tests := []struct {
		name string
		run  func()
	}{
		{"twilio decode media", func() {
			if err := twilio.Decode(transport.Text, media, &in); err != nil || in.Kind != transport.KindAudio {
				t.Fatal(err, in.Kind)
			}
		}},
		{"twilio render audio", func() { twilio.Audio(frame) }},
		{"twilio render mark", func() { twilio.Mark("reply-1") }},
		{"twilio render clear", func() { twilio.Clear() }},
		{"raw decode binary", func() {
			if err := raw.Decode(transport.Binary, frame, &in); err != nil || in.Kind != transport.KindAudio {
				t.Fatal(err, in.Kind)
			}
		}},
		{"raw render audio", func() { raw.Audio(frame) }},
		{"raw decode dtmf", func() {
			if err := raw.Decode(transport.Text, dtmf, &in); err != nil {
				t.Fatal(err)
			}
		}},
		{"raw render event", func() { raw.Event("vad", "speech_start", data, 1240) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(200, tt.run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, n)
		}
	}
}

func BenchmarkTwilioDecodeMedia(b *testing.B) {
	s := started(b)
	msg := []byte(mediaMsg(2, 1, "inbound", tone(0, 160)))
	var in transport.Inbound
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Decode(transport.Text, msg, &in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTwilioAudio(b *testing.B) {
	s := started(b)
	frame := tone(0, 160)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		s.Audio(frame)
	}
}
