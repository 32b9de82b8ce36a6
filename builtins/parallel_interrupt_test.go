package builtins_test

import (
	"context"
	"os"
	"testing"

	"github.com/runner-dev/runner/runner"
)

// twoAsks compiles testdata/two_asks.yaml: two parallel branches each ask
// a human; both pause, each with its own interrupt ID.
func twoAsks(t *testing.T) *runner.Graph {
	src, err := os.ReadFile("testdata/two_asks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return compile(t, string(src), "two_asks", nil)
}

func TestParallelInterruptsByID(t *testing.T) {
	ctx := context.Background()
	g := twoAsks(t)
	e := engine(t)
	res, err := e.Run(ctx, g, "t", nil)
	if err != nil || res.Status != runner.StatusInterrupted || len(res.Interrupt.Pending) != 2 {
		t.Fatalf("run: %v %+v", err, res)
	}
	first, second := res.Interrupt.Pending[0], res.Interrupt.Pending[1]
	if first.ID == "" || first.ID == second.ID || first.Message != "colour?" {
		t.Fatalf("pending interrupts %+v %+v", first, second)
	}
	// one answered: the other still waits, with the ID it had
	res, err = e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{first.ID: "red"}})
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.ID != second.ID || res.Interrupt.Message != "size?" {
		t.Fatalf("after one answer: %v %+v", err, res)
	}
	res, err = e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{second.ID: "large"}})
	if err != nil || res.Status != runner.StatusCompleted || res.State["a"] != "red" || res.State["b"] != "large" {
		t.Fatalf("after both answers: %v %+v", err, res)
	}
}

func TestParallelInterruptsTogether(t *testing.T) {
	ctx := context.Background()
	g := twoAsks(t)
	e := engine(t)
	if res, err := e.Run(ctx, g, "t", nil); err != nil || len(res.Interrupt.Pending) != 2 {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: "same"})
	if err != nil || res.Status != runner.StatusCompleted || res.State["a"] != "same" || res.State["b"] != "same" {
		t.Fatalf("one value for both: %v %+v", err, res)
	}
}
