package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/internal/app"
	"github.com/voxhost/voxhost/internal/bench"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure plugin hop cost and session throughput against baselines measured in the same run",
		Subcommands: []*cli.Command{
			{
				Name:  "hop",
				Usage: "ns per hop of chains of a plugin, beside its own C source compiled natively where it has one (interleaved, median of reps)",
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "plugin", Usage: "plugin to measure besides passthrough (repeatable): stock name or FILE.wasm"},
					&cli.StringFlag{Name: "depths", Value: "1,4,16,64", Usage: "chain lengths"},
					&cli.IntFlag{Name: "frames", Value: 20000, Usage: "frames per measurement"},
					&cli.IntFlag{Name: "reps", Value: 5, Usage: "interleaved repetitions"},
					&cli.BoolFlag{Name: "json", Usage: "machine-readable output"},
				},
				Action: func(c *cli.Context) error {
					depths, err := intList(c.String("depths"))
					if err != nil {
						return fmt.Errorf("--depths: %w", err)
					}
					cat, closeCatalog, err := openCatalog(c)
					if err != nil {
						return err
					}
					defer closeCatalog()
					rows, err := bench.Hop(c.Context, cat, bench.HopConfig{
						Plugins: c.StringSlice("plugin"), Depths: depths, Frames: c.Int("frames"), Reps: c.Int("reps"),
					})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return writeJSON(c, rows)
					}
					return bench.WriteHopTable(c.App.Writer, rows)
				},
			},
			{
				Name:  "sessions",
				Usage: "aggregate frames/s of N concurrent calls (a goroutine each) through a pipeline, and memory per call",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "sessions", Value: "1,10,100,1000", Usage: "numbers of concurrent calls"},
					&cli.IntFlag{Name: "depth", Value: 4, Usage: "passthrough stages per call (ignored with --pipeline)"},
					&cli.StringFlag{Name: "pipeline", Aliases: []string{"p"}, Usage: "inline pipeline each call runs instead"},
					&cli.Float64Flag{Name: "seconds", Value: 3, Usage: "duration of each point"},
					&cli.BoolFlag{Name: "json", Usage: "machine-readable output"},
				},
				Action: func(c *cli.Context) error {
					sessions, err := intList(c.String("sessions"))
					if err != nil {
						return fmt.Errorf("--sessions: %w", err)
					}
					cat, closeCatalog, err := openCatalog(c)
					if err != nil {
						return err
					}
					defer closeCatalog()
					rows, err := bench.Sessions(c.Context, cat, bench.SessionsConfig{
						Sessions: sessions, Depth: c.Int("depth"), Spec: c.String("pipeline"),
						Duration: time.Duration(c.Float64("seconds") * float64(time.Second)),
					})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return writeJSON(c, rows)
					}
					return bench.WriteSessionsTable(c.App.Writer, rows)
				},
			},
			{
				Name:  "report",
				Usage: "run the benchmark suite (hop, sessions, a load sweep of voxhost beside a bare echo server, the server CPU per frame on one core, a relay route beside an echo route) and write BENCHMARKS.md",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Value: "BENCHMARKS.md", Usage: "markdown file to write; its hand-written blocks are kept"},
					&cli.StringFlag{Name: "pipeline", Aliases: []string{"p"}, Value: app.DefaultPipelineSpec, Usage: "pipeline the load-tested server runs"},
					&cli.StringFlag{Name: "sweep", Value: "10,50,100,250,500,1000", Usage: "call counts of the load sweeps"},
					&cli.StringFlag{Name: "relay-sweep", Value: joinInts(bench.DefaultRelaySweep), Usage: "call counts of the relay comparison"},
					&cli.Float64Flag{Name: "seconds", Value: 5, Usage: "audio per sweep point"},
					&cli.StringFlag{Name: "only", Usage: `"relay": run the relay comparison alone and replace its section of --out; "cpu": the server CPU per frame on one core (bare echo, passthrough, --pipeline) alone`},
				},
				Action: func(c *cli.Context) error {
					sweep, err := intList(c.String("sweep"))
					if err != nil {
						return fmt.Errorf("--sweep: %w", err)
					}
					relaySweep, err := intList(c.String("relay-sweep"))
					if err != nil {
						return fmt.Errorf("--relay-sweep: %w", err)
					}
					exe, err := os.Executable()
					if err != nil {
						return err
					}
					out := c.String("out")
					old, err := os.ReadFile(out)
					if err != nil && !errors.Is(err, fs.ErrNotExist) {
						return err
					}
					cfg := bench.ReportConfig{
						Executable: exe, Pipeline: c.String("pipeline"), Sweep: sweep, RelaySweep: relaySweep,
						PointDuration:    time.Duration(c.Float64("seconds") * float64(time.Second)),
						SessionsDuration: 2 * time.Second, Progress: os.Stderr,
					}
					var text string
					switch c.String("only") {
					case "":
						cat, closeCatalog, err := openCatalog(c)
						if err != nil {
							return err
						}
						defer closeCatalog()
						rep, err := bench.RunReport(c.Context, cat, cfg)
						if err != nil {
							return err
						}
						var doc strings.Builder
						if err := rep.WriteMarkdown(&doc); err != nil {
							return err
						}
						text = bench.KeepHandWritten(string(old), doc.String())
					case "relay", "cpu":
						if old == nil {
							return fmt.Errorf("--only %s: %s must exist: the section goes into it", c.String("only"), out)
						}
						var part interface{ WriteMarkdown(io.Writer) error }
						before := bench.PublishedHeading
						if c.String("only") == "relay" {
							rep, err := bench.RunRelay(c.Context, cfg.Relay())
							if err != nil {
								return err
							}
							part = rep
						} else {
							cat, closeCatalog, err := openCatalog(c)
							if err != nil {
								return err
							}
							defer closeCatalog()
							rep, err := bench.RunFrameCPU(c.Context, cat, cfg.FrameCPU())
							if err != nil {
								return err
							}
							part, before = rep, bench.RelayHeading
						}
						var section strings.Builder
						if err := part.WriteMarkdown(&section); err != nil {
							return err
						}
						text = bench.ReplaceSection(string(old), section.String(), before)
					default:
						return fmt.Errorf("--only %q: the sections that run alone are relay and cpu", c.String("only"))
					}
					if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
						return err
					}
					fmt.Fprintf(os.Stderr, "wrote %s\n", out)
					return nil
				},
			},
			{
				Name:  "echo",
				Usage: "serve the bare baseline: a coder/websocket echo on every path, no codec, no pipeline",
				Flags: []cli.Flag{&cli.StringFlag{Name: "addr", Value: ":8090", Usage: "listen address"}},
				Action: func(c *cli.Context) error {
					l, err := net.Listen("tcp", c.String("addr"))
					if err != nil {
						return err
					}
					fmt.Fprintf(os.Stderr, "voxhost bench echo: bare WebSocket echo on %s\n", l.Addr())
					srv := &http.Server{Handler: bench.EchoHandler(64 << 10), ReadHeaderTimeout: 10 * time.Second}
					go func() { <-c.Context.Done(); srv.Close() }()
					if err := srv.Serve(l); err != http.ErrServerClosed {
						return err
					}
					return nil
				},
			},
			benchBotCommand(),
		},
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func writeJSON(c *cli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
