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
		Usage: "write, look at and test plugins",
		Subcommands: []*cli.Command{
			pluginNewCommand(),
			{
				Name:      "inspect",
				Usage:     "list a module's exports, imports, memory and ABI version, and every problem (exit 1 if invalid)",
				ArgsUsage: "FILE.wasm | STOCK-NAME",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "machine-readable report"}},
				Action: func(c *cli.Context) error {
					name, wasm, err := readModule(c)
					if err != nil {
						return err
					}
					cat, closeCatalog, err := openCatalog(c)
					if err != nil {
						return err
					}
					defer closeCatalog()
					rep := cat.Runtime().Inspect(c.Context, name, wasm)
					if c.Context.Err() != nil {
						return interrupted(c.Context)
					}
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
			pluginTestCommand(),
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

// readModule reads the one module argument: a stock plugin name or a file.
func readModule(c *cli.Context) (string, []byte, error) {
	if c.NArg() != 1 {
		if err := flagsFirst(c, "the file", "FILE.wasm"); err != nil {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("%s needs one .wasm file or stock plugin name", c.Command.Name)
	}
	ref := c.Args().First()
	if stock, ok := plugins.Get(ref); ok {
		return ref, stock, nil
	}
	wasm, err := os.ReadFile(ref)
	return filepath.Base(ref), wasm, err
}
