package builtins

import (
	"context"
	"fmt"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"golang.org/x/sync/errgroup"
)

// MapConfig is the with: block of a map node.
type MapConfig struct {
	// Over is the list to fan out over; each element is `item`, its
	// position `index`.
	Over dsl.Expression `yaml:"over" kind:"array"`
	// Tool runs per element with Args.
	Tool dsl.ToolRef               `yaml:"tool"`
	Args map[string]dsl.Expression `yaml:"args" vars:"item,index"`
	Into dsl.FieldRef              `yaml:"into"`
	// MaxConcurrency bounds the fan-out; OnFailure is fail or continue.
	MaxConcurrency int    `yaml:"max_concurrency"`
	OnFailure      string `yaml:"on_failure"`
}

// MapNode runs a tool once per element of a list.
var MapNode = dsl.NodeType{
	Name: "map",
	Doc:  "Runs a tool once per element of a list (at most max_concurrency at once) and writes the results, in list order, to `into`.",
	Schema: `{
  "type": "object",
  "properties": {
    "over": {"$ref": "defs.json#/$defs/expression"},
    "tool": {"$ref": "defs.json#/$defs/name"},
    "args": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}},
    "into": {"$ref": "defs.json#/$defs/name"},
    "max_concurrency": {"type": "integer", "minimum": 1},
    "on_failure": {"enum": ["fail", "continue"]}
  },
  "required": ["over", "tool", "into"],
  "additionalProperties": false
}`,
	Config: func() any { return &MapConfig{} },
	Build:  buildMap,
}

func buildMap(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*MapConfig)
	spec, err := b.Tool(c.Tool.Name)
	if err != nil {
		return nil, err
	}
	n := &mapNode{cfg: c, spec: spec, args: map[string]*dsl.Program{}}
	for k, e := range c.Args {
		n.args[k] = e.Program
	}
	return n, nil
}

type mapNode struct {
	cfg  *MapConfig
	spec *runner.ToolSpec
	args map[string]*dsl.Program
}

// Run calls the tool once per element, concurrently, and writes the
// results in list order. With on_failure: continue a failed element's
// result is {"error": message}.
func (n *mapNode) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	vars := in.Vars()
	v, err := n.cfg.Over.Program.Eval(vars)
	if err != nil {
		return nil, runner.Permanent(fmt.Errorf("over: %w", err))
	}
	list, ok := v.([]any)
	if v != nil && !ok {
		return nil, runner.Permanent(fmt.Errorf("over: want a list, got %T", v))
	}
	out := make([]any, len(list))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, n.cfg.MaxConcurrency))
	for i, item := range list {
		g.Go(func() error {
			r, err := n.call(gctx, in, vars, i, item)
			if err != nil && (n.cfg.OnFailure != "continue" || runner.MustStop(gctx.Err(), err)) {
				return fmt.Errorf("element %d: %w", i, err)
			}
			if err != nil {
				r = map[string]any{"error": err.Error()}
			}
			out[i] = r
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return runner.Update{n.cfg.Into.Name: out}, nil
}

func (n *mapNode) call(ctx context.Context, in *runner.Input, base map[string]any, i int, item any) (any, error) {
	vars := make(map[string]any, len(base)+2)
	for k, v := range base {
		vars[k] = v
	}
	vars["item"], vars["index"] = item, i
	args, err := evalArgs(n.args, vars)
	if err != nil {
		return nil, err
	}
	o, err := in.Run.CallTool(ctx, runner.ToolRequest{Seq: i, Spec: n.spec, Args: args})
	if err != nil {
		return nil, err
	}
	return o.Exec.Output, o.Err
}
