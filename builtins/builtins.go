// Package builtins holds runner's built-in node types. Each one is a single
// dsl.NodeType value in a file named after it (node_set.go, node_tool.go);
// All lists them and is the only place they are registered.
package builtins

import "github.com/runner-dev/runner/dsl"

// All returns every built-in node type.
func All() []dsl.NodeType {
	return []dsl.NodeType{SetNode, ToolNode, PlannerNode, InterruptNode, NoopNode, SubgraphNode, ParallelNode, MapNode,
		PromptNode, LLMNode, ToolsNode, ExtractNode}
}

// Registry returns a registry of All and BuiltinTools.
func Registry() *dsl.Registry {
	r, err := dsl.NewRegistry(All(), BuiltinTools())
	if err != nil {
		panic(err) // a programming error in this package, caught by its tests
	}
	return r
}
