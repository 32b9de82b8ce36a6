package builtins

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// SubgraphConfig is the with: block of a subgraph node, and of each branch
// of a parallel node.
type SubgraphConfig struct {
	Pipeline dsl.PipelineRef `yaml:"pipeline"`
	// Input maps the parent state to the child's input.
	Input map[string]dsl.Expression `yaml:"input"`
	// Output maps the child's final state (as `result`) to parent fields.
	Output map[dsl.FieldRef]dsl.Expression `yaml:"output" vars:"result"`
}

const subgraphSchema = `{
  "type": "object",
  "properties": {
    "pipeline": {"$ref": "defs.json#/$defs/name"},
    "input": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}},
    "output": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}}
  },
  "required": ["pipeline"],
  "additionalProperties": false
}`

// SubgraphNode runs another pipeline as one step.
var SubgraphNode = dsl.NodeType{
	Name:   "subgraph",
	Doc:    "Runs another pipeline with an input mapping and maps its final state back; its checkpoints live under the parent thread.",
	Schema: subgraphSchema,
	Config: func() any { return &SubgraphConfig{} },
	Check:  func(cfg any, chk *dsl.NodeCheck) { cfg.(*SubgraphConfig).check(chk, "") },
	Build:  buildSubgraph,
}

// VarTypes types `result` in the output mapping: the final state of the
// child pipeline, as it declares it.
func (c *SubgraphConfig) VarTypes(chk *dsl.NodeCheck) map[string]*dsl.Type {
	if st := chk.PipelineState(c.Pipeline.Name); st != nil {
		return map[string]*dsl.Type{"result": st}
	}
	return nil
}

// check refuses input keys the child pipeline cannot take: a run of it
// would refuse them. prefix locates the config in with: ("branches.0.").
func (c *SubgraphConfig) check(chk *dsl.NodeCheck, prefix string) {
	accepted, ok := chk.InputFields(c.Pipeline.Name)
	if !ok {
		return
	}
	for _, key := range sortedKeys(c.Input) {
		if !slices.Contains(accepted, key) {
			chk.Errorf(prefix+"input."+key, "pipeline %s takes no input field %q; it takes: %s", c.Pipeline.Name, key, strings.Join(accepted, ", ")).Hint =
				dsl.DidYouMean(key, accepted)
		}
	}
}

// child is a compiled pipeline call: input and output mappings.
type child struct {
	graph  *runner.Graph
	input  map[string]*dsl.Program
	output []outField
}

type outField struct {
	field string
	expr  *dsl.Program
}

func buildChild(c *SubgraphConfig, b *dsl.Build) (*child, error) {
	g, err := b.Graph(c.Pipeline.Name)
	if err != nil {
		return nil, err
	}
	ch := &child{graph: g, input: map[string]*dsl.Program{}}
	for k, e := range c.Input {
		ch.input[k] = e.Program
	}
	for f, e := range c.Output {
		ch.output = append(ch.output, outField{f.Name, e.Program})
	}
	sort.Slice(ch.output, func(i, j int) bool { return ch.output[i].field < ch.output[j].field })
	return ch, nil
}

// run runs the child as thread name and maps its final state back.
func (ch *child) run(ctx context.Context, in *runner.Input, name string) (runner.Update, error) {
	vars := in.Vars()
	input, err := evalArgs(ch.input, vars)
	if err != nil {
		return nil, runner.Permanent(err)
	}
	res, err := in.Run.Child(ctx, ch.graph, name, input, in.Resume)
	if err != nil {
		return nil, err
	}
	switch res.Status {
	case runner.StatusCompleted:
	case runner.StatusInterrupted:
		return nil, res.Interrupt
	case runner.StatusTimedOut: // a timeout to the parent's on_error and retry
		return nil, &runner.TimeoutError{What: "pipeline " + ch.graph.Name, After: ch.graph.Timeout}
	default:
		return nil, fmt.Errorf("pipeline %s %s: %v", ch.graph.Name, res.Status, res.Error)
	}
	vars["result"] = map[string]any(res.State)
	upd := runner.Update{}
	for _, o := range ch.output {
		v, err := o.expr.Eval(vars)
		if err != nil {
			return nil, runner.Permanent(fmt.Errorf("output %s: %w", o.field, err))
		}
		upd[o.field] = v
	}
	return upd, nil
}

func buildSubgraph(cfg any, b *dsl.Build) (runner.Node, error) {
	ch, err := buildChild(cfg.(*SubgraphConfig), b)
	if err != nil {
		return nil, err
	}
	return subgraphNode{ch, b.Node.Name}, nil
}

type subgraphNode struct {
	*child
	name string
}

// Run runs the pipeline; an interrupt inside it pauses the parent too.
func (n subgraphNode) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	return n.run(ctx, in, n.name)
}
