package builtins_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// checkTools checks src through the real checker and returns its tools.
func checkTools(t *testing.T, src string) map[string]*dsl.ToolDef {
	t.Helper()
	docs, diags := dsl.Parse("t.yaml", []byte(src))
	_, proj := checked(t, docs, diags)
	return proj.Tools
}

// buildTool checks src and builds its tool called name.
func buildTool(t *testing.T, src, name string) runner.Tool {
	t.Helper()
	def := checkTools(t, src)[name]
	if def == nil {
		t.Fatalf("no tool %q", name)
	}
	tool, err := builtins.Tool(def)
	if err != nil {
		t.Fatalf("building %s: %v", name, err)
	}
	return tool
}

// nodeFunc adapts a function to runner.Node.
type nodeFunc func(context.Context, *runner.Input) (runner.Update, error)

func (f nodeFunc) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	return f(ctx, in)
}

// attempts calls tool from a node that may run three times, as a retry
// policy allows, and returns how often it ran and its last error: one run
// with an error means the error is permanent.
func attempts(t *testing.T, ctx context.Context, tool runner.Tool, call *runner.ToolCall) (int, error) {
	t.Helper()
	var n int
	var last error
	node := nodeFunc(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
		n++
		_, last = tool.Call(ctx, call)
		return nil, last
	})
	g := &runner.Graph{Name: "g", Start: "call", MaxSteps: 5, Fields: map[string]runner.Field{},
		Nodes: map[string]*runner.Step{"call": {Name: "call", Node: node,
			Retry: runner.Retry{MaxAttempts: 3}, Routes: []runner.Route{{To: runner.End}}}}}
	if _, err := (&runner.Engine{}).Run(ctx, g, "thread", nil); err != nil && last == nil {
		t.Fatalf("run: %v", err)
	}
	return n, last
}

// asJSON renders a tool result for comparison.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const mathTools = `
apiVersion: runner/v1
kind: Tool
metadata: {name: add}
parameters:
  type: object
  properties:
    a: {type: integer}
    b: {type: number}
    tags: {type: array, items: {type: string}}
  required: [a, b]
  additionalProperties: false
expr: '{"sum": args.a + args.b, "seen": state.count ?? 0}'
---
apiVersion: runner/v1
kind: Tool
metadata: {name: ctx}
parameters: {type: object}
builtin: sample_transaction_context
`

func TestToolExpr(t *testing.T) {
	tool := buildTool(t, mathTools, "add")
	cases := []struct {
		name  string
		args  map[string]any
		state runner.State
		want  string
	}{
		{"ints", map[string]any{"a": 2, "b": 3}, runner.State{"count": int64(7)}, `{"seen":7,"sum":5}`},
		{"int64 and float64", map[string]any{"a": int64(2), "b": 0.5}, nil, `{"seen":0,"sum":2.5}`},
		{"whole float is an integer", map[string]any{"a": 2.0, "b": int64(1)}, nil, `{"seen":0,"sum":3}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tool.Call(context.Background(), &runner.ToolCall{Name: "add", Args: c.args, State: c.state})
			if err != nil {
				t.Fatal(err)
			}
			if s := asJSON(t, got); s != c.want {
				t.Errorf("got %s, want %s", s, c.want)
			}
		})
	}
}

func TestToolExprCancelled(t *testing.T) {
	tool := buildTool(t, mathTools, "add")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tool.Call(ctx, &runner.ToolCall{Args: map[string]any{"a": 1, "b": 2}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestToolInvalidArguments(t *testing.T) {
	tool := buildTool(t, mathTools, "add")
	cases := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"missing", map[string]any{"a": 1}, []string{"tool add: invalid arguments: ", "missing property 'b'"}},
		{"nil args", nil, []string{"missing properties 'a', 'b'"}},
		{"wrong type", map[string]any{"a": "one", "b": 2}, []string{"/a: got string, want integer"}},
		{"fraction for integer", map[string]any{"a": 1.5, "b": 2}, []string{"/a: got number, want integer"}},
		{"nested", map[string]any{"a": 1, "b": 2, "tags": []any{"x", 3}}, []string{"/tags/1: got number, want string"}},
		{"unknown property", map[string]any{"a": 1, "b": 2, "c": true}, []string{"additional properties 'c' not allowed"}},
		{"several", map[string]any{"a": "x", "b": "y", "tags": []any{1, 2}}, []string{"/a: ", "; and 1 more"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := attempts(t, context.Background(), tool, &runner.ToolCall{Name: "add", Args: c.args})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if n != 1 {
				t.Errorf("ran %d times; invalid arguments must not be retried", n)
			}
		})
	}
}

func TestToolBuildErrors(t *testing.T) {
	cases := []struct {
		name string
		def  *dsl.ToolDef
		want string
	}{
		{"unknown builtin", &dsl.ToolDef{Name: "x", Builtin: "nope"},
			`tool x: unknown builtin "nope" (known: sample_transaction_context, xml_validate)`},
		{"no implementation", &dsl.ToolDef{Name: "y"}, "tool y: no implementation"},
		{"bad schema", &dsl.ToolDef{Name: "z", Builtin: "sample_transaction_context",
			Parameters: map[string]any{"type": 3}}, "tool z: parameters:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := builtins.Tool(c.def)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestBuiltinTools(t *testing.T) {
	names := builtins.BuiltinTools()
	if !slices.IsSorted(names) || !slices.Contains(names, "sample_transaction_context") {
		t.Errorf("BuiltinTools() = %v", names)
	}
	for _, name := range names {
		if _, err := builtins.Tool(&dsl.ToolDef{Name: "t", Builtin: name}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSampleTransactionContext(t *testing.T) {
	tool := buildTool(t, mathTools, "ctx")
	got, err := tool.Call(context.Background(), &runner.ToolCall{Args: map[string]any{"transaction_id": "txn_1001"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := got.(map[string]any)["context"].(map[string]any)
	txn := ctx["transaction"].(map[string]any)
	for _, k := range []string{"id", "amount", "currency", "country", "mcc", "merchant", "device_id", "timestamp"} {
		if txn[k] == nil {
			t.Errorf("transaction.%s is missing", k)
		}
	}
	cust := ctx["customer"].(map[string]any)
	for _, k := range []string{"id", "name", "home_country", "avg_amount", "account_age_days"} {
		if cust[k] == nil {
			t.Errorf("customer.%s is missing", k)
		}
	}
	if txn["id"] != "txn_1001" || cust["account_age_days"] != int64(1460) || txn["amount"] != 1899.99 {
		t.Errorf("transaction %v, customer %v", txn, cust)
	}
	recent := ctx["recent_transactions"].([]any)
	if len(recent) == 0 || recent[0].(map[string]any)["minutes_before"] != int64(4) {
		t.Errorf("recent_transactions = %v", recent)
	}
	if cases := ctx["known_cases"].([]any); len(cases) == 0 || cases[0].(map[string]any)["case_id"] == nil {
		t.Errorf("known_cases = %v", cases)
	}
}

func TestSampleUnknownTransaction(t *testing.T) {
	tool := buildTool(t, mathTools, "ctx")
	n, err := attempts(t, context.Background(), tool, &runner.ToolCall{Args: map[string]any{"transaction_id": "txn_9"}})
	want := `transaction "txn_9" is not in the sample (known: txn_1001, txn_1002, `
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
	if n != 1 {
		t.Errorf("ran %d times, want 1 (permanent)", n)
	}
}

// fraudTools are the six shipped investigation tools, in the planner's
// fallback order.
var fraudTools = []string{"context_tool", "pattern_tool", "similarity_tool", "reasoning_tool", "recommendation_tool", "rule_draft_tool"}

// investigate runs the shipped fraud tools in order on a transaction,
// merging each result into the state as the tool node does with merge.
func investigate(t *testing.T, id string) runner.State {
	t.Helper()
	src, err := os.ReadFile("../pipelines/fraud_investigation/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defs := checkTools(t, string(src))
	state := runner.State{"transaction_id": id}
	for _, name := range fraudTools {
		tool, err := builtins.Tool(defs[name])
		if err != nil {
			t.Fatal(err)
		}
		out, err := tool.Call(context.Background(), &runner.ToolCall{Name: name, Args: map[string]any{"transaction_id": id}, State: state})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		update, ok := out.(map[string]any)
		if !ok {
			t.Fatalf("%s returned %T, want an object of state updates", name, out)
		}
		for k, v := range update {
			state[k] = v
		}
	}
	return state
}

func TestShippedFraudTools(t *testing.T) {
	cases := []struct {
		id        string
		severity  string
		ruleDraft bool
	}{
		{"txn_1001", "CRITICAL", true},
		{"txn_1002", "LOW", false},
		{"txn_1003", "MEDIUM", true},
		{"txn_1004", "HIGH", true},
		{"txn_1005", "HIGH", true},
		{"txn_1006", "LOW", true},
		{"txn_1007", "MEDIUM", true},
		{"txn_1008", "CRITICAL", true},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			state := investigate(t, c.id)
			reasoning, _ := state["reasoning"].(map[string]any)
			if got := reasoning["severity"]; got != c.severity {
				t.Errorf("severity %v, want %s (reasoning %v, patterns %v, similarity %v)",
					got, c.severity, reasoning, state["pattern_results"], state["similarity_results"])
			}
			if got := state["rule_draft"] != nil; got != c.ruleDraft {
				t.Errorf("rule_draft = %v, want present: %v", state["rule_draft"], c.ruleDraft)
			}
			if recs, _ := state["recommendations"].([]any); len(recs) == 0 {
				t.Errorf("no recommendations")
			}
		})
	}
}

func TestShippedToolsBuild(t *testing.T) {
	for _, file := range []string{"../pipelines/fraud_investigation/tools.yaml", "../pipelines/ops_actions/tools.yaml"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for name, def := range checkTools(t, string(src)) {
			if _, err := builtins.Tool(def); err != nil {
				t.Errorf("%s: %s: %v", file, name, err)
			}
		}
	}
}
