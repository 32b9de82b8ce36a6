package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// llmExec runs exec on testdata/llm_agent.yaml with a store in dir.
func llmExec(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("RUNNER_PATHS", "testdata/llm_agent.yaml")
	return runCLI(t, execArgs(dir, args...)...)
}

func TestExecScript(t *testing.T) {
	code, out, errOut := llmExec(t, t.TempDir(), "calc", "--script", "testdata/llm_script.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var state map[string]any
	if err := json.Unmarshal([]byte(out), &state); err != nil || state["summary"].(map[string]any)["answer"] != 5.0 {
		t.Fatalf("state %s (%v)", out, err)
	}
	if n := len(state["turn_metrics"].([]any)); n != 3 {
		t.Errorf("%d turn metrics, want 3", n)
	}
}

// TestExecBudgetOverride lowers the agent's token budget from the
// environment: the run pauses for a human, who extends it.
func TestExecBudgetOverride(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RUNNER_BUDGET_MAX_TOKENS", "1500")
	code, out, errOut := llmExec(t, dir, "calc", "--script", "testdata/llm_script.yaml", "--thread", "b1")
	if code != exitPaused || !strings.Contains(errOut, "paused at summarize (budget): budget max_tokens exceeded: used 2320 of 1500") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = llmExec(t, dir, "calc", "--script", "testdata/llm_script.yaml", "--resume", "b1", "--value", `{"max_tokens": 5000}`)
	if code != exitCompleted || !strings.Contains(out, `"answer": 5`) {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("RUNNER_BUDGET_ON_EXCEED", "fail")
	code, _, errOut = llmExec(t, dir, "calc", "--script", "testdata/llm_script.yaml")
	if code != exitFailed || !strings.Contains(errOut, "budget_exceeded") || !strings.Contains(errOut, "raise budget.max_tokens") {
		t.Fatalf("on_exceed fail: exit %d\n%s", code, errOut)
	}
}

func TestExecScriptErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("- node: ask\n  txt: hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no script for a scripted model", nil, "llm_agent.yaml:21:3: error: node ask: model tiny: model tiny is scripted: give its replies with --script FILE"},
		{"unknown key", []string{"--script", bad}, bad + ": line 2: field txt not found in a scripted Reply"},
		{"missing file", []string{"--script", "nope.yaml"}, "nope.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := llmExec(t, t.TempDir(), append([]string{"calc"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}

// TestExecRealProvider runs the same agent against an OpenAI-compatible
// server (a local one, speaking the wire format), with its key from the
// environment: no script, the real provider code path.
func TestExecRealProvider(t *testing.T) {
	const key = "sk-test-0123456789"
	replies := []string{
		`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":2,\"b\":3}"}},{"index":1,"id":"call_2","type":"function","function":{"name":"remember","arguments":"{\"note\":\"2+3\"}"}}]}`,
		`{"role":"assistant","content":"The sum is 5."}`,
		`{"role":"assistant","content":"{\"answer\": 5}"}`,
	}
	var calls []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		calls = append(calls, req)
		if r.Header.Get("Authorization") != "Bearer "+key || len(calls) > len(replies) {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		msg, usage := replies[len(calls)-1], `{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}`
		if req["stream"] != true {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"message":%s,"finish_reason":"stop"}],"usage":%s}`, msg, usage)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"tiny","choices":%s,"usage":%s}` + "\n\n"
		fmt.Fprintf(w, chunk, `[{"index":0,"delta":`+msg+`,"finish_reason":"stop"}]`, "null")
		fmt.Fprintf(w, chunk, "[]", usage)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	src, err := os.ReadFile("testdata/llm_agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defs := filepath.Join(t.TempDir(), "agent.yaml")
	real := strings.Replace(string(src), "provider: scripted\n", "provider: openai\nbase_url: "+srv.URL+"/v1\napi_key_env: RUNNER_TEST_OPENAI_KEY\n", 1)
	if err := os.WriteFile(defs, []byte(real), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNNER_PATHS", defs)
	t.Setenv("RUNNER_TEST_OPENAI_KEY", key)
	code, out, errOut := runCLI(t, execArgs(t.TempDir(), "calc")...)
	if code != 0 || !strings.Contains(out, `"answer": 5`) || !strings.Contains(errOut, "usage: 3 LLM calls, 330 tokens") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if len(calls) != 3 || calls[0]["tools"] == nil || calls[2]["response_format"] == nil {
		t.Errorf("requests: %v", calls)
	}
	if strings.Contains(out+errOut, key) {
		t.Error("the API key leaked into the output")
	}
}
