package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/loadgen"
	"github.com/voxhost/voxhost/internal/sched"
	"github.com/voxhost/voxhost/internal/signal"
)

// The servers the frame CPU comparison prices, as its table names them:
// the bare echo, and voxhost with a route of one passthrough stage and a
// route of the compared chain.
const (
	ServerEcho        = "bare echo"
	ServerPassthrough = "passthrough"
	ServerChain       = "chain"
)

// DefaultFrameCPUCalls are the call counts of the frame CPU comparison,
// the (22, item 4): where the chain's cost at scale is judged.
var DefaultFrameCPUCalls = []int{200, 500}

// FrameCPUConfig describes the frame CPU comparison: what one frame costs
// the server, on one core, for the bare echo, a passthrough route and a
// chain.
type FrameCPUConfig struct {
	// Executable is the voxhost binary that serves (and echoes).
	Executable string
	// Pipeline is the inline chain compared.
	Pipeline string
	// Calls are the call counts; empty means DefaultFrameCPUCalls.
	Calls []int
	// Duration is the audio of each point; 0 means 10 s.
	Duration time.Duration
	// Reps is how many times each count runs the three servers in turn;
	// 0 means 3.
	Reps int
	// Progress, if set, is told each step.
	Progress func(format string, args ...any)
}

// FrameCPU is the frame CPU comparison as BENCHMARKS.md shows it.
type FrameCPU struct {
	// Pipeline is the chain compared.
	Pipeline string
	// ServerCore is the core every server ran on, with GOMAXPROCS=1, and
	// the load generator on the others; -1 when the machine has one core
	// and nothing could be set apart (PinError says why not, if it failed).
	ServerCore int
	PinError   string
	// Points are the measurements, the three servers of one count and rep
	// one after the other.
	Points []FrameCPUPoint
	// WarmPassthroughNs and WarmChainNs are one call's frame through each
	// pipeline in this process, warm: μ-law decode, the stages and encode,
	// the same frame over and over, no sockets, in thread CPU time.
	WarmPassthroughNs, WarmChainNs float64
	// LoadBefore and LoadAfter are the machine's load average (1 min)
	// around the comparison: what else ran.
	LoadBefore, LoadAfter string
	// Date and Commit say when and on what it was measured.
	Date   time.Time
	Commit string
}

// FrameCPUPoint is one count's three servers, one rep.
type FrameCPUPoint struct {
	Calls, Rep int
	// Echo, Passthrough and Chain are each server's load point.
	Echo, Passthrough, Chain loadgen.Result
}

// perFrameUs is a point's server CPU per frame in its steady window, in
// µs; 0 when it had none.
func perFrameUs(r loadgen.Result) float64 {
	if r.Server == nil {
		return 0
	}
	return float64(r.Server.SteadyCPUPerFrame) / float64(time.Microsecond)
}

// Ratios are the point's passthrough and chain CPU per frame over the
// echo's; ok is false when a server had no steady window.
func (p FrameCPUPoint) Ratios() (passthrough, chain float64, ok bool) {
	e, pt, ch := perFrameUs(p.Echo), perFrameUs(p.Passthrough), perFrameUs(p.Chain)
	if e == 0 || pt == 0 || ch == 0 {
		return 0, 0, false
	}
	return pt / e, ch / e, true
}

// Summary is the median over the reps of one count: the three servers' CPU
// per frame, µs, and the ratios to the echo, each the median of the reps'
// own ratios (each rep's servers ran back to back, so they saw the same
// machine); n is how many reps had all three.
func (f *FrameCPU) Summary(calls int) (echo, passthrough, chain, passRatio, chainRatio float64, n int) {
	var es, ps, cs, prs, crs []float64
	for _, p := range f.Points {
		pr, cr, ok := p.Ratios()
		if p.Calls != calls || !ok {
			continue
		}
		es, ps, cs = append(es, perFrameUs(p.Echo)), append(ps, perFrameUs(p.Passthrough)), append(cs, perFrameUs(p.Chain))
		prs, crs = append(prs, pr), append(crs, cr)
	}
	return median(es), median(ps), median(cs), median(prs), median(crs), len(prs)
}

// AtScale is what the chain costs beyond a passthrough route at calls, per
// frame, over what it costs warm (WarmChainNs − WarmPassthroughNs): how much
// more the plugins cost among many calls, cache-cold, than in a loop of one.
func (f *FrameCPU) AtScale(calls int) float64 {
	_, pass, chain, _, _, n := f.Summary(calls)
	warm := f.WarmChainNs - f.WarmPassthroughNs
	if n == 0 || warm <= 0 {
		return 0
	}
	return (chain - pass) * 1000 / warm
}

// Counts are the call counts measured, in order.
func (f *FrameCPU) Counts() []int {
	var out []int
	for _, p := range f.Points {
		if !slices.Contains(out, p.Calls) {
			out = append(out, p.Calls)
		}
	}
	return out
}

// RunFrameCPU prices a frame in the server's CPU time on one core: for each
// count and rep, a fresh bare echo, then a fresh voxhost on a passthrough
// route, then one on the chain, each pinned to one core with GOMAXPROCS=1
// while this process's load generator runs on the others. What is priced
// is the steady window of each point (loadgen.ServerStats), when every call
// is up: the set-ups are a cost per call, not per frame. The servers have
// admission off, so that every call is served whatever its cost.
func RunFrameCPU(ctx context.Context, cat *catalog.Catalog, cfg FrameCPUConfig) (*FrameCPU, error) {
	say := orQuiet(cfg.Progress)
	if len(cfg.Calls) == 0 {
		cfg.Calls = DefaultFrameCPUCalls
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Reps <= 0 {
		cfg.Reps = 3
	}
	rep := &FrameCPU{Pipeline: cfg.Pipeline, ServerCore: -1, Date: time.Now().UTC(), Commit: commit(), LoadBefore: loadAverage()}
	say("frame cpu: warm, one call in process: passthrough and %s", cfg.Pipeline)
	for _, w := range []struct {
		spec string
		into *float64
	}{{"passthrough", &rep.WarmPassthroughNs}, {cfg.Pipeline, &rep.WarmChainNs}} {
		ns, err := warmFrameNs(ctx, cat, w.spec)
		if err != nil {
			return nil, fmt.Errorf("warm %s: %w", w.spec, err)
		}
		*w.into = ns
	}
	dir, err := os.MkdirTemp("", "voxhost-framecpu-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "voxhost.yaml")
	if err := writeFrameCPUConfig(conf, cfg.Pipeline, slices.Max(cfg.Calls)); err != nil {
		return nil, err
	}
	start := func(cmd *exec.Cmd) error {
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
		return cmd.Start()
	}
	if core, others, ok := splitCores(); ok {
		restore, err := pinSelf(others)
		if err != nil {
			rep.PinError = err.Error()
		} else {
			defer restore()
			rep.ServerCore = core
			start = func(cmd *exec.Cmd) error {
				cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
				return startPinned(cmd, core)
			}
		}
	}
	servers := []struct {
		name, route string
		args        []string
	}{
		{ServerEcho, "", []string{"bench", "echo"}},
		{ServerPassthrough, ServerPassthrough, []string{"--cache-dir", filepath.Join(dir, "cache"), "--log-level", "warn", "serve", "--config", conf}},
		{ServerChain, ServerChain, []string{"--cache-dir", filepath.Join(dir, "cache"), "--log-level", "warn", "serve", "--config", conf}},
	}
	for _, calls := range cfg.Calls {
		for r := 1; r <= cfg.Reps; r++ {
			pt := FrameCPUPoint{Calls: calls, Rep: r}
			into := []*loadgen.Result{&pt.Echo, &pt.Passthrough, &pt.Chain}
			for i, s := range servers {
				say("frame cpu: %s, %d calls, rep %d of %d", s.name, calls, r, cfg.Reps)
				srv, err := startChildWith(ctx, start, cfg.Executable, s.args...)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", s.name, err)
				}
				lg := loadgen.Config{Protocol: loadgen.ProtocolRaw, URL: "ws://" + srv.addr + "/ws", Pipeline: s.route,
					Calls: calls, Duration: cfg.Duration, FPS: 50, Ramp: 2 * time.Second}
				res, err := loadgen.Run(ctx, lg)
				srv.stop()
				if err != nil {
					return nil, fmt.Errorf("%s, %d calls: %w", s.name, calls, err)
				}
				*into[i] = res
			}
			rep.Points = append(rep.Points, pt)
		}
	}
	rep.LoadAfter = loadAverage()
	return rep, nil
}

// warmFrameNs is one call's frame through spec, warm: μ-law decoded into
// the first stage, the chain, μ-law encoded, the same frame over and
// over, no sockets; the median of 5 runs of 2,000 frames, in the thread's
// CPU time, so that a machine busy with other work does not count.
func warmFrameNs(ctx context.Context, cat *catalog.Catalog, spec string) (float64, error) {
	specs, err := pipeline.ParseSpec(spec)
	if err != nil {
		return 0, err
	}
	def, err := cat.Definition(ctx, "bench", specs)
	if err != nil {
		return 0, err
	}
	p, err := def.Instantiate(ctx, pipeline.CallConfig{})
	if err != nil {
		return 0, err
	}
	defer p.Close(ctx)
	ulaw := make([]byte, FrameSamples)
	codec.EncodeUlaw(ulaw, signal.Speech(abi.TelephonyRate, 0.02))
	src := &codec.Source{Format: codec.Telephony, Frame: ulaw}
	out := make([]byte, FrameSamples)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const frames = 2000
	var runs []float64
	for range 6 {
		t0 := sched.ThreadCPUTime()
		for range frames {
			pcm, err := p.Process(src)
			if err != nil {
				return 0, err
			}
			codec.EncodeUlaw(out, pcm)
		}
		runs = append(runs, float64(sched.ThreadCPUTime()-t0)/frames)
	}
	return median(runs[1:]), nil // the first warms the caches
}

// orQuiet is progress, or a function that says nothing if it is nil.
func orQuiet(progress func(format string, args ...any)) func(format string, args ...any) {
	if progress == nil {
		return func(string, ...any) {}
	}
	return progress
}

// writeFrameCPUConfig writes a server config with a passthrough route and a
// route of spec, for up to calls calls, with admission off.
func writeFrameCPUConfig(path, spec string, calls int) error {
	stages, err := stagesJSON(spec)
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`# Written by voxhost bench report for the frame CPU comparison.
default_pipeline: %s
limits: {cpu_high_water_percent: 0, max_calls: %d}
pipelines:
  %s: [{plugin: passthrough}]
  %s: %s
`, ServerPassthrough, calls+100, ServerPassthrough, ServerChain, stages)
	return os.WriteFile(path, []byte(conf), 0o644)
}

// loadAverage is the machine's load average over the last minute (Linux),
// or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// FrameCPUHeading is the frame CPU comparison's section of BENCHMARKS.md.
const FrameCPUHeading = "## Server CPU per frame on one core"

// writeFrameCPU prints the frame CPU comparison's section; alone says it
// was measured apart from the rest of the file.
func writeFrameCPU(p func(string, ...any), f *FrameCPU, failed string, alone bool) {
	var date time.Time
	var commit string
	if f != nil {
		date, commit = f.Date, f.Commit
	}
	if !writeHead(p, sectionHead{FrameCPUHeading, "cpu", "frame CPU comparison", date, commit}, failed, f != nil && len(f.Points) > 0, alone) {
		return
	}
	where := fmt.Sprintf("pinned to core %d with GOMAXPROCS=1, the load generator on the other cores", f.ServerCore)
	if f.ServerCore < 0 {
		where = "with GOMAXPROCS=1, not pinned (one core, or pinning failed: " + f.PinError + "), beside the load generator"
	}
	p("What one 20 ms frame costs the server in CPU time: a fresh `voxhost bench echo`, then a fresh `voxhost serve`")
	p("on a route of one `passthrough` stage, then on a route of `%s`, each %s.", f.Pipeline, where)
	p("Raw μ-law calls at 50 frames/s, a 2 s ramp; the server's CPU time (its /metrics) over the frames answered")
	p("while every call was up, so that set-ups and hang-ups are not in it. Load average %s before, %s after.", f.LoadBefore, f.LoadAfter)
	p("")
	p("| calls | rep | bare echo µs/frame | passthrough µs/frame | chain µs/frame | passthrough / echo | chain / echo |")
	p("|---:|---:|---:|---:|---:|---:|---:|")
	for _, pt := range f.Points {
		pr, cr, ok := pt.Ratios()
		ratios := "— | —"
		if ok {
			ratios = fmt.Sprintf("%.2f× | %.2f×", pr, cr)
		}
		p("| %d | %d | %.1f | %.1f | %.1f | %s |", pt.Calls, pt.Rep, perFrameUs(pt.Echo), perFrameUs(pt.Passthrough), perFrameUs(pt.Chain), ratios)
	}
	p("")
	for _, calls := range f.Counts() {
		e, pass, chain, pr, cr, n := f.Summary(calls)
		if n == 0 {
			p("At %d calls no rep had a steady window on all three servers.", calls)
			p("")
			continue
		}
		p("At %d calls, median of %d reps: bare echo %.1f µs, passthrough %.1f µs, chain %.1f µs a frame: **passthrough %.2f× the echo"+
			" (target ≤ 1.05×), chain %.2f× (target ≤ 1.25×)**; the chain beyond a passthrough route costs %.2f× what it costs warm (target ≤ 1.5×).",
			calls, n, e, pass, chain, pr, cr, f.AtScale(calls))
		p("")
	}
	p("Warm, one call in process (μ-law both ways, no sockets, thread CPU time): passthrough %.0f ns a frame, the chain %.0f ns.", f.WarmPassthroughNs, f.WarmChainNs)
	p("")
	for _, pt := range f.Points {
		for _, r := range []struct {
			name string
			res  loadgen.Result
		}{{ServerEcho, pt.Echo}, {ServerPassthrough, pt.Passthrough}, {ServerChain, pt.Chain}} {
			if r.res.Saturated || r.res.ConnectionsFailed > 0 {
				p("%s at %d calls, rep %d: saturated (%s), %d connections failed.", r.name, pt.Calls, pt.Rep, strings.Join(r.res.SaturationReasons, "; "), r.res.ConnectionsFailed)
				p("")
			}
		}
	}
}
