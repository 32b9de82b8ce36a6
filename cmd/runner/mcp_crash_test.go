package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins/mcptest"
)

// TestMCPApprovalAcrossCrashes: an MCP tool's call, gated by the platform
// rule and approved, survives a SIGKILL of runner between the approval
// and the call, and between the call and the next checkpoint: resumed,
// the thread makes the call with the same idempotency key (in _meta), and
// the counting server executes it once.
func TestMCPApprovalAcrossCrashes(t *testing.T) {
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, thread, trap string
		requests           int // what the server was asked in all
	}{
		{"kill between approval and call", "before-call", "", 2},
		{"kill after the call, before the checkpoint", "after-call", " after", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config, file := mcpProject(t, "")
			if code, out, errOut := runCLI(t, "mcp", "pin", "--config", config); code != 0 {
				t.Fatalf("pin: exit %d\n%s%s", code, out, errOut)
			}
			src, _ := os.ReadFile(file)
			dir := filepath.Dir(file)
			trap, requests := filepath.Join(dir, "trap"), filepath.Join(dir, "requests")
			// the server's environment names the trap and request files
			write(t, file, string(bytes.Replace(src, []byte("env:\n"), []byte("env:\n  "+mcptest.TrapFile+": "+trap+"\n  "+
				mcptest.RequestFile+": "+requests+"\n"), 1))+servedProject)
			run := func(args ...string) (int, string) {
				t.Helper()
				cmd := exec.Command(bin, append([]string{"exec", "counter", "--config", config, "--store", "sqlite:" + filepath.Join(dir, "state.db")}, args...)...)
				cmd.Env = append(os.Environ(), leaseEnv)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				timer := time.AfterFunc(runTimeout, func() { _ = cmd.Process.Kill() })
				_ = cmd.Run()
				if !timer.Stop() {
					t.Fatalf("runner exec %v did not end within %v\n%s", args, runTimeout, &stderr)
				}
				return cmd.ProcessState.ExitCode(), stderr.String()
			}
			if code, stderr := run("--thread", tc.thread, "--input", `{"item": "apples"}`); code != exitPaused {
				t.Fatalf("run: exit %d, want %d (paused)\n%s", code, exitPaused, stderr)
			}
			write(t, trap, tc.thread+":count.0.0"+tc.trap)
			if code, stderr := run("--resume", tc.thread, "--value", `{"approved": true}`); code != -1 {
				t.Fatalf("approval: exit %d, want killed by the server\n%s", code, stderr)
			}
			time.Sleep(crashLeaseTTL) // until the killed run's lease expires
			code, stderr := run("--resume", tc.thread)
			executed, _ := mcptest.Counted(filepath.Join(dir, "count"))
			asked, _ := mcptest.Counted(requests)
			if code != exitCompleted || !slices.Equal(executed, []string{tc.thread + ":count.0.0"}) || len(asked) != tc.requests {
				t.Errorf("resume: exit %d; executed %v, asked %d times, want once, %d\n%s", code, executed, len(asked), tc.requests, stderr)
			}
		})
	}
}
