package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/host/app"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "accept calls over WebSocket: /ws (raw μ-law) and /twilio (Twilio Media Streams)",
		Description: `With no flags it serves the built-in pipeline "` + app.DefaultPipelineSpec + `" on :8080.
   Endpoints: /ws, /twilio, /metrics, /healthz, /readyz. SIGTERM or SIGINT drains.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen address, overrides the config's listen (default :8080)"},
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "YAML config file (see examples/voxhost.yaml)", EnvVars: []string{"VOXHOST_CONFIG"}},
			&cli.StringFlag{Name: "pipeline", Aliases: []string{"p"}, Usage: `default pipeline, inline: "gain db=-6 | passthrough"`},
			&cli.DurationFlag{Name: "drain-timeout", Usage: "how long active calls may finish on SIGTERM (overrides the config)"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := app.LoadConfig(c.String("config"))
			if err != nil {
				return err
			}
			cacheDir := ""
			if c.IsSet("cache-dir") {
				cacheDir = c.String("cache-dir")
			}
			if err := app.Apply(&cfg, app.Overrides{
				Addr: c.String("addr"), Pipeline: c.String("pipeline"), PluginsDir: c.String("plugins-dir"), CacheDir: cacheDir,
			}); err != nil {
				return err
			}
			if c.IsSet("drain-timeout") {
				cfg.Limits.DrainTimeout = c.Duration("drain-timeout")
			}
			if c.IsSet("memory-limit-pages") {
				cfg.MemoryLimitPages = uint32(c.Uint("memory-limit-pages"))
			}
			h, err := app.New(c.Context, cfg, slog.Default())
			if err != nil {
				return err
			}
			defer h.Close(c.Context)
			return h.ListenAndServe(c.Context, func(addr net.Addr) {
				names := make([]string, 0, len(cfg.Pipelines))
				for n := range cfg.Pipelines {
					names = append(names, n)
				}
				sort.Strings(names)
				slog.Info("voxhost serving", "addr", addr.String(), "pipelines", strings.Join(names, ","), "default", cfg.DefaultPipeline,
					"max_calls", cfg.Limits.MaxCalls, "auth", len(cfg.ResolvedTokens()) > 0)
				fmt.Fprintf(os.Stderr, "voxhost: serving on %s — ws://%s/ws (raw μ-law), ws://%s/twilio, /metrics, /healthz, /readyz\n",
					addr, hostPort(addr), hostPort(addr))
			})
		},
	}
}

func hostPort(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if host == "::" || host == "0.0.0.0" || host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
