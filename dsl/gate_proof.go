package dsl

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runner-dev/runner/runner"
)

// gateActions are the actions that keep a call from running unseen: a
// human decides, or it does not run.
var gateActions = []string{runner.ActRequireHITL, runner.ActDeny, runner.ActAbort}

// RequireGate is validate's gate proof. For every agent, as it runs for
// no tenant and for each tenant whose rule sets apply to it, it finds each
// tool matching expr (a CEL condition over tool: name, capability_key,
// mutating, tags) that a node of the agent's graph can call, and the
// before_tool_call rules with require_hitl, deny or abort that cover it:
// those whose guard admits the tool and whose condition can hold for it.
// A tool no rule covers is an error at its definition, naming the agent,
// the tenant and the nodes that call it; a tool covered only by rules
// whose condition also depends on the call or the state is a warning
// naming them. Skill rules, which fire only while their skill is loaded,
// do not cover. opt.Provider builds the models; tools are not built.
func (c *Checker) RequireGate(proj *Project, expr string, opt CompileOptions) (Diagnostics, error) {
	match, ds := Compile(Source{Text: expr, Lang: CEL, File: "--require-gate"}, NewEnv(map[string]*Type{"tool": toolVar}), BoolType)
	if ds.HasErrors(false) {
		return nil, fmt.Errorf("--require-gate %q: %w", expr, ds.Err())
	}
	opt.Tool = func(*ToolDef) (runner.Tool, error) { return runner.ToolFunc(nil), nil }
	var out Diagnostics
	for _, name := range slices.Sorted(maps.Keys(proj.Agents)) {
		a := proj.Agents[name]
		opt.Agent = a
		g, cc, err := c.compile(proj, a.Pipeline, opt)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		for _, tenant := range tenantsOf(g) {
			rules := g.ActiveRules(tenant)[runner.BeforeToolCall]
			for _, tool := range slices.Sorted(maps.Keys(cc.uses)) {
				def := proj.Tools[tool]
				info := &runner.ToolInfo{Name: tool, CapabilityKey: def.Capability, Mutating: def.Mutating, Tags: def.Tags}
				if ok, err := match.EvalBool(map[string]any{"tool": info.Vars()}); err != nil || !ok {
					continue
				}
				gap(&out, def, name, tenant, cc.uses[tool], rules, info)
			}
		}
	}
	return out.Sorted(), nil
}

// gap reports tool def when no rule covers it for agent and tenant, or
// only rules whose condition depends on more than the tool.
func gap(out *Diagnostics, def *ToolDef, agent, tenant string, paths []string, rules []*runner.Rule, t *runner.ToolInfo) {
	var conditional []string
	for _, r := range rules {
		if r.Skill != "" || !slices.Contains(gateActions, r.Action.Kind) || !r.Guard.Admits(t) {
			continue
		}
		switch holdsFor(r.When, t) {
		case holds:
			return
		case unknown:
			conditional = append(conditional, r.Key)
		}
	}
	who := "agent " + agent
	if tenant != "" {
		who += " for tenant " + tenant
	}
	pos := def.Doc.Pos(mapGet(def.Doc.Get("metadata"), "name"))
	via := strings.Join(paths, "; ")
	if len(conditional) > 0 {
		out.Warnf(pos, CodeGateConditional, "%s calls tool %s (%s) gated only when a condition on the call or the state holds: %s",
			who, def.Name, via, strings.Join(conditional, ", ")).Hint = "a rule whose condition the tool alone satisfies gates every call"
		return
	}
	out.Errorf(pos, CodeGateMissing, "%s can call tool %s (%s) with no before_tool_call rule that requires a human or stops the call (require_hitl, deny, abort)",
		who, def.Name, via).Hint = "add a require_hitl rule that covers it, e.g. on: before_tool_call, when: tool.name == \"" + def.Name + "\""
}

// tenantsOf lists the tenants a graph's rules tell apart: none ("") and
// each tenant with rules of its own.
func tenantsOf(g *runner.Graph) []string {
	out := []string{""}
	for _, r := range g.Rules {
		if r.Tenant != "" && !slices.Contains(out, r.Tenant) {
			out = append(out, r.Tenant)
		}
	}
	return out
}
