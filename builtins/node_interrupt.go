package builtins

import (
	"context"
	"fmt"
	"strings"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// InterruptConfig is the with: block of an interrupt node.
type InterruptConfig struct {
	// Kind labels the pause: approval, clarification, input, ...
	Kind string `yaml:"kind"`
	// Message is shown to the human; Payload carries data for the UI.
	Message dsl.TemplateText          `yaml:"message"`
	Payload map[string]dsl.Expression `yaml:"payload"`
	// ResumeSchema validates the resume value, which is written to Into.
	ResumeSchema map[string]any `yaml:"resume_schema"`
	Into         dsl.FieldRef   `yaml:"into"`
}

// InterruptNode pauses the thread until a human resumes it.
var InterruptNode = dsl.NodeType{
	Name: "interrupt",
	Doc:  "Pauses the thread with a payload until resumed; the resume value is validated against resume_schema and written to the `into` field.",
	Schema: `{
  "type": "object",
  "properties": {
    "kind": {"type": "string"},
    "message": {"type": "string"},
    "payload": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}},
    "resume_schema": {"$ref": "defs.json#/$defs/jsonSchema"},
    "into": {"$ref": "defs.json#/$defs/name"}
  },
  "required": ["kind", "into"],
  "additionalProperties": false
}`,
	Config: func() any { return &InterruptConfig{} },
	Build:  buildInterrupt,
}

func buildInterrupt(cfg any, _ *dsl.Build) (runner.Node, error) {
	c := cfg.(*InterruptConfig)
	n := &interruptNode{cfg: c}
	if c.ResumeSchema != nil {
		var err error
		if n.schema, err = compileSchema(c.ResumeSchema); err != nil {
			return nil, fmt.Errorf("resume_schema: %w", err)
		}
	}
	return n, nil
}

// interruptNode pauses on its first run and, resumed, writes the value.
type interruptNode struct {
	cfg    *InterruptConfig
	schema *jsonschema.Schema
}

// Run raises the interrupt, or validates and stores the resume value.
func (n *interruptNode) Run(_ context.Context, in *runner.Input) (runner.Update, error) {
	if in.Resume == nil {
		return nil, n.interrupt(in)
	}
	if n.schema != nil {
		if err := validateJSON(n.schema, in.Resume); err != nil {
			return nil, runner.InvalidResume(err)
		}
	}
	return runner.Update{n.cfg.Into.Name: in.Resume}, nil
}

func (n *interruptNode) interrupt(in *runner.Input) error {
	vars := in.Vars()
	intr := &runner.Interrupt{Kind: n.cfg.Kind, ResumeSchema: n.cfg.ResumeSchema, Payload: map[string]any{}}
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

// compileSchema compiles a JSON Schema given as a decoded value.
func compileSchema(schema map[string]any) (*jsonschema.Schema, error) {
	doc, err := toSchemaJSON(schema)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file:///schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("file:///schema.json")
}

// validateJSON validates a JSON-like value, with a short message.
func validateJSON(s *jsonschema.Schema, v any) error {
	doc, err := toSchemaJSON(v)
	if err != nil {
		return err
	}
	err = s.Validate(doc)
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err
	}
	var parts []string
	for _, e := range ve.BasicOutput().Errors {
		if e.Error != nil && e.Error.String() != "" {
			parts = append(parts, "at /"+strings.TrimPrefix(e.InstanceLocation, "/")+": "+e.Error.String())
		}
	}
	return fmt.Errorf("%s", strings.Join(parts, "; "))
}
