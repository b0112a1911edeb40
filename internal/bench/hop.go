package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/signal"
)

// FrameSamples is the frame the benchmarks push: 20 ms at 8 kHz.
const FrameSamples = 160

// HopConfig describes a hop benchmark.
type HopConfig struct {
	// Plugins are the plugin references to measure besides passthrough.
	Plugins []string
	// Depths are the chain lengths.
	Depths []int
	// Frames is the number of frames per measurement.
	Frames int
	// Reps is the number of interleaved repetitions; the median is reported.
	Reps int
}

// HopRow is one plugin at one depth.
type HopRow struct {
	Plugin string `json:"plugin"`
	Depth  int    `json:"depth"`
	// NsPerFrame is the median time of one frame through the whole chain.
	NsPerFrame float64 `json:"ns_per_frame"`
	// NsPerHop is NsPerFrame / Depth.
	NsPerHop float64 `json:"ns_per_hop"`
	// NativeNsPerHop is the same chain of native Go passthrough stages,
	// measured interleaved with this one.
	NativeNsPerHop float64 `json:"native_ns_per_hop"`
	// Ratio is NsPerHop / NativeNsPerHop.
	Ratio float64 `json:"ratio_vs_native"`
	// OverPassthroughNsPerHop is what this plugin costs per hop beyond the
	// passthrough plugin's hop at the same depth (0 for passthrough itself).
	OverPassthroughNsPerHop float64 `json:"over_passthrough_ns_per_hop"`
	// Spread is (max − min) / median over the repetitions.
	Spread float64 `json:"spread"`
	// AllocsPerFrame counts heap allocations per frame (should be 0).
	AllocsPerFrame float64 `json:"allocs_per_frame"`
}

// Hop measures each plugin, and passthrough, in chains of every depth,
// interleaving WASM and native runs so that both see the same machine.
func Hop(ctx context.Context, cat *catalog.Catalog, cfg HopConfig) ([]HopRow, error) {
	if cfg.Frames <= 0 {
		cfg.Frames = 20000
	}
	if cfg.Reps <= 0 {
		cfg.Reps = 5
	}
	plugins := append([]string{"passthrough"}, cfg.Plugins...)
	frame := signal.Speech(abi.TelephonyRate, 0.02)
	var rows []HopRow
	passthroughAt := map[int]float64{}
	for _, depth := range cfg.Depths {
		if depth < 1 {
			return nil, fmt.Errorf("depth %d: a chain has at least one stage", depth)
		}
		native, err := nativeChain(depth)
		if err != nil {
			return nil, err
		}
		for _, ref := range plugins {
			p, err := chain(ctx, cat, ref, depth)
			if err != nil {
				return nil, err
			}
			var wasm, nat []float64
			var allocs float64
			for rep := 0; rep < cfg.Reps; rep++ {
				ns, a, err := timeFrames(p, frame, cfg.Frames)
				if err != nil {
					p.Close(ctx)
					return nil, err
				}
				wasm, allocs = append(wasm, ns), max(allocs, a)
				ns, _, _ = timeFrames(native, frame, cfg.Frames)
				nat = append(nat, ns)
			}
			p.Close(ctx)
			row := HopRow{Plugin: ref, Depth: depth, NsPerFrame: median(wasm), AllocsPerFrame: allocs}
			row.NsPerHop = row.NsPerFrame / float64(depth)
			row.NativeNsPerHop = median(nat) / float64(depth)
			row.Ratio = row.NsPerHop / row.NativeNsPerHop
			row.Spread = spread(wasm)
			if ref == "passthrough" {
				passthroughAt[depth] = row.NsPerHop
			} else {
				row.OverPassthroughNsPerHop = row.NsPerHop - passthroughAt[depth]
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// chain builds depth copies of one plugin, with its default config.
func chain(ctx context.Context, cat *catalog.Catalog, ref string, depth int) (*pipeline.Pipeline, error) {
	specs := make([]pipeline.StageSpec, depth)
	for i := range specs {
		specs[i] = pipeline.StageSpec{Plugin: ref, OnError: "end_call"}
	}
	def, err := cat.Definition(ctx, "bench", specs)
	if err != nil {
		return nil, err
	}
	return def.Instantiate(ctx, pipeline.CallConfig{})
}

func nativeChain(depth int) (*pipeline.Pipeline, error) {
	stages := make([]pipeline.Stage, depth)
	for i := range stages {
		stages[i] = pipeline.NewNative("native", abi.TelephonyRate, 1600, pipeline.Passthrough)
	}
	return pipeline.New(stages, nil, nil)
}

// timeFrames pushes frames one at a time and returns ns per frame and
// allocations per frame.
func timeFrames(p *pipeline.Pipeline, frame []byte, frames int) (float64, float64, error) {
	src := &pipeline.PCM{Frame: frame}
	for i := 0; i < frames/10; i++ { // warm caches and branch predictors
		if _, err := p.Process(src); err != nil {
			return 0, 0, err
		}
	}
	before := mallocs()
	start := time.Now()
	for i := 0; i < frames; i++ {
		if _, err := p.Process(src); err != nil {
			return 0, 0, err
		}
	}
	elapsed := time.Since(start)
	allocs := float64(mallocs()-before) / float64(frames)
	return float64(elapsed.Nanoseconds()) / float64(frames), allocs, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func spread(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := median(xs)
	if m == 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / m
}

// WriteHopTable prints the rows for a person.
func WriteHopTable(w io.Writer, rows []HopRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "plugin\tdepth\tns/frame\tns/hop\tnative ns/hop\twasm/native\tover passthrough ns/hop\tspread\tallocs/frame\t")
	for _, r := range rows {
		over := "—"
		if r.Plugin != "passthrough" {
			over = fmt.Sprintf("%.1f", r.OverPassthroughNsPerHop)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.1f\t%.1f\t%.2f×\t%s\t±%.0f%%\t%.2f\t\n",
			shortName(r.Plugin), r.Depth, r.NsPerFrame, r.NsPerHop, r.NativeNsPerHop, r.Ratio, over, 50*r.Spread, r.AllocsPerFrame)
	}
	return tw.Flush()
}

func shortName(ref string) string {
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		return ref[i+1:]
	}
	return ref
}
