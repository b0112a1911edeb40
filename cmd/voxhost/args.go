package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst explains a flag written after a command's first argument.
// urfave/cli stops reading flags at the first argument that is not one,
// so `voxhost run in.wav out.wav --pipeline gain` would take
// "--pipeline" for a third file and fail with a message about the count
// of files; this says what to do instead. what names the arguments
// ("IN and OUT"), usage spells them after the flag in the example ("IN
// OUT"). A lone "-" is an argument (standard input or output), not a flag.
func flagsFirst(c *cli.Context, what, usage string) error {
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") && a != "-" {
			return fmt.Errorf("%s: flags go before %s, e.g. voxhost %s %s %s", commandPath(c), what, commandPath(c), a, usage)
		}
	}
	return nil
}

// commandPath is the command's words after "voxhost", "plugin test" for a
// subcommand (urfave/cli v2's Command.FullName gives only the last).
func commandPath(c *cli.Context) string {
	var words []string
	for _, ctx := range c.Lineage() {
		// The app's own context has a command named after the app.
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != c.App.Name {
			words = append([]string{ctx.Command.Name}, words...)
		}
	}
	return strings.Join(words, " ")
}
