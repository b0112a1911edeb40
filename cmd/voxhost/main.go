// Command voxhost runs voice-call audio through chains of WebAssembly
// plugins: offline on files (run), live over WebSocket (serve), and tells
// plugin authors what their module looks like to the host (plugin inspect).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/plugin"
)

// exitError carries an exit code without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newApp().RunContext(ctx, os.Args)
	stop()
	var exit exitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.code)
	case err != nil:
		fmt.Fprintln(os.Stderr, "voxhost:", err)
		os.Exit(1)
	}
}

var runtimeFlags = []cli.Flag{
	&cli.StringFlag{Name: "cache-dir", Usage: "compiled-plugin cache (\"-\" disables it)", Value: plugin.DefaultCacheDir(), EnvVars: []string{"VOXHOST_CACHE_DIR"}},
	&cli.UintFlag{Name: "memory-limit-pages", Usage: "most 64 KiB pages of memory per plugin instance", Value: plugin.DefaultMemoryLimitPages},
	&cli.StringFlag{Name: "plugins-dir", Usage: "directory searched for NAME.wasm before the stock plugins", EnvVars: []string{"VOXHOST_PLUGINS_DIR"}},
	&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info"},
}

func newApp() *cli.App {
	return &cli.App{
		Name:                 "voxhost",
		Usage:                "a WebAssembly-plugin voice host",
		Flags:                runtimeFlags,
		EnableBashCompletion: true,
		Before: func(c *cli.Context) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
			return nil
		},
		Commands: []*cli.Command{serveCommand(), runCommand(), pluginCommand(), benchCommand(), loadgenCommand(), generateCommand()},
	}
}

// openCatalog starts the plugin runtime as the global flags describe it.
func openCatalog(c *cli.Context) (*catalog.Catalog, func(), error) {
	rt, err := plugin.NewRuntime(c.Context, plugin.Options{
		CacheDir:         c.String("cache-dir"),
		MemoryLimitPages: uint32(c.Uint("memory-limit-pages")),
		Logger:           slog.Default(),
	})
	if err != nil {
		return nil, nil, err
	}
	cat := catalog.New(rt, c.String("plugins-dir"))
	return cat, func() {
		_ = cat.Close(context.Background())
		_ = rt.Close(context.Background())
	}, nil
}
