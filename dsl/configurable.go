package dsl

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
)

// configurable reads the pipeline's configurable parameters: a closed
// object (config.NAME of an undeclared parameter is an error at the
// expression), each default checked against its parameter's type.
func (pc *pipelineCheck) configurable() {
	n := pc.d.Get("configurable")
	pc.p.Config = ObjectOf(map[string]*Type{})
	if n != nil && n.Kind != yaml.MappingNode {
		pc.p.Config = &Type{Kind: Object} // the schema reported it
		return
	}
	pc.p.ConfigDefaults = map[string]any{}
	pairs(n, func(key, v *yaml.Node) {
		t := AnyType
		if !pc.bad(v) {
			t = typeOf(v)
		}
		pc.p.Config.Fields[key.Value] = t
		def := mapGet(v, "default")
		if def == nil {
			return
		}
		c := &conformance{}
		val, _ := c.conform(runner.NormalizeJSON(toJSON(def)), t, []any{key.Value})
		for _, pr := range c.problems {
			pc.diags.Errorf(pc.d.Pos(def), CodeInputField, "the default of configurable parameter %q does not fit: %s", key.Value, pr.Message)
		}
		pc.p.ConfigDefaults[key.Value] = val
	})
}

// DeclaresConfig reports whether the pipeline declares configurable
// parameters.
func (p *Pipeline) DeclaresConfig() bool { return len(p.ConfigDefaults) > 0 }

// ConfigError is a set of configurable values that do not fit their
// pipeline's parameters. It wraps runner.ErrInput.
type ConfigError struct {
	Pipeline string
	// Problems locate each value by its path from the parameter's name.
	Problems []InputProblem
}

func (e *ConfigError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = withHint("config.configurable."+p.Field()+": "+p.Message, p.Hint)
	}
	return fmt.Sprintf("%v for pipeline %s: %s", runner.ErrInput, e.Pipeline, strings.Join(msgs, "; "))
}

// Unwrap makes a ConfigError a runner.ErrInput.
func (e *ConfigError) Unwrap() error { return runner.ErrInput }

// FieldErrors locates each problem (runner.FieldErrors), from the
// parameter's name.
func (e *ConfigError) FieldErrors() []runner.FieldError { return fieldErrors(e.Problems) }

// Configure checks configurable values against the pipeline's parameters
// and returns them normalised, with the defaults of those left out
// (runner.Graph.Configure). The error is a *ConfigError naming every
// value that does not fit and every name that is no parameter.
func (p *Pipeline) Configure(values map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(p.ConfigDefaults))
	var problems []InputProblem
	for _, name := range slices.Sorted(maps.Keys(values)) {
		t, ok := p.Config.Fields[name]
		if !ok {
			problems = append(problems, InputProblem{Path: []any{name}, Message: "is not a configurable parameter of pipeline " + p.Name,
				Hint: hintOr(didYouMean(name, p.Config.FieldNames()), acceptedParams(p.Config))})
			continue
		}
		c := &conformance{}
		out[name], _ = c.conform(runner.NormalizeJSON(values[name]), t, []any{name})
		problems = append(problems, c.problems...)
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Pipeline: p.Name, Problems: problems}
	}
	for name, def := range p.ConfigDefaults {
		if _, ok := out[name]; !ok {
			out[name] = runner.CloneJSON(def)
		}
	}
	return out, nil
}

// acceptedParams is the hint for an unknown configurable parameter.
func acceptedParams(t *Type) string {
	if len(t.Fields) == 0 {
		return "the pipeline declares no configurable parameters"
	}
	return "its parameters: " + strings.Join(t.FieldNames(), ", ")
}
