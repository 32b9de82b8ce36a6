package builtins_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// dyingStore is a store whose process "dies" at the n-th Put: that Put and
// every later one fail, as if the process had been killed between running
// a step and checkpointing it.
type dyingStore struct {
	store.Store
	n, puts int
}

func (d *dyingStore) Put(ctx context.Context, cp *store.Checkpoint) error {
	d.puts++
	if d.puts >= d.n {
		return errors.New("process killed")
	}
	return d.Store.Put(ctx, cp)
}

func shippedGraph(t *testing.T, name string) *runner.Graph {
	t.Helper()
	docs, diags := dsl.Load("../pipelines", "../agents", "../rules")
	c, proj := checked(t, docs, diags)
	g, err := c.Compile(proj, name, dsl.CompileOptions{Tool: builtins.Tool, Provider: builtins.ScriptedProviders(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// comparable drops what legitimately differs between two runs: clock
// readings.
func comparable(t *testing.T, s runner.State) string {
	t.Helper()
	b, _ := json.Marshal(s)
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	for _, field := range []string{"tool_executions", "planner_decisions", "records"} {
		list, _ := v[field].([]any)
		for _, r := range list {
			delete(r.(map[string]any), "timestamp")
			delete(r.(map[string]any), "execution_time_ms")
		}
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestFraudResumeAfterCrash crashes the 004 investigation at every step
// boundary in turn, resumes it from what was durable, and checks it ends in
// the state of an uninterrupted run with every tool executed once.
func TestFraudResumeAfterCrash(t *testing.T) {
	ctx := context.Background()
	g := shippedGraph(t, "fraud_investigation")
	input := map[string]any{"transaction_id": "txn_1005"}
	clock := fixedClock{at: time.Date(2025, 3, 16, 11, 20, 0, 0, time.UTC)} // the audit times are the clock's
	want, err := (&runner.Engine{Clock: clock}).Run(ctx, g, "t", input)
	if err != nil || want.Status != runner.StatusCompleted {
		t.Fatalf("reference: %v %+v", err, want)
	}
	for n := 2; n <= 15; n++ {
		t.Run(fmt.Sprintf("crash-at-checkpoint-%d", n), func(t *testing.T) {
			mem := store.NewMemory()
			defer mem.Close()
			if _, err := (&runner.Engine{Store: &dyingStore{Store: mem, n: n}, Clock: clock}).Run(ctx, g, "t", input); err == nil {
				t.Fatal("the run survived its store")
			}
			got, err := (&runner.Engine{Store: mem, Clock: clock}).Resume(ctx, g, "t", runner.ResumeOptions{})
			if err != nil || got.Status != runner.StatusCompleted {
				t.Fatalf("resume: %v %+v", err, got)
			}
			if a, b := comparable(t, got.State), comparable(t, want.State); a != b {
				t.Errorf("state after crash and resume\n%s\nwant\n%s", a, b)
			}
			seen := map[any]int{}
			for _, e := range got.State["tool_executions"].([]any) {
				seen[e.(map[string]any)["tool_name"]]++
			}
			for tool, k := range seen {
				if k != 1 {
					t.Errorf("%s recorded %d times", tool, k)
				}
			}
		})
	}
}

// TestFraudTimedOut runs the 004 investigation past its timeout (shortened
// here): the pipeline's on_timeout handler records TIMED_OUT and the
// error, as the seed does, the run ends timed_out, and a resume finishes
// the investigation.
func TestFraudTimedOut(t *testing.T) {
	ctx := context.Background()
	g := shippedGraph(t, "fraud_investigation")
	g.Timeout = 30 * time.Millisecond
	executor := *g.Nodes["tool_executor"]
	stuck := executor
	stuck.Node = nodeFunc(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	g.Nodes["tool_executor"] = &stuck
	e := &runner.Engine{Store: store.NewMemory()}
	res, err := e.Run(ctx, g, "t", map[string]any{"transaction_id": "txn_1002"})
	if err != nil || res.Status != runner.StatusTimedOut || res.State["status"] != "TIMED_OUT" {
		t.Fatalf("got %v %+v", err, res)
	}
	if msg, _ := res.State["error"].(string); !strings.Contains(msg, "ran longer than its timeout of 30ms (at node tool_executor)") {
		t.Fatalf("the handler recorded error %q", msg)
	}
	g.Nodes["tool_executor"], g.Timeout = &executor, time.Minute
	res, err = e.Resume(ctx, g, "t", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted || res.State["status"] != "COMPLETED" {
		t.Fatalf("resume: %v %+v", err, res)
	}
}

// fixedClock is the wall clock whose reading never moves.
type fixedClock struct {
	runner.RealClock
	at time.Time
}

func (c fixedClock) Now() time.Time { return c.at }
