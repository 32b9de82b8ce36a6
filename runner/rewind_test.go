package runner_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runner-dev/runner/runner"
)

// Rewind makes an earlier checkpoint the thread's newest: a resume
// replays the steps after it and ends where an uninterrupted run does,
// the history keeping every step.
func TestRewindReplays(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := loopGraph(3, 0)
	res, err := e.Run(ctx, g, "t", nil)
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	ts, err := e.Rewind(ctx, g, "t", 2) // after the first inc
	if err != nil || ts.Status != runner.StatusRunning || ts.Next != "inc" || ts.State["n"] != int64(1) || ts.Checkpoint != res.Checkpoint+1 {
		t.Fatalf("rewind: %v %+v", err, ts)
	}
	again, err := e.Resume(ctx, g, "t", runner.ResumeOptions{})
	if err != nil || again.Status != runner.StatusCompleted || again.State["n"] != int64(3) || len(again.Path) != 2 {
		t.Fatalf("replay: %v %+v", err, again)
	}
	hist, _ := e.Store.History(ctx, "t")
	if len(hist) != int(again.Checkpoint) {
		t.Errorf("history has %d checkpoints, want all %d", len(hist), again.Checkpoint)
	}
	if branch := hist[res.Checkpoint]; branch.Parent != 2 || hist[res.Checkpoint+1].Parent != branch.ID {
		t.Errorf("the replay's checkpoints have parents %d, %d; want a branch from 2", branch.Parent, hist[res.Checkpoint+1].Parent)
	}
	if _, err := e.Rewind(ctx, g, "t", 99); err == nil {
		t.Error("rewind to an unknown checkpoint succeeded")
	}
}

// Goto writes values through the reducers and makes a node the next to
// run: a resume runs it from there; an unknown node is refused; END ends
// the thread where it stands, completed.
func TestGoto(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := loopGraph(3, 0)
	if _, err := e.Run(ctx, g, "t", nil); err != nil {
		t.Fatal(err)
	}
	ts, err := e.Goto(ctx, g, "t", runner.Update{"n": 5}, "inc")
	if err != nil || ts.Status != runner.StatusUpdated || ts.Next != "inc" || ts.State["n"] != int64(8) {
		t.Fatalf("goto: %v %+v", err, ts)
	}
	res, err := e.Resume(ctx, g, "t", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted || res.State["n"] != int64(9) || len(res.Path) != 1 {
		t.Fatalf("resume after goto: %v %+v", err, res)
	}
	if _, err := e.Goto(ctx, g, "t", nil, "nope"); !errors.Is(err, runner.ErrInput) {
		t.Errorf("goto an unknown node: %v, want ErrInput", err)
	}
	if _, err := e.Goto(ctx, g, "t", runner.Update{"n": 1}, "inc"); err != nil {
		t.Fatal(err)
	}
	ts, err = e.Goto(ctx, g, "t", nil, runner.End)
	if err != nil || ts.Status != runner.StatusCompleted || ts.State["n"] != int64(10) {
		t.Fatalf("goto END: %v %+v", err, ts)
	}
	if _, err := e.Resume(ctx, g, "t", runner.ResumeOptions{}); err == nil {
		t.Error("a thread ended by goto END resumed")
	}
}
