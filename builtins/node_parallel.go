package builtins

import (
	"context"
	"errors"
	"fmt"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"golang.org/x/sync/errgroup"
)

// ParallelConfig is the with: block of a parallel node.
type ParallelConfig struct {
	Branches       []SubgraphConfig `yaml:"branches"`
	MaxConcurrency int              `yaml:"max_concurrency"`
	// OnFailure is fail (the default: the first failure fails the node) or
	// continue (failed branches are skipped).
	OnFailure string `yaml:"on_failure"`
}

// ParallelNode runs pipelines side by side and joins them via reducers.
var ParallelNode = dsl.NodeType{
	Name: "parallel",
	Doc:  "Runs several pipelines concurrently (at most max_concurrency at once) and merges each branch's output mapping through the state reducers.",
	Schema: `{
  "type": "object",
  "properties": {
    "branches": {"type": "array", "minItems": 1, "items": ` + subgraphSchema + `},
    "max_concurrency": {"type": "integer", "minimum": 1},
    "on_failure": {"enum": ["fail", "continue"]}
  },
  "required": ["branches"],
  "additionalProperties": false
}`,
	Config: func() any { return &ParallelConfig{} },
	Check: func(cfg any, chk *dsl.NodeCheck) {
		for i := range cfg.(*ParallelConfig).Branches {
			cfg.(*ParallelConfig).Branches[i].check(chk, fmt.Sprintf("branches.%d.", i))
		}
	},
	Build: buildParallel,
}

func buildParallel(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*ParallelConfig)
	n := &parallelNode{name: b.Node.Name, limit: c.MaxConcurrency, cont: c.OnFailure == "continue", reducer: b.Reducer}
	for i := range c.Branches {
		ch, err := buildChild(&c.Branches[i], b)
		if err != nil {
			return nil, fmt.Errorf("branch %d: %w", i, err)
		}
		n.branches = append(n.branches, ch)
	}
	return n, nil
}

type parallelNode struct {
	name     string
	branches []*child
	limit    int
	cont     bool
	reducer  func(string) runner.Reducer
}

// Run runs the branches concurrently and joins their updates in branch
// order through the field reducers. A branch that pauses for a human does
// not stop the others: once every branch has completed or paused, the
// node pauses on all the branches' interrupts, each with its ID; a resume
// value keyed by IDs answers some of them, any other value all of them.
func (n *parallelNode) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	results := make([]runner.Update, len(n.branches))
	paused := make([]*runner.Interrupt, len(n.branches))
	g, gctx := errgroup.WithContext(ctx)
	limit := n.limit
	if limit <= 0 {
		limit = len(n.branches)
	}
	g.SetLimit(limit)
	for i, ch := range n.branches {
		g.Go(func() error {
			upd, err := ch.run(gctx, in, fmt.Sprintf("%s.%d", n.name, i))
			if intr, ok := errors.AsType[*runner.Interrupt](err); ok {
				paused[i] = intr
				return nil
			}
			if err != nil && !n.cont {
				return fmt.Errorf("branch %d (%s): %w", i, ch.graph.Name, err)
			}
			results[i] = upd
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if intr := n.waiting(paused); intr != nil {
		return nil, intr
	}
	return join(results, n.reducer)
}

// waiting is the interrupt of the paused branches: nil when none paused,
// the branch's own when one did, else one that lists them all.
func (n *parallelNode) waiting(paused []*runner.Interrupt) *runner.Interrupt {
	var all []*runner.Interrupt
	for _, p := range paused {
		if p != nil {
			all = append(all, p.Leaves()...)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return &runner.Interrupt{Node: n.name, Kind: "several", Pending: all,
		Message: fmt.Sprintf("%d branches wait for input: resume with {ID: value} for some, or one value for all", len(all))}
}

// join combines updates in order; a field two updates write is reduced.
func join(updates []runner.Update, reducer func(string) runner.Reducer) (runner.Update, error) {
	out := runner.Update{}
	for _, u := range updates {
		for k, v := range u {
			prev, seen := out[k]
			if !seen {
				out[k] = v
				continue
			}
			nv, err := reducer(k)(prev, v)
			if err != nil {
				return nil, fmt.Errorf("joining %s: %w", k, err)
			}
			out[k] = nv
		}
	}
	return out, nil
}
