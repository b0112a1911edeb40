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
	"github.com/voxhost/voxhost/internal/nativeplugin"
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
	// Native says what NativeNsPerHop measured: NativeC or NativeRust, the
	// plugin's own source compiled for the host (internal/nativeplugin);
	// NativeGo, a Go passthrough, for the passthrough plugin; or "" when
	// the plugin has no native build (any plugin from a file, any build
	// without cgo, dtmf in a build without -tags nativerust), and the
	// native figures are 0.
	Native string `json:"native,omitempty"`
	// NativeNsPerHop is the native build's hop in a chain as deep, measured
	// interleaved with this one.
	NativeNsPerHop float64 `json:"native_ns_per_hop,omitempty"`
	// Ratio is NsPerHop / NativeNsPerHop: what the sandbox costs.
	Ratio float64 `json:"ratio_vs_native,omitempty"`
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
		for _, ref := range plugins {
			p, err := chain(ctx, cat, ref, depth)
			if err != nil {
				return nil, err
			}
			native, kind, err := nativeChain(ref, depth)
			if err != nil {
				p.Close(ctx)
				return nil, err
			}
			var wasm, nat []float64
			var allocs float64
			for rep := 0; rep < cfg.Reps; rep++ {
				ns, a, err := timeFrames(p, frame, cfg.Frames)
				if err == nil && native != nil {
					var n float64
					n, _, err = timeFrames(native, frame, cfg.Frames)
					nat = append(nat, n)
				}
				if err != nil {
					p.Close(ctx)
					closeChain(ctx, native)
					return nil, err
				}
				wasm, allocs = append(wasm, ns), max(allocs, a)
			}
			p.Close(ctx)
			closeChain(ctx, native)
			row := HopRow{Plugin: ref, Depth: depth, NsPerFrame: median(wasm), AllocsPerFrame: allocs, Native: kind}
			row.NsPerHop = row.NsPerFrame / float64(depth)
			if native != nil {
				row.NativeNsPerHop = median(nat) / float64(depth)
				row.Ratio = row.NsPerHop / row.NativeNsPerHop
			}
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

// What a row's native figures measured (HopRow.Native).
const (
	NativeC    = "c"
	NativeRust = "rust"
	NativeGo   = "go passthrough"
)

// nativeChain is the native counterpart of a chain of depth copies of ref,
// with its kind, or nil and "" if ref has none. A native plugin keeps its
// state in globals, one instance per process, so its chain is that one
// instance depth times over: the same work per hop.
func nativeChain(ref string, depth int) (*pipeline.Pipeline, string, error) {
	stages := make([]pipeline.Stage, depth)
	kind := NativeGo
	switch {
	case ref == "passthrough":
		for i := range stages {
			stages[i] = pipeline.NewNative("native", abi.TelephonyRate, 1600, pipeline.Passthrough)
		}
	case nativeplugin.Available(ref):
		s, err := nativeplugin.Open(ref, nil, abi.TelephonyRate)
		if err != nil {
			return nil, "", err
		}
		for i := range stages {
			stages[i] = s
		}
		kind = NativeC
		if nativeplugin.Rust(ref) {
			kind = NativeRust
		}
	default:
		return nil, "", nil
	}
	p, err := pipeline.New(stages, nil, nil)
	if err != nil {
		stages[0].Close(context.Background())
		return nil, "", err
	}
	return p, kind, nil
}

func closeChain(ctx context.Context, p *pipeline.Pipeline) {
	if p != nil {
		p.Close(ctx)
	}
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

// WriteHopTable prints the rows for a person, and what the native column
// measured.
func WriteHopTable(w io.Writer, rows []HopRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "plugin\tdepth\tns/frame\tns/hop\tnative\tnative ns/hop\twasm/native\tover passthrough ns/hop\tspread\tallocs/frame\t")
	none := []string{}
	for _, r := range rows {
		over := "—"
		if r.Plugin != "passthrough" {
			over = fmt.Sprintf("%.1f", r.OverPassthroughNsPerHop)
		}
		kind, native, ratio := "—", "—", "—"
		if r.Native != "" {
			kind, native, ratio = r.Native, fmt.Sprintf("%.1f", r.NativeNsPerHop), fmt.Sprintf("%.2f×", r.Ratio)
		} else if !slices.Contains(none, shortName(r.Plugin)) {
			none = append(none, shortName(r.Plugin))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t±%.0f%%\t%.2f\t\n",
			shortName(r.Plugin), r.Depth, r.NsPerFrame, r.NsPerHop, kind, native, ratio, over, 50*r.Spread, r.AllocsPerFrame)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "native: %q and %q are the plugin's own source compiled for the host (cgo; a Rust static library), %q a Go stage that returns its input.\n", NativeC, NativeRust, NativeGo)
	if err == nil && len(none) > 0 {
		_, err = fmt.Fprintf(w, "no native build: %s (only the stock plugins have one, only in a build with cgo, and dtmf only with -tags nativerust after make native-rust).\n", strings.Join(none, ", "))
	}
	return err
}

func shortName(ref string) string {
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		return ref[i+1:]
	}
	return ref
}
