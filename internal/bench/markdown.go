package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/voxhost/voxhost/internal/loadgen"
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
	p("the machine named here, except where a section says otherwise; compare ratios, not absolute")
	p("numbers, across machines.")
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
	p("Stock plugins, one stage, ns per 20 ms frame (default config), their cost beyond a passthrough hop,")
	p("and — interleaved — the plugin's own source compiled for the host (internal/nativeplugin; — where")
	p("there is none: a build without cgo, or dtmf in one without -tags nativerust):")
	p("")
	p("| plugin | ns/frame | over passthrough, ns | native ns/frame | WASM / native | allocs/frame |")
	p("|---|---:|---:|---:|---:|---:|")
	for _, h := range r.PluginHop {
		native, ratio := "—", "—"
		if h.Native == NativeC || h.Native == NativeRust {
			native, ratio = fmt.Sprintf("%.0f", h.NativeNsPerHop), fmt.Sprintf("%.2f×", h.Ratio)
		}
		p("| %s | %.0f | %.0f | %s | %s | %.2f |", h.Plugin, h.NsPerFrame, h.OverPassthroughNsPerHop, native, ratio, h.AllocsPerFrame)
	}
	p("")
	for _, s := range r.PluginSkipped {
		p("Not in the table: %s; see its README for its own figures.", s)
		p("")
	}
	p("## What the CPU budget's checks cost")
	p("")
	p("Not measured here: the host compiles plugins with their checks (internal/preempt) and, outside")
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
		vox, bare := namedSweep{"voxhost", r.Voxhost}, namedSweep{"bare echo", r.Baseline}
		writeSweeps(p, "server", []namedSweep{vox, bare})
		writeCapacity(p, vox, bare, "the baseline")
		writeDensity(p, r)
	}
	writeFrameCPU(p, r.FrameCPU, r.FrameCPUError, false)
	writeRelay(p, r.Relay, r.RelayError, false)
	p("%s", PublishedHeading)
	p("")
	p("Not measured here; quoted from each project's own publications for orientation only.")
	p("")
	p("| project | design | figure |")
	p("|---|---|---|")
	p("| pipecat (Python) | asyncio task per processor | ~15 µs per processor hop; ~9,450 frames/s per core |")
	p("| jargo (Go) | goroutine + channel per processor | ~7.5 µs per hop at depth 64 (16 cores) |")
	p("| flowcat (Rust) | native stages compiled into the server | ~0.2 µs per frame through 7 no-op stages; ~4.9 M frames/s per core |")
	p("")
	p("Reproduce: `make bench` (about 10 minutes on 2 cores), or the pieces: `voxhost bench hop`,")
	p("`voxhost bench sessions`, `voxhost serve` + `voxhost loadgen --sweep …`, `voxhost bench echo`,")
	p("`voxhost bench bot`; `voxhost bench report --only relay` (or `--only cpu`) reruns the relay comparison (or the CPU per frame) alone into the file.")
	_, err := io.WriteString(w, b.String())
	return err
}

// namedSweep is a sweep as a table's rows name it.
type namedSweep struct {
	name string
	sr   loadgen.SweepResult
}

// writeSweeps prints sweeps of the same call counts as one table, their
// points side by side by count; what names the column of their names.
func writeSweeps(p func(string, ...any), what string, sweeps []namedSweep) {
	p("| calls | %s | p50 ms | p99 ms | p99.9 ms | max ms | throughput | server CPU %% | server RSS MiB | GC pause max ms | saturated |", what)
	p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for i := range sweeps[0].sr.Points {
		for _, row := range sweeps {
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
}

// writeCapacity prints the calls each sweep carried within the budget's
// p99 of 10 ms, measured's as a share of base's (baseWords names it).
func writeCapacity(p func(string, ...any), measured, base namedSweep, baseWords string) {
	mc, bc := capacityAt(measured.sr, 10*time.Millisecond), capacityAt(base.sr, 10*time.Millisecond)
	ratio := "n/a"
	if bc > 0 {
		ratio = fmt.Sprintf("%.0f%%", 100*float64(mc)/float64(bc))
	}
	p("Capacity at p99 ≤ 10 ms (largest unsaturated point of the sweep): %s **%d** calls, %s **%d** calls: **%s** of %s.",
		measured.name, mc, base.name, bc, ratio, baseWords)
	p("Stable maximum (no saturation rule crossed): %s %d, %s %d.", measured.name, measured.sr.StableMax, base.name, base.sr.StableMax)
	p("")
}

// memoryPoint is a density point's RSS per live call and its round trips.
func memoryPoint(pt loadgen.Result) string {
	s := fmt.Sprintf("%.1f KiB", RSSPerCall(pt)/1024)
	if RSSPerCall(pt) <= 0 {
		s = "—"
	}
	return fmt.Sprintf("%s (p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, throughput %.1f%%)", s, ms(pt.RTT.P50), ms(pt.RTT.P99), ms(pt.RTT.P999), 100*pt.Throughput)
}

// writeDensity prints what voxhost's live calls hold against the floor,
// the bare echo's connections measured the same way, and the two p99s at
// the sweeps' largest count.
func writeDensity(p func(string, ...any), r *Report) {
	vox, bare := RSSPerCall(r.VoxhostMemory), RSSPerCall(r.BaselineMemory)
	p("Density: server RSS per live call, %d calls on each server while fresh, before its sweep (during the point less", r.VoxhostMemory.Calls)
	p("before it, over the calls that connected): voxhost %s; bare echo %s.", memoryPoint(r.VoxhostMemory), memoryPoint(r.BaselineMemory))
	if vox > 0 && bare > 0 {
		p("voxhost holds %.2f× the floor per call: %.1f KiB beyond a bare coder/websocket connection.", vox/bare, (vox-bare)/1024)
	}
	nv, nb := len(r.Voxhost.Points), len(r.Baseline.Points)
	if nv > 0 && nb > 0 {
		v, b := r.Voxhost.Points[nv-1], r.Baseline.Points[nb-1]
		if v.Calls == b.Calls && b.RTT.P99 > 0 {
			p("p99 at %d calls in the sweep: voxhost %.2f ms, bare echo %.2f ms: **%.2f×**.", v.Calls, ms(v.RTT.P99), ms(b.RTT.P99), float64(v.RTT.P99)/float64(b.RTT.P99))
		}
	}
	p("")
}

// Headings of BENCHMARKS.md's sections that are written alone or placed
// by name.
const (
	RelayHeading     = "## Relay against echo"
	PublishedHeading = "## Published elsewhere, on other hardware"
)

// sectionHead describes a section that `voxhost bench report --only`
// can measure alone: its heading, the --only value, what it measures, and
// when and at what commit it was measured.
type sectionHead struct {
	heading, only, what string
	date                time.Time
	commit              string
}

// writeHead prints a section's heading and, when it was measured alone,
// when; it says why there is nothing to show, and returns false, when its
// measurement failed or is not there (measured false).
func writeHead(p func(string, ...any), h sectionHead, failed string, measured, alone bool) bool {
	p("%s", h.heading)
	p("")
	if alone && measured {
		p("Measured apart from the rest of this file (`voxhost bench report --only %s`), on %s at commit %s, on the same machine.",
			h.only, h.date.Format("2006-01-02 15:04 UTC"), h.commit)
		p("")
	}
	switch {
	case failed != "":
		p("The %s failed: %s", h.what, failed)
		p("")
		return false
	case !measured:
		p("Not measured in this run.")
		p("")
		return false
	}
	return true
}

// writeRelay prints the relay comparison's section; alone says it was
// measured apart from the rest of the file, and when.
func writeRelay(p func(string, ...any), r *Relay, failed string, alone bool) {
	var date time.Time
	var commit string
	if r != nil {
		date, commit = r.Date, r.Commit
	}
	if !writeHead(p, sectionHead{RelayHeading, "relay", "relay comparison", date, commit}, failed, r != nil && len(r.Routes) == 2, alone) {
		return
	}
	echo, relay := r.Routes[0], r.Routes[1]
	p("One config, two routes of the same pipeline, `%s`: **%s**, where the caller hears its own audio", r.Pipeline, echo.Name)
	p("after the pipeline, and **%s**, whose upstream is `voxhost bench bot --protocol raw --mode echo` (no delay,", relay.Name)
	p("a separate process on the same cores): the caller's audio goes through the pipeline to the bot and back,")
	p("and the host's 20 ms playout clock paces it to the caller. `voxhost loadgen` as above (raw, 50 frames/s")
	p("per call, open loop); each route on a fresh `voxhost serve`, first a point of %d calls for memory,", echo.Memory.Calls)
	p("then the sweep.")
	p("")
	es, rs := namedSweep{echo.Name + " route", echo.Sweep}, namedSweep{relay.Name + " route", relay.Sweep}
	writeSweeps(p, "route", []namedSweep{{echo.Name, echo.Sweep}, {relay.Name, relay.Sweep}})
	writeCapacity(p, rs, es, "the echo route's")
	p("Server RSS per live call, %d calls on a fresh server (during the point less before it): echo route %s; relay route %s.",
		echo.Memory.Calls, memoryPoint(echo.Memory), memoryPoint(relay.Memory))
	p("The bot simulator used %.0f%% of a core on average while the relay route was measured: it and the load generator", r.BotCPUPercent)
	p("share the two cores with the server, so the relay's figures bound what the host alone would do from below.")
	p("")
}

// WriteMarkdown renders the relay comparison's section alone, to go into
// a BENCHMARKS.md written before (ReplaceSection).
func (r *Relay) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	writeRelay(func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }, r, "", true)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown renders the frame CPU comparison's section alone, to
// replace its section of BENCHMARKS.md.
func (f *FrameCPU) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	writeFrameCPU(func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }, f, "", true)
	_, err := io.WriteString(w, b.String())
	return err
}

// Hand-written text in BENCHMARKS.md stands between these markers: figures
// `make bench` does not measure (RATIONALE's tables, say), which a new
// report keeps in the section it stood in (KeepHandWritten).
const (
	HandWrittenStart = "<!-- hand-written: voxhost bench report keeps this -->"
	HandWrittenEnd   = "<!-- end hand-written -->"
)

// sections splits a markdown document before each "## " heading.
func sections(doc string) []string {
	var out []string
	start := 0
	for i := 0; i < len(doc); {
		end := strings.IndexByte(doc[i:], '\n')
		if end < 0 {
			end = len(doc) - i - 1
		}
		if strings.HasPrefix(doc[i:], "## ") && i > start {
			out = append(out, doc[start:i])
			start = i
		}
		i += end + 1
	}
	return append(out, doc[start:])
}

// heading is a section's heading line, "" for the text before the first.
func heading(section string) string {
	if !strings.HasPrefix(section, "## ") {
		return ""
	}
	line, _, _ := strings.Cut(section, "\n")
	return line
}

// ReplaceSection returns doc with the section that starts at the heading
// line of section replaced by it. A doc without one gets it before the
// section headed before, or else at its end.
func ReplaceSection(doc, section, before string) string {
	secs := sections(doc)
	at := -1
	for i, s := range secs {
		switch heading(s) {
		case heading(section):
			secs[i] = section
			return strings.Join(secs, "")
		case before:
			if at < 0 {
				at = i
			}
		}
	}
	if at < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return strings.Join(slices.Insert(secs, at, section), "")
}

// KeepHandWritten returns the report generated with the hand-written
// blocks of old put back, each at the end of the section it stood in (at
// the end of the report if the section is gone).
func KeepHandWritten(old, generated string) string {
	kept := map[string][]string{}
	var order []string
	for _, s := range sections(old) {
		for rest := s; ; {
			i := strings.Index(rest, HandWrittenStart)
			if i < 0 {
				break
			}
			j := strings.Index(rest[i:], HandWrittenEnd)
			if j < 0 {
				break
			}
			h := heading(s)
			if _, seen := kept[h]; !seen {
				order = append(order, h)
			}
			kept[h] = append(kept[h], rest[i:i+j+len(HandWrittenEnd)])
			rest = rest[i+j:]
		}
	}
	secs := sections(generated)
	for i, s := range secs {
		if blocks, ok := kept[heading(s)]; ok {
			secs[i] = strings.TrimRight(s, "\n") + "\n\n" + strings.Join(blocks, "\n\n") + "\n\n"
			delete(kept, heading(s))
		}
	}
	out := strings.Join(secs, "")
	for _, h := range order {
		if blocks, ok := kept[h]; ok {
			out = strings.TrimRight(out, "\n") + "\n\n" + strings.Join(blocks, "\n\n") + "\n"
		}
	}
	return out
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
