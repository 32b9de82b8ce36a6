package builtins_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// noLedger is a store that appends nothing to the audit ledger: the
// baseline of BenchmarkLedgerResume.
type noLedger struct{ store.Store }

func (s noLedger) Put(ctx context.Context, cp *store.Checkpoint) error {
	c := *cp
	c.Audit = nil
	return s.Store.Put(ctx, &c)
}

// BenchmarkLedgerResume times a decided resume of a before_tool_call
// gate on SQLite — the approved call runs, the run ends — with the
// ledger record of its decision appended, and without (the baseline, on
// the same file, in the same run); ratio is the first over the second
// (target: at most 1.10).
func BenchmarkLedgerResume(b *testing.B) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	k := gateKinds[0]
	g := deskRig(b, k.agent, k.script, false)
	ctx := context.Background()
	resume := func(e *runner.Engine, thread string) time.Duration {
		if _, err := e.Run(ctx, g, thread, nil); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := e.Resume(ctx, g, thread, runner.ResumeOptions{Value: approvedBy})
		took := time.Since(start)
		if err != nil || res.Status != runner.StatusCompleted {
			b.Fatalf("resume: %v %+v", err, res)
		}
		return took
	}
	with, without := &runner.Engine{Store: st}, &runner.Engine{Store: noLedger{st}}
	var ledger, base time.Duration
	i := 0
	for b.Loop() { // each goes first every other time: the second pays the first's log
		i++
		if i%2 == 0 {
			ledger += resume(with, fmt.Sprint("ledger-", i))
		}
		base += resume(without, fmt.Sprint("base-", i))
		if i%2 == 1 {
			ledger += resume(with, fmt.Sprint("ledger-", i))
		}
	}
	b.ReportMetric(float64(ledger.Microseconds())/float64(b.N)/1000, "ms/resume-with-ledger")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N)/1000, "ms/resume")
	b.ReportMetric(float64(ledger)/float64(base), "ratio")
}
