package dsl

import "github.com/runner-dev/runner/runner"

// about is what pipeline p's definitions say about its graph beyond its
// description and input schema: each node's description and the tools
// its nodes may call.
func about(p *Pipeline, tools map[string]*runner.ToolSpec) *runner.About {
	out := &runner.About{Nodes: map[string]string{}, Tools: tools}
	for _, n := range p.Nodes {
		if d := scalarValue(mapGet(n.value, "description")); d != "" {
			out.Nodes[n.Name] = d
		}
	}
	return out
}
