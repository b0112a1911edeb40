package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
)

// SessionsConfig describes a sessions benchmark.
type SessionsConfig struct {
	// Sessions are the numbers of concurrent calls to try.
	Sessions []int
	// Spec is the inline pipeline each session runs; empty means Depth
	// passthrough stages.
	Spec string
	// Depth is the chain length when Spec is empty.
	Depth int
	// Duration is how long each point pushes frames.
	Duration time.Duration
}

// SessionsRow is one point of a sessions benchmark.
type SessionsRow struct {
	Sessions int     `json:"sessions"`
	Frames   uint64  `json:"frames"`
	Seconds  float64 `json:"seconds"`
	// FramesPerSec is the aggregate rate over all sessions.
	FramesPerSec float64 `json:"frames_per_sec"`
	// FramesPerSecPerCore divides by GOMAXPROCS.
	FramesPerSecPerCore float64 `json:"frames_per_sec_per_core"`
	// RealtimeCalls is how many 50 frame/s calls that rate would carry.
	RealtimeCalls float64 `json:"realtime_calls"`
	// HeapKiBPerSession and RSSKiBPerSession are the memory each live
	// session's pipeline costs.
	HeapKiBPerSession float64 `json:"heap_kib_per_session"`
	RSSKiBPerSession  float64 `json:"rss_kib_per_session"`
}

// Sessions runs that many independent calls — a goroutine each, as serve
// runs them — each decoding μ-law into its pipeline, processing and
// encoding, as fast as it can on all cores.
func Sessions(ctx context.Context, cat *catalog.Catalog, cfg SessionsConfig) ([]SessionsRow, error) {
	spec := cfg.Spec
	if spec == "" {
		depth := max(cfg.Depth, 1)
		spec = strings.TrimSuffix(strings.Repeat("passthrough | ", depth), " | ")
	}
	specs, err := pipeline.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	def, err := cat.Definition(ctx, "bench", specs)
	if err != nil {
		return nil, err
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	pcm := signal.Speech(abi.TelephonyRate, 0.02)
	ulaw := make([]byte, FrameSamples)
	codec.EncodeUlaw(ulaw, pcm)
	var rows []SessionsRow
	for _, n := range cfg.Sessions {
		row, err := sessionsPoint(ctx, def, n, ulaw, cfg.Duration)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func sessionsPoint(ctx context.Context, def *pipeline.Definition, n int, ulaw []byte, d time.Duration) (SessionsRow, error) {
	row := SessionsRow{Sessions: n}
	plugin.CollectIdle()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := ResidentBytes()
	pipes := make([]*pipeline.Pipeline, 0, n)
	defer func() {
		for _, p := range pipes {
			p.Close(ctx)
		}
	}()
	for i := 0; i < n; i++ {
		p, err := def.Instantiate(ctx, pipeline.CallConfig{})
		if err != nil {
			return row, fmt.Errorf("session %d: %w", i, err)
		}
		pipes = append(pipes, p)
	}
	plugin.CollectIdle()
	runtime.ReadMemStats(&after)
	row.HeapKiBPerSession = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n) / 1024
	row.RSSKiBPerSession = float64(ResidentBytes()-rssBefore) / float64(n) / 1024

	var stop atomic.Bool
	var total atomic.Uint64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for _, p := range pipes {
		wg.Add(1)
		go func(p *pipeline.Pipeline) {
			defer wg.Done()
			src := &codec.Source{Format: codec.Telephony, Frame: ulaw}
			out := make([]byte, FrameSamples)
			var frames uint64
			<-start
			for !stop.Load() {
				// Check the clock's flag every few frames, not every frame.
				for i := 0; i < 32; i++ {
					pcm, err := p.Process(src)
					if err != nil {
						errs <- err
						return
					}
					codec.EncodeUlaw(out, pcm)
				}
				frames += 32
			}
			total.Add(frames)
		}(p)
	}
	t0 := time.Now()
	close(start)
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(t0).Seconds()
	select {
	case err := <-errs:
		return row, err
	default:
	}
	row.Frames = total.Load()
	row.Seconds = elapsed
	row.FramesPerSec = float64(row.Frames) / elapsed
	row.FramesPerSecPerCore = row.FramesPerSec / float64(runtime.GOMAXPROCS(0))
	row.RealtimeCalls = row.FramesPerSec / 50
	return row, nil
}

// WriteSessionsTable prints the rows for a person.
func WriteSessionsTable(w io.Writer, rows []SessionsRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sessions\tframes/s\tframes/s/core\trealtime calls\theap KiB/session\tRSS KiB/session\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t\n",
			r.Sessions, r.FramesPerSec, r.FramesPerSecPerCore, r.RealtimeCalls, r.HeapKiBPerSession, r.RSSKiBPerSession)
	}
	return tw.Flush()
}
