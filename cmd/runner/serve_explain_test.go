package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// TestServeStartMessages: graphs that cannot be served are one line at
// start-up, pointing at serve --explain, which says why for each; an
// address in use is refused with the flag that picks another.
func TestServeStartMessages(t *testing.T) {
	t.Chdir("../..")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	t.Setenv("OPENAI_API_KEY", "")
	code, out, errOut := runCLI(t, "serve", "--no-auth", "--store", "memory:", "--addr", addr)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := "runner: serve: 5 of 9 agents and pipelines are not served (elyra, orchestration, rule_32, rule_37, user_request); why: runner serve --explain"
	if code != 2 || lines[0] != want || strings.Count(errOut, "not served") != 1 {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 and one line first: %s", code, errOut, want)
	}
	if want := "runner: --addr " + addr + ": the address is already in use (another runner serve?): stop what listens there, or pick another address with --addr 127.0.0.1:0 (any free port)"; lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}

	code, out, errOut = runCLI(t, "serve", "--explain", "--script", "pipelines/elyra/script.json")
	node := lineOf(t, "pipelines/orchestration/pipeline.yaml", "  initial_llm_call:")
	for _, want := range []string{
		"elyra: served\n",
		"rule_37: served\n",
		fmt.Sprintf("orchestration: not served:\n  pipelines/orchestration/pipeline.yaml:%d:3: error: node initial_llm_call: no model: set model: on the node, or run the pipeline through an agent that has one\n", node),
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("serve --explain: exit %d, stdout lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
}
