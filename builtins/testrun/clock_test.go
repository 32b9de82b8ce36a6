package testrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

func TestClockSleepMovesTime(t *testing.T) {
	c := newClock()
	start := c.Now()
	if err := c.Sleep(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := c.Now().Sub(start); got != time.Hour {
		t.Errorf("a one-hour sleep moved the clock %s", got)
	}
}

func TestClockDeadlines(t *testing.T) {
	c := newClock()
	start := c.Now()
	budget := &runner.BudgetError{Budget: "timeout"}
	run, cancelRun := c.WithTimeout(context.Background(), time.Hour, budget)
	defer cancelRun()
	node, cancelNode := c.WithTimeout(run, time.Minute, nil)
	defer cancelNode()
	sibling, cancelSibling := c.WithTimeout(run, time.Second, nil)
	defer cancelSibling()

	if err := c.Sleep(node, 10*time.Second); err != nil || sibling.Err() != nil {
		t.Fatalf("a sleep within its deadline: %v; the sibling's deadline ended it: %v", err, sibling.Err())
	}
	if err := c.Sleep(node, 2*time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a sleep past its node's deadline returned %v", err)
	}
	if got := c.Now().Sub(start); got != time.Minute {
		t.Errorf("the clock stopped at %s, want the node's deadline, 1m", got)
	}
	if !runner.TimedOut(node) || run.Err() != nil {
		t.Errorf("node timed out %v, run ended %v; want the node's deadline only", runner.TimedOut(node), run.Err())
	}
	if err := c.Sleep(run, 2*time.Hour); !errors.Is(err, context.DeadlineExceeded) || c.Now().Sub(start) != time.Hour {
		t.Fatalf("the run's sleep: %v at %s, want its deadline at 1h", err, c.Now().Sub(start))
	}
	if be := (*runner.BudgetError)(nil); !errors.As(context.Cause(run), &be) || !runner.TimedOut(sibling) {
		t.Errorf("the run ended with cause %v (want its budget); the sibling timed out with it: %v", context.Cause(run), runner.TimedOut(sibling))
	}
	cancelled, cancel := c.WithTimeout(context.Background(), time.Hour, nil)
	cancel()
	if runner.TimedOut(cancelled) || !errors.Is(c.Sleep(cancelled, time.Second), context.Canceled) {
		t.Error("a cancelled context reads as timed out")
	}
}

// slowSrc is a pipeline that times out after an hour, on a model that
// answers after two, and a Test of it.
const slowSrc = `apiVersion: runner/v1
kind: Model
metadata: {name: slow}
provider: scripted
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: slow}
state:
  messages: {type: array, reducer: messages}
  status: {type: string, default: PENDING}
limits: {timeout: 1h}
on_timeout: timed_out
start: ask
nodes:
  ask:
    type: llm
    with: {model: slow, prompt: Hello}
    next: END
  timed_out:
    type: set
    with: {status: '"TIMED_OUT after " + string(run.limits.timeout_seconds) + "s"'}
    next: END
---
apiVersion: runner/v1
kind: Test
metadata: {name: slow_model_times_out}
pipeline: slow
script:
  - {text: too late, delay: 2h}
expect:
  status: timed_out
  assert: ['state.status == "TIMED_OUT after 3600s"']
`

// TestTimeoutsTakeNoTime runs a Test of a one-hour timeout under a
// context that ends long before an hour: it passes only if the Test's
// waits are virtual.
func TestTimeoutsTakeNoTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(path, []byte(slowSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load(path)
	proj, more := checker.Check(docs)
	if diags = append(diags, more...); diags.HasErrors(false) {
		t.Fatal(diags)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if problems := Run(ctx, checker, proj, proj.Tests[0], false); len(problems) > 0 {
		t.Fatal(problems)
	}
}
