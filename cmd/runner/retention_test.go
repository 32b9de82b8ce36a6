package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/server"
)

// TestPruneEveryThread: threads prune without names sweeps every thread
// with the retention of the environment, leaving a running one as it is.
func TestPruneEveryThread(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "state.db")
	for _, th := range []string{"f1", "f2"} {
		if code, _, errOut := runCLI(t, execArgs(dir, "fraud_investigator", "--input", `{"transaction_id": "txn_1002"}`, "--thread", th)...); code != 0 {
			t.Fatalf("exec: %s", errOut)
		}
	}
	_, before, _ := runCLI(t, "threads", "history", "f2", "--store", db)
	st, err := sqlite.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Acquire(context.Background(), "f2", "a run elsewhere", time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNNER_RETENTION_KEEP", "1")
	code, _, errOut := runCLI(t, "threads", "prune", "--store", db)
	if code != 0 || !strings.Contains(errOut, "of 2 threads; 1 running, left as they are") {
		t.Fatalf("prune without threads: exit %d %s", code, errOut)
	}
	if _, out, _ := runCLI(t, "threads", "history", "f1", "--store", db); strings.Count(out, "\n") != 2 || !strings.Contains(out, "completed") {
		t.Errorf("history of f1 after prune with RUNNER_RETENTION_KEEP=1, want one checkpoint:\n%s", out)
	}
	if _, out, _ := runCLI(t, "threads", "history", "f2", "--store", db); out != before {
		t.Errorf("history of the running f2 after prune:\n%s\nwant it as it was:\n%s", out, before)
	}
	if code, out, errOut := runCLI(t, "threads", "show", "f1", "--store", db); code != 0 || !strings.Contains(out, `"status": "COMPLETED"`) {
		t.Errorf("show after prune: exit %d %s%s", code, out, errOut)
	}
}

// TestRetentionEvery: the sweep interval from runner.yaml and the
// environment, its default, and 0 turning it off.
func TestRetentionEvery(t *testing.T) {
	cases := []struct {
		name, yaml, env string
		want            time.Duration
		err             string
	}{
		{name: "no retention, no sweep", yaml: "paths: [x]\n"},
		{name: "a policy sweeps by default", yaml: "retention: {keep: 5}\n", want: server.DefaultRetentionEvery},
		{name: "every", yaml: "retention: {max_age: 720h, every: 1h}\n", want: time.Hour},
		{name: "0 turns it off", yaml: "retention: {keep: 5, every: 0}\n"},
		{name: "the environment", yaml: "retention: {keep: 5, every: 1h}\n", env: "90s", want: 90 * time.Second},
		{name: "not a duration", yaml: "retention: {keep: 5, every: often}\n", err: `every: "often" is not a duration`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "runner.yaml")
			writeFile(t, conf, tc.yaml)
			if tc.env != "" {
				t.Setenv("RUNNER_RETENTION_EVERY", tc.env)
			}
			cmd := &cobra.Command{}
			cmd.Flags().String("config", conf, "")
			cfg, err := loadConfig(cmd)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("loadConfig: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || cfg.RetentionEvery != tc.want {
				t.Errorf("RetentionEvery = %v, %v; want %v", cfg.RetentionEvery, err, tc.want)
			}
		})
	}
}
