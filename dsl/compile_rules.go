package dsl

import (
	"fmt"
	"maps"
	"slices"

	"github.com/runner-dev/runner/runner"
)

// rules compiles the rules a graph obeys, in precedence order: platform
// rule sets (by name), the agent's (as listed), every skill's (each
// active only while its skill is loaded), then tenants' (each replacing,
// in its tenant's runs, the rule of the same key). A later rule with the
// key of an earlier one replaces it: an agent's rule overrides the
// platform's.
func (c *graphCompiler) rules(p *Pipeline, a *Agent) ([]*runner.Rule, error) {
	var out []*runner.Rule
	add := func(rsName, scope, skill string) error {
		rs := c.proj.RuleSets[rsName]
		c.defs[KindRuleSet+"/"+rsName] = hashDoc(rs.Doc)
		for _, r := range rs.Rules {
			rule, err := compileRule(r, scope, skill, rs.Tenant)
			if err != nil {
				return compileError(r.Pos, codeOf(err), fmt.Errorf("rule %s: %w", r.Key, err))
			}
			i := slices.IndexFunc(out, func(o *runner.Rule) bool { return o.Key == r.Key && o.Tenant == "" })
			if i >= 0 && rs.Tenant == "" {
				if out[i].Locked { // the lock stays with the key
					if why := rule.Weakens(out[i]); why != "" {
						return compileError(r.ActionPos, CodeRuleLocked, fmt.Errorf("rule %s weakens the locked rule of its key: %s", r.Key, why))
					}
					rule.Locked = true
				}
				out[i] = rule
				continue
			}
			out = append(out, rule)
		}
		return nil
	}
	names := slices.Sorted(maps.Keys(c.proj.RuleSets))
	for _, n := range names {
		if rs := c.proj.RuleSets[n]; rs.Platform && rs.Tenant == "" && rs.appliesTo(p) {
			if err := add(n, "platform", ""); err != nil {
				return nil, err
			}
		}
	}
	if a != nil {
		for _, n := range a.Rules {
			if err := add(n, "agent", ""); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(c.proj.Skills)) {
		for _, n := range c.proj.Skills[s].Rules {
			if err := add(n, "skill", s); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range names {
		if rs := c.proj.RuleSets[n]; rs.Tenant != "" && rs.appliesTo(p) {
			if err := add(n, "tenant", ""); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// compileRule turns a checked rule into the runtime's.
func compileRule(r *Rule, scope, skill, tenant string) (*runner.Rule, error) {
	rule := &runner.Rule{Key: r.Key, On: r.On, Scope: scope, Skill: skill, Tenant: tenant, Action: runner.Action{Kind: r.Action}, Locked: r.Locked}
	if r.When != nil {
		rule.When, rule.Guard = r.When.Program, guardOf(r.When)
	}
	if r.Text != nil {
		rule.Action.Text = r.Text
	}
	if len(r.Set) > 0 {
		rule.Action.Set = map[string]runner.Evaluator{}
		for f, e := range r.Set {
			rule.Action.Set[f] = e.Program
		}
	}
	if r.HITL != nil {
		h := *r.HITL
		if h.ResumeSchema != nil {
			s, err := CompileJSONSchema(h.ResumeSchema)
			if err != nil {
				return nil, fmt.Errorf("resume_schema: %w", err)
			}
			h.Check = s.Check
		}
		rule.Action.HITL = &h
	}
	return rule, nil
}
