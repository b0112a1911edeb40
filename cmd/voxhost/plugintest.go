package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/plugintest"
)

// pluginTestCommand is `voxhost plugin test`.
func pluginTestCommand() *cli.Command {
	return &cli.Command{
		Name:      "test",
		Usage:     "run a module through the ABI lifecycle and a soak of mixed audio, and report every check (exit 1 if any fails)",
		ArgsUsage: "FILE.wasm | STOCK-NAME",
		Description: `Checks each export and event of ABI.md §5, then plays --soak of speech, tones, silence,
   noise, full-scale audio, DTMF keys and clears through a fresh instance, in frames of every length
   from 1 ms to --max-frame-ms, in fast-forward, and fails a plugin that faults late, whose memory
   grows, or whose emits the host drops. A failed check shows the plugin's log lines under it.
   --config may be given more than once: the checks use the first, the soak runs each.
   --json prints the report as JSON (schema: go doc github.com/voxhost/voxhost/internal/plugintest).`,
		Flags: []cli.Flag{
			&cli.GenericFlag{Name: "config", Value: &configList{}, Usage: `JSON config, e.g. '{"db":-6}' (repeatable: each is soaked)`},
			&cli.BoolFlag{Name: "json", Usage: "machine-readable report"},
			&cli.DurationFlag{Name: "soak", Value: plugintest.DefaultSoak, Usage: "audio to soak the plugin in, per config (0: no soak)"},
			&cli.IntFlag{Name: "max-frame-ms", Value: plugin.DefaultMaxFrameMs, Usage: "longest frame, as the server's max_frame_ms"},
		},
		Action: func(c *cli.Context) error {
			name, wasm, err := readModule(c)
			if err != nil {
				return err
			}
			configs := *c.Generic("config").(*configList)
			opts := plugintest.Options{Soak: c.Duration("soak"), MaxFrameMs: c.Int("max-frame-ms")}
			for i, cfg := range configs {
				if !json.Valid([]byte(cfg)) {
					return fmt.Errorf("--config is not valid JSON: %s", cfg)
				}
				if i == 0 {
					opts.Config = []byte(cfg)
				} else {
					opts.MoreConfigs = append(opts.MoreConfigs, []byte(cfg))
				}
			}
			switch {
			case opts.Soak < 0:
				return fmt.Errorf("--soak %v: want a duration of audio, or 0 for none", opts.Soak)
			case opts.Soak == 0:
				opts.Soak = -1 // plugintest's "none"
			}
			if opts.MaxFrameMs < 1 || opts.MaxFrameMs > 1000 {
				return fmt.Errorf("--max-frame-ms %d: want 1 to 1000", opts.MaxFrameMs)
			}
			cat, closeCatalog, err := openCatalog(c)
			if err != nil {
				return err
			}
			defer closeCatalog()
			rep := plugintest.Run(c.Context, cat.Runtime(), name, wasm, opts)
			if c.Context.Err() != nil {
				return interrupted(c.Context)
			}
			if c.Bool("json") {
				if err := writeJSON(c, rep); err != nil {
					return err
				}
			} else {
				rep.WriteText(c.App.Writer)
			}
			if !rep.Passed {
				return exitError{code: 1}
			}
			return nil
		},
	}
}

// configList collects every --config, in order. urfave/cli's
// StringSliceFlag would split each value at its commas, and JSON has them.
type configList []string

// Set appends one --config.
func (l *configList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// String lists the values, for the help text.
func (l *configList) String() string { return strings.Join(*l, " ") }
