package recording_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/internal/signal"
)

// BenchmarkDecodeFrame is the baseline the recorder's costs are read
// against in the same run: μ-law decoding of one 20 ms frame, which every
// call does for every frame anyway.
func BenchmarkDecodeFrame(b *testing.B) {
	frame := make([]byte, 160)
	pcm := make([]byte, 320)
	b.ReportAllocs()
	for b.Loop() {
		codec.Telephony.Decode(pcm, frame)
	}
}

// BenchmarkRecordFrame is one 20 ms frame of a μ-law call recording every
// stream: "hooks" is what the call's frame loop pays (Caller, Processed,
// Heard: copies into the buffers), "writer" that plus the writer's work
// (decoding, writes to files in a temporary directory, the disk-free
// check), per frame, with a turn every 10 frames (200 ms, as the writer
// runs) or every 50 (a second).
func BenchmarkRecordFrame(b *testing.B) {
	pcm := signal.Speech(8000, 0.02)
	frame := make([]byte, 160)
	codec.EncodeUlaw(frame, pcm)
	for _, tc := range []struct {
		name   string
		writer bool
		every  int
	}{{"hooks", false, 10}, {"writer-200ms", true, 10}, {"writer-1s", true, 50}} {
		b.Run(tc.name, func(b *testing.B) {
			spec := &recording.Spec{Dir: b.TempDir(), Streams: []recording.Stream{recording.Caller, recording.CallerProcessed, recording.Heard, recording.Reference},
				MaxDuration: 24 * time.Hour, MinFreeBytes: 1}
			rec, err := recording.OpenIdle(spec, "bench", time.Now(), recording.Formats{Caller: codec.Telephony, ProcessedRate: 8000},
				recording.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				rec.Caller(frame, pcm)
				rec.Processed(pcm)
				rec.Heard(frame)
				if n++; n%tc.every == 0 {
					if !tc.writer {
						b.StopTimer()
					}
					rec.WriteNow()
					if !tc.writer {
						b.StartTimer()
					}
				}
			}
			b.StopTimer()
			rec.Finish()
		})
	}
}
