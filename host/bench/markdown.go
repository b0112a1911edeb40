package bench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/loadgen"
)

// capacityAt is the largest call count of a sweep whose point was
// unsaturated with p99 within limit; 0 if none.
func capacityAt(sr loadgen.SweepResult, limit time.Duration) int {
	best := 0
	for _, p := range sr.Points {
		if !p.Saturated && p.RTT.P99 <= limit && p.Calls > best {
			best = p.Calls
		}
	}
	return best
}

// WriteMarkdown renders BENCHMARKS.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# voxhost benchmarks")
	p("")
	p("Written by `make bench` (`voxhost bench report`). Every figure below was measured in one run on")
	p("the machine named here; compare ratios, not absolute numbers, across machines.")
	p("")
	p("| | |")
	p("|---|---|")
	p("| date | %s |", r.Date.Format("2006-01-02 15:04 UTC"))
	p("| CPU | %s |", r.CPU)
	p("| cores | %d |", r.Cores)
	p("| Go | %s |", r.GoVersion)
	p("| commit | %s |", r.Commit)
	p("")
	p("## Plugin hop cost")
	p("")
	p("One 160-sample frame at a time through `depth` WebAssembly passthrough stages, and — interleaved,")
	p("on the same frames — the same chain of native Go passthrough stages (median of 5 runs of 20,000 frames).")
	p("")
	p("| depth | ns/frame | WASM ns/hop | native ns/hop | WASM / native | spread | allocs/frame |")
	p("|---:|---:|---:|---:|---:|---:|---:|")
	for _, h := range r.Hop {
		p("| %d | %.0f | %.1f | %.1f | %.2f× | ±%.0f%% | %.2f |", h.Depth, h.NsPerFrame, h.NsPerHop, h.NativeNsPerHop, h.Ratio, 50*h.Spread, h.AllocsPerFrame)
	}
	p("")
	p("Stock plugins, one stage, ns per 20 ms frame (default config), and their cost beyond a passthrough hop:")
	p("")
	p("| plugin | ns/frame | over passthrough, ns | allocs/frame |")
	p("|---|---:|---:|---:|")
	for _, h := range r.PluginHop {
		p("| %s | %.0f | %.0f | %.2f |", h.Plugin, h.NsPerFrame, h.OverPassthroughNsPerHop, h.AllocsPerFrame)
	}
	p("")
	for _, s := range r.PluginSkipped {
		p("Not in the table: %s; see its README for its own figures.", s)
		p("")
	}
	p("## What the CPU budget's checks cost")
	p("")
	p("Not measured here: the host compiles plugins with their checks (host/preempt) and, outside")
	p("tests, only so. `go test -run X -bench 'Budget$' -benchtime 1x ./host/plugin/` measures every")
	p("stock plugin and example with and without them; RATIONALE.md (\"Loop checks\") has the table.")
	p("")
	p("## Sessions: frames through many concurrent calls")
	p("")
	p("Each session is a goroutine, as `serve` runs a call: μ-law decode into the first stage, the chain,")
	p("μ-law encode — as fast as possible, on all cores, no sockets. Memory is per live session.")
	p("")
	writeSessions := func(title string, rows []SessionsRow) {
		p("%s", title)
		p("")
		p("| sessions | frames/s | frames/s/core | 50 fps calls | heap KiB/session | RSS KiB/session |")
		p("|---:|---:|---:|---:|---:|---:|")
		for _, s := range rows {
			p("| %d | %.0f | %.0f | %.0f | %.1f | %s |", s.Sessions, s.FramesPerSec, s.FramesPerSecPerCore, s.RealtimeCalls, s.HeapKiBPerSession, kib(s.RSSKiBPerSession))
		}
		p("")
	}
	writeSessions("Four passthrough stages:", r.Sessions)
	writeSessions(fmt.Sprintf("The load-test pipeline, `%s`:", r.Pipeline), r.Pipeline4)
	p("## Calls over real WebSockets: voxhost against a bare echo server")
	p("")
	if r.SweepError != "" {
		p("The load sweep failed: %s", r.SweepError)
		p("")
	} else {
		p("`voxhost loadgen` (open loop, 160-byte μ-law frames at 50 frames/s per call, raw protocol) against")
		p("`voxhost serve --pipeline \"%s\"` and against `voxhost bench echo` (coder/websocket echo, no codec,", r.Pipeline)
		p("no pipeline), each a separate process on this machine, with the load generator on the same cores.")
		p("")
		p("| calls | server | p50 ms | p99 ms | p99.9 ms | max ms | throughput | server CPU %% | server RSS MiB | GC pause max ms | saturated |")
		p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
		for i := range r.Voxhost.Points {
			for _, row := range []struct {
				name string
				sr   loadgen.SweepResult
			}{{"voxhost", r.Voxhost}, {"bare echo", r.Baseline}} {
				if i >= len(row.sr.Points) {
					continue
				}
				pt := row.sr.Points[i]
				cpu, rss, gc := "—", "—", "—"
				if s := pt.Server; s != nil && len(s.Missing) < 3 {
					cpu = fmt.Sprintf("%.0f", s.CPUPercent)
					rss = fmt.Sprintf("%.1f", float64(s.RSSDuring)/(1<<20))
					gc = fmt.Sprintf("%.2f", ms(s.GCPauseMax))
				}
				sat := "no"
				if pt.Saturated {
					sat = strings.Join(pt.SaturationReasons, "; ")
				}
				p("| %d | %s | %.2f | %.2f | %.2f | %.2f | %.1f%% | %s | %s | %s | %s |", pt.Calls, row.name,
					ms(pt.RTT.P50), ms(pt.RTT.P99), ms(pt.RTT.P999), ms(pt.RTT.Max), 100*pt.Throughput, cpu, rss, gc, sat)
			}
		}
		p("")
		vc, bc := capacityAt(r.Voxhost, 10*time.Millisecond), capacityAt(r.Baseline, 10*time.Millisecond)
		ratio := "n/a"
		if bc > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*float64(vc)/float64(bc))
		}
		p("Capacity at p99 ≤ 10 ms (largest unsaturated point of the sweep): voxhost **%d** calls, bare echo **%d** calls: **%s** of the baseline.", vc, bc, ratio)
		p("Stable maximum (no saturation rule crossed): voxhost %d, bare echo %d.", r.Voxhost.StableMax, r.Baseline.StableMax)
		p("")
	}
	p("## Published elsewhere, on other hardware")
	p("")
	p("Not measured here; quoted from each project's own publications for orientation only.")
	p("")
	p("| project | design | figure |")
	p("|---|---|---|")
	p("| pipecat (Python) | asyncio task per processor | ~15 µs per processor hop; ~9,450 frames/s per core |")
	p("| jargo (Go) | goroutine + channel per processor | ~7.5 µs per hop at depth 64 (16 cores) |")
	p("| flowcat (Rust) | native stages compiled into the server | ~0.2 µs per frame through 7 no-op stages; ~4.9 M frames/s per core |")
	p("")
	p("Reproduce: `make bench` (about 2 minutes on 2 cores), or the pieces: `voxhost bench hop`,")
	p("`voxhost bench sessions`, `voxhost serve` + `voxhost loadgen --sweep …`, `voxhost bench echo`.")
	_, err := io.WriteString(w, b.String())
	return err
}

// kib shows a per-session RSS delta; with one session the process may have
// returned more memory to the OS than the session took, which says nothing.
func kib(v float64) string {
	if v < 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", v)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
