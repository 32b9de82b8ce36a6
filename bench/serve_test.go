package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkServe measures `runner serve` over loopback on SQLite with the
// seed 004 fraud loop (fraud_investigator; an empty script, so the planner
// falls back at once, as without a model server): runs/wait one client at
// a time and 32 at once (runs/s, the server process's CPU and read and
// write calls per run from /proc, p50/p99 latency), 200 runs/s paced, the
// time to the first SSE event of runs/stream, and 1,000 thread streams
// held at once, each reading a run to its end. The server runs as its own
// process; each phase is bounded in runs. Run it with
//
//	go test ./bench -run '^$' -bench BenchmarkServe -benchtime 1x
//
// BENCH_SERVE_STORE=memory: serves from the memory store instead;
// BENCH_SERVE_URL and BENCH_SERVE_PID measure a server already running
// that serves the loop as fraud_investigator (bench/serve.sh starts
// LangGraph.js's own with bench/peer/serve). BENCH_SERVE_PHASE=NAME runs
// that phase alone (sequential, 32-concurrent, paced-200/s, ttfe,
// held-streams); BENCH_SERVE_RUNS=N bounds the 32-concurrent phase at N
// runs instead of 3,000 (bench/serve.sh pairs gives LangGraph.js's server
// 600, up to a minute of its work); BENCH_SERVE_CPUPROFILE=FILE and
// BENCH_SERVE_MEMPROFILE=FILE have the server write its CPU and allocation
// profiles there.
func BenchmarkServe(b *testing.B) {
	raiseFileLimit(b)
	srv := startServe(b)
	input := map[string]any{"transaction_id": "txn_1001"}
	run := func(i int) error {
		_, err := srv.post(fmt.Sprintf("/threads/%s/runs/wait", threadID("w", i)),
			map[string]any{"assistant_id": "fraud_investigator", "input": input, "if_not_exists": "create"})
		return err
	}
	for range 20 { // warm up
		if err := run(-1); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var next atomic.Int64
	only := os.Getenv("BENCH_SERVE_PHASE")
	phase := func(name string, measure func()) {
		if only == "" || only == name {
			measure()
		}
	}
	load := func(name string, clients, n int) {
		phase(name, func() { srv.report(b, name, srv.load(b, clients, n, func() error { return run(int(next.Add(1))) })) })
	}
	load("sequential", 1, 300)
	load("32-concurrent", 32, envInt(b, "BENCH_SERVE_RUNS", 3000))
	phase("paced-200/s", func() {
		srv.report(b, "paced-200/s", srv.paced(b, 200, 1000, func(i int) error { return run(1_000_000 + i) }))
	})
	phase("ttfe", func() { srv.timeToFirstEvent(b, 200, input) })
	phase("held-streams", func() { srv.heldStreams(b, 1000, input) })
}

// envInt is the positive integer the environment variable name holds, or
// def if it is unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// served is a started `runner serve` and its client.
type served struct {
	url    string
	pid    int
	client *http.Client
}

// startServe builds runner and serves the project from a SQLite file (or
// BENCH_SERVE_STORE), without auth, on a loopback port; the server stops
// with the benchmark. With BENCH_SERVE_URL set it measures the server
// there, whose process is BENCH_SERVE_PID.
func startServe(b *testing.B) *served {
	tr := &http.Transport{MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	if url := os.Getenv("BENCH_SERVE_URL"); url != "" {
		pid, err := strconv.Atoi(os.Getenv("BENCH_SERVE_PID"))
		if err != nil {
			b.Fatal("BENCH_SERVE_URL needs the server's BENCH_SERVE_PID")
		}
		return &served{url: url, pid: pid, client: client}
	}
	dir := b.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "state.db")
	if d := os.Getenv("BENCH_SERVE_STORE"); d != "" {
		dsn = d
	}
	bin := filepath.Join(dir, "runner")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/runner").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte("[]"), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--no-auth", "--addr", "127.0.0.1:0", "--store", dsn, "--script", script)
	cmd.Dir = ".."
	cmd.Env = os.Environ()
	for bench, runner := range map[string]string{"BENCH_SERVE_CPUPROFILE": "RUNNER_CPUPROFILE", "BENCH_SERVE_MEMPROFILE": "RUNNER_MEMPROFILE"} {
		if prof := os.Getenv(bench); prof != "" {
			abs, err := filepath.Abs(prof)
			if err != nil {
				b.Fatal(err)
			}
			cmd.Env = append(cmd.Env, runner+"="+abs)
		}
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, addr, ok := strings.Cut(sc.Text(), " on http://"); ok {
				url <- "http://" + addr
			}
		}
	}()
	select {
	case u := <-url:
		return &served{url: u, pid: cmd.Process.Pid, client: client}
	case <-time.After(60 * time.Second):
		b.Fatal("the server never said where it listens")
	}
	return nil
}

// benchNS makes this process's thread ids: UUIDs, as LangGraph's
// servers require.
var benchNS = uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "bench/%d/%d", os.Getpid(), time.Now().UnixNano()))

func threadID(prefix string, i int) string {
	return uuid.NewSHA1(benchNS, fmt.Appendf(nil, "%s/%d", prefix, i)).String()
}

// post sends a JSON body and reads the whole answer; a status other than
// 200 is an error.
func (s *served) post(path string, body any) ([]byte, error) {
	raw, _ := json.Marshal(body)
	resp, err := s.client.Post(s.url+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, out)
	}
	return out, err
}

// usage is what the server process has used so far: CPU time (user +
// system) and read and write calls (files and sockets alike).
type usage struct {
	cpu           time.Duration
	reads, writes int64
}

// usage reads the server process's usage from /proc.
func (s *served) usage(b *testing.B) usage {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:])) // fields from 3 (state) on
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	u := usage{cpu: time.Duration(utime+stime) * time.Second / 100} // USER_HZ
	raw, err = os.ReadFile(fmt.Sprintf("/proc/%d/io", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		key, val, _ := strings.Cut(strings.TrimSpace(line), ": ")
		n, _ := strconv.ParseInt(val, 10, 64)
		switch key {
		case "syscr":
			u.reads = n
		case "syscw":
			u.writes = n
		}
	}
	return u
}

// since is what the process used from u0 to u.
func (u usage) since(u0 usage) usage {
	return usage{cpu: u.cpu - u0.cpu, reads: u.reads - u0.reads, writes: u.writes - u0.writes}
}

// result is what a phase measured.
type result struct {
	runs, errors int
	wall         time.Duration
	used         usage
	latencies    []time.Duration
}

// load runs n calls from clients goroutines, each call after the last.
func (s *served) load(b *testing.B, clients, n int, call func() error) result {
	var mu sync.Mutex
	r := result{runs: n}
	var left atomic.Int64
	left.Store(int64(n))
	u0, t0 := s.usage(b), time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				start := time.Now()
				err := call()
				d := time.Since(start)
				mu.Lock()
				r.latencies = append(r.latencies, d)
				if err != nil {
					r.errors++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.wall, r.used = time.Since(t0), s.usage(b).since(u0)
	return r
}

// paced starts n calls at rate per second, whatever their latency.
func (s *served) paced(b *testing.B, rate, n int, call func(i int) error) result {
	r := result{runs: n}
	var mu sync.Mutex
	var wg sync.WaitGroup
	u0, t0 := s.usage(b), time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := range n {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := call(i)
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			r.latencies = append(r.latencies, d)
			if err != nil {
				r.errors++
			}
		}()
	}
	wg.Wait()
	r.wall, r.used = time.Since(t0), s.usage(b).since(u0)
	return r
}

// report logs a phase and reports its metrics.
func (s *served) report(b *testing.B, name string, r result) {
	p50, p99 := percentile(r.latencies, 50), percentile(r.latencies, 99)
	perSec := float64(r.runs) / r.wall.Seconds()
	cpuMs := float64(r.used.cpu.Microseconds()) / 1000 / float64(r.runs)
	reads, writes := float64(r.used.reads)/float64(r.runs), float64(r.used.writes)/float64(r.runs)
	b.Logf("%-14s %5d runs %3d errors  %7.1f runs/s  %.2f ms CPU/run  p50 %6.2f ms  p99 %6.2f ms  %.0f reads %.0f writes/run",
		name, r.runs, r.errors, perSec, cpuMs, ms(p50), ms(p99), reads, writes)
	b.ReportMetric(perSec, name+"-runs/s")
	b.ReportMetric(cpuMs, name+"-cpu-ms/run")
	b.ReportMetric(ms(p50), name+"-p50-ms")
	b.ReportMetric(ms(p99), name+"-p99-ms")
	b.ReportMetric(writes, name+"-writes/run")
	if r.errors > 0 {
		b.Errorf("%s: %d errors", name, r.errors)
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timeToFirstEvent times n runs/stream requests, one after another, from
// the request to the first event's bytes, then reads each to its end.
func (s *served) timeToFirstEvent(b *testing.B, n int, input map[string]any) {
	var ttfe []time.Duration
	for i := range n {
		raw, _ := json.Marshal(map[string]any{"assistant_id": "fraud_investigator", "input": input, "if_not_exists": "create", "stream_mode": "updates"})
		start := time.Now()
		resp, err := s.client.Post(s.url+"/threads/"+threadID("s", i)+"/runs/stream", "application/json", bytes.NewReader(raw))
		if err != nil {
			b.Fatal(err)
		}
		rd := bufio.NewReader(resp.Body)
		if _, err := rd.ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		ttfe = append(ttfe, time.Since(start))
		if _, err := io.Copy(io.Discard, rd); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	b.Logf("%-14s %5d streams  time to first event p50 %.2f ms  p90 %.2f ms  p99 %.2f ms", "ttfe", n,
		ms(percentile(ttfe, 50)), ms(percentile(ttfe, 90)), ms(percentile(ttfe, 99)))
	for _, p := range []int{50, 90, 99} {
		b.ReportMetric(ms(percentile(ttfe, p)), fmt.Sprintf("ttfe-p%d-ms", p))
	}
}

// heldStreams opens n thread streams at once, holds them, then starts a
// run on each thread (32 at a time): every stream must read its run to
// its end event.
func (s *served) heldStreams(b *testing.B, n int, input map[string]any) {
	probe := threadID("probe", 0)
	if _, err := s.post("/threads", map[string]any{"thread_id": probe}); err != nil {
		b.Fatal(err)
	}
	if !s.hasThreadStream(probe) {
		b.Logf("%-14s skipped: the server serves no thread stream (GET /threads/{id}/stream)", "held-streams")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var opened, ended, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		thread := threadID("h", i)
		if _, err := s.post("/threads", map[string]any{"thread_id": thread}); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.holdStream(ctx, thread, &opened); err != nil {
				failed.Add(1)
				b.Log(err)
				return
			}
			ended.Add(1)
		}()
	}
	for opened.Load() < int64(n) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	var idx atomic.Int64
	start := s.load(b, 32, n, func() error {
		i := int(idx.Add(1)) - 1
		_, err := s.post("/threads/"+threadID("h", i)+"/runs", map[string]any{"assistant_id": "fraud_investigator", "input": input})
		return err
	})
	wg.Wait()
	b.Logf("%-14s %5d streams held at once: %d read their run to its end, %d errors, %d runs not started",
		"held-streams", n, ended.Load(), failed.Load(), start.errors)
	b.ReportMetric(float64(failed.Load())+float64(start.errors), "held-stream-errors")
	if ended.Load() != int64(n) {
		b.Errorf("%d of %d held streams did not end", int64(n)-ended.Load(), n)
	}
}

// hasThreadStream reports whether GET /threads/{id}/stream answers 200.
func (s *served) hasThreadStream(thread string) bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/threads/"+thread+"/stream", nil)
	resp, err := s.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// holdStream reads a thread's stream until a run's end event.
func (s *served) holdStream(ctx context.Context, thread string, opened *atomic.Int64) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/threads/"+thread+"/stream", nil)
	resp, err := (&http.Client{Transport: s.client.Transport}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	opened.Add(1)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("thread stream %s: %d", thread, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() == "event: end" {
			return nil
		}
	}
	return fmt.Errorf("thread stream %s ended without its run's end: %v", thread, sc.Err())
}

// raiseFileLimit lifts the soft limit on open files to the hard one: a
// thousand streams need a thousand sockets on each side.
func raiseFileLimit(b *testing.B) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
}
