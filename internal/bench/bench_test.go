package bench_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/bench"
	"github.com/voxhost/voxhost/internal/loadgen"
	"github.com/voxhost/voxhost/internal/nativeplugin"
	"github.com/voxhost/voxhost/internal/signal"
)

func newCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(rt, "")
	t.Cleanup(func() { cat.Close(ctx); rt.Close(ctx) })
	return cat
}

func TestHopMeasuresEveryPluginAtEveryDepth(t *testing.T) {
	rows, err := bench.Hop(context.Background(), newCatalog(t), bench.HopConfig{Plugins: []string{"gain"}, Depths: []int{1, 3}, Frames: 2000, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want passthrough and gain at 2 depths", len(rows))
	}
	for _, r := range rows {
		if r.NsPerFrame <= 0 {
			t.Fatalf("row without timings: %+v", r)
		}
		want := map[string]string{"passthrough": bench.NativeGo, "gain": bench.NativeC}[r.Plugin]
		if !nativeplugin.Available(r.Plugin) && r.Plugin != "passthrough" {
			want = "" // a build without cgo
		}
		if r.Native != want || (want != "") != (r.NativeNsPerHop > 0 && r.Ratio > 0) {
			t.Fatalf("%s: native column measured %q (%+v), want %q", r.Plugin, r.Native, r, want)
		}
		if r.AllocsPerFrame > 0.01 {
			t.Fatalf("%s at depth %d allocates %.2f per frame", r.Plugin, r.Depth, r.AllocsPerFrame)
		}
		if math.Abs(r.NsPerHop*float64(r.Depth)-r.NsPerFrame) > 1e-9*r.NsPerFrame { // ns/hop is a quotient: rounding
			t.Fatalf("ns/hop × depth ≠ ns/frame: %+v", r)
		}
	}
	var sb strings.Builder
	if err := bench.WriteHopTable(&sb, rows); err != nil || !strings.Contains(sb.String(), "wasm/native") {
		t.Fatalf("table: %v\n%s", err, sb.String())
	}
	// gate (C since it left AssemblyScript) is beside its native build;
	// dtmf (Rust) too in a build with -tags nativerust, and without one its
	// native column is empty, said so under the table.
	rows, err = bench.Hop(context.Background(), newCatalog(t), bench.HopConfig{Plugins: []string{"gate", "dtmf"}, Depths: []int{1}, Frames: 200, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if g := rows[1]; nativeplugin.Available("gate") && (g.Native != bench.NativeC || g.NativeNsPerHop <= 0 || g.Ratio <= 0) {
		t.Fatalf("gate has no native figures: %+v", g)
	}
	d := rows[2]
	if nativeplugin.Available("dtmf") != (d.Native == bench.NativeRust) || (d.Native == "") != (d.NativeNsPerHop == 0 && d.Ratio == 0) {
		t.Fatalf("dtmf: native column measured %q (%+v), with a native build: %v", d.Native, d, nativeplugin.Available("dtmf"))
	}
	sb.Reset()
	if err := bench.WriteHopTable(&sb, rows); err != nil || nativeplugin.Available("dtmf") == strings.Contains(sb.String(), "no native build: dtmf") {
		t.Fatalf("table: %v\n%s", err, sb.String())
	}
	if _, err := bench.Hop(context.Background(), newCatalog(t), bench.HopConfig{Depths: []int{0}}); err == nil {
		t.Fatal("depth 0 must be refused")
	}
}

func TestSessionsCountFramesAndMemory(t *testing.T) {
	rows, err := bench.Sessions(context.Background(), newCatalog(t), bench.SessionsConfig{Sessions: []int{1, 4}, Depth: 2, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Frames == 0 || r.FramesPerSec <= 0 || r.HeapKiBPerSession <= 0 {
			t.Fatalf("empty point: %+v", r)
		}
	}
}

func TestEchoBaselineEchoes(t *testing.T) {
	hs := httptest.NewServer(bench.EchoHandler(1024))
	defer hs.Close()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for _, msg := range []string{"one frame", strings.Repeat("y", 1000)} {
		c.Write(ctx, websocket.MessageBinary, []byte(msg))
		typ, got, err := c.Read(ctx)
		if err != nil || typ != websocket.MessageBinary || string(got) != msg {
			t.Fatalf("echo of %d bytes: %v", len(msg), err)
		}
	}
	// The load generator reads the floor's memory and GC pauses, and
	// waits for its connections to close, from the same series as voxhost's.
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, series := range []string{"process_resident_memory_bytes", "go_sched_pauses_total_gc_seconds_bucket", "go_sched_latencies_seconds_bucket", "voxhost_active_calls 1"} {
		if !strings.Contains(string(body), series) {
			t.Errorf("/metrics has no %s:\n%s", series, body)
		}
	}
}

func TestReplaceSectionAndKeepHandWritten(t *testing.T) {
	doc := "# t\n\nintro\n\n## A\n\na\n\n" + bench.PublishedHeading + "\n\np\n"
	relay := bench.RelayHeading + "\n\nfirst\n\n"
	once := bench.ReplaceSection(doc, relay, bench.PublishedHeading)
	if want := "# t\n\nintro\n\n## A\n\na\n\n" + relay + bench.PublishedHeading + "\n\np\n"; once != want {
		t.Fatalf("inserted:\n%s\nwant:\n%s", once, want)
	}
	twice := bench.ReplaceSection(once, bench.RelayHeading+"\n\nsecond\n\n", bench.PublishedHeading)
	if strings.Contains(twice, "first") || strings.Count(twice, bench.RelayHeading) != 1 || !strings.Contains(twice, "second\n\n"+bench.PublishedHeading) {
		t.Fatalf("replaced:\n%s", twice)
	}

	block := bench.HandWrittenStart + "\nmeasured by hand\n" + bench.HandWrittenEnd
	old := "# t\n\n## A\n\ngenerated a\n\n" + block + "\n\n## B\n\nb\n\n## Gone\n\n" + bench.HandWrittenStart + "\norphan\n" + bench.HandWrittenEnd + "\n"
	fresh := "# t\n\n## A\n\nnew a\n\n## B\n\nnew b\n"
	got := bench.KeepHandWritten(old, fresh)
	if want := "# t\n\n## A\n\nnew a\n\n" + block + "\n\n## B\n\nnew b\n\n" + bench.HandWrittenStart + "\norphan\n" + bench.HandWrittenEnd + "\n"; got != want {
		t.Fatalf("kept:\n%s\nwant:\n%s", got, want)
	}
	if again := bench.KeepHandWritten("", fresh); again != fresh {
		t.Fatalf("nothing to keep changed the report:\n%s", again)
	}
}

func TestRelaySectionReportsBothRoutes(t *testing.T) {
	point := func(calls int, p99 time.Duration, rss int64) loadgen.Result {
		return loadgen.Result{Calls: calls, Throughput: 1, RTT: loadgen.Latency{P50: time.Millisecond, P99: p99, P999: p99},
			Server: &loadgen.ServerStats{RSSBefore: 10 << 20, RSSDuring: 10<<20 + rss*int64(calls), CPUPercent: 50}}
	}
	sweep := func(p99 ...time.Duration) loadgen.SweepResult {
		var sr loadgen.SweepResult
		for i, d := range p99 {
			sr.Points = append(sr.Points, point(100*(i+1), d, 0))
		}
		return sr
	}
	r := &bench.Relay{Pipeline: "vad | agc", BotCPUPercent: 30, Date: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Commit: "abc",
		Routes: []bench.RelayRoute{
			{Name: bench.RouteEcho, Sweep: sweep(time.Millisecond, 2*time.Millisecond), Memory: point(250, time.Millisecond, 40<<10)},
			{Name: bench.RouteRelay, Sweep: sweep(5*time.Millisecond, 30*time.Millisecond), Memory: point(250, 5*time.Millisecond, 60<<10)},
		}}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{bench.RelayHeading + "\n", "`vad | agc`", "| 100 | echo | 1.00 | 1.00 |", "| 200 | relay | 1.00 | 30.00 |",
		"relay route **100** calls, echo route **200** calls: **50%** of the echo route's", "echo route 40.0 KiB", "relay route 60.0 KiB", "30% of a core",
		"Measured apart from the rest of this file", "commit abc"} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
}

func TestFineSweep(t *testing.T) {
	got := bench.FineSweep([]int{10, 50, 100, 250, 500, 1000}, 250)
	want := []int{10, 50, 100, 250, 500, 750, 1000}
	if !slices.Equal(got, want) {
		t.Fatalf("FineSweep = %v, want %v", got, want)
	}
}

// BenchmarkSessionFrame is one frame of a `voxhost bench sessions` session
// (μ-law decoded into the first of four passthrough stages, the chain, μ-law
// encoded) on one goroutine: run it with -cpuprofile to see where a frame's
// time goes.
func BenchmarkSessionFrame(b *testing.B) {
	ctx := context.Background()
	specs, err := pipeline.ParseSpec("passthrough | passthrough | passthrough | passthrough")
	if err != nil {
		b.Fatal(err)
	}
	def, err := newCatalog(b).Definition(ctx, "bench", specs)
	if err != nil {
		b.Fatal(err)
	}
	p, err := def.Instantiate(ctx, pipeline.CallConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	ulaw := make([]byte, bench.FrameSamples)
	codec.EncodeUlaw(ulaw, signal.Speech(8000, 0.02))
	src := &codec.Source{Format: codec.Telephony, Frame: ulaw}
	out := make([]byte, bench.FrameSamples)
	b.ReportAllocs()
	for b.Loop() {
		pcm, err := p.Process(src)
		if err != nil {
			b.Fatal(err)
		}
		codec.EncodeUlaw(out, pcm)
	}
}

func TestFrameCPUSectionGivesTheRatios(t *testing.T) {
	point := func(us float64) loadgen.Result {
		return loadgen.Result{Calls: 200, Throughput: 1, Server: &loadgen.ServerStats{SteadyCPUPerFrame: time.Duration(us * 1000), SteadyFrames: 1000}}
	}
	f := &bench.FrameCPU{Pipeline: "vad | agc", ServerCore: 1, LoadBefore: "0.50", LoadAfter: "0.70",
		WarmPassthroughNs: 1000, WarmChainNs: 6000, Date: time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC), Commit: "abc",
		Points: []bench.FrameCPUPoint{
			{Calls: 200, Rep: 1, Echo: point(20), Passthrough: point(21), Chain: point(30)},
			{Calls: 200, Rep: 2, Echo: point(22), Passthrough: point(22), Chain: point(26)},
			{Calls: 200, Rep: 3, Echo: point(20), Passthrough: point(22), Chain: point(28)},
			{Calls: 500, Rep: 1, Echo: point(20), Passthrough: loadgen.Result{}, Chain: point(30)},
		}}
	e, pass, chain, pr, cr, n := f.Summary(200)
	if n != 3 || e != 20 || pass != 22 || chain != 28 || math.Abs(pr-1.05) > 1e-9 || math.Abs(cr-1.4) > 1e-9 {
		t.Errorf("summary at 200: echo %v pass %v chain %v, ratios %v %v over %d reps", e, pass, chain, pr, cr, n)
	}
	// Beyond passthrough: 28 − 22 = 6 µs a frame served, 5 µs warm.
	if got := f.AtScale(200); math.Abs(got-1.2) > 1e-9 {
		t.Errorf("at scale %v, want 1.2", got)
	}
	var b strings.Builder
	if err := f.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{bench.FrameCPUHeading + "\n", "`vad | agc`", "pinned to core 1", "Load average 0.50 before, 0.70 after",
		"| 200 | 1 | 20.0 | 21.0 | 30.0 | 1.05× | 1.50× |", "| 500 | 1 | 20.0 | 0.0 | 30.0 | — | — |",
		"**passthrough 1.05× the echo (target ≤ 1.05×), chain 1.40× (target ≤ 1.25×)**", "costs 1.20× what it costs warm",
		"At 500 calls no rep had a steady window", "commit abc"} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
}

// BenchmarkChainAtScale is a frame of the default chain, μ-law both ways,
// for calls calls taken in turn, one frame each, as one core of `serve`
// takes them: every frame finds its call's plugins cold in the caches
// where calls=1 finds them warm. The ratio of the two is the chain's cost at
// scale over its warm cost, without the sockets; run the chain without vad
// (whose SIMD valgrind cannot run) under `valgrind --tool=cachegrind` to
// count the misses.
func BenchmarkChainAtScale(b *testing.B) {
	ctx := context.Background()
	cat := newCatalog(b)
	for _, spec := range []string{"passthrough", "vad | dtmf | gate | agc", "dtmf | gate | agc"} {
		specs, err := pipeline.ParseSpec(spec)
		if err != nil {
			b.Fatal(err)
		}
		def, err := cat.Definition(ctx, "bench", specs)
		if err != nil {
			b.Fatal(err)
		}
		for _, calls := range []int{1, 200, 500} {
			b.Run(fmt.Sprintf("%s/calls=%d", strings.ReplaceAll(spec, " ", ""), calls), func(b *testing.B) {
				pipes := make([]*pipeline.Pipeline, calls)
				for i := range pipes {
					p, err := def.Instantiate(ctx, pipeline.CallConfig{})
					if err != nil {
						b.Fatal(err)
					}
					defer p.Close(ctx)
					pipes[i] = p
				}
				ulaw := make([]byte, bench.FrameSamples)
				codec.EncodeUlaw(ulaw, signal.Speech(8000, 0.02))
				srcs := make([]codec.Source, calls)
				outs := make([][]byte, calls)
				for i := range srcs {
					srcs[i] = codec.Source{Format: codec.Telephony, Frame: ulaw}
					outs[i] = make([]byte, bench.FrameSamples)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					pcm, err := pipes[i].Process(&srcs[i])
					if err != nil {
						b.Fatal(err)
					}
					codec.EncodeUlaw(outs[i], pcm)
					if i++; i == calls {
						i = 0
					}
				}
			})
		}
	}
}
