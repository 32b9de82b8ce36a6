package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var shippedArgs = []string{"../../pipelines", "../../agents", "../../rules"}

func TestShippedTestsPass(t *testing.T) {
	code, out, errOut := runCLI(t, append([]string{"test", "-v"}, shippedArgs...)...)
	var passed int
	if _, err := fmt.Sscanf(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:], "%d passed, 0 failed", &passed); code != 0 || err != nil || passed < 95 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestFailingTestReports(t *testing.T) {
	code, out, _ := runCLI(t, "test", "testdata/failing_test.yaml")
	if code != 1 || !strings.Contains(out, "FAIL  counts_to_three") || !strings.Contains(out, "assertion failed: state.n == 4") ||
		!strings.Contains(out, "got:  bump → bump → bump") || !strings.Contains(out, "0 passed, 1 failed") ||
		!strings.Contains(out, "failing_test.yaml:23:9: path: entry 3 is bump, want (end)") || !strings.Contains(out, "failing_test.yaml:25:7: assertion failed") ||
		!strings.Contains(out, "state.n = 3") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// execArgs runs exec on the shipped definitions with a store in dir.
func execArgs(dir string, args ...string) []string {
	t := []string{"exec", "--store", "sqlite:" + filepath.Join(dir, "state.db")}
	return append(t, args...)
}

func TestExecCompletes(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	code, out, errOut := runCLI(t, execArgs(dir, "fraud_investigator", "--input", `{"transaction_id": "txn_1001"}`, "--thread", "t1")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || got["severity"] != "CRITICAL" || got["status"] != "COMPLETED" {
		t.Fatalf("output %s (%v)", out, err)
	}
	code, out, _ = runCLI(t, "threads", "history", "t1", "--store", "sqlite:"+filepath.Join(dir, "state.db"))
	if code != 0 || !strings.Contains(out, "completion") || strings.Count(out, "\n") != 17 {
		t.Errorf("history: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "threads", "show", "t1", "--checkpoint", "3", "--store", "sqlite:"+filepath.Join(dir, "state.db"))
	if code != 0 || !strings.Contains(out, `"id": 3`) || !strings.Contains(out, `"node": "tool_executor"`) {
		t.Errorf("show --checkpoint 3: exit %d\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "threads", "show", "nope", "--store", "sqlite:"+filepath.Join(dir, "state.db"))
	if code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("show of an unknown thread: exit %d %s", code, errOut)
	}
	code, out, _ = runCLI(t, "threads", "list", "--store", "sqlite:"+filepath.Join(dir, "state.db"))
	if code != 0 || !strings.Contains(out, "t1") || !strings.Contains(out, "completed") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
}

func TestExecPauseAndResume(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	code, _, errOut := runCLI(t, execArgs(dir, "ops_actions", "--input", `{"user_input": "restart nginx.service"}`, "--thread", "ops")...)
	if code != 3 || !strings.Contains(errOut, "paused at approve (approval)") || !strings.Contains(errOut, "--resume ops") ||
		!strings.Contains(errOut, `the value must satisfy: {"properties":{"approved"`) {
		t.Fatalf("exit %d, want 3: %s", code, errOut)
	}
	code, _, errOut = runCLI(t, execArgs(dir, "ops_actions", "--resume", "ops", "--value", `{"approved": "yes"}`)...)
	if code != 2 || !strings.Contains(errOut, "invalid resume value") || !strings.Contains(errOut, "/approved") {
		t.Fatalf("bad value: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t, execArgs(dir, "ops_actions", "--resume", "ops", "--value", `{"approved": true}`)...)
	if code != 0 || !strings.Contains(out, `"status": "DRY_RUN"`) {
		t.Fatalf("resume: exit %d: %s%s", code, out, errOut)
	}
}

func TestExecEvents(t *testing.T) {
	t.Chdir("../..")
	code, out, _ := runCLI(t, "exec", "--store", "memory:", "--events", "ops_actions", "--input", `{"user_input": "status of api"}`)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first, last map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if first["event"] != "run_start" || last["event"] != "done" || !strings.Contains(out, `"event":"tool_call"`) {
		t.Errorf("events from %v to %v:\n%s", first["event"], last["event"], out)
	}
}

func TestExecUsageErrors(t *testing.T) {
	t.Chdir("../..")
	cases := []struct {
		name string
		args []string
		want string
	}{ // each exits 2
		{"unknown target", []string{"exec", "--store", "memory:", "nope"}, `no agent or pipeline named "nope"`},
		{"bad input", []string{"exec", "--store", "memory:", "ops_actions", "--input", "{"}, "--input is not valid JSON"},
		{"input not object", []string{"exec", "--store", "memory:", "ops_actions", "--input", "[1]"}, "must be a JSON object"},
		{"bad store", []string{"exec", "--store", "redis:x", "ops_actions"}, "redis"},
		{"unknown field", []string{"exec", "--store", "memory:", "ops_actions", "--input", `{"usr_input": "x"}`},
			`input field "usr_input" is not declared in the input of pipeline ops_actions; did you mean "user_input"?`},
		{"state field not in input", []string{"exec", "--store", "memory:", "fraud_investigation", "--input", `{"step_count": 999}`},
			`input field "step_count" is not declared in the input of pipeline fraud_investigation; accepted: max_steps, transaction_id`},
		{"wrong type", []string{"exec", "--store", "memory:", "fraud_investigator", "--input", `{"transaction_id": 5, "max_steps": 1.5}`},
			`input field "max_steps": expected integer, got number 1.5; input field "transaction_id": expected string, got integer`},
		{"required input", []string{"exec", "fraud_investigator"},
			"input field \"transaction_id\" is required; give it a string value\nrun it with: runner exec fraud_investigator --input '{\"transaction_id\":\"\"}'\n"},
		{"required input, others given", []string{"exec", "ops_actions", "--input", `{"auto_execute": true}`, "--store", "sqlite:x.db"},
			"input field \"user_input\" is required; give it a string value\nrun it with: runner exec ops_actions --input '{\"auto_execute\":true,\"user_input\":\"\"}' --store sqlite:x.db\n"},
		{"did you mean", []string{"exec", "--store", "memory:", "fraud_investigatr"},
			`no agent or pipeline named "fraud_investigatr"; did you mean "fraud_investigator"?` + "\n  agents: elyra, fraud_investigator, ops_assistant, rule_32, rule_37, user_request\n  pipelines: elyra, fraud_investigation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) || out != "" || strings.Contains(errOut, "thread ") || strings.Contains(errOut, "reflect") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing on stdout, no thread, and %q", code, out, errOut, c.want)
			}
		})
	}
	for _, store := range []string{".runner/state.db", "x.db"} {
		if _, err := os.Stat(store); err == nil {
			t.Errorf("a refused run created its store %s", store)
		}
	}
}

// TestExecConversation holds a three-turn conversation with the shipped
// rule_37 agent on one thread: each turn continues from the last, the
// history shows every checkpoint, and a new run of a paused thread is
// refused with a pointer to --resume.
func TestExecConversation(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	writeFile(t, script, `[{"node": "initial_llm_call", "text": "Hello Dana."},
	 {"node": "initial_llm_call", "text": "Rule 37 sets 467 ft to the lease line."},
	 {"node": "initial_llm_call", "tool_calls": [{"id": "c1", "name": "create_entity", "args": {"name": "Mitchell Ranch 3H", "entity_type": "well"}}]}]`)
	say := func(text string) []string {
		return execArgs(dir, "rule_37", "--thread", "conv", "--script", script, "--input",
			`{"messages": [{"role": "user", "content": "`+text+`"}]}`)
	}
	for i, text := range []string{"Hi", "What is the lease-line minimum?"} {
		code, out, errOut := runCLI(t, say(text)...)
		var got map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got["status"] != "completed" {
			t.Fatalf("turn %d: exit %d\n%s%s", i+1, code, out, errOut)
		}
	}
	code, out, errOut := runCLI(t, append(say("Add the 3H well"), "--output", "json")...)
	if code != 3 || !strings.Contains(errOut, "create_entity") {
		t.Fatalf("turn 3: exit %d, want 3 (the gate): %s", code, errOut)
	}
	var paused struct{ Output map[string]any } // the declared output, not the raw state
	if json.Unmarshal([]byte(out), &paused) != nil || paused.Output["status"] != "running" || paused.Output["messages"] != nil {
		t.Errorf("a paused run reports %s, want the pipeline's declared output", out)
	}
	code, _, errOut = runCLI(t, say("hello?")...)
	if code != 2 || !strings.Contains(errOut, "resume it instead of starting a new run\nresume with: runner exec rule_37 --resume conv --store sqlite:"+filepath.Join(dir, "state.db")+" --script "+script+"\n") {
		t.Errorf("a new run of a paused thread: exit %d: %s", code, errOut)
	}
	code, out, _ = runCLI(t, "threads", "history", "conv", "--oldest-first", "--store", "sqlite:"+filepath.Join(dir, "state.db"))
	if code != 0 || strings.Count(out, " completed ") != 2 || strings.Count(out, " interrupted ") != 1 || strings.Count(out, "\n") != 27 { // a header and 10 + 10 + 6 checkpoints
		t.Errorf("history of three turns: exit %d\n%s", code, out)
	}
	for i, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if id, _, _ := strings.Cut(l, " "); id != strconv.Itoa(i+1) {
			t.Fatalf("history line %d = %q: the checkpoints of the turns are not one sequence", i+1, l)
		}
	}
	page := func(args ...string) []string { // the ids a history page lists
		_, out, _ := runCLI(t, append([]string{"threads", "history", "conv", "--store", "sqlite:" + filepath.Join(dir, "state.db")}, args...)...)
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			id, _, _ := strings.Cut(l, " ")
			ids = append(ids, id)
		}
		return ids
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--limit", "2"}, "26 25"},
		{[]string{"--before", "10", "--limit", "2"}, "9 8"},
		{[]string{"--status", "completed"}, "20 10"},
	} {
		if got := strings.Join(page(c.args...), " "); got != c.want {
			t.Errorf("history %v lists %s, want %s (newest first)", c.args, got, c.want)
		}
	}
	code, out, errOut = runCLI(t, "threads", "show", "conv", "--store", "sqlite:"+filepath.Join(dir, "state.db"))
	var shown struct {
		ID        int64
		Status    string
		Next      string
		Interrupt struct{ Rule string }
		State     struct{ Messages []any }
	}
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.ID != 26 || shown.Status != "interrupted" || shown.Next != "tool_node" ||
		shown.Interrupt.Rule != "platform:hitl_on_mutating_capability" || len(shown.State.Messages) == 0 {
		t.Errorf("threads show: exit %d\n%s%s", code, out, errOut)
	}
	db := "sqlite:" + filepath.Join(dir, "state.db")
	if code, out, errOut := runCLI(t, "threads", "fork", "conv", "--to", "conv2", "--store", db); code != 0 || !strings.Contains(out, `"thread": "conv2"`) {
		t.Fatalf("fork: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "threads", "update", "conv2", "--values", `{"metadata": {"reviewed": true}}`, "--store", db)
	if code != 0 || !strings.Contains(out, `"reviewed": true`) || !strings.Contains(out, `"status": "interrupted"`) {
		t.Fatalf("update of the paused fork: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, execArgs(dir, "rule_37", "--resume", "conv2", "--script", script, "--value", `{"approved": true}`)...)
	if code != 0 || !strings.Contains(out, `"tool_name": "create_entity"`) || !strings.Contains(out, `"status": "SUCCESS"`) {
		t.Errorf("resume of the edited fork (the approved call runs): exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "threads", "update", "conv2", "--values", `{"nope": 1}`, "--store", db); code != 2 {
		t.Errorf("update of an undeclared field: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "threads", "update", "conv2", "--values", `{"metadata": "reviewed"}`, "--store", db); code != 2 ||
		!strings.Contains(errOut, `state field "metadata"`) {
		t.Errorf("update of a field with a value of the wrong type: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "threads", "prune", "conv", "--keep", "1", "--store", db); code != 0 {
		t.Fatalf("prune of the paused thread: exit %d %s", code, errOut)
	}
	code, out, errOut = runCLI(t, execArgs(dir, "rule_37", "--resume", "conv", "--script", script, "--value", `{"approved": true}`)...)
	if code != 0 || !strings.Contains(out, `"tool_name": "create_entity"`) {
		t.Errorf("resume of the pruned thread (no --force): exit %d\n%s%s", code, out, errOut)
	}
}

// TestExecIntegerInput: an integer from --input is an integer to CEL (a
// route and a rule add 1 to it) and to expr (type() says int).
func TestExecIntegerInput(t *testing.T) {
	t.Setenv("RUNNER_PATHS", "testdata/inputs.yaml")
	code, out, errOut := runCLI(t, "exec", "--store", "memory:", "count", "--input", `{"n": 3, "extra": 3}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var state map[string]any
	if err := json.Unmarshal([]byte(out), &state); err != nil || state["kind"] != "int" || state["ruled"] != true {
		t.Fatalf("state %s (%v), want kind int and ruled true", out, err)
	}
}

func TestJSONFlagIntegers(t *testing.T) {
	cmd := newExec()
	if err := cmd.Flags().Set("value", `{"n": 3, "l": [1, 2.5]}`); err != nil {
		t.Fatal(err)
	}
	got, err := jsonFlag(cmd, "value")
	want := map[string]any{"n": int64(3), "l": []any{int64(1), 2.5}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("jsonFlag = %#v, %v; want %#v", got, err, want)
	}
}

// TestExecResumeRenamedNode: a forced resume after the paused node was
// renamed is refused, naming the node, instead of crashing.
func TestExecResumeRenamedNode(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	src := `apiVersion: runner/v1
kind: Pipeline
metadata: {name: ask}
state:
  answer: {type: any}
start: NODE
nodes:
  NODE:
    type: interrupt
    with: {kind: question, message: "Go on", into: answer}
    next: END
`
	write := func(node string) {
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(src, "NODE", node)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("question")
	t.Setenv("RUNNER_PATHS", file)
	if code, _, errOut := runCLI(t, execArgs(dir, "ask", "--thread", "q")...); code != exitPaused {
		t.Fatalf("exit %d, want %d: %s", code, exitPaused, errOut)
	}
	write("query")
	code, _, errOut := runCLI(t, execArgs(dir, "ask", "--resume", "q", "--force", "--value", `"yes"`)...)
	if code != exitFailed || !strings.Contains(errOut, `it stopped before node "question", which pipeline ask no longer has`) {
		t.Fatalf("exit %d, want %d and a refusal naming the node: %s", code, exitFailed, errOut)
	}
}

// TestPruneAndDelete: retention from the command line and from runner.yaml
// keeps a thread's newest checkpoints; delete removes the thread.
func TestPruneAndDelete(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "state.db")
	if code, _, errOut := runCLI(t, execArgs(dir, "fraud_investigator", "--input", `{"transaction_id": "txn_1002"}`, "--thread", "f1")...); code != 0 {
		t.Fatalf("exec: %s", errOut)
	}
	code, _, errOut := runCLI(t, "threads", "prune", "f1", "--keep", "3", "--store", db)
	_, out, _ := runCLI(t, "threads", "history", "f1", "--store", db)
	if code != 0 || strings.Count(out, "\n") != 4 || !strings.Contains(out, "completed") {
		t.Errorf("prune --keep 3: exit %d %s\n%s", code, errOut, out)
	}
	if code, _, errOut := runCLI(t, "threads", "show", "f1", "--store", db); code != 0 {
		t.Errorf("show after prune: exit %d %s", code, errOut)
	}
	conf := filepath.Join(dir, "runner.yaml")
	root, _ := os.Getwd() // a settings file's paths are relative to its directory
	writeFile(t, conf, "paths: ["+strings.Join([]string{filepath.Join(root, "pipelines"), filepath.Join(root, "agents"), filepath.Join(root, "rules")}, ", ")+"]\nretention: {keep: 2}\n")
	if code, _, errOut := runCLI(t, execArgs(dir, "fraud_investigator", "--config", conf, "--input", `{"transaction_id": "txn_1002"}`, "--thread", "f2")...); code != 0 {
		t.Fatalf("exec with retention: %s", errOut)
	}
	if _, out, _ := runCLI(t, "threads", "history", "f2", "--store", db); strings.Count(out, "\n") != 3 {
		t.Errorf("runner.yaml retention keep 2 after exec:\n%s", out)
	}
	if code, _, _ := runCLI(t, "threads", "delete", "f1", "--store", db); code != 0 {
		t.Errorf("delete: exit %d", code)
	}
	if code, _, errOut := runCLI(t, "threads", "show", "f1", "--store", db); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("show after delete: exit %d %s", code, errOut)
	}
}

func TestExecTimedOut(t *testing.T) {
	t.Setenv("RUNNER_PATHS", "testdata/timeout.yaml")
	dir := t.TempDir()
	code, out, errOut := runCLI(t, execArgs(dir, "slow", "--script", "testdata/timeout_script.yaml", "--thread", "s", "--output", "json")...)
	if code != exitTimedOut || !strings.Contains(errOut, "resume with: runner exec slow --resume s --store sqlite:") ||
		!strings.Contains(out, `"status": "TIMED_OUT"`) || !strings.Contains(out, `"error": "timeout at ask"`) {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitTimedOut, out, errOut)
	}
	code, out, errOut = runCLI(t, "threads", "history", "s", "--status", "timed_out", "--store", "sqlite:"+filepath.Join(dir, "state.db"))
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 3 { // the handler's step and the end
		t.Fatalf("history --status timed_out: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, execArgs(dir, "slow", "--script", "testdata/timeout_script.yaml", "--resume", "s")...)
	if code != 0 || !strings.Contains(out, `"status": "DONE"`) {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
}

func TestExecStaticInterrupts(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	input := `{"transaction_id": "txn_1002"}`
	code, _, errOut := runCLI(t, execArgs(dir, "fraud_investigation", "--input", input, "--thread", "f", "--interrupt-before", "completion")...)
	if code != exitPaused || !strings.Contains(errOut, "paused at completion (before)") {
		t.Fatalf("exit %d, want %d: %s", code, exitPaused, errOut)
	}
	code, out, errOut := runCLI(t, execArgs(dir, "fraud_investigation", "--resume", "f")...)
	if code != 0 || !strings.Contains(out, `"status": "COMPLETED"`) {
		t.Fatalf("resume: exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, execArgs(dir, "fraud_investigation", "--input", input, "--interrupt-after", "planer")...)
	if code != exitUsage || !strings.Contains(errOut, `interrupt_after names node "planer"`) {
		t.Fatalf("unknown node: exit %d, want %d: %s", code, exitUsage, errOut)
	}
}

// TestThreadsListings: threads list and history take --format json and
// --limit; an empty or missing store has no threads yet, not an error.
func TestThreadsListings(t *testing.T) {
	defs, _ := filepath.Abs("testdata/contract.yaml")
	t.Setenv("RUNNER_PATHS", defs)
	t.Chdir(t.TempDir())
	code, out, errOut := runCLI(t, "threads", "list")
	if code != 0 || out != "" || !strings.HasPrefix(errOut, "no threads yet: store sqlite:.runner/state.db does not exist") {
		t.Errorf("list before any run: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "threads", "list", "--format", "json"); code != 0 || out != "[]\n" {
		t.Errorf("list --format json before any run: exit %d %q, want []", code, out)
	}
	if _, err := os.Stat(".runner"); err == nil {
		t.Errorf("threads list created the store's directory")
	}
	for _, th := range []string{"a", "b", "c"} {
		if code, _, errOut := runCLI(t, "exec", "contract", "--thread", th, "--input", `{"mode": "done"}`); code != 0 {
			t.Fatalf("exec: exit %d %s", code, errOut)
		}
	}
	_, out, _ = runCLI(t, "threads", "list", "--limit", "2")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "THREAD") {
		t.Errorf("list --limit 2:\n%s", out)
	}
	_, out, _ = runCLI(t, "threads", "list", "--format", "json")
	var threads []struct{ ID, Pipeline, Status string }
	if err := json.Unmarshal([]byte(out), &threads); err != nil || len(threads) != 3 || threads[0].Pipeline != "contract" || threads[0].Status != "completed" {
		t.Errorf("list --format json: %v\n%s", err, out)
	}
	_, out, _ = runCLI(t, "threads", "history", "a", "--format", "json", "--limit", "2")
	var hist []struct {
		ID           int64
		Node, Status string
	}
	if err := json.Unmarshal([]byte(out), &hist); err != nil || len(hist) != 2 || hist[0].ID != 2 || hist[0].Status != "completed" || hist[0].Node != "route" {
		t.Errorf("history --format json --limit 2: %v\n%s", err, out)
	}
	if code, _, errOut := runCLI(t, "threads", "history", "a", "--format", "yaml"); code != 2 || !strings.Contains(errOut, `unknown --format "yaml": use text or json`) {
		t.Errorf("history --format yaml: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "threads", "delete", "a"); code != 0 {
		t.Fatalf("delete: %s", errOut)
	}
}
