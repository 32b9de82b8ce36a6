package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLangGraphSDK drives a started `runner serve` with the stock
// LangGraph JS SDK, unchanged, in both pinned major versions, and its
// React useStream hook as agent-chat-ui uses it, and the official A2A JS
// SDK's client (server/sdktest: `npm ci` there installs them; .ci/run
// does), and the Python SDK where Python can
// import it (PyPI, where it comes from, is out of CI's reach). The
// scripted model's first reply is slow, so a run is still going when the
// suite tries a second run on its thread or cancels it; the heartbeat is
// shorter than that reply, so the SDK reads runs/wait and join answers
// that begin with keep-alive newlines, and streams with heartbeats.
func TestLangGraphSDK(t *testing.T) {
	suite, err := filepath.Abs("../../server/sdktest")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(suite, "node_modules")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the SDK suite is not installed: run npm ci in server/sdktest")
		}
		t.Skip("the SDK suite is not installed: run npm ci in server/sdktest to run it")
	}
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	_, base := startServe(t, bin, slowScript(t), "sk-sdk", "--heartbeat", "100ms") // keep-alive bytes on every run longer than that
	for _, run := range []struct{ name, script, sdk string }{
		{"sdk1", "compat.mjs", "sdk1"}, {"sdk2", "compat.mjs", "sdk2"}, {"useStream", "ui.mjs", "sdk2"}, {"a2a", "a2a.mjs", ""},
	} {
		t.Run(run.name, func(t *testing.T) {
			node := exec.Command("node", run.script)
			node.Dir = suite
			node.Env = append(os.Environ(), "SDK_MODULE="+run.sdk, "RUNNER_URL="+base, "LANGGRAPH_API_KEY=sk-sdk")
			out, err := node.CombinedOutput()
			t.Logf("%s", out)
			if err != nil {
				t.Fatalf("%s failed: %v", run.script, err)
			}
		})
	}
	t.Run("python", func(t *testing.T) {
		if err := exec.Command("python3", "-c", "import langgraph_sdk").Run(); err != nil {
			t.Skip("the Python SDK is not importable: pip install langgraph-sdk==0.3.15 to run it")
		}
		py := exec.Command("python3", "compat.py")
		py.Dir = suite
		py.Env = append(os.Environ(), "RUNNER_URL="+base, "LANGGRAPH_API_KEY=sk-sdk")
		out, err := py.CombinedOutput()
		t.Logf("%s", out)
		if err != nil {
			t.Fatalf("compat.py failed: %v", err)
		}
	})
}

// slowScript is seed 000's scripted replies with the first one delayed.
func slowScript(t *testing.T) string {
	src, err := os.ReadFile("../../pipelines/orchestration/script.json")
	if err != nil {
		t.Fatal(err)
	}
	var replies []map[string]any
	if err := json.Unmarshal(src, &replies); err != nil {
		t.Fatal(err)
	}
	replies[0]["delay"] = "400ms"
	out, _ := json.Marshal(replies)
	return string(out)
}
