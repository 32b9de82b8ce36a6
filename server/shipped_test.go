package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/server"
)

// rule37Script pauses rule_37 at its approval gate (create_entity is a
// mutating capability), then answers after the decided call (no skill is
// selected: synthesis is skipped).
const rule37Script = `[
 {"node": "initial_llm_call", "tool_calls": [{"id": "c1", "name": "create_entity", "args": {"name": "Mitchell Ranch 3H", "entity_type": "well", "api_number": "42-329-12399"}}],
  "usage": {"input": 1200, "output": 34}},
 {"node": "initial_llm_call", "text": "Created the well entity Mitchell Ranch 3H.", "usage": {"input": 1300, "output": 12}}]`

// fraudScript has the model pick the first tool, then be down: the
// fallback sequence decides the rest.
const fraudScript = `[
 {"node": "planner", "text": "{\"tool\": \"context_tool\", \"reason\": \"context first\", \"confidence\": 0.9}", "usage": {"input": 100, "output": 20}},
 {"node": "planner", "error": {"message": "connection refused"}},
 {"node": "planner", "error": {"message": "connection refused"}},
 {"node": "planner", "error": {"message": "connection refused"}},
 {"node": "planner", "error": {"message": "connection refused"}},
 {"node": "planner", "error": {"message": "connection refused"}},
 {"node": "planner", "error": {"message": "connection refused"}}]`

// shipped compiles the project's agents named by scripts, each LLM call
// of each answered from its script.
func shipped(t *testing.T, scripts map[string]string) map[string]*runner.Graph {
	t.Helper()
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load("../pipelines", "../agents", "../rules")
	proj, more := checker.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatalf("definitions: %v", all)
	}
	graphs := map[string]*runner.Graph{}
	for name, script := range scripts {
		file := filepath.Join(t.TempDir(), "script.json")
		if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		replies, err := dsl.LoadScript(file)
		if err != nil {
			t.Fatal(err)
		}
		agent := proj.Agents[name]
		g, err := checker.Compile(proj, agent.Pipeline, dsl.CompileOptions{Tool: builtins.Tool, Agent: agent, Provider: builtins.ScriptedProviders(replies)})
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		graphs[name] = g
	}
	return graphs
}

// withShipped serves the shipped agents of scripts beside the test graphs.
func withShipped(t *testing.T, scripts map[string]string) func(*server.Config) {
	graphs := shipped(t, scripts)
	return func(c *server.Config) {
		for name, g := range graphs {
			c.Graphs[name] = g
		}
	}
}
