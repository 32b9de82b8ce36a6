package dsl

import (
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// toolArgs checks the arguments at n, which a Test expects a call of
// tool to have, against the tool's parameter schema (an MCP tool's
// pinned input schema): each must be a parameter the schema declares,
// when it allows no others, and fit the parameter's schema. Each problem
// is reported at its own argument.
func (k *check) toolArgs(d *Document, n *yaml.Node, tool string, args map[string]any) {
	def := k.proj.Tools[tool]
	if n == nil || k.bad(n) || def == nil {
		return
	}
	props, _ := def.Parameters["properties"].(map[string]any)
	closed := def.Parameters["additionalProperties"] == false
	pairs(n, func(key, v *yaml.Node) {
		p, ok := props[key.Value].(map[string]any)
		if !ok {
			if closed {
				k.diags.Errorf(d.Pos(key), CodeTestArgs, "tool %s has no parameter %q", tool, key.Value).Hint =
					didYouMean(key.Value, slices.Sorted(maps.Keys(props)))
			}
			return
		}
		s, err := CompileJSONSchema(p)
		if err != nil {
			return // reported where the tool declares it
		}
		if err := s.Check(args[key.Value]); err != nil {
			k.diags.Errorf(d.Pos(v), CodeTestArgs, "argument %s does not fit tool %s's parameter: %s", key.Value, tool,
				strings.TrimPrefix(err.Error(), "/: "))
		}
	})
}
