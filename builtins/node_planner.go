package builtins

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// PlannerConfig is the with: block of a planner node.
type PlannerConfig struct {
	// Tools the planner may choose from.
	Tools []dsl.ToolRef `yaml:"tools"`
	// Fallback is the deterministic sequence: the first tool not yet in
	// Completed is chosen; when all are done the decision is COMPLETE.
	Fallback []dsl.ToolRef `yaml:"fallback"`
	// LLM, when set, lets a model decide; the fallback sequence decides
	// when it cannot.
	LLM *PlannerLLMConfig `yaml:"llm"`
	// Completed is read; Next, Step and Decisions are written.
	Completed dsl.FieldRef `yaml:"completed"`
	Next      dsl.FieldRef `yaml:"next"`
	Step      dsl.FieldRef `yaml:"step"`
	Decisions dsl.FieldRef `yaml:"decisions"`
}

// PlannerLLMConfig is the llm: block of a planner: the model, when it is
// asked, how long it may take, what it is told, and the constraints its
// decision must meet.
type PlannerLLMConfig struct {
	// Model names a Model document; empty: the agent's model.
	Model dsl.ModelRef `yaml:"model"`
	// When, if false, leaves the decision to the fallback sequence.
	When dsl.Condition `yaml:"when"`
	// Timeout bounds the call (default 10s); an overrun falls back.
	Timeout time.Duration `yaml:"timeout"`
	// System and Prompt are the system and user messages; they also see
	// tools, the planner's tools as [{name, description}].
	System dsl.TemplateText `yaml:"system" vars:"tools"`
	Prompt dsl.TemplateText `yaml:"prompt" vars:"tools"`
	// Constraints must all hold for the model's decision.
	Constraints []PlannerConstraint `yaml:"constraints"`
}

// PlannerConstraint is a rule the model's decision must satisfy. Rule
// sees decision ({tool, reason, confidence}) besides state, input and
// budget; Message says what it means (default: the rule's text).
type PlannerConstraint struct {
	Rule    dsl.Condition `yaml:"rule" vars:"decision"`
	Message string        `yaml:"message"`
}

// PlannerNode picks the next tool to run, or COMPLETE.
var PlannerNode = dsl.NodeType{
	Name: "planner",
	Doc: "Picks the next tool, or COMPLETE. With llm:, a model decides (a structured reply {tool, reason, confidence}, one try, within llm.timeout); " +
		"its tool must be one of tools (or COMPLETE) and every constraint must hold. Otherwise — or without llm:, or when llm.when is false — " +
		"the fallback sequence decides: its first tool not yet completed. Budget errors, interrupts and cancellation are not fallen back from. " +
		"Appends a PlannerDecision {step, selected_tool, reason, confidence, decided_by (llm or fallback), fallback_reason, timestamp}, " +
		"increments the step counter, and records the call in turn_metrics when the pipeline declares it.",
	Schema: `{
  "type": "object",
  "properties": {
    "tools": {"$ref": "defs.json#/$defs/names", "minItems": 1},
    "fallback": {"$ref": "defs.json#/$defs/names", "minItems": 1},
    "llm": {
      "type": "object",
      "properties": {
        "model": {"$ref": "defs.json#/$defs/name"},
        "when": {"$ref": "defs.json#/$defs/expression"},
        "timeout": {"$ref": "defs.json#/$defs/duration"},
        "system": {"type": "string"},
        "prompt": {"type": "string"},
        "constraints": {
          "type": "array",
          "items": {
            "type": "object",
            "properties": {
              "rule": {"$ref": "defs.json#/$defs/expression"},
              "message": {"type": "string"}
            },
            "required": ["rule"],
            "additionalProperties": false
          }
        }
      },
      "required": ["prompt"],
      "additionalProperties": false
    },
    "completed": {"$ref": "defs.json#/$defs/name"},
    "next": {"$ref": "defs.json#/$defs/name"},
    "step": {"$ref": "defs.json#/$defs/name"},
    "decisions": {"$ref": "defs.json#/$defs/name"}
  },
  "required": ["tools", "fallback"],
  "additionalProperties": false
}`,
	Config: func() any {
		return &PlannerConfig{
			Completed: dsl.FieldRef{Name: "completed_steps"}, Next: dsl.FieldRef{Name: "next_action"},
			Step: dsl.FieldRef{Name: "step_count"}, Decisions: dsl.FieldRef{Name: "planner_decisions"},
		}
	},
	Vars: map[string]*dsl.Type{"decision": dsl.ObjectOf(map[string]*dsl.Type{
		"tool": dsl.StringType, "reason": dsl.StringType, "confidence": dsl.NumberType,
	})},
	Check: checkPlanner,
	Build: buildPlanner,
}

// errNotInTools refuses a fallback tool the planner may not choose.
func errNotInTools(tool string) error { return fmt.Errorf("fallback tool %s is not in tools", tool) }

// checkPlanner refuses fallback tools that are not among the tools.
func checkPlanner(cfg any, chk *dsl.NodeCheck) {
	c := cfg.(*PlannerConfig)
	for i, t := range c.Fallback {
		if !slices.ContainsFunc(c.Tools, func(r dsl.ToolRef) bool { return r.Name == t.Name }) {
			chk.Errorf("fallback."+strconv.Itoa(i), "%v", errNotInTools(t.Name)).Hint = "add it to tools, or take it out of fallback"
		}
	}
}

// Complete is the planner's decision to finish.
const Complete = "COMPLETE"

// defaultPlannerTimeout bounds a planner's LLM call when llm.timeout is
// not set (the seed's timeout_seconds).
const defaultPlannerTimeout = 10 * time.Second

func buildPlanner(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*PlannerConfig)
	allowed := map[string]bool{}
	for _, t := range c.Tools {
		allowed[t.Name] = true
	}
	n := &planner{completed: c.Completed.Name, next: c.Next.Name, step: c.Step.Name, decisions: c.Decisions.Name}
	for _, t := range c.Fallback {
		if !allowed[t.Name] {
			return nil, errNotInTools(t.Name)
		}
		n.fallback = append(n.fallback, t.Name)
	}
	if c.LLM != nil {
		var err error
		if n.llm, err = buildPlannerLLM(c.LLM, c.Tools, b); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// buildPlannerLLM resolves the model and builds the decision's schema
// and the tool catalogue the templates see.
func buildPlannerLLM(c *PlannerLLMConfig, tools []dsl.ToolRef, b *dsl.Build) (*plannerLLM, error) {
	m, err := b.Model(c.Model.Name)
	if err != nil {
		return nil, err
	}
	l := &plannerLLM{cfg: c, model: m, timeout: c.Timeout, metrics: b.HasField(metricsField)}
	if l.timeout <= 0 {
		l.timeout = defaultPlannerTimeout
	}
	enum := []any{}
	for _, t := range tools {
		spec, err := b.Tool(t.Name)
		if err != nil {
			return nil, err
		}
		l.catalogue = append(l.catalogue, map[string]any{"name": t.Name, "description": spec.Description})
		enum = append(enum, t.Name)
	}
	consts := map[string]any{"tools": l.catalogue}
	if c.System.Template != nil {
		l.system = c.System.Template.With(consts)
	}
	l.prompt = c.Prompt.Template.With(consts)
	l.schema, err = newOutputSchema("planner_decision", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"tool":       map[string]any{"enum": append(enum, Complete)},
			"reason":     map[string]any{"type": "string"},
			"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		},
		"required": []any{"tool"},
	})
	return l, err
}

// planner decides with its model when it has one, else (or when the model
// cannot) picks the first fallback tool not yet completed.
type planner struct {
	fallback                         []string
	llm                              *plannerLLM
	completed, next, step, decisions string
}

// Run decides the next action and logs a PlannerDecision.
func (p *planner) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	step := toInt(in.State[p.step]) + 1
	upd := runner.Update{p.step: step}
	d, err := p.decide(ctx, in, upd)
	if err != nil {
		return nil, err
	}
	d["step"], d["timestamp"] = step, in.Run.Now().UTC().Format(time.RFC3339Nano)
	upd[p.next], upd[p.decisions] = d["selected_tool"], d
	return upd, nil
}

// decide returns the decision: the model's when it gives a valid one, the
// fallback sequence's otherwise, with the reason it was needed.
func (p *planner) decide(ctx context.Context, in *runner.Input, upd runner.Update) (map[string]any, error) {
	if p.llm == nil {
		return p.sequence(in.State), nil
	}
	d, why, err := p.llm.decide(ctx, in, upd)
	if err != nil || why == "" {
		return d, err
	}
	d = p.sequence(in.State)
	d["fallback_reason"] = why
	return d, nil
}

// sequence is the deterministic decision: the first fallback tool not yet
// completed, or COMPLETE.
func (p *planner) sequence(state runner.State) map[string]any {
	done, _ := state[p.completed].([]any)
	choice, reason := Complete, "every tool of the fallback sequence has run"
	for _, t := range p.fallback {
		if !slices.Contains(done, any(t)) {
			choice, reason = t, "fallback sequence: first tool not yet completed"
			break
		}
	}
	return map[string]any{"selected_tool": choice, "reason": reason, "confidence": 1.0, "decided_by": "fallback"}
}

// plannerLLM is a planner's model: it asks for a decision and checks it.
type plannerLLM struct {
	cfg       *PlannerLLMConfig
	model     *dsl.Model
	timeout   time.Duration
	schema    *outputSchema
	catalogue []any // the templates' tools
	metrics   bool  // the pipeline keeps turn_metrics
	// the templates, their expressions of the tools alone rendered
	system, prompt *dsl.Template
}

// decide asks the model and checks its decision. It returns the decision,
// or why the fallback must decide instead; err is an error that must not
// be fallen back from.
func (l *plannerLLM) decide(ctx context.Context, in *runner.Input, upd runner.Update) (map[string]any, string, error) {
	vars := in.Vars()
	if use, err := evalCond(l.cfg.When.Program, vars, true, "llm.when"); err != nil || !use {
		return nil, "llm.when is false", err
	}
	d, why, err := l.ask(ctx, in, vars, upd)
	if err != nil || why != "" {
		return nil, why, err
	}
	if why := l.refusal(d, vars); why != "" {
		return nil, why, nil
	}
	return map[string]any{"selected_tool": d["tool"], "reason": d["reason"], "confidence": d["confidence"], "decided_by": "llm"}, "", nil
}

// ask makes the call, bounded by the timeout, and returns the decision
// {tool, reason, confidence}, or why there is none.
func (l *plannerLLM) ask(ctx context.Context, in *runner.Input, vars map[string]any, upd runner.Update) (map[string]any, string, error) {
	msgs, err := l.messages(vars)
	if err != nil {
		return nil, "", runner.Permanent(err)
	}
	c := &caller{model: l.model, params: l.model.Def.Params, phase: "planner"}
	defer c.record(upd, l.metrics)
	callCtx, cancel := runner.WithTimeout(ctx, l.timeout)
	defer cancel()
	v, err := c.structured(callCtx, in, msgs, l.schema, []string{MethodSchema}, 1)
	switch {
	case err == nil:
		return decisionOf(v), "", nil
	case mustPropagate(ctx, err):
		return nil, "", err
	case runner.TimedOut(callCtx):
		return nil, fmt.Sprintf("llm timed out after %s", l.timeout), nil
	}
	if _, ok := errors.AsType[*runner.ProviderError](err); ok {
		return nil, "llm call failed: " + err.Error(), nil
	}
	return nil, "llm answer invalid: " + err.Error(), nil
}

// messages renders the system and user messages.
func (l *plannerLLM) messages(vars map[string]any) ([]runner.Message, error) {
	vars["tools"] = l.catalogue
	var msgs []runner.Message
	if l.system != nil {
		text, err := l.system.Render(vars)
		if err != nil {
			return nil, fmt.Errorf("llm.system: %w", err)
		}
		msgs = append(msgs, runner.Message{Role: "system", Content: text})
	}
	text, err := l.prompt.Render(vars)
	if err != nil {
		return nil, fmt.Errorf("llm.prompt: %w", err)
	}
	return append(msgs, runner.Message{Role: "user", Content: text}), nil
}

// refusal says why a decision is refused: a constraint that does not
// hold. (A tool the planner does not have never gets here: the reply is
// validated against the schema's enum in code, whatever the provider does
// with the schema.) It is "" for a valid decision.
func (l *plannerLLM) refusal(d map[string]any, vars map[string]any) string {
	tool, _ := d["tool"].(string)
	vars["decision"] = d
	for _, c := range l.cfg.Constraints {
		what := c.Message
		if what == "" {
			what = c.Rule.Program.Text()
		}
		ok, err := c.Rule.Program.EvalBool(vars)
		if err != nil {
			return fmt.Sprintf("llm chose %s, and the constraint %q could not be checked: %v", tool, what, err)
		}
		if !ok {
			return fmt.Sprintf("llm chose %s, which breaks a constraint: %s", tool, what)
		}
	}
	return ""
}

// decisionOf reads a structured reply as {tool, reason, confidence};
// reason is "" and confidence nil when the reply leaves them out.
func decisionOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	reason, _ := m["reason"].(string)
	return map[string]any{"tool": m["tool"], "reason": reason, "confidence": m["confidence"]}
}

// mustPropagate reports whether a failed call must fail the node rather
// than fall back: a budget exceeded, an interrupt, or the node's own
// context ended (a cancelled run, a node or run timeout).
func mustPropagate(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	if _, spent := errors.AsType[*runner.BudgetError](err); spent {
		return true
	}
	_, paused := errors.AsType[*runner.Interrupt](err)
	return paused
}

// toInt reads a JSON-like integer (nil is 0).
func toInt(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}
