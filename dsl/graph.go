package dsl

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// graph checks a pipeline's topology: start and route targets exist, every
// node is reachable and can reach END, every cycle is bounded by a limit,
// and a node whose routes are all conditional is warned about. What the
// schema refused is left out: a start: it refused leaves reachability
// unknown, a node whose routes are refused (opaque) may lead anywhere, a
// misspelt route target leads where its did-you-mean says (the node it
// meant is not unreachable too), and a limits: with an error may bound any
// cycle.
func (pc *pipelineCheck) graph() {
	p := pc.p
	names := append(nodeNames(p), End)
	ends := []string{End} // unknown targets count as ends: they are reported once
	meant := map[string]string{}
	mean := func(unknown []string) {
		for _, u := range unknown {
			ends = append(ends, u)
			if s := suggestName(u, names); s != "" {
				meant[u] = s
			}
		}
	}
	roots, from := pc.starts(names, mean)
	for _, n := range p.Nodes {
		if n.opaque {
			ends = append(ends, n.Name)
			continue
		}
		mean(pc.targets(n, names))
	}
	var reach map[string]bool
	if roots != nil {
		for i, r := range roots {
			if m, ok := meant[r]; ok {
				roots[i] = m
			}
		}
		roots = append(roots, pc.pipelineRefs(names)...)
		reach = reachable(p, roots, func(p *Pipeline, name string) []string {
			if n := p.Node(name); n != nil && n.opaque {
				return names
			}
			out := successors(p, name)
			for i, s := range out {
				if m, ok := meant[s]; ok {
					out[i] = m
				}
			}
			return out
		})
	}
	toEnd := reachable(p, ends, predecessors(p))
	for _, n := range p.Nodes {
		switch {
		case roots != nil && !reach[n.Name]:
			pc.diags.Errorf(n.Pos, CodeGraphUnreachable, "node %q is unreachable from %s", n.Name, from).Hint = "route to it from another node, or remove it"
		case !toEnd[n.Name] && len(n.Next) > 0:
			pc.diags.Errorf(n.Pos, CodeGraphNoEnd, "no path from node %q to END", n.Name).Hint = "every run must be able to finish: add a route that leads to END"
		}
	}
	if p.MaxSteps == 0 && !pc.bad(pc.d.Get("limits")) {
		for _, cycle := range cycles(p) {
			pc.diags.Errorf(p.Node(cycle[0]).Pos, CodeGraphUnboundedCycle, "cycle %s is not bounded by any limit", strings.Join(append(cycle, cycle[0]), " → ")).Hint = "set limits.max_steps on the pipeline"
		}
	}
}

// starts checks the pipeline's start and returns the nodes a run may start
// at (nil: unknown) and how messages name them; unknown gets the targets
// of a conditional start that are not nodes.
func (pc *pipelineCheck) starts(names []string, unknown func([]string)) (roots []string, from string) {
	p, start := pc.p, pc.d.Get("start")
	switch {
	case start == nil || pc.bad(start):
		return nil, ""
	case start.Kind == yaml.SequenceNode:
		unknown(pc.routeTargets("start", p.StartRoutes, names))
		for _, r := range p.StartRoutes {
			roots = append(roots, r.To)
		}
		return roots, "start"
	case p.Node(p.Start) == nil:
		pc.diags.Errorf(pc.d.Pos(start), CodeRefUnknown, "start node %q is not defined", p.Start).Hint = didYouMean(p.Start, names)
		return nil, ""
	}
	return []string{p.Start}, fmt.Sprintf("start node %q", p.Start)
}

// targets checks a node's routes and on_error target and returns the
// unknown ones.
func (pc *pipelineCheck) targets(n *Node, names []string) (unknown []string) {
	if len(n.Next) == 0 {
		pc.diags.Errorf(n.Pos, CodeGraphNoNext, "node %q has no next", n.Name).Hint = "add `next: END` to finish the run here"
		return nil
	}
	unknown = pc.routeTargets(fmt.Sprintf("node %q", n.Name), n.Next, names)
	for _, c := range n.OnError {
		if c.To != End && pc.p.Node(c.To) == nil {
			dg := pc.diags.Errorf(c.Pos, CodeRefUnknown, "on_error names unknown node %q", c.To)
			dg.Hint, dg.End = didYouMean(c.To, names), c.end
			unknown = append(unknown, c.To)
		}
	}
	return unknown
}

// routeTargets checks the targets of routes, owner's, and returns the
// unknown ones; routes that all have a condition are warned about.
func (pc *pipelineCheck) routeTargets(owner string, routes []*Route, names []string) (unknown []string) {
	if len(routes) == 0 {
		return nil
	}
	for _, r := range routes {
		if r.To != End && pc.p.Node(r.To) == nil {
			dg := pc.diags.Errorf(r.Pos, CodeRefUnknown, "route to unknown node %q", r.To)
			dg.Hint, dg.End = didYouMean(r.To, names), r.end
			unknown = append(unknown, r.To)
		}
	}
	if last := routes[len(routes)-1]; last.When != nil && !slices.ContainsFunc(routes, func(r *Route) bool { return r.When == nil }) {
		pc.diags.Warnf(last.Pos, CodeGraphNoDefault, "every route of %s has a condition; when none holds the run fails", owner).Hint = "end the list with a route without `when`"
	}
	return unknown
}

// pipelineRefs checks the nodes the pipeline's handlers and static
// interrupts name, and returns its handlers: nodes a run can reach
// without a route.
func (pc *pipelineCheck) pipelineRefs(names []string) (handlers []string) {
	for _, key := range []string{"on_timeout", "on_error"} {
		if v := pc.d.Get(key); v != nil && !pc.bad(v) && pc.nodeRef(v, key, names) {
			handlers = append(handlers, v.Value)
		}
	}
	for _, key := range []string{"interrupt_before", "interrupt_after"} {
		if v := pc.d.Get(key); !pc.bad(v) {
			for _, n := range items(v) {
				pc.nodeRef(n, key, names)
			}
		}
	}
	return handlers
}

// nodeRef checks that n names a node of the pipeline.
func (pc *pipelineCheck) nodeRef(n *yaml.Node, what string, names []string) bool {
	if pc.p.Node(n.Value) != nil {
		return true
	}
	dg := pc.diags.Errorf(pc.d.Pos(n), CodeRefUnknown, "%s names unknown node %q", what, n.Value)
	dg.Hint, dg.End = didYouMean(n.Value, names[:len(names)-1]), endOf(pc.d.File, n)
	return false
}

func nodeNames(p *Pipeline) []string {
	out := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		out[i] = n.Name
	}
	return out
}

// successors returns the nodes a node can pass control to.
func successors(p *Pipeline, name string) []string {
	n := p.Node(name)
	if n == nil {
		return nil
	}
	var out []string
	for _, r := range n.Next {
		out = append(out, r.To)
	}
	for _, c := range n.OnError {
		out = append(out, c.To)
	}
	return out
}

// predecessors returns the reverse of successors.
func predecessors(p *Pipeline) func(*Pipeline, string) []string {
	rev := map[string][]string{}
	for _, n := range p.Nodes {
		for _, s := range successors(p, n.Name) {
			rev[s] = append(rev[s], n.Name)
		}
	}
	return func(_ *Pipeline, name string) []string { return rev[name] }
}

// reachable returns the set of names reachable from roots along next.
func reachable(p *Pipeline, roots []string, next func(*Pipeline, string) []string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, next(p, n)...)
	}
	return seen
}

// cycles returns one cycle per strongly connected component that has one,
// each starting at its first node in document order (Tarjan's algorithm).
func cycles(p *Pipeline) [][]string {
	t := &tarjan{p: p, index: map[string]int{}, low: map[string]int{}, on: map[string]bool{}}
	for _, n := range p.Nodes {
		if _, seen := t.index[n.Name]; !seen {
			t.visit(n.Name)
		}
	}
	return t.out
}

type tarjan struct {
	p     *Pipeline
	next  int
	index map[string]int
	low   map[string]int
	on    map[string]bool
	stack []string
	out   [][]string
}

func (t *tarjan) visit(v string) {
	t.index[v], t.low[v] = t.next, t.next
	t.next++
	t.stack = append(t.stack, v)
	t.on[v] = true
	for _, w := range successors(t.p, v) {
		if t.p.Node(w) == nil {
			continue
		}
		if _, seen := t.index[w]; !seen {
			t.visit(w)
			t.low[v] = min(t.low[v], t.low[w])
		} else if t.on[w] {
			t.low[v] = min(t.low[v], t.index[w])
		}
	}
	if t.low[v] != t.index[v] {
		return
	}
	var scc []string
	for {
		w := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.on[w] = false
		scc = append(scc, w)
		if w == v {
			break
		}
	}
	if len(scc) > 1 || selfLoop(t.p, v) {
		t.out = append(t.out, orderCycle(t.p, scc))
	}
}

func selfLoop(p *Pipeline, v string) bool {
	for _, s := range successors(p, v) {
		if s == v {
			return true
		}
	}
	return false
}

// orderCycle returns a path through the component from its first node in
// document order back towards it, for a readable message.
func orderCycle(p *Pipeline, scc []string) []string {
	in := map[string]bool{}
	for _, s := range scc {
		in[s] = true
	}
	var start string
	for _, n := range p.Nodes {
		if in[n.Name] {
			start = n.Name
			break
		}
	}
	path, seen := []string{start}, map[string]bool{start: true}
	for cur := start; ; {
		next := ""
		for _, s := range successors(p, cur) {
			if in[s] && !seen[s] {
				next = s
				break
			}
		}
		if next == "" {
			return path
		}
		path, seen[next], cur = append(path, next), true, next
	}
}
