package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/app"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "accept calls: every carrier's WebSocket endpoint (/ws raw, /twilio, /telnyx, …, /auto) and AudioSocket over TCP",
		Description: `With no flags it serves the built-in pipeline "` + app.DefaultPipelineSpec + `" on :8080.
   Endpoints: one per protocol (the banner lists them), /metrics, /healthz, /readyz;
   AudioSocket on audiosocket.listen. SIGTERM or SIGINT drains.
   SIGHUP rereads the config file's pipelines (and the plugin files they name);
   calls in flight keep theirs. With --admin-addr (or admin.listen) the admin API
   lists, uploads and deletes plugins and reloads pipelines; the plugins dir is
   watched and a changed NAME.wasm is validated, then served to new calls.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen address, overrides the config's listen (default :8080)"},
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "YAML config file (see examples/voxhost.yaml)", EnvVars: []string{"VOXHOST_CONFIG"}},
			&cli.StringFlag{Name: "pipeline", Aliases: []string{"p"}, Usage: `default pipeline, inline: "gain db=-6 | passthrough"`},
			&cli.DurationFlag{Name: "drain-timeout", Usage: "how long active calls may finish on SIGTERM (overrides the config)"},
			&cli.StringFlag{Name: "admin-addr", Usage: "admin API listen address, e.g. 127.0.0.1:9090 (overrides the config's admin.listen)"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := app.LoadConfig(c.String("config"))
			if err != nil {
				return err
			}
			if !c.IsSet("log-level") && cfg.LogLevel != "" {
				if err := setLogger(cfg.LogLevel, c.String("log-format")); err != nil {
					return err
				}
			}
			cacheDir := ""
			if c.IsSet("cache-dir") {
				cacheDir = c.String("cache-dir")
			}
			o := app.Overrides{
				Addr: c.String("addr"), Pipeline: c.String("pipeline"), PluginsDir: c.String("plugins-dir"), CacheDir: cacheDir,
				AdminAddr: c.String("admin-addr"),
			}
			if c.IsSet("drain-timeout") {
				o.DrainTimeout = c.Duration("drain-timeout")
			}
			if c.IsSet("memory-limit-pages") {
				o.MemoryLimitPages = uint32(c.Uint("memory-limit-pages"))
			}
			if err := app.Apply(&cfg, o); err != nil {
				return err
			}
			h, err := app.New(c.Context, cfg, slog.Default())
			if err != nil {
				return err
			}
			defer h.Close(c.Context)
			h.SetConfigFile(c.String("config"), o)
			stopHUP := reloadOnSIGHUP(c.Context, h)
			defer stopHUP()
			return h.ListenAndServe(c.Context, func(addr net.Addr) {
				names := make([]string, 0, len(cfg.Pipelines))
				for n := range cfg.Pipelines {
					names = append(names, n)
				}
				sort.Strings(names)
				slog.Info("voxhost serving", "addr", addr.String(), "pipelines", strings.Join(names, ","), "default", cfg.DefaultPipeline,
					"max_calls", cfg.Limits.MaxCalls, "auth", len(cfg.ResolvedTokens()) > 0)
				var paths []string
				for _, p := range transport.Protocols() {
					if p.Path() != "" {
						paths = append(paths, p.Path())
					}
				}
				sort.Strings(paths)
				fmt.Fprintf(c.App.ErrWriter, "voxhost: serving on %s — ws://%s{%s}, /metrics, /healthz, /readyz\n",
					addr, hostPort(addr), strings.Join(paths, ","))
				if a := cfg.AudioSocket.Listen; a != "" {
					fmt.Fprintf(c.App.ErrWriter, "voxhost: AudioSocket (TCP) on %s\n", a)
				}
				if a := h.AdminAddr(); a != nil {
					fmt.Fprintf(c.App.ErrWriter, "voxhost: admin API on http://%s (GET /plugins, PUT|DELETE /plugins/NAME, GET /pipelines, POST /reload)\n", hostPort(a))
					if tok := h.AdminToken(); tok != "" {
						// Printed here, not logged: log lines are shipped and
						// kept, and the token is this terminal's.
						fmt.Fprintf(c.App.ErrWriter, "voxhost: admin token for this run (no admin.tokens set): %s\n"+
							"voxhost: console at http://%s/console/ — curl -H \"Authorization: Bearer %s\" http://%s/plugins\n", tok, hostPort(a), tok, hostPort(a))
					}
				}
			})
		},
	}
}

// reloadOnSIGHUP rereads the pipelines on each SIGHUP until ctx ends or
// stop is called.
func reloadOnSIGHUP(ctx context.Context, h *app.Host) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				slog.Info("SIGHUP: reloading pipelines")
				// Reload logs what it changed, or why it changed nothing.
				_, _ = h.Reload(ctx)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
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
