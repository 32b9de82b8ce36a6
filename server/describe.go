package server

import (
	"net/http"
	"slices"

	"github.com/runner-dev/runner/runner"
)

// What the assistant endpoints say about a graph beyond LangGraph's
// shapes, for the console and any client that shows one: node types and
// descriptions, route conditions, interrupts and approval gates, the
// input's JSON Schema, rules, budgets and tools (runner.About).

// graphJSON draws g as nodes and edges, from __start__ to __end__: each
// node's data has its type, description, whether it pauses (interrupt:
// node, before, after) and, for a tools node (which runs the calls its
// pipeline's models ask for), the tools a rule may gate; a conditional edge's data is its condition's source text, or
// "otherwise" for the default route after conditions.
func graphJSON(g *runner.Graph) map[string]any {
	type node struct {
		ID   string         `json:"id"`
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	type edge struct {
		Source      string `json:"source"`
		Target      string `json:"target"`
		Conditional bool   `json:"conditional"`
		Data        string `json:"data,omitempty"`
	}
	nodes := []node{{ID: "__start__", Type: "schema", Data: map[string]any{"name": "__start__"}}}
	var edges []edge
	if g.Start != "" {
		edges = append(edges, edge{Source: "__start__", Target: g.Start})
	}
	for _, rt := range g.StartRoutes {
		edges = append(edges, edge{Source: "__start__", Target: apiNode(rt.To), Conditional: true, Data: conditionText(rt.When)})
	}
	gated := gatedTools(g)
	for _, name := range sortedNames(g.Nodes) {
		st := g.Nodes[name]
		data := map[string]any{"name": name, "type": st.Type}
		if g.About != nil && g.About.Nodes[name] != "" {
			data["description"] = g.About.Nodes[name]
		}
		switch {
		case st.Type == "interrupt":
			data["interrupt"] = "node"
		case slices.Contains(g.InterruptBefore, name):
			data["interrupt"] = "before"
		case slices.Contains(g.InterruptAfter, name):
			data["interrupt"] = "after"
		}
		if st.Type == "tools" && len(gated) > 0 {
			data["gated_tools"] = sortedNames(gated)
		}
		nodes = append(nodes, node{ID: name, Type: "runnable", Data: data})
		for _, rt := range st.Routes {
			e := edge{Source: name, Target: apiNode(rt.To), Conditional: rt.When != nil || len(st.Routes) > 1}
			if e.Conditional {
				e.Data = conditionText(rt.When)
			}
			edges = append(edges, e)
		}
	}
	nodes = append(nodes, node{ID: "__end__", Type: "schema", Data: map[string]any{"name": "__end__"}})
	return map[string]any{"nodes": nodes, "edges": edges}
}

// conditionText is the source of a route's condition; "otherwise" for
// none.
func conditionText(c runner.Condition) string {
	if t, ok := c.(interface{ Text() string }); ok {
		return t.Text()
	}
	if c == nil {
		return "otherwise"
	}
	return "condition"
}

// gatedTools maps each tool of g a require_hitl rule may pause before or
// after to the keys of those rules.
func gatedTools(g *runner.Graph) map[string][]string {
	out := map[string][]string{}
	if g.About == nil {
		return out
	}
	for name, t := range g.About.Tools {
		info := &runner.ToolInfo{Name: name, CapabilityKey: t.Capability, Mutating: t.Mutating, Tags: t.Tags}
		for _, r := range g.Rules {
			if r.Action.Kind == "require_hitl" && (r.On == runner.BeforeToolCall || r.On == runner.AfterToolCall) && r.Guard.Admits(info) {
				out[name] = append(out[name], r.Key)
			}
		}
	}
	return out
}

// getAssistantPolicy says what governs an assistant's runs: its rules (in
// precedence order, each with its trigger, condition and action), its
// budget and limits, and the tools it may call with their parameters'
// JSON Schema and the rules that may gate each.
func (s *Server) getAssistantPolicy(w http.ResponseWriter, r *http.Request) error {
	a, err := s.resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	g := a.g
	rules := []map[string]any{}
	for _, rl := range g.Rules {
		if rl.Tenant != "" && rl.Tenant != principal(r.Context()).Tenant {
			continue
		}
		rules = append(rules, map[string]any{"key": rl.Key, "on": rl.On, "scope": rl.Scope, "skill": rl.Skill,
			"when": conditionText(rl.When), "action": rl.Action.Kind})
	}
	gated := gatedTools(g)
	tools := []map[string]any{}
	if g.About != nil {
		for _, t := range sortedNames(g.About.Tools) {
			spec := g.About.Tools[t]
			tools = append(tools, map[string]any{"name": t, "description": spec.Description, "parameters": orMap(spec.Parameters),
				"capability": spec.Capability, "mutating": spec.Mutating, "gated_by": orList(gated[t])})
		}
	}
	limits := map[string]any{"max_steps": g.MaxSteps}
	if g.Timeout > 0 {
		limits["timeout"] = g.Timeout.String()
	}
	writeJSON(w, http.StatusOK, map[string]any{"graph_id": a.name, "rules": rules, "budget": g.Budget, "limits": limits, "tools": tools})
	return nil
}

func orList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
