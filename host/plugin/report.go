package plugin

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints the report for a person: the verdict first, then the
// module's exports, imports and memory, then each problem and warning.
func (rep *Report) WriteText(w io.Writer) error {
	verdict := "valid"
	if !rep.Valid {
		verdict = fmt.Sprintf("INVALID (%d problem", len(rep.Problems))
		if len(rep.Problems) != 1 {
			verdict += "s"
		}
		verdict += ")"
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "plugin:\t%s (%d bytes)\n", rep.Plugin, rep.Size)
	fmt.Fprintf(tw, "verdict:\t%s\n", verdict)
	if rep.ABIVersion > 0 {
		fmt.Fprintf(tw, "abi:\tv%d\n", rep.ABIVersion)
	}
	if rep.MemoryMinPages > 0 || rep.MemoryMaxPages > 0 {
		max := "no maximum"
		if rep.MemoryMaxPages > 0 {
			max = fmt.Sprintf("max %d", rep.MemoryMaxPages)
		}
		fmt.Fprintf(tw, "memory:\t%d pages (%d KiB), %s\n", rep.MemoryMinPages, rep.MemoryMinPages*64, max)
	}
	if len(rep.Exports) > 0 {
		fmt.Fprintf(tw, "exports:\n")
		for _, e := range rep.Exports {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Name, e.Kind, e.Type)
		}
	}
	if len(rep.Imports) > 0 {
		fmt.Fprintf(tw, "imports:\n")
		for _, e := range rep.Imports {
			fmt.Fprintf(tw, "  %s.%s\t%s\t%s\n", e.Module, e.Name, e.Kind, e.Type)
		}
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(tw, "problem:\t%s\n", p)
	}
	for _, p := range rep.Warnings {
		fmt.Fprintf(tw, "warning:\t%s\n", p)
	}
	return tw.Flush()
}
