package builtins

import (
	"context"
	"fmt"
	"strings"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// PromptConfig is the with: block of a prompt node.
type PromptConfig struct {
	// Messages receives the system messages.
	Messages dsl.FieldRef `yaml:"messages"`
	// Persona is the platform default, used when neither the agent nor
	// its root skill (its first) has one.
	Persona string `yaml:"persona"`
	// User is the user's identity, an object with name and role.
	User dsl.Expression `yaml:"user"`
	// Skills names skills loaded at run time, besides the agent's.
	Skills dsl.Expression `yaml:"skills" kind:"array"`
}

// PromptNode assembles the system messages.
var PromptNode = dsl.NodeType{
	Name: "prompt",
	Doc:  "Assembles the system messages: the stable prefix first — the persona (the agent's, else its root skill's, else the platform default) and a user-identity block, marked as the prompt-cache breakpoint — then each loaded skill's context templates as their own system messages. Running again replaces them.",
	Schema: `{
  "type": "object",
  "properties": {
    "messages": {"$ref": "defs.json#/$defs/name"},
    "persona": {"type": "string"},
    "user": {"$ref": "defs.json#/$defs/expression"},
    "skills": {"$ref": "defs.json#/$defs/expression"}
  },
  "additionalProperties": false
}`,
	Config: func() any { return &PromptConfig{Messages: dsl.FieldRef{Name: "messages"}} },
	Build:  buildPrompt,
}

// DefaultPersona is the persona when no agent, skill or node gives one.
const DefaultPersona = "You are a helpful assistant."

// promptID prefixes the ids of the messages a prompt node writes; an llm
// node sends them first, whatever the conversation before them.
const promptID = "prompt:"

func buildPrompt(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*PromptConfig)
	n := &promptNode{cfg: c, persona: persona(b, c.Persona), skills: newSkillSet(b, c.Skills.Program), agent: map[string]any{}}
	if a := b.Agent; a != nil {
		n.agent = map[string]any{"name": a.Name, "model": a.Model, "skills": toAny(a.Skills)}
	}
	return n, nil
}

// persona resolves the persona by precedence: the agent's, its root
// skill's, the platform default, DefaultPersona.
func persona(b *dsl.Build, platform string) string {
	if a := b.Agent; a != nil {
		if a.Persona != "" {
			return a.Persona
		}
		if len(a.Skills) > 0 {
			if s := b.Skill(a.Skills[0]); s != nil && s.Persona != "" {
				return s.Persona
			}
		}
	}
	if platform != "" {
		return platform
	}
	return DefaultPersona
}

type promptNode struct {
	cfg     *PromptConfig
	persona string
	agent   map[string]any
	skills  *skillSet
}

// Run renders the system messages.
func (n *promptNode) Run(_ context.Context, in *runner.Input) (runner.Update, error) {
	vars := in.Vars()
	u, err := evalOr(n.cfg.User.Program, vars, nil)
	if err != nil {
		return nil, runner.Permanent(fmt.Errorf("user: %w", err))
	}
	user := identity(u)
	base := map[string]any{"id": promptID + "base", "role": "system", "content": n.persona + "\n\n" + userBlock(user), "cache": true}
	msgs := []any{base}
	loaded, err := n.skills.loaded(vars)
	if err != nil {
		return nil, runner.Permanent(err)
	}
	tvars := map[string]any{"state": in.State, "agent": n.agent, "user": user}
	for _, name := range loaded {
		for i, t := range n.skills.defs[name].Context {
			text, err := t.Render(tvars)
			if err != nil {
				return nil, runner.Permanent(fmt.Errorf("skill %s: context %d: %w", name, i+1, err))
			}
			msgs = append(msgs, map[string]any{"id": fmt.Sprintf("%sskill:%s:%d", promptID, name, i+1), "role": "system", "content": text})
		}
	}
	return runner.Update{n.cfg.Messages.Name: msgs}, nil
}

// identity is the user's name and role; the name falls back to "user".
func identity(user any) map[string]any {
	u, _ := user.(map[string]any)
	id := map[string]any{"name": str(u["name"]), "role": str(u["role"])}
	if id["name"] == "" {
		id["name"] = "user"
	}
	return id
}

// userBlock is the user-identity block of the stable prefix.
func userBlock(id map[string]any) string {
	var b strings.Builder
	b.WriteString("=== User ===\nName: " + id["name"].(string))
	if role := id["role"].(string); role != "" {
		b.WriteString("\nRole: " + role)
	}
	return b.String()
}

func evalOr(p *dsl.Program, vars map[string]any, def any) (any, error) {
	if p == nil {
		return def, nil
	}
	return p.Eval(vars)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
