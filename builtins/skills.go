package builtins

import (
	"fmt"
	"slices"
	"time"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// skillSet is the skills a node may load: the agent's, with what they
// require, and — when a skills expression names more at run time — any
// skill of the project.
type skillSet struct {
	static []string
	expr   *dsl.Program
	defs   map[string]*dsl.SkillDef // every skill the node may load
}

func newSkillSet(b *dsl.Build, expr *dsl.Program) *skillSet {
	s := &skillSet{expr: expr, defs: map[string]*dsl.SkillDef{}}
	if b.Agent != nil {
		s.static = requiredSkills(b, b.Agent.Skills)
	}
	loadable := s.static
	if expr != nil {
		loadable = sortedKeys(b.Project.Skills)
	}
	for _, name := range loadable {
		s.defs[name] = b.Skill(name)
	}
	return s
}

// loaded returns the agent's skills followed by those the expression
// names, without repeats; a name that is no skill is an error.
func (s *skillSet) loaded(vars map[string]any) ([]string, error) {
	if s.expr == nil {
		return s.static, nil
	}
	v, err := s.expr.Eval(vars)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	out := slices.Clone(s.static)
	list, _ := v.([]any)
	for _, item := range list {
		name := fmt.Sprint(item)
		if s.defs[name] == nil {
			return nil, fmt.Errorf("skills: no skill named %q", name)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// requiredSkills returns skills with every skill they require, in order.
func requiredSkills(b *dsl.Build, skills []string) []string {
	var out []string
	seen := map[string]bool{}
	var add func(string)
	add = func(name string) {
		s := b.Skill(name)
		if seen[name] || s == nil {
			return
		}
		seen[name] = true
		out = append(out, name)
		for _, r := range s.Requires {
			add(r)
		}
	}
	for _, s := range skills {
		add(s)
	}
	return out
}

// toolSet is the tools an llm or tools node can see: its own (core) tools,
// the agent's, and those of the skills loaded — the agent's skills with
// what they require, and those a skills expression names at run time —
// de-duplicated by name, in that order.
type toolSet struct {
	core    []*runner.ToolSpec
	skills  *skillSet
	bySkill map[string][]*runner.ToolSpec // of every skill the node may load
}

// newToolSet compiles what a node may offer.
func newToolSet(b *dsl.Build, core []dsl.ToolRef, skills *dsl.Program) (*toolSet, error) {
	ts := &toolSet{skills: newSkillSet(b, skills), bySkill: map[string][]*runner.ToolSpec{}}
	names := namesOf(core, func(r dsl.ToolRef) string { return r.Name })
	if b.Agent != nil {
		names = append(names, b.Agent.Tools...)
	}
	var err error
	if ts.core, err = specs(b, names); err != nil {
		return nil, err
	}
	for name, def := range ts.skills.defs {
		if ts.bySkill[name], err = specs(b, def.Tools); err != nil {
			return nil, fmt.Errorf("skill %s: %w", name, err)
		}
	}
	return ts, nil
}

func specs(b *dsl.Build, names []string) ([]*runner.ToolSpec, error) {
	out := make([]*runner.ToolSpec, 0, len(names))
	for _, n := range names {
		spec, err := b.Tool(n)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

// offer is what a node offers at one moment: the visible tools, the
// skill offering each (none for core and agent tools), the loaded skills.
type offer struct {
	tools  []*runner.ToolSpec
	skill  map[string]string
	loaded []string
}

// visible returns the tools offered in the state described by vars.
func (ts *toolSet) visible(vars map[string]any) (*offer, error) {
	loaded, err := ts.skills.loaded(vars)
	if err != nil {
		return nil, err
	}
	o := &offer{skill: map[string]string{}, loaded: loaded}
	seen := map[string]bool{}
	add := func(skill string, specs []*runner.ToolSpec) {
		for _, s := range specs {
			if !seen[s.Name] {
				seen[s.Name] = true
				o.tools = append(o.tools, s)
				if skill != "" {
					o.skill[s.Name] = skill
				}
			}
		}
	}
	add("", ts.core)
	for _, s := range loaded {
		add(s, ts.bySkill[s])
	}
	return o, nil
}

// find returns the offered tool called name.
func (o *offer) find(name string) *runner.ToolSpec {
	for _, s := range o.tools {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// request is a call of an offered tool.
func (o *offer) request(id string, spec *runner.ToolSpec, args map[string]any, timeout time.Duration) runner.ToolRequest {
	return runner.ToolRequest{ID: id, Spec: spec, Args: args, Timeout: timeout, Skill: o.skill[spec.Name], Skills: o.loaded}
}

// schemas is what the model sees of tools.
func schemas(specs []*runner.ToolSpec) []runner.ToolSchema {
	out := make([]runner.ToolSchema, 0, len(specs))
	for _, s := range specs {
		out = append(out, runner.ToolSchema{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return out
}

// namesOf maps a list to the names it holds.
func namesOf[T any](xs []T, name func(T) string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, name(x))
	}
	return out
}
