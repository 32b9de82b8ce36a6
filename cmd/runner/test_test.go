package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// guardSrc has an http tool, a pure expr tool and a model against SERVER,
// and Tests that mock them or not.
const guardSrc = `apiVersion: runner/v1
kind: Tool
metadata: {name: lookup}
parameters: {type: object}
http:
  url: SERVER/lookup
  headers: {Authorization: "Bearer ${secrets.token}"}
  secrets: {token: RUNNER_TEST_GUARD_TOKEN}
  allow_hosts: [127.0.0.1]
---
apiVersion: runner/v1
kind: Tool
metadata: {name: double}
parameters: {type: object, properties: {n: {type: integer}}}
expr: args.n * 2
---
apiVersion: runner/v1
kind: Model
metadata: {name: remote}
provider: openai
base_url: SERVER/v1
api_key_env: RUNNER_TEST_GUARD_KEY
pricing: {input_per_mtok: 0, output_per_mtok: 0}
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: fetch}
state:
  doubled: {type: any}
  found: {type: any}
start: double
nodes:
  double:
    type: tool
    with: {tool: double, args: {n: "2"}, output: doubled}
    next: fetch
  fetch:
    type: tool
    with: {tool: lookup, output: found}   # not fatal: a failed call would be recorded and the run go on
    next: END
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: ask}
input: {messages: {type: array}}
state:
  messages: {type: array, reducer: messages}
start: ask
nodes:
  ask:
    type: llm
    with: {model: remote}
    next: END
---
apiVersion: runner/v1
kind: Test
metadata: {name: http_unmocked}
pipeline: fetch
expect: {status: completed}
---
apiVersion: runner/v1
kind: Test
metadata: {name: http_mocked}
pipeline: fetch
mocks:
  lookup: {result: {id: 7}}
expect:
  status: completed
  assert: [state.found.id == 7, state.doubled == 4]
---
apiVersion: runner/v1
kind: Test
metadata: {name: model_unscripted}
pipeline: ask
input: {messages: [{role: user, content: hi}]}
expect: {status: completed}
---
apiVersion: runner/v1
kind: Test
metadata: {name: model_scripted}
pipeline: ask
input: {messages: [{role: user, content: hi}]}
script: [{text: scripted hello}]
expect:
  status: completed
  assert: ['state.messages[1].content == "scripted hello"']
`

const guardReply = `{"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "live hello"}, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}`

// guardServer counts the requests a Test sends out and the credentials
// they carry.
type guardServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string][]string // path -> Authorization headers
}

func newGuardServer(t *testing.T) *guardServer {
	s := &guardServer{hits: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path] = append(s.hits[r.URL.Path], r.Header.Get("Authorization"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			_, _ = io.WriteString(w, guardReply)
			return
		}
		_, _ = io.WriteString(w, `{"id": 42}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *guardServer) calls(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// TestTestRefusesUnansweredCalls: without --live, an unmocked http tool
// and a model call past the script fail the Test, naming the tool or the
// model and the Test's line, and nothing leaves the process; pure tools
// and mocked or scripted calls run. With --live the same calls go out,
// with the real secrets.
func TestTestRefusesUnansweredCalls(t *testing.T) {
	t.Setenv("RUNNER_TEST_GUARD_TOKEN", "guard-token-123")
	t.Setenv("RUNNER_TEST_GUARD_KEY", "sk-guard-key-456")
	srv := newGuardServer(t)
	file := filepath.Join(t.TempDir(), "guard.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(guardSrc, "SERVER", srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		want     []string
		path     string // where the Test's call goes
		wantAuth string // "": no request may reach the server
	}{
		{"unmocked http tool", []string{"--run", "http_unmocked"}, 1, []string{
			"FAIL  http_unmocked", "guard.yaml:55:1: http tool lookup was called, but the Test does not mock it",
			"mock it under mocks: (lookup: {result: ...} or {error: ...}), or run runner test --live"}, "/lookup", ""},
		{"mocked http tool and a pure tool", []string{"--run", "http_mocked"}, 0, []string{"ok    http_mocked"}, "/lookup", ""},
		{"model past the script", []string{"--run", "model_unscripted"}, 1, []string{
			"FAIL  model_unscripted", "guard.yaml:71:1: model remote was called by node ask (LLM call 1), but the Test's script has 0 replies",
			"or run runner test --live"}, "/v1/chat/completions", ""},
		{"scripted model", []string{"--run", "model_scripted"}, 0, []string{"ok    model_scripted"}, "/v1/chat/completions", ""},
		{"live http tool", []string{"--live", "--run", "http_unmocked"}, 0, []string{"ok    http_unmocked"}, "/lookup", "Bearer guard-token-123"},
		{"live model", []string{"--live", "--run", "model_unscripted"}, 0, []string{"ok    model_unscripted"}, "/v1/chat/completions", "Bearer sk-guard-key-456"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.calls(tt.path))
			code, out, errOut := runCLI(t, append(append([]string{"test", "-v"}, tt.args...), file)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not contain %q:\n%s", w, out)
				}
			}
			got := srv.calls(tt.path)[before:]
			switch {
			case tt.wantAuth == "" && len(got) > 0:
				t.Errorf("%d requests reached %s, want none", len(got), tt.path)
			case tt.wantAuth != "" && (len(got) != 1 || got[0] != tt.wantAuth):
				t.Errorf("requests to %s carried %q, want one with %q", tt.path, got, tt.wantAuth)
			}
		})
	}
}
