package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/audiofile"
	"github.com/voxhost/voxhost/host/signal"
)

func generateCommand() *cli.Command {
	return &cli.Command{
		Name:      "generate",
		Usage:     "write deterministic test audio (8 kHz): a speech-like signal or a tone",
		ArgsUsage: "speech|tone OUT (.wav or .ul)",
		Flags: []cli.Flag{
			&cli.Float64Flag{Name: "seconds", Value: 3, Usage: "length"},
			&cli.Float64Flag{Name: "hz", Value: 440, Usage: "tone frequency"},
			&cli.Float64Flag{Name: "level", Value: 0.5, Usage: "tone amplitude, 0..1 of full scale"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fmt.Errorf("generate needs a kind (speech or tone) and an output file")
			}
			var pcm []byte
			switch kind := c.Args().Get(0); kind {
			case "speech":
				pcm = signal.Speech(abi.TelephonyRate, c.Float64("seconds"))
			case "tone":
				pcm = signal.Tone(abi.TelephonyRate, c.Float64("hz"), c.Float64("level"), c.Float64("seconds"))
			default:
				return fmt.Errorf("unknown kind %q: want speech or tone", kind)
			}
			return audiofile.WritePCM(c.Args().Get(1), pcm, abi.TelephonyRate)
		},
	}
}
