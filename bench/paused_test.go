package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// BenchmarkServePaused measures what paused threads cost a `runner serve`
// process: it pauses 10,000 threads of the fraud loop before their
// completion node (runs/wait with interrupt_before, 32 clients) and
// reports the server's resident memory after them against its resident
// memory after a warm-up of 20 runs and just after it started, measured
// in the same run. Run it with
//
//	go test ./bench -run '^$' -bench BenchmarkServePaused -benchtime 1x
func BenchmarkServePaused(b *testing.B) {
	const threads = 10_000
	raiseFileLimit(b)
	srv := startServe(b)
	idle := srv.rss(b)
	body := map[string]any{"assistant_id": "fraud_investigator", "if_not_exists": "create",
		"input": map[string]any{"transaction_id": "txn_1001"}, "interrupt_before": []string{"completion"}}
	pause := func(i int) error {
		out, err := srv.post(fmt.Sprintf("/threads/%s/runs/wait", threadID("paused", i)), body)
		if err == nil && !bytes.Contains(out, []byte("__interrupt__")) {
			err = fmt.Errorf("thread %d did not pause: %s", i, out)
		}
		return err
	}
	for i := range 20 {
		if err := pause(-1 - i); err != nil {
			b.Fatal(err)
		}
	}
	before := srv.rss(b)
	b.ResetTimer()
	var next atomic.Int64
	srv.report(b, "pause-10000", srv.load(b, 32, threads, func() error { return pause(int(next.Add(1))) }))
	after := srv.rss(b)
	b.ReportMetric(float64(idle)/(1<<20), "idle-RSS-MB")
	b.ReportMetric(float64(before)/(1<<20), "warm-RSS-MB")
	b.ReportMetric(float64(after)/(1<<20), "paused-RSS-MB")
	b.ReportMetric(float64(after-before)/threads, "RSS-B/thread")
}

// rss is the server process's resident memory in bytes.
func (s *served) rss(b *testing.B) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc status")
	return 0
}
