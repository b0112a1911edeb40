package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/offline"
)

// exitStrict is the exit status of `voxhost run --strict` when the run
// completed but a plugin faulted under bypass or the host dropped one of
// its emits: not 1, so that CI tells a plugin that misbehaves from a run
// that could not be made.
const exitStrict = 3

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "process an audio file through a pipeline, 20 ms frames, as a live call would",
		ArgsUsage: "IN OUT  (.wav PCM16 mono 8 kHz, or .ul raw μ-law)",
		Description: `Events that plugins emit are written as JSON lines to --events (default stderr):
   {"t_ms":120,"plugin":"vad","name":"speech_start","data":...}, and {"name":"plugin_error",...} for a fault.
   Exit status: 0; 1 for an error, or a plugin fault that ended the call (on_error=end_call);
   with --strict, 3 when the run completed but a plugin faulted (and was bypassed) or the host
   dropped one of its emits.
   Example: voxhost run --pipeline "gain db=-6 | passthrough" in.wav out.wav
   An echo canceller against what the caller heard: voxhost run --pipeline aec --far-end bot.wav mic.wav out.wav`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "pipeline", Aliases: []string{"p"}, Usage: `stages separated by "|", each a plugin and key=value config (required)`},
			&cli.StringFlag{Name: "events", Usage: "file for the JSON-lines event log (\"-\" or empty: stderr)"},
			&cli.StringFlag{Name: "far-end", Usage: "audio file the caller was sent, at IN's rate: the far-end reference of a plugin that asks for it (aec), frame for frame with IN"},
			&cli.StringFlag{Name: "dtmf", Usage: `key presses to deliver, e.g. "500:5,1200:#" (ms:key)`},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no summary line"},
			&cli.BoolFlag{Name: "strict", Usage: fmt.Sprintf("exit %d after any plugin fault, even a bypassed one, or any dropped emit (for CI)", exitStrict)},
		},
		Action: func(c *cli.Context) error {
			if err := flagsFirst(c, "IN and OUT", "IN OUT"); err != nil {
				return err
			}
			if c.String("pipeline") == "" {
				return fmt.Errorf(`run needs --pipeline, e.g. voxhost run --pipeline "gain db=-6" IN OUT`)
			}
			if c.NArg() != 2 {
				return fmt.Errorf("run needs IN and OUT files, got %d arguments (see voxhost run --help)", c.NArg())
			}
			specs, err := pipeline.ParseSpec(c.String("pipeline"))
			if err != nil {
				return err
			}
			dtmf, err := offline.ParseDTMF(c.String("dtmf"))
			if err != nil {
				return err
			}
			cat, closeCatalog, err := openCatalog(c)
			if err != nil {
				return err
			}
			defer closeCatalog()
			def, err := cat.Definition(c.Context, "cli", specs)
			if err != nil {
				return err
			}
			var events io.Writer = c.App.ErrWriter
			if path := c.String("events"); path != "" && path != "-" {
				f, err := os.Create(path)
				if err != nil {
					return err
				}
				defer f.Close()
				events = f
			}
			sum, err := offline.Run(c.Context, offline.Options{
				Definition: def, In: c.Args().Get(0), Out: c.Args().Get(1), Events: events, DTMF: dtmf,
				FarEnd: c.String("far-end"),
			})
			// A fault that ended the call still leaves the output written:
			// summarise it, then fail, so scripts see the fault.
			var fault *offline.FaultError
			if err != nil && !errors.As(err, &fault) {
				return err
			}
			if !c.Bool("quiet") {
				perFrame := time.Duration(0)
				if sum.Frames > 0 {
					perFrame = sum.Elapsed / time.Duration(sum.Frames)
				}
				speed := float64(sum.InputMs) / max(float64(sum.Elapsed.Microseconds())/1000, 0.001)
				dropped := ""
				if n := sum.DroppedEmits.Total(); n > 0 {
					dropped = fmt.Sprintf("; %d emits dropped: %s", n, sum.DroppedEmits)
				}
				fmt.Fprintf(c.App.ErrWriter, "%s: %.2f s of audio, %d frames, %d events, %d plugin errors; %v per frame (%.0f× real time); wrote %s at %d Hz%s\n",
					c.Args().Get(0), float64(sum.InputMs)/1000, sum.Frames, sum.Events, sum.Faults, perFrame, speed, c.Args().Get(1), sum.OutputRate, dropped)
			}
			if fault != nil {
				return fmt.Errorf("run %s: %w; %s holds the output processed before it (%d frames)", c.Args().Get(0), fault, c.Args().Get(1), sum.Frames)
			}
			if c.Bool("strict") && (sum.Faults > 0 || sum.DroppedEmits.Total() > 0) {
				return exitError{code: exitStrict, msg: fmt.Sprintf("run --strict: %d plugin errors and %d dropped emits (the events and the log say which)", sum.Faults, sum.DroppedEmits.Total())}
			}
			return nil
		},
	}
}
