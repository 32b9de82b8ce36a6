package builtins

import "github.com/runner-dev/runner/dsl"

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
}
