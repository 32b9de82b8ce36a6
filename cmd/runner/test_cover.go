package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/runner-dev/runner/builtins/testrun"
	"github.com/runner-dev/runner/dsl"
)

// coverColumns are the columns of the coverage table, each counting items
// of some kinds.
var coverColumns = []struct {
	title string
	kinds []string
}{
	{"routes", []string{testrun.ItemStart, testrun.ItemRoute}},
	{"on_error", []string{testrun.ItemOnError}},
	{"interrupts", []string{testrun.ItemInterrupt}},
	{"rules", []string{testrun.ItemRule}},
	{"decisions", []string{testrun.ItemDecision}},
}

// writeCoverage writes the coverage as a table: a line per pipeline and
// rule set with what its Tests took of each kind.
func writeCoverage(w io.Writer, c *testrun.Coverage) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, col := range coverColumns {
		fmt.Fprintf(tw, "%s\t", col.title)
	}
	fmt.Fprint(tw, "covered\n")
	row := func(name string, items []testrun.Item, percent float64) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, col := range coverColumns {
			fmt.Fprintf(tw, "%s\t", takenOf(items, col.kinds))
		}
		fmt.Fprintf(tw, "%.1f%%\n", percent)
	}
	var all []testrun.Item
	for _, g := range c.Groups {
		row(g.Kind+" "+g.Name, g.Items, g.Percent())
		all = append(all, g.Items...)
	}
	row("total", all, c.Percent())
	tw.Flush()
}

// takenOf renders how many of items of kinds were taken: "taken/total",
// or "-" when there are none.
func takenOf(items []testrun.Item, kinds []string) string {
	taken, total := 0, 0
	for _, it := range items {
		for _, k := range kinds {
			if it.Kind != k {
				continue
			}
			total++
			if it.Hits > 0 {
				taken++
			}
		}
	}
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", taken, total)
}

// untaken returns a warning at each item no Test took, at its
// file:line:col.
func untaken(c *testrun.Coverage) dsl.Diagnostics {
	var out dsl.Diagnostics
	for _, g := range c.Groups {
		for _, it := range g.Items {
			if it.Hits == 0 {
				out = append(out, dsl.Diagnostic{Pos: it.Pos, Severity: dsl.Warning, Code: "not-covered",
					Message: fmt.Sprintf("%s %s: %s %s not taken by any Test", g.Kind, g.Name, it.Kind, it.What)})
			}
		}
	}
	return out
}
