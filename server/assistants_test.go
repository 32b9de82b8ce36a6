package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/server"
)

// greetGraph replies in the tone its configurable parameter tone gives
// (formal or casual, casual by default).
func greetGraph() *runner.Graph {
	return &runner.Graph{Name: "greet", Start: "greet", MaxSteps: 5,
		Fields: map[string]runner.Field{"reply": {Reducer: runner.Replace, Default: ""}},
		Configure: func(values map[string]any) (map[string]any, error) {
			out := map[string]any{"tone": "casual"}
			for k, v := range values {
				if k != "tone" || (v != "formal" && v != "casual") {
					return nil, fmt.Errorf("%w: config.configurable.%s: want tone formal or casual, got %v", runner.ErrInput, k, v)
				}
				out[k] = v
			}
			return out, nil
		},
		Nodes: map[string]*runner.Step{"greet": {Name: "greet", Node: fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
			return runner.Update{"reply": in.Vars()["config"].(map[string]any)["tone"]}, nil
		}), Routes: []runner.Route{{To: runner.End}}}}}
}

func withGreet(c *server.Config) { c.Graphs["greet"] = greetGraph() }

// TestAssistantConfig: an assistant created from a graph with
// config.configurable gives its runs those values; a run's own
// config.configurable goes over them; values that do not fit the graph's
// parameters are a 422 naming the field, at creation and at a run.
func TestAssistantConfig(t *testing.T) {
	e := newEnv(t, withGreet)
	a := e.call("POST", "/assistants", map[string]any{"graph_id": "greet", "name": "formal greeter",
		"config": map[string]any{"configurable": map[string]any{"tone": "formal"}}, "metadata": map[string]any{"team": "a"}}, 200)
	id := a["assistant_id"].(string)
	if a["version"] != 1.0 || a["graph_id"] != "greet" || a["name"] != "formal greeter" || id == server.AssistantID("greet") {
		t.Fatalf("created %v", a)
	}
	reply := func(body map[string]any) any {
		body["assistant_id"] = id
		return e.call("POST", "/runs/wait", body, 200)["reply"]
	}
	if got := reply(map[string]any{}); got != "formal" {
		t.Errorf("a run of the assistant replies %v, want formal", got)
	}
	if got := reply(map[string]any{"config": map[string]any{"configurable": map[string]any{"tone": "casual", "thread_id": "x"}}}); got != "casual" {
		t.Errorf("a run's config.configurable over the assistant's: %v, want casual", got)
	}
	if got := e.call("POST", "/runs/wait", map[string]any{"assistant_id": "greet"}, 200)["reply"]; got != "casual" {
		t.Errorf("the YAML assistant replies %v, want the default casual", got)
	}
	for _, bad := range []map[string]any{
		{"assistant_id": id, "config": map[string]any{"configurable": map[string]any{"tone": "loud"}}},
		{"assistant_id": id, "context": map[string]any{"mood": "glum"}},
		{"assistant_id": "steps", "config": map[string]any{"configurable": map[string]any{"tone": "formal"}}},
	} {
		if p := e.call("POST", "/runs/wait", bad, 422); !strings.Contains(fmt.Sprint(p["detail"]), "config.configurable") {
			t.Errorf("run %v: 422 %v, want it to name config.configurable", bad, p)
		}
	}
	if p := e.call("POST", "/assistants", map[string]any{"graph_id": "greet", "config": map[string]any{"configurable": map[string]any{"tone": "loud"}}}, 422); !strings.Contains(fmt.Sprint(p["detail"]), "config.configurable.tone") {
		t.Errorf("create with a bad tone: %v", p)
	}
	e.call("POST", "/assistants", map[string]any{"graph_id": "nope"}, 422)
	run := e.call("POST", "/threads/"+e.call("POST", "/threads", nil, 200)["thread_id"].(string)+"/runs", map[string]any{"assistant_id": id}, 200)
	if run["assistant_id"] != id {
		t.Errorf("the run names assistant %v, want %s", run["assistant_id"], id)
	}
}

// TestAssistantVersions: PATCH writes a new version and makes it current,
// versions lists them newest first, latest picks one (runs follow it),
// another tenant sees none of it, the YAML assistants are read-only
// version 1, search finds both kinds, delete removes every version.
func TestAssistantVersions(t *testing.T) {
	e := newEnv(t, withGreet)
	a := e.call("POST", "/assistants", map[string]any{"graph_id": "greet", "assistant_id": "a-1",
		"config": map[string]any{"configurable": map[string]any{"tone": "formal"}}, "metadata": map[string]any{"v": 1}}, 200)
	if again := e.call("POST", "/assistants", map[string]any{"graph_id": "greet", "assistant_id": "a-1", "if_exists": "do_nothing"}, 200); again["version"] != 1.0 || again["created_at"] != a["created_at"] {
		t.Errorf("if_exists do_nothing = %v", again)
	}
	e.call("POST", "/assistants", map[string]any{"graph_id": "greet", "assistant_id": "a-1"}, 409)
	v2 := e.call("PATCH", "/assistants/a-1", map[string]any{"config": map[string]any{"configurable": map[string]any{"tone": "casual"}}, "metadata": map[string]any{"v": 2, "team": "b"}}, 200)
	if v2["version"] != 2.0 || v2["metadata"].(map[string]any)["v"] != 2.0 || v2["created_at"] != a["created_at"] {
		t.Errorf("PATCH = %v, want version 2 with the merged metadata", v2)
	}
	e.call("PATCH", "/assistants/a-1", map[string]any{"config": map[string]any{"configurable": map[string]any{"tone": "loud"}}}, 422)
	reply := func() any { return e.call("POST", "/runs/wait", map[string]any{"assistant_id": "a-1"}, 200)["reply"] }
	if got := reply(); got != "casual" {
		t.Errorf("version 2 replies %v", got)
	}
	versions := e.list("POST", "/assistants/a-1/versions", map[string]any{})
	if len(versions) != 2 || versions[0].(map[string]any)["version"] != 2.0 || versions[1].(map[string]any)["version"] != 1.0 {
		t.Fatalf("versions = %v", versions)
	}
	if only := e.list("POST", "/assistants/a-1/versions", map[string]any{"metadata": map[string]any{"team": "b"}}); len(only) != 1 {
		t.Errorf("versions with metadata team b = %v", only)
	}
	if got := e.call("POST", "/assistants/a-1/latest", map[string]any{"version": 1}, 200); got["version"] != 1.0 {
		t.Errorf("latest 1 = %v", got)
	}
	if got := reply(); got != "formal" {
		t.Errorf("after picking version 1 the assistant replies %v", got)
	}
	e.call("POST", "/assistants/a-1/latest", map[string]any{"version": 9}, 404)
	if v3 := e.call("PATCH", "/assistants/a-1", map[string]any{"name": "third"}, 200); v3["version"] != 3.0 || v3["config"].(map[string]any)["configurable"].(map[string]any)["tone"] != "formal" {
		t.Errorf("a PATCH after picking version 1 = %v: want version 3 with version 1's config", v3)
	}

	found := e.list("POST", "/assistants/search", map[string]any{"graph_id": "greet"})
	if len(found) != 2 || found[0].(map[string]any)["assistant_id"] != "a-1" || found[1].(map[string]any)["assistant_id"] != server.AssistantID("greet") {
		t.Errorf("search by graph greet = %v", found)
	}
	if n := e.call("POST", "/assistants/count", map[string]any{"graph_id": "greet"}, 200); n != nil {
		t.Errorf("count answered an object %v", n)
	}
	e.key = otherKey
	e.call("GET", "/assistants/a-1", nil, 404)
	e.call("PATCH", "/assistants/a-1", map[string]any{"name": "mine"}, 404)
	e.call("POST", "/runs/wait", map[string]any{"assistant_id": "a-1"}, 404)
	if found := e.list("POST", "/assistants/search", map[string]any{"graph_id": "greet"}); len(found) != 1 {
		t.Errorf("another tenant's search = %v", found)
	}
	e.key = testKey
	for _, yaml := range []string{"greet", server.AssistantID("greet")} {
		e.call("PATCH", "/assistants/"+yaml, map[string]any{"name": "x"}, 409)
		e.call("DELETE", "/assistants/"+yaml, nil, 409)
		if vs := e.list("POST", "/assistants/"+yaml+"/versions", nil); len(vs) != 1 || vs[0].(map[string]any)["version"] != 1.0 {
			t.Errorf("versions of the YAML assistant = %v", vs)
		}
	}
	e.call("DELETE", "/assistants/a-1", nil, 204)
	e.call("GET", "/assistants/a-1", nil, 404)
	e.call("POST", "/assistants/a-1/versions", nil, 404)
}
