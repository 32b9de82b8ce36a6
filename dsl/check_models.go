package dsl

import (
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"
)

// agentModels sets every pipeline's AgentModel: the first node, of the
// pipeline or of one it runs as a subgraph, that calls the agent's model.
func (k *check) agentModels() {
	for _, name := range slices.Sorted(maps.Keys(k.proj.Pipelines)) {
		p := k.proj.Pipelines[name]
		p.AgentModel = k.agentModelOf(p, map[string]bool{})
	}
}

func (k *check) agentModelOf(p *Pipeline, seen map[string]bool) *Node {
	if seen[p.Name] {
		return nil // a subgraph cycle, reported on its own
	}
	seen[p.Name] = true
	if p.ownAgentModel != nil {
		return p.ownAgentModel
	}
	for _, n := range p.Nodes {
		for _, r := range n.pipelineRefs() {
			if child := k.proj.Pipelines[r.Name]; child != nil {
				if found := k.agentModelOf(child, seen); found != nil {
					return found
				}
			}
		}
	}
	return nil
}

// agentModel refuses an agent without a model whose pipeline calls the
// agent's model; at is the agent's pipeline: value.
func (k *check) agentModel(d *Document, at *yaml.Node, a *Agent, p *Pipeline) {
	if a.Model != "" || p == nil || p.AgentModel == nil {
		return
	}
	k.diags.Errorf(d.Pos(at), CodeModelAgent, "agent %q has no model, and node %q (%s) calls the agent's model", a.Name, p.AgentModel.Name, p.AgentModel.Pos).Hint =
		"set model: on the agent, or on the node"
}

// testModel refuses a test that runs on its own a pipeline that calls the
// agent's model; at is the test's pipeline: value.
func (k *check) testModel(d *Document, at *yaml.Node, p *Pipeline) {
	if p.AgentModel == nil {
		return
	}
	k.diags.Errorf(d.Pos(at), CodeModelAgent, "pipeline %q cannot run on its own: node %q (%s) calls the agent's model", p.Name, p.AgentModel.Name, p.AgentModel.Pos).Hint =
		"test it through an agent (agent: NAME), or set model: on the node"
}

// modelsWithoutAgent warns about nodes that call the agent's model in
// pipelines no agent runs, directly or as a subgraph: they cannot run.
// It says nothing while a document has schema errors.
func (k *check) modelsWithoutAgent() {
	for _, ok := range k.valid {
		if !ok {
			return
		}
	}
	run := map[string]bool{}
	for _, a := range k.proj.Agents {
		k.markRun(a.Pipeline, run)
	}
	for _, name := range slices.Sorted(maps.Keys(k.proj.Pipelines)) {
		p := k.proj.Pipelines[name]
		if n := p.ownAgentModel; n != nil && !run[name] {
			k.diags.Warnf(p.Doc.Pos(mapGet(n.value, "type")), CodeModelAgent, "node %q calls the agent's model, and no agent runs pipeline %q", n.Name, name).Hint =
				"set model: on the node, or run the pipeline through an agent that has a model"
		}
	}
}

// markRun marks a pipeline and those it runs as subgraphs.
func (k *check) markRun(name string, run map[string]bool) {
	p := k.proj.Pipelines[name]
	if p == nil || run[name] {
		return
	}
	run[name] = true
	for _, n := range p.Nodes {
		for _, r := range n.pipelineRefs() {
			k.markRun(r.Name, run)
		}
	}
}
