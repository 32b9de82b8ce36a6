package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestSeedsServed runs every reference workload through `runner serve`
// as docs/workloads.md runs it through exec: a run to its end or to its
// interrupt, then, for those that pause, a resume to the end. Routing is
// covered row by row by each seed's Tests; this shows that the served
// runtime is the same.
func TestSeedsServed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server per seed")
	}
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []struct {
		name, agent, script string
		input               map[string]any
		resume              any    // nil: the run completes without pausing
		want                string // a value of the final state, as JSON
	}{
		{"000 approval gate", "rule_37", "pipelines/orchestration/script.json",
			map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the new Mitchell Ranch 3H well."}}},
			map[string]any{"approved": true}, `"tool_name":"create_entity"`},
		{"001 user request (SDK)", "user_request", "pipelines/user_request/script.json",
			map[string]any{"input": map[string]any{"message": "Make the robot greet visitors", "request_id": "r1", "is_api": true}},
			map[string]any{"reason": "sdk_processing_complete"}, `"suggestions":["Make it bow after the greeting"`},
		{"002 elyra", "elyra", "pipelines/elyra/script.json",
			map[string]any{"query": "What is in our design doc?", "user_id": "u1", "project_id": "elyra"}, nil, `"answer":"The replay daemon runs outside the chat graph`},
		{"003 ops actions", "ops_actions", "",
			map[string]any{"user_input": "restart nginx.service api.service", "auto_execute": true},
			map[string]any{"approved": true, "reject": []any{1}}, `"status":"REJECTED"`},
		{"004 fraud investigation", "fraud_investigator", "",
			map[string]any{"transaction_id": "txn_1001"}, nil, `"severity":"CRITICAL"`},
	} {
		t.Run(seed.name, func(t *testing.T) {
			script := "[]"
			if seed.script != "" {
				src, err := os.ReadFile("../../" + seed.script)
				if err != nil {
					t.Fatal(err)
				}
				script = string(src)
			}
			_, base := startServe(t, bin, script, "sk-test")
			var thread struct {
				ID string `json:"thread_id"`
			}
			decode(t, call(t, "POST", base+"/threads", map[string]any{}, 200), &thread)
			runs := base + "/threads/" + thread.ID + "/runs/wait"
			var values map[string]any
			decode(t, call(t, "POST", runs, map[string]any{"assistant_id": seed.agent, "input": seed.input}, 200), &values)
			if _, paused := values["__interrupt__"]; paused != (seed.resume != nil) {
				t.Fatalf("first run: paused %v, want %v: %v", paused, seed.resume != nil, values)
			}
			if seed.resume != nil {
				values = nil
				decode(t, call(t, "POST", runs, map[string]any{"assistant_id": seed.agent, "command": map[string]any{"resume": seed.resume}}, 200), &values)
			}
			out, _ := json.Marshal(values)
			if values["__interrupt__"] != nil || values["__error__"] != nil || !bytes.Contains(out, []byte(seed.want)) {
				t.Fatalf("final values lack %s:\n%.2000s", seed.want, out)
			}
		})
	}
}

// TestElyraRemembersServed: served, Elyra recalls on a user's second
// thread what it ingested on their first, from the store's long-term
// memory (no memory service runs); another user's thread recalls nothing,
// and the tenant reads the memory over the store API.
func TestElyraRemembersServed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	script := `[{"node": "planner_llm", "text": "<plan>{\"delegate_to\": \"end\", \"tools\": []}</plan>"},
		{"node": "synthesize", "text": "<think>Keep it.</think>Noted: your editor is Helix."}]`
	_, base := startServe(t, bin, script, "sk-test")
	turn := func(user, query string) map[string]any {
		t.Helper()
		var thread struct {
			ID string `json:"thread_id"`
		}
		decode(t, call(t, "POST", base+"/threads", map[string]any{}, 200), &thread)
		var values map[string]any
		decode(t, call(t, "POST", base+"/threads/"+thread.ID+"/runs/wait", map[string]any{"assistant_id": "elyra",
			"input": map[string]any{"query": query, "user_id": user, "project_id": "elyra"}}, 200), &values)
		if values["__error__"] != nil {
			t.Fatalf("%s's turn failed: %v", user, values["__error__"])
		}
		return values
	}
	if first := turn("u1", "Remember that my editor is Helix."); first["memory_context"] != "" {
		t.Fatalf("u1's first thread recalls %q, want nothing yet", first["memory_context"])
	}
	if second := turn("u1", "Which editor do I use?"); second["memory_context"] != "Noted: your editor is Helix." {
		t.Errorf("u1's second thread recalls %q, want the first thread's answer", second["memory_context"])
	}
	if other := turn("u2", "Which editor do I use?"); other["memory_context"] != "" {
		t.Errorf("u2 recalls %q, want nothing", other["memory_context"])
	}
	var found struct {
		Items []struct {
			Namespace []string       `json:"namespace"`
			Value     map[string]any `json:"value"`
		} `json:"items"`
	}
	decode(t, call(t, "POST", base+"/store/items/search", map[string]any{"namespace_prefix": []string{"elyra", "u1"}}, 200), &found)
	if len(found.Items) != 2 || found.Items[0].Value["content"] != "Noted: your editor is Helix." {
		t.Errorf("the store API shows u1's memory as %+v, want the two turns' ingestions", found.Items)
	}
}
