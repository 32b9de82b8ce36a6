package runner

import (
	"errors"
	"fmt"
	"github.com/runner-dev/runner/runner/access"
	"slices"
)

// Kinds of the interrupts of interrupt_before and interrupt_after.
const (
	KindBefore = "before"
	KindAfter  = "after"
)

// RunOptions say how one invocation of a thread runs, beyond its graph.
type RunOptions struct {
	// InterruptBefore and InterruptAfter, when not nil, replace the
	// graph's lists of the nodes the thread pauses before (after) running,
	// for this invocation. An empty list pauses nowhere.
	InterruptBefore []string
	InterruptAfter  []string
	// New says the caller found the thread without checkpoints: Run does
	// not read them again, and its first checkpoint fails, writing
	// nothing, if one was written meanwhile.
	New bool
	// RunID names the run in the audit ledger (a server's run id).
	RunID string
	// Config holds the values of the pipeline's configurable parameters
	// for this invocation (Graph.Configure): what its expressions see as
	// `config`, the defaults filling in the rest. A value that does not
	// fit is refused with an error wrapping ErrInput.
	Config map[string]any
	// As is the principal the invocation acts as: who starts the run (the
	// requester a gate records) or who decides the gate it resumes
	// (access.MayDecide). Its zero value is an unnamed principal of the
	// thread's tenant.
	As access.Principal
}

// configure sets what the run's expressions see as config: opt's values
// over the parameters' defaults.
func (r *Run) configure(opt RunOptions) error {
	values := normalizeObject(opt.Config)
	if r.Graph.Configure == nil {
		if len(values) > 0 {
			return fmt.Errorf("%w: pipeline %s declares no configurable parameters, so it takes no config values", ErrInput, r.Graph.Name)
		}
		return nil
	}
	cfg, err := r.Graph.Configure(values)
	if err != nil && !errors.Is(err, ErrInput) {
		err = fmt.Errorf("%w: %w", ErrInput, err)
	}
	r.config = cfg
	return err
}

// staticInterrupts sets the run's id, its config (configure), its
// principal and the nodes the run pauses before and after: the graph's,
// or opt's. A node the graph does not have is refused with an
// error wrapping ErrInput.
func (r *Run) staticInterrupts(opt RunOptions) error {
	r.runID = opt.RunID
	if err := r.configure(opt); err != nil {
		return err
	}
	if r.as = opt.As; r.as.Tenant == "" && r.as.Name == "" && r.as.Roles == nil {
		r.as.Tenant = r.tenant
	}
	r.pauseBefore, r.pauseAfter = r.Graph.InterruptBefore, r.Graph.InterruptAfter
	for _, o := range []struct {
		flag  string
		nodes []string
		dst   *[]string
	}{{"interrupt_before", opt.InterruptBefore, &r.pauseBefore}, {"interrupt_after", opt.InterruptAfter, &r.pauseAfter}} {
		if o.nodes == nil {
			continue
		}
		for _, n := range o.nodes {
			if r.Graph.Nodes[n] == nil {
				return fmt.Errorf("%w: %s names node %q, which pipeline %s does not have; its nodes are: %v",
					ErrInput, o.flag, n, r.Graph.Name, nodeNames(r.Graph))
			}
		}
		*o.dst = o.nodes
	}
	return nil
}

func nodeNames(g *Graph) []string {
	names := make([]string, 0, len(g.Nodes))
	for n := range g.Nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// pausesBefore returns the interrupt the thread pauses with before node
// runs, or nil; the node a resume from its own before-pause runs does
// not pause again.
func (r *Run) pausesBefore(node string) *Interrupt {
	skip := r.skipBefore
	r.skipBefore = ""
	if node == skip || r.handling != nil || !slices.Contains(r.pauseBefore, node) {
		return nil
	}
	return &Interrupt{Node: node, Kind: KindBefore, Message: "paused before node " + node + " (interrupt_before); resume to run it"}
}

// pausesAfter returns the interrupt the thread pauses with after node ran
// and routed to next, or nil: a run that ends does not pause.
func (r *Run) pausesAfter(node, next string) *Interrupt {
	if next == End || r.handling != nil || !slices.Contains(r.pauseAfter, node) {
		return nil
	}
	return &Interrupt{Node: node, Kind: KindAfter, Message: "paused after node " + node + " (interrupt_after); resume to go on to " + next}
}

// static reports whether an interrupt is one of interrupt_before or
// interrupt_after, which a resume continues whatever its value.
func (i *Interrupt) static() bool { return i != nil && (i.Kind == KindBefore || i.Kind == KindAfter) }
