package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/signal"
)

// generateCommand writes test audio. Each kind is a subcommand, so its flags
// may follow the kind as an author types them (`generate tone --hz 300
// tone.wav`); they are also accepted before it, where the first version of
// the command took them.
func generateCommand() *cli.Command {
	kind := func(name, usage string, pcm func(c *cli.Context) []byte) *cli.Command {
		return &cli.Command{
			Name:      name,
			Usage:     usage,
			ArgsUsage: "OUT (.wav or .ul)",
			Flags:     generateFlags(),
			Action: func(c *cli.Context) error {
				if err := flagsFirst(c, "OUT", "OUT"); err != nil {
					return err
				}
				if c.NArg() != 1 {
					return fmt.Errorf("generate %s needs one output file (.wav or .ul), got %d arguments", name, c.NArg())
				}
				return audiofile.WritePCM(c.Args().First(), pcm(c), abi.TelephonyRate)
			},
		}
	}
	return &cli.Command{
		Name:      "generate",
		Usage:     "write deterministic test audio (8 kHz): a speech-like signal or a tone",
		ArgsUsage: "speech|tone [--seconds S] [--hz F] [--level A] OUT (.wav or .ul)",
		Flags:     generateFlags(),
		Subcommands: []*cli.Command{
			kind("speech", "a speech-like signal: voiced syllables and pauses", func(c *cli.Context) []byte {
				return signal.Speech(abi.TelephonyRate, generateFloat(c, "seconds"))
			}),
			kind("tone", "a sine", func(c *cli.Context) []byte {
				return signal.Tone(abi.TelephonyRate, generateFloat(c, "hz"), generateFloat(c, "level"), generateFloat(c, "seconds"))
			}),
		},
		// Reached only when the first argument names no kind.
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fmt.Errorf("generate needs a kind (speech or tone) and an output file, e.g. voxhost generate tone --hz 300 tone.wav")
			}
			return fmt.Errorf("unknown kind %q: want speech or tone, e.g. voxhost generate tone --hz 300 tone.wav", c.Args().First())
		},
	}
}

// generateFlags are made anew for each command that takes them: urfave/cli
// writes parsed values into the flag structs.
func generateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Float64Flag{Name: "seconds", Value: 3, Usage: "length"},
		&cli.Float64Flag{Name: "hz", Value: 440, Usage: "tone frequency"},
		&cli.Float64Flag{Name: "level", Value: 0.5, Usage: "tone amplitude, 0..1 of full scale (peak)"},
	}
}

// generateFloat reads a flag given after the kind or before it, the nearer
// one first; the default when neither was.
func generateFloat(c *cli.Context, name string) float64 {
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.IsSet(name) {
			return ctx.Float64(name)
		}
	}
	return c.Float64(name)
}
