package runner_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// workGraph runs one node, work, which does what mode says: "fail"
// fails, "block" prints "working" and waits until cancelled, anything
// else completes.
func workGraph(mode string) *runner.Graph {
	return &runner.Graph{
		Name: "work", Start: "work", MaxSteps: 5, Hash: "h1",
		Fields: map[string]runner.Field{"done": {Reducer: runner.Replace}},
		Nodes: map[string]*runner.Step{
			"work": {Name: "work", Node: fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
				switch mode {
				case "fail":
					return nil, errors.New("failed on purpose")
				case "block":
					fmt.Println("working")
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return runner.Update{"done": true}, nil
			}), Routes: []runner.Route{{To: runner.End}}},
		},
	}
}

// failedThread leaves thread "t" of st failed at node work, to resume.
func failedThread(t *testing.T, st store.Store) {
	t.Helper()
	res, err := (&runner.Engine{Store: st}).Run(context.Background(), workGraph("fail"), "t", nil)
	if err != nil || res.Status != runner.StatusFailed {
		t.Fatalf("Run = %+v, %v; want a failed thread", res, err)
	}
}

func TestLeaseOneRunPerThread(t *testing.T) {
	st := newStore(t)
	failedThread(t, st)
	started := make(chan struct{})
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	wg.Go(func() {
		g := workGraph("block")
		g.Nodes["work"].Node = fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		_, _ = (&runner.Engine{Store: st}).Resume(ctx, g, "t", runner.ResumeOptions{})
	})
	<-started
	e := &runner.Engine{Store: st}
	_, err := e.Resume(context.Background(), workGraph("finish"), "t", runner.ResumeOptions{})
	if !errors.Is(err, runner.ErrThreadBusy) || !strings.Contains(err.Error(), "running elsewhere") || !strings.Contains(err.Error(), "until") {
		t.Errorf("second Resume: err = %v, want runner.ErrThreadBusy saying it runs elsewhere until when", err)
	}
	cancel()
	wg.Wait()
	res, err := e.Resume(context.Background(), workGraph("finish"), "t", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("Resume after the first returned = %+v, %v; want completed: its lease must be released", res, err)
	}
	if res, err := e.Run(context.Background(), workGraph("finish"), "t", nil); err != nil || res.Status != runner.StatusCompleted {
		t.Errorf("next turn = %+v, %v; want completed", res, err)
	}
}

// TestResumeUnknownThread: resuming a thread that does not exist fails
// without leasing it, so its first lease has token 1.
func TestResumeUnknownThread(t *testing.T) {
	st := newStore(t)
	_, err := (&runner.Engine{Store: st}).Resume(context.Background(), workGraph("finish"), "nope", runner.ResumeOptions{})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Resume of an unknown thread: err = %v, want store.ErrNotFound", err)
	}
	l, err := st.Acquire(context.Background(), "nope", "a", time.Minute)
	if err != nil || l.Token != 1 {
		t.Errorf("Acquire after the Resume = %+v, %v; want token 1: the Resume left a lease behind", l, err)
	}
}

// leaseEnv names the database of a TestHelperLeaseResume child and what
// its node does (workGraph's mode).
const (
	leaseDBEnv   = "RUNNER_LEASE_HELPER_DB"
	leaseModeEnv = "RUNNER_LEASE_HELPER_MODE"
	leaseTTL     = 2 * time.Second
)

// TestHelperLeaseResume is not a test: run by TestLeaseAcrossProcesses as
// a child process, it resumes thread "t" and prints how that ended.
func TestHelperLeaseResume(t *testing.T) {
	path := os.Getenv(leaseDBEnv)
	if path == "" {
		t.Skip("only run as a child of TestLeaseAcrossProcesses")
	}
	st, err := sqlite.Open(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := &runner.Engine{Store: st, LeaseTTL: leaseTTL}
	res, err := e.Resume(ctx, workGraph(os.Getenv(leaseModeEnv)), "t", runner.ResumeOptions{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Println("status:", res.Status)
}

// TestLeaseAcrossProcesses resumes one SQLite thread from two processes:
// the second is refused while the first runs; after the first is
// SIGKILLed its lease holds until it expires, then a resume takes over.
func TestLeaseAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	path := filepath.Join(t.TempDir(), "runner.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	failedThread(t, st)
	st.Close()
	resume := func(mode string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLeaseResume$", "-test.count=1")
		cmd.Env = append(os.Environ(), leaseDBEnv+"="+path, leaseModeEnv+"="+mode)
		cmd.Stderr = os.Stderr
		return cmd
	}
	first := startWorking(t, resume("block"))
	defer first.Process.Kill()
	expectBusy(t, resume("finish"), "while the first runs")
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = first.Wait()
	expectBusy(t, resume("finish"), "right after the first was killed")
	time.Sleep(leaseTTL - time.Since(killed))
	out, err := resume("finish").Output()
	if err != nil || !strings.Contains(string(out), "status: completed") {
		t.Fatalf("resume after the lease expired: %v\n%s", err, out)
	}
}

// startWorking starts cmd and waits until its node is working.
func startWorking(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if lines.Text() == "working" {
			return cmd
		}
		t.Logf("first resume: %s", lines.Text())
	}
	t.Fatal("the first resume ended before its node worked")
	return nil
}

// expectBusy runs cmd and checks it was refused: the thread runs elsewhere.
func expectBusy(t *testing.T, cmd *exec.Cmd, when string) {
	t.Helper()
	out, err := cmd.Output()
	if err == nil || !strings.Contains(string(out), "thread cannot start a new run: thread t is running elsewhere") ||
		!strings.Contains(string(out), "until") {
		t.Fatalf("resume %s: %v\n%s\nwant it refused: the thread runs elsewhere", when, err, out)
	}
	t.Logf("resume %s: %s", when, strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
}

// putLog records a store's Puts and Releases.
type putLog struct {
	store.Store
	mu       sync.Mutex
	releases []bool // each Put's Release, in order
	released int    // calls of Release
}

func (p *putLog) Put(ctx context.Context, cp *store.Checkpoint) error {
	p.mu.Lock()
	p.releases = append(p.releases, cp.Release)
	p.mu.Unlock()
	return p.Store.Put(ctx, cp)
}

func (p *putLog) Release(ctx context.Context, l store.Lease) error {
	p.mu.Lock()
	p.released++
	p.mu.Unlock()
	return p.Store.Release(ctx, l)
}

// TestLeaseEndsWithLastCheckpoint: a run that completes, pauses, fails
// (after a handler of two steps) or is cancelled ends its lease with its
// last checkpoint, and only that one: no Release of its own, and the
// thread is free the moment the run returns.
func TestLeaseEndsWithLastCheckpoint(t *testing.T) {
	handled := workGraph("fail")
	handled.OnError = "h1"
	handled.Nodes["h1"] = &runner.Step{Name: "h1", Node: set(runner.Update{"done": false}), Routes: []runner.Route{{To: "h2"}}}
	handled.Nodes["h2"] = &runner.Step{Name: "h2", Node: set(runner.Update{"done": false}), Routes: []runner.Route{{To: runner.End}}}
	for _, tc := range []struct {
		name   string
		paused bool // the thread is paused at approval before the run
		run    func(context.Context, *runner.Engine) (*runner.Result, error)
		status string
	}{
		{"completes", false, func(ctx context.Context, e *runner.Engine) (*runner.Result, error) {
			return e.Run(ctx, workGraph("ok"), "t", nil)
		}, runner.StatusCompleted},
		{"fails after its handler", false, func(ctx context.Context, e *runner.Engine) (*runner.Result, error) {
			return e.Run(ctx, handled, "t", nil)
		}, runner.StatusFailed},
		{"pauses", false, func(ctx context.Context, e *runner.Engine) (*runner.Result, error) {
			return e.Run(ctx, oneNode(approval, nil), "t", nil)
		}, runner.StatusInterrupted},
		{"is resumed to its end", true, func(ctx context.Context, e *runner.Engine) (*runner.Result, error) {
			return e.Resume(ctx, oneNode(approval, nil), "t", runner.ResumeOptions{Value: map[string]any{"ok": true}})
		}, runner.StatusCompleted},
		{"is cancelled", false, func(ctx context.Context, e *runner.Engine) (*runner.Result, error) {
			ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			return e.Run(ctx, workGraph("block"), "t", nil)
		}, runner.StatusCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if tc.paused {
				if res, err := (&runner.Engine{Store: st}).Run(context.Background(), oneNode(approval, nil), "t", nil); err != nil || res.Status != runner.StatusInterrupted {
					t.Fatalf("Run = %+v, %v; want it paused", res, err)
				}
			}
			log := &putLog{Store: st}
			res, err := tc.run(context.Background(), &runner.Engine{Store: log})
			if err != nil || res.Status != tc.status {
				t.Fatalf("run = %+v, %v; want %s", res, err, tc.status)
			}
			last := len(log.releases) - 1
			for i, rel := range log.releases {
				if rel != (i == last) {
					t.Errorf("Put %d of %d has Release %v; want it on the last only", i+1, last+1, rel)
				}
			}
			if log.released != 0 {
				t.Errorf("Release called %d times; want none (the last Put released)", log.released)
			}
			if _, err := st.Acquire(context.Background(), "t", "other", time.Minute); err != nil {
				t.Errorf("Acquire after the run returned: %v; want the thread free", err)
			}
		})
	}
}
