package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/loadgen"
)

// The relay comparison's routes, as its server's config names them.
const (
	RouteEcho  = "echo"
	RouteRelay = "relay"
)

// DefaultRelaySweep are the call counts of the relay comparison: coarser
// than the echo sweep's, since each count runs twice.
var DefaultRelaySweep = []int{50, 250, 500, 1000}

// DefaultRelayMemoryCalls is the size of the point whose server memory
// gives RSS per call.
const DefaultRelayMemoryCalls = 250

// RelayConfig describes the relay comparison: one pipeline as an echo
// route and as the inbound pipeline of a route relayed to a bot.
type RelayConfig struct {
	// Executable is the voxhost binary that serves the routes and the bot.
	Executable string
	// Pipeline is the inline pipeline both routes run.
	Pipeline string
	// Sweep are the call counts; empty means DefaultRelaySweep.
	Sweep []int
	// PointDuration is how long each point sends audio.
	PointDuration time.Duration
	// MemoryCalls is the size of the memory point; 0 means
	// DefaultRelayMemoryCalls.
	MemoryCalls int
	// Progress, if set, is told each step.
	Progress func(format string, args ...any)
}

// Relay is the relay comparison as BENCHMARKS.md shows it.
type Relay struct {
	// Pipeline is the inline pipeline both routes ran.
	Pipeline string
	// Routes are the echo route's figures and the relay route's.
	Routes []RelayRoute
	// BotCPUPercent is the bot simulator's CPU time over the relay
	// route's measurement (100 is a core): the bot shares the machine.
	BotCPUPercent float64
	// Date and Commit say when and on what it was measured.
	Date   time.Time
	Commit string
}

// RelayRoute is one route's figures.
type RelayRoute struct {
	// Name is RouteEcho or RouteRelay.
	Name string
	// Sweep is the load sweep.
	Sweep loadgen.SweepResult
	// Memory is the memory point, run first on a fresh server.
	Memory loadgen.Result
}

// RSSPerCall is the server's resident memory per live call at the memory
// point: during the point, less before it, on a fresh server; 0 if the
// server said nothing.
func (r RelayRoute) RSSPerCall() float64 { return RSSPerCall(r.Memory) }

// RunRelay measures the same pipeline as an echo route and as a route
// relayed to `voxhost bench bot --mode echo` (no delay, raw dialect), each
// on a fresh `voxhost serve` of one config with both routes: first a
// memory point, then the sweep. The caller's round trip through the relay
// covers the inbound pipeline, the bot leg both ways, the outbound path
// and the playout clock that paces the caller.
func RunRelay(ctx context.Context, cfg RelayConfig) (*Relay, error) {
	say := orQuiet(cfg.Progress)
	if len(cfg.Sweep) == 0 {
		cfg.Sweep = DefaultRelaySweep
	}
	if cfg.MemoryCalls <= 0 {
		cfg.MemoryCalls = DefaultRelayMemoryCalls
	}
	dir, err := os.MkdirTemp("", "voxhost-relay-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bot, err := startChild(ctx, cfg.Executable, "--log-level", "warn", "bench", "bot", "--protocol", "raw", "--mode", "echo", "--quiet")
	if err != nil {
		return nil, fmt.Errorf("bot: %w", err)
	}
	defer bot.stop()
	conf := filepath.Join(dir, "voxhost.yaml")
	if err := writeRelayConfig(conf, cfg.Pipeline, "ws://"+bot.addr+"/"); err != nil {
		return nil, err
	}
	rep := &Relay{Pipeline: cfg.Pipeline, Date: time.Now().UTC(), Commit: commit()}
	lg := loadgen.Config{Protocol: loadgen.ProtocolRaw, Duration: cfg.PointDuration, FPS: 50, Ramp: time.Second}
	for _, route := range []string{RouteEcho, RouteRelay} {
		// A fresh server per route, so that neither inherits the memory
		// the other's calls left behind. The plugins' compiled code is
		// cached in dir for the second.
		srv, err := startChild(ctx, cfg.Executable, "--cache-dir", filepath.Join(dir, "cache"), "--log-level", "warn", "serve", "--config", conf)
		if err != nil {
			return nil, fmt.Errorf("%s route: %w", route, err)
		}
		botCPU0, wall0 := processCPU(bot.cmd.Process.Pid), time.Now()
		c := lg
		c.URL, c.Pipeline, c.Calls = "ws://"+srv.addr+"/ws", route, cfg.MemoryCalls
		say("relay: %s route, memory point of %d calls", route, cfg.MemoryCalls)
		rr := RelayRoute{Name: route}
		rr.Memory, err = loadgen.Run(ctx, c)
		if err == nil {
			say("relay: %s route, load sweep %v calls", route, cfg.Sweep)
			rr.Sweep, err = loadgen.Sweep(ctx, c, cfg.Sweep, 1, nil)
		}
		srv.stop()
		if err != nil {
			return nil, fmt.Errorf("%s route: %w", route, err)
		}
		if route == RouteRelay {
			rep.BotCPUPercent = 100 * (processCPU(bot.cmd.Process.Pid) - botCPU0) / time.Since(wall0).Seconds()
		}
		rep.Routes = append(rep.Routes, rr)
	}
	return rep, nil
}

// writeRelayConfig writes a server config with the pipeline spec as an
// echo route and as the inbound pipeline of a route relayed to botURL.
// The stages are written as JSON, which YAML reads as it is.
func writeRelayConfig(path, spec, botURL string) error {
	stages, err := stagesJSON(spec)
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`# Written by voxhost bench report for the relay comparison.
default_pipeline: %s
pipelines:
  %s: %s
  %s:
    inbound: %s
    upstream:
      url: %q
      protocol: raw
`, RouteEcho, RouteEcho, stages, RouteRelay, stages, botURL)
	return os.WriteFile(path, []byte(conf), 0o644)
}

// stagesJSON is an inline pipeline spec as a config's list of stages, in
// JSON, which YAML reads as it is.
func stagesJSON(spec string) ([]byte, error) {
	specs, err := pipeline.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return json.Marshal(specs)
}

// processCPU is the CPU time, user and system, process pid has used, in
// seconds (Linux), or 0.
func processCPU(pid int) float64 {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces; the fields count
	// from after it: utime and stime are the 14th and 15th of the line.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks
}

// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times: 100 on
// every architecture Go supports.
const clockTicks = 100
