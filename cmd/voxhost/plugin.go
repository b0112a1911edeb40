package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/plugins"
)

func pluginCommand() *cli.Command {
	return &cli.Command{
		Name:  "plugin",
		Usage: "look at plugins",
		Subcommands: []*cli.Command{
			{
				Name:      "inspect",
				Usage:     "list a module's exports, imports, memory and ABI version, and every problem (exit 1 if invalid)",
				ArgsUsage: "FILE.wasm | STOCK-NAME",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "machine-readable report"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("inspect needs one .wasm file or stock plugin name")
					}
					ref := c.Args().First()
					name, wasm := filepath.Base(ref), []byte(nil)
					if stock, ok := plugins.Get(ref); ok {
						wasm = stock
					} else {
						b, err := os.ReadFile(ref)
						if err != nil {
							return err
						}
						wasm = b
					}
					cat, closeCatalog, err := openCatalog(c)
					if err != nil {
						return err
					}
					defer closeCatalog()
					rep := cat.Runtime().Inspect(c.Context, name, wasm)
					if c.Bool("json") {
						enc := json.NewEncoder(c.App.Writer)
						enc.SetIndent("", "  ")
						enc.SetEscapeHTML(false)
						if err := enc.Encode(rep); err != nil {
							return err
						}
					} else if err := rep.WriteText(c.App.Writer); err != nil {
						return err
					}
					if !rep.Valid {
						return exitError{code: 1}
					}
					return nil
				},
			},
			{
				Name:  "list",
				Usage: "list the stock plugins built into this binary",
				Action: func(c *cli.Context) error {
					for _, name := range plugins.Names() {
						wasm, _ := plugins.Get(name)
						fmt.Fprintf(c.App.Writer, "%-14s %6d bytes\n", name, len(wasm))
					}
					return nil
				},
			},
		},
	}
}
