//go:build unix

package testrun

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTestCover runs the shipped project's Tests with coverage and,
// in the same loop, without it, the baseline (runner test), in turn first
// (the garbage of one is collected during the other): ratio is the time
// of the one over the other's, cpu-ratio the same in CPU time, which the
// other processes of a busy machine do not change.
func BenchmarkTestCover(b *testing.B) {
	suite := loadSuite(b, "../../pipelines", "../../agents", "../../rules")
	tests := suite.Tests("")
	ctx := context.Background()
	var took, cpu [2]time.Duration // without, with coverage
	timed := func(cover int) {
		start, startCPU := time.Now(), cpuTime(b)
		if rep := suite.Report(ctx, tests, false, cover == 1); rep.Failed > 0 {
			b.Fatalf("a shipped Test failed: %+v", rep.Tests)
		}
		took[cover] += time.Since(start)
		cpu[cover] += cpuTime(b) - startCPU
	}
	i := 0
	for b.Loop() {
		timed(i % 2)
		timed(1 - i%2)
		i++
	}
	b.ReportMetric(float64(took[0].Milliseconds())/float64(b.N), "ms/test")
	b.ReportMetric(float64(took[1].Milliseconds())/float64(b.N), "ms/test-cover")
	b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-ratio")
}

// cpuTime is the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
