package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/internal/scaffold"
)

// pluginNewCommand is `voxhost plugin new`: the project of a new plugin.
func pluginNewCommand() *cli.Command {
	return &cli.Command{
		Name:      "new",
		Usage:     "write the project of a new plugin, with its SDK, that builds with make (" + strings.Join(scaffold.IDs(), ", ") + ")",
		ArgsUsage: "NAME [DIR]  (DIR defaults to ./NAME; it must not exist or be empty)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "lang", Aliases: []string{"l"}, Usage: "the plugin's language: " + strings.Join(scaffold.IDs(), ", ")},
			&cli.BoolFlag{Name: "far-end", Usage: "the plugin asks for the far-end reference, what the caller was sent, for an echo canceller (ABI §11; not for wat)"},
		},
		Action: func(c *cli.Context) error {
			// Checked here rather than as a required flag, so that a --lang
			// after NAME is explained rather than reported missing.
			if err := flagsFirst(c, "NAME", "LANG NAME"); err != nil {
				return err
			}
			if c.String("lang") == "" {
				return fmt.Errorf("new needs --lang, one of %s, e.g. voxhost plugin new --lang c my-gain", strings.Join(scaffold.IDs(), ", "))
			}
			if c.NArg() < 1 || c.NArg() > 2 {
				return fmt.Errorf("new needs a plugin NAME and optionally a DIR, e.g. voxhost plugin new --lang c my-gain")
			}
			name, dir := c.Args().Get(0), c.Args().Get(0)
			if c.NArg() == 2 {
				dir = c.Args().Get(1)
			}
			p, err := scaffold.New(c.String("lang"), name, dir, scaffold.Options{FarEnd: c.Bool("far-end")})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "wrote %s: a %s plugin, %d files (the SDK in %s/)\n", p.Dir, p.Language.Title, len(p.Files), scaffold.SDKDir)
			fmt.Fprintf(c.App.Writer, "  cd %s\n  make                          # builds %s (%s)\n", p.Dir, p.WASM, p.Language.Toolchain)
			fmt.Fprintf(c.App.Writer, "  make test                     # voxhost plugin test %s\n", p.WASM)
			fmt.Fprintf(c.App.Writer, "  make run CONFIG=\"gain_db=-12\" # voxhost run: in.wav -> out.wav\n")
			fmt.Fprintf(c.App.Writer, "then change %s: README.md says what is where\n", p.Source)
			return nil
		},
	}
}
