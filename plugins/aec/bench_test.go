package aec_test

import (
	"context"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

// BenchmarkCancel is the default `aec`'s CPU per 20 ms frame (ns/frame) on
// three signals: a minute of echo over one path (the shadow canceller idle),
// the same with the path changing at 20 and 40 s (the shadow running after
// each), and the near-end scenario's 12 s (the caller alone and over the
// bot: suspicions that double talk raises, the shadow running for nothing).
// Compare builds by running it with each aec.wasm in the same loop (the
// figures in BENCHMARKS.md).
func BenchmarkCancel(b *testing.B) {
	far := bargeInFarEnd(b)
	steady := convolve(far, echoPath{delayMs: 120, tailMs: 45, gainDB: -6, seed: 9}.response())
	changing := make([]float64, len(far))
	paths := []echoPath{{delayMs: 60, tailMs: 40, gainDB: -10, seed: 7}, {delayMs: 110, tailMs: 50, gainDB: -8, seed: 8}, {delayMs: 60, tailMs: 40, gainDB: -6, seed: 7}}
	for k, p := range paths {
		end := len(far)
		if k < len(paths)-1 {
			end = (k + 1) * 20 * rate
		}
		copy(changing[k*20*rate:end], convolve(far, p.response())[k*20*rate:end])
	}
	_, far12, _, mic12 := scenario(b, echoPath{delayMs: 80, tailMs: 40, gainDB: -6, seed: 5})
	for _, c := range []struct {
		name     string
		mic, far []float64
	}{{"steady", steady, far}, {"path_changes", changing, far}, {"double_talk", mic12, far12}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			specs, err := pipeline.ParseSpec("aec")
			if err != nil {
				b.Fatal(err)
			}
			def, err := hosttest.Catalog(b).Definition(ctx, "bench", specs)
			if err != nil {
				b.Fatal(err)
			}
			in, ref := signal.FromFloats(c.mic), signal.FromFloats(c.far)
			frames := len(in) / frameBytes
			src := &pipeline.PCM{}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				b.StopTimer()
				p, err := def.Instantiate(ctx, pipeline.CallConfig{InputRate: rate})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for off := 0; off+frameBytes <= len(in); off += frameBytes {
					src.Frame = in[off : off+frameBytes]
					p.SetReference(ref[off : off+frameBytes])
					if _, err := p.Process(src); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				p.Close(ctx)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
		})
	}
}
