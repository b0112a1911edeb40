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
	"runtime/debug"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/plugin"
)

// exitError carries an exit code, and a line for main to print when msg
// is set (the command has printed its report otherwise).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("exit %d", e.code)
}

func main() {
	ctx, stop := signalContext()
	err := newApp().RunContext(ctx, os.Args)
	stop()
	var exit exitError
	switch {
	case errors.As(err, &exit):
		if exit.msg != "" {
			fmt.Fprintln(os.Stderr, "voxhost:", exit.msg)
		}
		os.Exit(exit.code)
	case err != nil:
		fmt.Fprintln(os.Stderr, "voxhost:", err)
		os.Exit(1)
	}
}

// signalContext is the context of every command, as c.Context: the first
// SIGINT or SIGTERM cancels it, and each command passes it down to what
// may take long (compiling, running a file, serving, which then drains).
// Once it is cancelled the signals get their default action back, so a
// further one ends the process at once rather than waiting on work that
// does not watch the context.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// interrupted is the error of a command cut short by a signal, returned
// instead of its partial result: an inspect stopped mid-compile says
// nothing about the module.
func interrupted(ctx context.Context) error {
	return fmt.Errorf("interrupted: %v", context.Cause(ctx))
}

// runtimeFlags are made anew for every app: urfave/cli writes parsed values
// into the flag structs, which must not leak from one run (or test) to the
// next.
func runtimeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cache-dir", Usage: "compiled-plugin cache (\"-\" disables it)", Value: plugin.DefaultCacheDir(), EnvVars: []string{"VOXHOST_CACHE_DIR"}},
		&cli.UintFlag{Name: "memory-limit-pages", Usage: "most 64 KiB pages of memory per plugin instance", Value: plugin.DefaultMemoryLimitPages},
		&cli.StringFlag{Name: "plugins-dir", Usage: "directory searched for NAME.wasm before the stock plugins", EnvVars: []string{"VOXHOST_PLUGINS_DIR"}},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (default: the config's log_level, else info)", Value: "info"},
		&cli.StringFlag{Name: "log-format", Usage: "text or json", Value: "text", EnvVars: []string{"VOXHOST_LOG_FORMAT"}},
	}
}

// setLogger makes the process's default logger.
func setLogger(level, format string) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, opts)))
	case "json":
		slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, opts)))
	default:
		return fmt.Errorf("--log-format %q: want text or json", format)
	}
	return nil
}

// version names the build: the module version and VCS revision the Go
// toolchain stamped into the binary.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += "+dirty"
		}
	}
	return v + " " + info.GoVersion
}

func newApp() *cli.App {
	return &cli.App{
		Name:                 "voxhost",
		Usage:                "a WebAssembly-plugin voice host",
		Version:              version(),
		Flags:                runtimeFlags(),
		EnableBashCompletion: true,
		Before: func(c *cli.Context) error {
			return setLogger(c.String("log-level"), c.String("log-format"))
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
