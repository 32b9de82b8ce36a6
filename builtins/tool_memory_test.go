package builtins_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// memorySrc remembers a user's fact (when given one), then reads it back
// and searches every user's memory; a platform rule can gate the writes.
const memorySrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: remember}
state:
  user_id: {type: string}
  fact: {type: string, default: ""}
  saved: {type: any}
  recalled: {type: any}
  found: {type: any}
start: begin
nodes:
  begin:
    type: noop
    next:
      - when: state.fact != ""
        to: save
      - to: recall
  save:
    type: tool
    with: {tool: memory_put, args: {key: '"fact"', value: '{"text": state.fact}'}, output: saved, fatal: true}
    next: recall
  recall:
    type: tool
    with: {tool: memory_get, args: {key: '"fact"'}, output: recalled, fatal: true}
    next: search
  search:
    type: tool
    with: {tool: memory_search, args: {filter: '{"text": {"$ne": ""}}'}, output: found, fatal: true}
    next: END
---
apiVersion: runner/v1
kind: Tool
metadata: {name: memory_put}
mutating: true
parameters:
  type: object
  properties: {key: {type: string}, value: {type: object}}
  required: [key, value]
memory: {op: put, namespace: '["user", state.user_id]'}
---
apiVersion: runner/v1
kind: Tool
metadata: {name: memory_get}
parameters: {type: object, properties: {key: {type: string}}, required: [key]}
memory: {op: get, namespace: '["user", state.user_id]', response: 'result == nil ? "" : result.value.text'}
---
apiVersion: runner/v1
kind: Tool
metadata: {name: memory_search}
parameters: {type: object, properties: {filter: {type: object}, limit: {type: integer}}}
memory:
  op: search
  namespace: '["user"]'
  limit: args.limit ?? 5
  response: 'map(result.items, .namespace[1] + ": " + .value.text)'
`

// gateSrc gates every memory write on a reviewer.
const memoryGateSrc = `
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: guard}
scope: platform
rules:
  - key: guard:memory_writes
    on: before_tool_call
    when: tool.name == "memory_put"
    do: {require_hitl: {checkpoint_type: memory, message: 'Remember "${tool.args.value.text}"?'}}
`

// TestMemoryTools: a fact put on one thread is read on another thread of
// the same user, found by a search across users, and not seen by another
// user or another tenant.
func TestMemoryTools(t *testing.T) {
	g := compile(t, memorySrc, "remember", nil)
	st := store.NewMemory()
	ctx := context.Background()
	acme := &runner.Engine{Store: st, Tenant: "acme"}
	run := func(e *runner.Engine, thread string, input map[string]any) runner.State {
		t.Helper()
		res, err := e.Run(ctx, g, thread, input)
		if err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("run %s = %+v, %v", thread, res, err)
		}
		return res.State
	}
	saved := run(acme, "t1", map[string]any{"user_id": "u1", "fact": "uses Helix"})
	if want := map[string]any{"namespace": []any{"user", "u1"}, "key": "fact"}; !equalJSON(saved["saved"], want) {
		t.Errorf("put result = %v, want %v", saved["saved"], want)
	}
	run(acme, "t2", map[string]any{"user_id": "u2", "fact": "uses vim"})
	later := run(acme, "t3", map[string]any{"user_id": "u1"})
	if later["recalled"] != "uses Helix" {
		t.Errorf("u1's second thread recalls %v, want uses Helix", later["recalled"])
	}
	if want := []any{"u2: uses vim", "u1: uses Helix"}; !equalJSON(later["found"], want) {
		t.Errorf("search = %v, want %v", later["found"], want)
	}
	if other := run(acme, "t4", map[string]any{"user_id": "u3"}); other["recalled"] != "" {
		t.Errorf("u3 recalls %v, want nothing", other["recalled"])
	}
	if other := run(&runner.Engine{Store: st, Tenant: "globex"}, "t5", map[string]any{"user_id": "u1"}); other["recalled"] != "" || !equalJSON(other["found"], []any{}) {
		t.Errorf("tenant globex recalls %v, finds %v; want nothing", other["recalled"], other["found"])
	}
}

// TestMemoryWriteGated: a require_hitl rule on memory_put pauses the run
// before the write; nothing is written until the reviewer approves, then
// the item is written once.
func TestMemoryWriteGated(t *testing.T) {
	g := compile(t, memorySrc+memoryGateSrc, "remember", nil)
	st := store.NewMemory()
	items := st.(store.ItemStore)
	ctx := context.Background()
	e := &runner.Engine{Store: st}
	res, err := e.Run(ctx, g, "t1", map[string]any{"user_id": "u1", "fact": "uses Helix"})
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt == nil || res.Interrupt.Rule != "guard:memory_writes" {
		t.Fatalf("run = %+v, %v; want paused by guard:memory_writes", res, err)
	}
	if !strings.Contains(res.Interrupt.Message, `Remember "uses Helix"?`) {
		t.Errorf("interrupt message = %q", res.Interrupt.Message)
	}
	if _, err := items.Item(ctx, "", []string{"user", "u1"}, "fact", false); err == nil {
		t.Fatal("the gated write happened before the approval")
	}
	res, err = e.Resume(ctx, g, "t1", runner.ResumeOptions{Value: map[string]any{"approved": true}})
	if err != nil || res.Status != runner.StatusCompleted || res.State["recalled"] != "uses Helix" {
		t.Fatalf("resume = %+v, %v; want completed, recalling the fact", res, err)
	}
	found, err := items.SearchItems(ctx, "", store.ItemQuery{Prefix: []string{"user"}})
	if err != nil || len(found) != 1 {
		t.Errorf("items after the approval = %v, %v; want the one fact", found, err)
	}
}

// TestMemoryToolErrors: a namespace that is not a list of labels, or a
// run without an item store, fails the call for good, saying why.
func TestMemoryToolErrors(t *testing.T) {
	src := strings.ReplaceAll(memorySrc, `'["user", state.user_id]'`, `'["user", state.fact]'`)
	g := compile(t, src, "remember", nil)
	res, err := (&runner.Engine{Store: store.NewMemory()}).Run(context.Background(), g, "t1", map[string]any{"user_id": "u1"})
	if err != nil || res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "labels must be non-empty") {
		t.Errorf("a namespace with an empty label: %+v, %v", res.Error, err)
	}
	g = compile(t, memorySrc, "remember", nil)
	res, err = (&runner.Engine{}).Run(context.Background(), g, "t1", map[string]any{"user_id": "u1"})
	if err != nil || res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "no memory store") {
		t.Errorf("a run without a store: %+v, %v", res.Error, err)
	}
}

// TestMemoryToolChecks: validate reports an op's unused keys and a
// namespace that is not a list, at their lines.
func TestMemoryToolChecks(t *testing.T) {
	src := `apiVersion: runner/v1
kind: Tool
metadata: {name: bad}
parameters: {type: object}
memory:
  op: get
  namespace: '"user"'
  filter: '{}'
`
	docs, diags := dsl.Parse("bad.yaml", []byte(src))
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	_, more := c.Check(docs)
	text := append(diags, more...).Error()
	for _, want := range []string{"bad.yaml:7:15: error: expression must be array", "bad.yaml:8:3: error: memory.filter is not used by op get"} {
		if !strings.Contains(text, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, text)
		}
	}
}

// equalJSON compares two values as JSON.
func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
