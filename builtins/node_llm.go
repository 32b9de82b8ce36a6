package builtins

import (
	"context"
	"fmt"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// LLMConfig is the with: block of an llm node.
type LLMConfig struct {
	// Model names a Model document; empty: the agent's model.
	Model dsl.ModelRef `yaml:"model"`
	// Messages is the conversation sent; the reply is appended to it
	// unless Append is false.
	Messages dsl.FieldRef `yaml:"messages"`
	Append   *bool        `yaml:"append"`
	// System and Prompt add a system and a user message to this call
	// only; they are not kept in Messages.
	System dsl.TemplateText `yaml:"system"`
	Prompt dsl.TemplateText `yaml:"prompt"`
	// Tools are offered on every call (core tools), before the agent's
	// and the loaded skills'; Skills names skills loaded at run time.
	Tools  []dsl.ToolRef  `yaml:"tools"`
	Skills dsl.Expression `yaml:"skills" kind:"array"`
	// Pending receives the tool calls the reply asks for (default
	// pending_tool_calls, when the pipeline declares it).
	Pending dsl.FieldRef `yaml:"pending"`
	// Reply receives the reply's text.
	Reply dsl.FieldRef `yaml:"reply"`
	// OutputSchema asks for a structured reply, validated and written to
	// Output; Methods × Attempts bound the tries.
	OutputSchema dsl.JSONSchemaDoc `yaml:"output_schema"`
	Output       dsl.FieldRef      `yaml:"output"`
	Methods      []string          `yaml:"methods"`
	Attempts     int               `yaml:"attempts"`
	// Phase labels the call (initial, synthesis) in turn_metrics and in
	// the state field llm_phase when declared.
	Phase string `yaml:"phase"`
	// Skip, when true, skips the call: the node only clears Pending and
	// writes its phase.
	Skip   dsl.Condition `yaml:"skip"`
	Stream bool          `yaml:"stream"`
	Params runner.Params `yaml:"params"`
}

// LLMNode calls a model.
var LLMNode = dsl.NodeType{
	Name: "llm",
	Doc:  "Calls a model with the conversation in messages and the visible tools (core, the agent's, the loaded skills'); appends the reply, writes the tool calls it asks for to pending_tool_calls, or a structured output validated against output_schema. Usage, cost and latency go to the run's budget and to turn_metrics.",
	Schema: `{
  "type": "object",
  "properties": {
    "model": {"$ref": "defs.json#/$defs/name"},
    "messages": {"$ref": "defs.json#/$defs/name"},
    "append": {"type": "boolean"},
    "system": {"type": "string"},
    "prompt": {"type": "string"},
    "tools": {"$ref": "defs.json#/$defs/names"},
    "skills": {"$ref": "defs.json#/$defs/expression"},
    "pending": {"$ref": "defs.json#/$defs/name"},
    "reply": {"$ref": "defs.json#/$defs/name"},
    "output_schema": {"$ref": "defs.json#/$defs/jsonSchema"},
    "output": {"$ref": "defs.json#/$defs/name"},
    "methods": {"type": "array", "items": {"enum": ["schema", "tool", "prompt"]}, "minItems": 1, "uniqueItems": true},
    "attempts": {"type": "integer", "minimum": 1, "maximum": 10},
    "phase": {"type": "string"},
    "skip": {"$ref": "defs.json#/$defs/expression"},
    "stream": {"type": "boolean"},
    "params": {
      "type": "object",
      "properties": {
        "temperature": {"type": "number", "minimum": 0, "maximum": 2},
        "top_p": {"type": "number", "minimum": 0, "maximum": 1},
        "max_tokens": {"type": "integer", "minimum": 1},
        "stop": {"type": "array", "items": {"type": "string"}},
        "seed": {"type": "integer"}
      },
      "additionalProperties": false
    }
  },
  "dependentRequired": {"output_schema": ["output"], "output": ["output_schema"]},
  "additionalProperties": false
}`,
	Config: func() any { return &LLMConfig{Messages: dsl.FieldRef{Name: "messages"}} },
	Build:  buildLLM,
}

// Conventional state fields an llm node writes when the pipeline declares
// them.
const (
	pendingField = "pending_tool_calls"
	phaseField   = "llm_phase"
)

func buildLLM(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*LLMConfig)
	m, err := b.Model(c.Model.Name)
	if err != nil {
		return nil, err
	}
	n := &llmNode{cfg: c, model: m, persona: persona(b, ""), metrics: b.HasField(metricsField), appendReply: c.Append == nil || *c.Append,
		params: mergeParams(m.Def.Params, c.Params), pending: c.Pending.Name, phase: b.HasField(phaseField) && c.Phase != ""}
	if n.pending == "" && b.HasField(pendingField) {
		n.pending = pendingField
	}
	if n.tools, err = newToolSet(b, c.Tools, c.Skills.Program); err != nil {
		return nil, err
	}
	if c.OutputSchema.Doc != nil {
		if n.schema, err = newOutputSchema(c.Output.Name, c.OutputSchema.Doc); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// mergeParams is the model's default parameters overridden by the node's.
func mergeParams(def, node runner.Params) runner.Params {
	p := def
	if node.Temperature != nil {
		p.Temperature = node.Temperature
	}
	if node.TopP != nil {
		p.TopP = node.TopP
	}
	if node.MaxTokens != 0 {
		p.MaxTokens = node.MaxTokens
	}
	if node.Stop != nil {
		p.Stop = node.Stop
	}
	if node.Seed != nil {
		p.Seed = node.Seed
	}
	return p
}

type llmNode struct {
	cfg         *LLMConfig
	model       *dsl.Model
	params      runner.Params
	tools       *toolSet
	schema      *outputSchema
	persona     string
	pending     string
	appendReply bool
	metrics     bool // the pipeline keeps turn_metrics
	phase       bool // the pipeline keeps llm_phase
}

// Run makes the call (or skips it) and returns the reply as an update.
func (n *llmNode) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	vars := in.Vars()
	upd := runner.Update{}
	if n.phase {
		upd[phaseField] = n.cfg.Phase
	}
	if skip, err := evalCond(n.cfg.Skip.Program, vars, false, "skip"); err != nil || skip {
		n.clearPending(upd)
		return upd, err
	}
	msgs, err := n.messages(in.State, vars)
	if err != nil {
		return nil, runner.Permanent(err)
	}
	c := &caller{model: n.model, params: n.params, phase: n.cfg.Phase, stream: n.cfg.Stream}
	if n.schema != nil {
		err = n.structured(ctx, in, c, msgs, upd)
	} else {
		err = n.converse(ctx, in, c, msgs, vars, upd)
	}
	c.record(upd, n.metrics)
	return upd, err
}

// converse makes a plain call, offering the visible tools.
func (n *llmNode) converse(ctx context.Context, in *runner.Input, c *caller, msgs []runner.Message, vars map[string]any, upd runner.Update) error {
	o, err := n.tools.visible(vars)
	if err != nil {
		return runner.Permanent(err)
	}
	c.skills = o.loaded
	resp, err := c.chat(ctx, in, &runner.ChatRequest{Messages: msgs, Tools: schemas(o.tools)})
	if err != nil {
		return err
	}
	reply := messageValue(resp.Message)
	reply["id"] = replyID(c.last.Call, msgs, resp.Message)
	if n.appendReply {
		upd[n.cfg.Messages.Name] = []any{reply}
	}
	if n.cfg.Reply.Name != "" {
		upd[n.cfg.Reply.Name] = resp.Message.Content
	}
	if n.pending != "" {
		upd[n.pending] = callValues(resp.Message.ToolCalls)
	} else if len(resp.Message.ToolCalls) > 0 {
		return runner.Permanent(fmt.Errorf("the model asked for tools %v, but the pipeline has no %s field to hold the calls", namesOf(resp.Message.ToolCalls, func(c runner.ToolCallRequest) string { return c.Name }), pendingField))
	}
	return nil
}

// structured asks for a reply satisfying the output schema.
func (n *llmNode) structured(ctx context.Context, in *runner.Input, c *caller, msgs []runner.Message, upd runner.Update) error {
	methods, attempts := n.cfg.Methods, n.cfg.Attempts
	if len(methods) == 0 {
		methods = []string{MethodSchema, MethodTool, MethodPrompt}
	}
	if attempts == 0 {
		attempts = 2
	}
	v, err := c.structured(ctx, in, msgs, n.schema, methods, attempts)
	if err != nil {
		return err
	}
	upd[n.cfg.Output.Name] = v
	n.clearPending(upd)
	return nil
}

// messages is the conversation of this call: the state's messages, the
// persona when they hold no system message, and the node's own system
// and user messages.
func (n *llmNode) messages(state runner.State, vars map[string]any) ([]runner.Message, error) {
	raw, _ := state[n.cfg.Messages.Name].([]any)
	msgs := messagesOf(promptFirst(raw))
	if !hasSystem(msgs) && n.persona != "" {
		msgs = append([]runner.Message{{Role: "system", Content: n.persona, Cache: true}}, msgs...)
	}
	for _, t := range []struct {
		role string
		tmpl *dsl.Template
	}{{"system", n.cfg.System.Template}, {"user", n.cfg.Prompt.Template}} {
		if t.tmpl == nil {
			continue
		}
		text, err := t.tmpl.Render(vars)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.role, err)
		}
		msgs = append(msgs, runner.Message{Role: t.role, Content: text})
	}
	return msgs, nil
}

func (n *llmNode) clearPending(upd runner.Update) {
	if n.pending != "" {
		upd[n.pending] = []any{}
	}
}

func hasSystem(msgs []runner.Message) bool {
	for _, m := range msgs {
		if m.Role == "system" {
			return true
		}
	}
	return false
}

// evalCond evaluates an optional condition, absent when it is not set;
// what names it in an error.
func evalCond(p *dsl.Program, vars map[string]any, absent bool, what string) (bool, error) {
	if p == nil {
		return absent, nil
	}
	ok, err := p.EvalBool(vars)
	if err != nil {
		return false, runner.Permanent(fmt.Errorf("%s: %w", what, err))
	}
	return ok, nil
}
