package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/dsl"
)

func newGraph() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "graph NAME|PATH",
		Short: "Print the topology of a pipeline, or of an agent's pipeline",
		Long: `Graph prints the nodes and routes of the pipeline NAME (or of the pipeline
of the agent NAME) as Mermaid or Graphviz dot; conditional routes are
labelled with their conditions. A file or directory instead of NAME names
the one agent, else the one pipeline, it defines.`,
		Args: cobra.ExactArgs(1),
		RunE: runGraph,
	}
	cmd.Flags().String("format", "mermaid", "output format: mermaid or dot")
	return cmd
}

func runGraph(cmd *cobra.Command, args []string) error {
	format, _ := cmd.Flags().GetString("format")
	if format != "mermaid" && format != "dot" {
		return usageErr(fmt.Errorf("unknown --format %q: use mermaid or dot", format))
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		return usageErr(err)
	}
	paths, name, err := resolveTarget(cfg.Paths, args[0])
	if err != nil {
		return usageErr(err)
	}
	_, proj, err := checkedProject(cmd, paths)
	if err != nil {
		return err
	}
	p := proj.Pipelines[name]
	if a, ok := proj.Agents[name]; ok && p == nil {
		p = proj.Pipelines[a.Pipeline]
	}
	if p == nil {
		return usageErr(unknownTarget(proj, name))
	}
	if format == "dot" {
		writeDot(cmd.OutOrStdout(), p)
	} else {
		writeMermaid(cmd.OutOrStdout(), p)
	}
	return nil
}

// edges calls f for every route of p, those of a conditional start
// first, labelled with its condition.
func edges(p *dsl.Pipeline, f func(from, to, label string)) {
	routes := func(from string, rs []*dsl.Route) {
		for _, r := range rs {
			label := ""
			if r.When != nil {
				label = r.When.Program.Text()
			}
			f(from, r.To, label)
		}
	}
	routes("START", p.StartRoutes)
	for _, n := range p.Nodes {
		routes(n.Name, n.Next)
		for _, c := range n.OnError {
			label := "on error"
			if len(c.When) > 0 {
				label += ": " + strings.Join(c.When, ", ")
			}
			f(n.Name, c.To, label)
		}
	}
}

func writeMermaid(w io.Writer, p *dsl.Pipeline) {
	fmt.Fprintln(w, "flowchart TD")
	if fmt.Fprint(w, "  START([START])"); p.Start != "" {
		fmt.Fprintf(w, " --> %s", p.Start)
	}
	fmt.Fprintln(w)
	for _, n := range p.Nodes {
		fmt.Fprintf(w, "  %s[\"%s<br/><small>%s</small>\"]\n", n.Name, n.Name, n.Type)
	}
	fmt.Fprintln(w, "  END([END])")
	edges(p, func(from, to, label string) {
		if label == "" {
			fmt.Fprintf(w, "  %s --> %s\n", from, to)
			return
		}
		fmt.Fprintf(w, "  %s -- \"%s\" --> %s\n", from, mermaidEscape(label), to)
	})
}

func writeDot(w io.Writer, p *dsl.Pipeline) {
	fmt.Fprintf(w, "digraph %q {\n  START [shape=circle];\n  END [shape=doublecircle];\n", p.Name)
	if p.Start != "" {
		fmt.Fprintf(w, "  START -> %q;\n", p.Start)
	}
	for _, n := range p.Nodes {
		fmt.Fprintf(w, "  %q [shape=box, label=%q];\n", n.Name, n.Name+"\n("+n.Type+")")
	}
	edges(p, func(from, to, label string) {
		if label == "" {
			fmt.Fprintf(w, "  %q -> %q;\n", from, to)
			return
		}
		fmt.Fprintf(w, "  %q -> %q [label=%q];\n", from, to, label)
	})
	fmt.Fprintln(w, "}")
}

func mermaidEscape(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "\n", " ").Replace(s)
}
