package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
)

var depths = []int{1, 4, 16, 64}

// BenchmarkHop compares one frame through depth WebAssembly passthrough
// stages, depth native Go passthrough stages, and depth goroutines joined by
// channels (the goroutine-per-processor design). Read the ns/hop metric of
// the three side by side: they run in the same process on the same frames.
func BenchmarkHop(b *testing.B) {
	frame := signal.Speech(8000, 0.02)
	for _, depth := range depths {
		b.Run(fmt.Sprintf("wasm/depth=%d", depth), func(b *testing.B) {
			c := newCatalog(b)
			p := build(b, c, strings.Repeat("passthrough | ", depth-1)+"passthrough", pipeline.CallConfig{})
			benchPipeline(b, p, frame, depth)
		})
		b.Run(fmt.Sprintf("native/depth=%d", depth), func(b *testing.B) {
			stages := make([]pipeline.Stage, depth)
			for i := range stages {
				stages[i] = pipeline.NewNative("native", 8000, 1600, pipeline.Passthrough)
			}
			p, err := pipeline.New(stages, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			benchPipeline(b, p, frame, depth)
		})
		b.Run(fmt.Sprintf("goroutine/depth=%d", depth), func(b *testing.B) {
			benchGoroutineChain(b, frame, depth)
		})
	}
}

func benchPipeline(b *testing.B, p *pipeline.Pipeline, frame []byte, depth int) {
	src := &pipeline.PCM{Frame: frame}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Process(src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(depth), "ns/hop")
}

// benchGoroutineChain passes a frame buffer through depth goroutines, each
// copying it into its own buffer as a sandboxed stage would, then back.
func benchGoroutineChain(b *testing.B, frame []byte, depth int) {
	chans := make([]chan []byte, depth+1)
	for i := range chans {
		chans[i] = make(chan []byte, 1)
	}
	for i := 0; i < depth; i++ {
		go func(in <-chan []byte, out chan<- []byte) {
			buf := make([]byte, len(frame))
			for f := range in {
				copy(buf, f)
				out <- buf
			}
			close(out)
		}(chans[i], chans[i+1])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		chans[0] <- frame
		<-chans[depth]
	}
	b.StopTimer()
	close(chans[0])
	for range chans[depth] {
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(depth), "ns/hop")
}

// BenchmarkInstanceMemory reports what each live instance of the stock
// plugins costs: Go heap, and resident memory (wazero maps linear memory
// outside the Go heap, and only the pages a plugin touches become resident),
// and the time to make one. Run it with -benchtime=3x: each iteration makes
// 200 instances.
func BenchmarkInstanceMemory(b *testing.B) {
	for _, name := range []string{"passthrough", "gain", "vad", "dtmf", "gate", "agc"} {
		b.Run(name, func(b *testing.B) {
			c := newCatalog(b)
			p, err := c.Resolve(context.Background(), name)
			if err != nil {
				b.Fatal(err)
			}
			const live = 200
			instances := make([]*plugin.Instance, 0, live)
			var before, after runtime.MemStats
			var rssBefore, rssAfter int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for _, in := range instances {
					in.Close(context.Background())
				}
				instances = instances[:0]
				plugin.CollectIdle()
				runtime.ReadMemStats(&before)
				rssBefore = residentBytes(b)
				b.StartTimer()
				for j := 0; j < live; j++ {
					in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{})
					if err != nil {
						b.Fatal(err)
					}
					instances = append(instances, in)
				}
				b.StopTimer()
				plugin.CollectIdle()
				runtime.ReadMemStats(&after)
				rssAfter = residentBytes(b)
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/live, "ns/instance")
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/live/1024, "heap-KiB/instance")
			b.ReportMetric(float64(rssAfter-rssBefore)/live/1024, "RSS-KiB/instance")
			for _, in := range instances {
				in.Close(context.Background())
			}
		})
	}
}

// residentBytes reads the process's resident set size from /proc.
func residentBytes(b *testing.B) int64 {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Skip("no /proc/self/statm: resident memory cannot be measured here")
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(statm), &size, &resident); err != nil {
		b.Fatal(err)
	}
	return resident * int64(os.Getpagesize())
}

// BenchmarkSampledTiming runs four passthrough plugins with no frame
// timed and with one in 64 timed stage by stage (the server's default):
// the difference is what the live per-plugin cost costs.
func BenchmarkSampledTiming(b *testing.B) {
	frame := signal.Speech(8000, 0.02)
	for _, every := range []int{0, 64} {
		b.Run(fmt.Sprintf("every=%d", every), func(b *testing.B) {
			c := newCatalog(b)
			p := build(b, c, "passthrough | passthrough | passthrough | passthrough", pipeline.CallConfig{})
			p.Sample(every, func(int, time.Duration) {})
			benchPipeline(b, p, frame, 4)
		})
	}
}
