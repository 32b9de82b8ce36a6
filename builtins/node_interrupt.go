package builtins

import (
	"context"
	"fmt"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// InterruptConfig is the with: block of an interrupt node.
type InterruptConfig struct {
	// Kind labels the pause: approval, clarification, input, ...
	Kind string `yaml:"kind"`
	// Message is shown to the human; Payload carries data for the UI.
	Message dsl.TemplateText          `yaml:"message"`
	Payload map[string]dsl.Expression `yaml:"payload"`
	// ResumeSchema validates the resume value, which is written to Into:
	// as it is, or as Value, an expression over it (resume), computes it.
	ResumeSchema dsl.JSONSchemaDoc `yaml:"resume_schema"`
	Into         dsl.FieldRef      `yaml:"into"`
	Value        dsl.Expression    `yaml:"value" vars:"resume"`
	// When, if set, pauses only when it holds; otherwise the node passes.
	When dsl.Condition `yaml:"when"`
}

// InterruptNode pauses the thread until a human resumes it.
var InterruptNode = dsl.NodeType{
	Name: "interrupt",
	Doc:  "Pauses the thread with a payload until resumed (only when `when` holds, if set); the resume value is validated against resume_schema and written to the `into` field, as it is or as `value` (an expression over `resume`) computes it.",
	Schema: `{
  "type": "object",
  "properties": {
    "kind": {"type": "string"},
    "message": {"type": "string"},
    "payload": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}},
    "resume_schema": {"$ref": "defs.json#/$defs/jsonSchema"},
    "into": {"$ref": "defs.json#/$defs/name"},
    "value": {"$ref": "defs.json#/$defs/expression"},
    "when": {"$ref": "defs.json#/$defs/expression"}
  },
  "required": ["kind", "into"],
  "additionalProperties": false
}`,
	Config: func() any { return &InterruptConfig{} },
	Build:  buildInterrupt,
}

// VarTypes types `resume` in value: what resume_schema describes.
func (c *InterruptConfig) VarTypes(*dsl.NodeCheck) map[string]*dsl.Type {
	return map[string]*dsl.Type{"resume": dsl.JSONSchemaType(c.ResumeSchema.Doc)}
}

// resumeSchema compiles the schema resume values must satisfy; nil when
// the node has none.
func (c *InterruptConfig) resumeSchema() (*dsl.JSONSchema, error) {
	if c.ResumeSchema.Doc == nil {
		return nil, nil
	}
	s, err := dsl.CompileJSONSchema(c.ResumeSchema.Doc)
	if err != nil {
		return nil, fmt.Errorf("resume_schema is not a valid JSON Schema: %w", err)
	}
	return s, nil
}

func buildInterrupt(cfg any, _ *dsl.Build) (runner.Node, error) {
	c := cfg.(*InterruptConfig)
	s, err := c.resumeSchema()
	if err != nil {
		return nil, err
	}
	return &interruptNode{cfg: c, schema: s}, nil
}

var _ runner.ResumeChecker = (*interruptNode)(nil)

// interruptNode pauses on its first run and, resumed, writes the value.
type interruptNode struct {
	cfg    *InterruptConfig
	schema *dsl.JSONSchema
}

// Run raises the interrupt, or validates and stores the resume value.
func (n *interruptNode) Run(_ context.Context, in *runner.Input) (runner.Update, error) {
	if !in.Resumed {
		if pause, err := evalCond(n.cfg.When.Program, in.Vars(), true, "when"); err != nil || !pause {
			return nil, err
		}
		return nil, n.interrupt(in)
	}
	if err := in.Run.Resolve(in.Resume); err != nil {
		return nil, err
	}
	v := in.Resume
	if p := n.cfg.Value.Program; p != nil {
		vars := in.Vars()
		vars["resume"] = in.Resume
		var err error
		if v, err = p.Eval(vars); err != nil { // the thread stays paused: nothing is written
			return nil, runner.InvalidResume(fmt.Errorf("value: %w", err))
		}
	}
	return runner.Update{n.cfg.Into.Name: v}, nil
}

// CheckResume checks a resume value against the node's resume_schema.
func (n *interruptNode) CheckResume(value any) error {
	if n.schema == nil {
		return nil
	}
	return n.schema.Check(value)
}

func (n *interruptNode) interrupt(in *runner.Input) error {
	vars := in.Vars()
	intr := &runner.Interrupt{Kind: n.cfg.Kind, ResumeSchema: n.cfg.ResumeSchema.Doc, Payload: map[string]any{}}
	if t := n.cfg.Message.Template; t != nil {
		msg, err := t.Render(vars)
		if err != nil {
			return runner.Permanent(fmt.Errorf("message: %w", err))
		}
		intr.Message = msg
	}
	for k, e := range n.cfg.Payload {
		v, err := e.Program.Eval(vars)
		if err != nil {
			return runner.Permanent(fmt.Errorf("payload %s: %w", k, err))
		}
		intr.Payload[k] = v
	}
	return intr
}
