package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/internal/loadgen"
	"github.com/voxhost/voxhost/plugins"
)

// ReportConfig describes the suite behind `make bench`.
type ReportConfig struct {
	// Executable is the voxhost binary that serves the load tests, run as
	// separate processes so that server and load generator do not share a
	// Go runtime.
	Executable string
	// Pipeline is the pipeline the voxhost server runs.
	Pipeline string
	// Sweep are the call counts of the load sweeps.
	Sweep []int
	// PointDuration is how long each sweep point sends audio.
	PointDuration time.Duration
	// RelaySweep are the call counts of the relay comparison; empty means
	// DefaultRelaySweep.
	RelaySweep []int
	// SessionsDuration is how long each sessions point runs.
	SessionsDuration time.Duration
	// Progress receives one line per step.
	Progress io.Writer
}

// Report is everything BENCHMARKS.md shows.
type Report struct {
	Date      time.Time
	CPU       string
	Cores     int
	GoVersion string
	Commit    string
	Pipeline  string
	Hop       []HopRow
	PluginHop []HopRow
	// PluginSkipped lists stock plugins that cannot run without config.
	PluginSkipped []string
	Sessions      []SessionsRow
	Pipeline4     []SessionsRow
	Voxhost       loadgen.SweepResult
	Baseline      loadgen.SweepResult
	// VoxhostMemory and BaselineMemory are the density points: DensityCalls
	// calls on each server while it is fresh, before its sweep.
	VoxhostMemory, BaselineMemory loadgen.Result
	SweepError                    string
	// Relay is the relay comparison; RelayError says why it failed.
	Relay      *Relay
	RelayError string
	// FrameCPU is the frame CPU comparison; FrameCPUError says why it
	// failed.
	FrameCPU      *FrameCPU
	FrameCPUError string
}

// RunReport measures the hop table, the sessions table, and a load sweep of
// a voxhost server beside a bare echo server.
func RunReport(ctx context.Context, cat *catalog.Catalog, cfg ReportConfig) (*Report, error) {
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	rep := &Report{Date: time.Now().UTC(), CPU: CPUModel(), Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Commit: commit(), Pipeline: cfg.Pipeline}
	var err error
	say("hop: passthrough at depths 1, 4, 16, 64")
	if rep.Hop, err = Hop(ctx, cat, HopConfig{Depths: []int{1, 4, 16, 64}, Frames: 20000, Reps: 5}); err != nil {
		return nil, err
	}
	var stock []string
	for _, name := range plugins.Names() {
		if name != "passthrough" {
			stock = append(stock, name)
		}
	}
	say("hop: stock plugins %s", strings.Join(stock, ", "))
	for _, name := range stock {
		rows, err := Hop(ctx, cat, HopConfig{Plugins: []string{name}, Depths: []int{1}, Frames: 5000, Reps: 3})
		if err != nil {
			// A plugin that needs config (resample's "to") cannot run as
			// a chain of default-configured copies.
			rep.PluginSkipped = append(rep.PluginSkipped, fmt.Sprintf("%s (%v)", name, err))
			continue
		}
		rep.PluginHop = append(rep.PluginHop, rows[1]) // rows[0] is passthrough, in the hop table already
	}
	say("sessions: 4 passthrough stages")
	if rep.Sessions, err = Sessions(ctx, cat, SessionsConfig{Sessions: []int{1, 10, 100, 1000}, Depth: 4, Duration: cfg.SessionsDuration}); err != nil {
		return nil, err
	}
	say("sessions: %s", cfg.Pipeline)
	if rep.Pipeline4, err = Sessions(ctx, cat, SessionsConfig{Sessions: []int{1, 100}, Spec: cfg.Pipeline, Duration: cfg.SessionsDuration}); err != nil {
		return nil, err
	}
	cfg.Sweep = FineSweep(cfg.Sweep, SweepStep)
	if err := rep.sweeps(ctx, cfg, say); err != nil {
		rep.SweepError = err.Error()
		say("load sweep failed: %v", err)
	}
	if rep.FrameCPU, err = RunFrameCPU(ctx, cat, cfg.FrameCPU()); err != nil {
		rep.FrameCPUError = err.Error()
		say("frame cpu comparison failed: %v", err)
	}
	if rep.Relay, err = RunRelay(ctx, cfg.Relay()); err != nil {
		rep.RelayError = err.Error()
		say("relay comparison failed: %v", err)
	}
	return rep, nil
}

// DensityCalls is the size of the point whose server memory gives RSS per
// live call: the design's 1,000 calls.
const DensityCalls = 1000

// SweepStep is the resolution the report's sweeps tell capacity to.
const SweepStep = 250

// FineSweep returns counts with every multiple of step up to the largest
// of them added, in order, so that a capacity is told to within step
// calls wherever it lies; the small counts stay as given.
func FineSweep(counts []int, step int) []int {
	out := slices.Clone(counts)
	if len(counts) == 0 || step <= 0 {
		return out
	}
	for n := step; n <= slices.Max(counts); n += step {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// RSSPerCall is the server's resident memory per live call at a density
// point: during the point less before it, over the calls that connected; 0
// if the server said nothing.
func RSSPerCall(r loadgen.Result) float64 {
	s := r.Server
	live := r.Calls - r.ConnectionsFailed
	if s == nil || s.RSSDuring == 0 || live <= 0 {
		return 0
	}
	return float64(s.RSSDuring-s.RSSBefore) / float64(live)
}

// Relay is the relay comparison's part of the report's config, for
// running it alone; its progress goes to cfg.Progress.
func (cfg ReportConfig) Relay() RelayConfig {
	rc := RelayConfig{Executable: cfg.Executable, Pipeline: cfg.Pipeline, Sweep: cfg.RelaySweep, PointDuration: cfg.PointDuration}
	if w := cfg.Progress; w != nil {
		rc.Progress = func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	}
	return rc
}

// FrameCPU is the frame CPU comparison's part of the report's config, for
// running it alone; its progress goes to cfg.Progress.
func (cfg ReportConfig) FrameCPU() FrameCPUConfig {
	fc := FrameCPUConfig{Executable: cfg.Executable, Pipeline: cfg.Pipeline}
	if w := cfg.Progress; w != nil {
		fc.Progress = func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	}
	return fc
}

func (rep *Report) sweeps(ctx context.Context, cfg ReportConfig, say func(string, ...any)) error {
	vox, err := startChild(ctx, cfg.Executable, "--cache-dir", "-", "--log-level", "warn", "serve", "--pipeline", cfg.Pipeline)
	if err != nil {
		return err
	}
	defer vox.stop()
	echo, err := startChild(ctx, cfg.Executable, "bench", "echo")
	if err != nil {
		return err
	}
	defer echo.stop()
	lg := loadgen.Config{Protocol: "raw", Duration: cfg.PointDuration, FPS: 50, Ramp: time.Second}
	for _, target := range []struct {
		name   string
		addr   string
		into   *loadgen.SweepResult
		memory *loadgen.Result
	}{{"voxhost", vox.addr, &rep.Voxhost, &rep.VoxhostMemory}, {"bare echo", echo.addr, &rep.Baseline, &rep.BaselineMemory}} {
		c := lg
		c.URL = "ws://" + target.addr + "/ws"
		// The density point runs first, while the server has held no call,
		// so that its memory during the point less before it is what the
		// live calls hold, not what earlier points left.
		say("density: %s, %d calls", target.name, DensityCalls)
		c.Calls = DensityCalls
		mem, err := loadgen.Run(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: %w", target.name, err)
		}
		*target.memory = mem
		say("load sweep: %s at %s, %v calls", target.name, target.addr, cfg.Sweep)
		res, err := loadgen.Sweep(ctx, c, cfg.Sweep, 1, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", target.name, err)
		}
		*target.into = res
	}
	return nil
}

// child is a server process of the report.
type child struct {
	cmd  *exec.Cmd
	addr string
}

// startChild runs the executable with args and --addr on a free loopback
// port, and waits until the port accepts connections.
func startChild(ctx context.Context, exe string, args ...string) (*child, error) {
	return startChildWith(ctx, (*exec.Cmd).Start, exe, args...)
}

// startChildWith is startChild with the process started by start (which
// may set its environment or where it runs).
func startChildWith(ctx context.Context, start func(*exec.Cmd) error, exe string, args ...string) (*child, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.CommandContext(ctx, exe, append(args, "--addr", addr)...)
	cmd.Stderr = os.Stderr
	if err := start(cmd); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, addr: addr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return c, nil
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("%s %s did not listen on %s within 30 s", exe, strings.Join(args, " "), addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *child) stop() {
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// commit names the source measured: the revision the binary was built
// from or, when the build stamped none (GOFLAGS=-buildvcs=false), the
// checkout's it runs in, as make bench runs it.
func commit() string {
	rev, dirty := "unknown", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = " (with uncommitted changes)"
				}
			}
		}
	}
	if rev != "unknown" {
		return rev + dirty
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return rev
	}
	rev = strings.TrimSpace(string(out))
	if status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(status) > 0 {
		dirty = " (with uncommitted changes)"
	}
	return rev + dirty
}
