package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/server"
)

// serveScript pauses rule_37 at its approval gate (create_entity is a
// mutating capability), then answers after the approved call.
const serveScript = `[
 {"node": "initial_llm_call", "tool_calls": [{"id": "c1", "name": "create_entity", "args": {"name": "Mitchell Ranch 3H", "entity_type": "well", "api_number": "42-329-12399"}}]},
 {"node": "initial_llm_call", "text": "Created the well entity Mitchell Ranch 3H."},
 {"node": "synthesis_llm_call", "text": "Mitchell Ranch 3H is in the knowledge graph."}]`

// TestServe starts the real binary on a free port, streams a run of the
// shipped rule_37 agent to its approval interrupt, resumes it with
// command.resume, checks the final state and shuts the server down.
func TestServe(t *testing.T) {
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	cmd, base := startServe(t, bin, serveScript, "sk-test")

	if resp, err := http.Get(base + "/threads/x"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("no key: %v %v", resp.StatusCode, err)
	}
	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	_ = json.NewDecoder(call(t, "POST", base+"/threads", map[string]any{}, 200).Body).Decode(&thread)
	runs := base + "/threads/" + thread.ThreadID + "/runs/stream"
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}, "conversation_id": "conv-1"}
	evs := sseEvents(t, call(t, "POST", runs, map[string]any{"assistant_id": "rule_37", "input": input, "stream_mode": []string{"updates"}}, 200))
	if !strings.Contains(evs, `"__interrupt__"`) || !strings.Contains(evs, `"create_entity"`) || !strings.HasSuffix(evs, "event: end\ndata: null\n") {
		t.Fatalf("first run's stream has no approval interrupt:\n%s", evs)
	}
	resume := map[string]any{"assistant_id": "rule_37", "command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}, "stream_mode": "values"}
	if evs := sseEvents(t, call(t, "POST", runs, resume, 200)); strings.Contains(evs, "event: error") {
		t.Fatalf("resume failed:\n%s", evs)
	}
	var state struct {
		Values struct {
			Status   string
			Messages []map[string]any
		}
		Next []string
	}
	_ = json.NewDecoder(call(t, "GET", base+"/threads/"+thread.ThreadID+"/state", nil, 200).Body).Decode(&state)
	msgs := state.Values.Messages
	if state.Values.Status != "completed" || len(state.Next) != 0 || len(msgs) < 2 ||
		!strings.Contains(msgs[len(msgs)-2]["content"].(string), "well-mitchell-ranch-3h") || msgs[len(msgs)-1]["type"] != "ai" {
		t.Errorf("final state: %+v", state)
	}
	call(t, "POST", runs, resume, 409) // the interrupt took its resume
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v", err)
	}
}

// serveAddress reads the server's address from its stderr.
// startServe starts `runner serve` from the repository root on a free
// port, with an SQLite store, the scripted replies script and one API key
// (tenant acme), and any further flags; it returns the process, killed
// when the test ends, and the server's base URL.
func startServe(t *testing.T, bin, script, key string, flags ...string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.json"), script)
	writeFile(t, filepath.Join(dir, "keys.yaml"), access.HashKey(key)+": acme\n")
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(dir, "state.db"),
		"--script", filepath.Join(dir, "script.json"), "--api-keys", filepath.Join(dir, "keys.yaml")}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = "../.."
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, serveAddress(t, stderr)
}

func serveAddress(t *testing.T, stderr io.Reader) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, addr, ok := strings.Cut(sc.Text(), " on http://"); ok {
				found <- "http://" + addr
			}
		}
	}()
	select {
	case addr := <-found:
		return addr
	case <-time.After(60 * time.Second):
		t.Fatal("the server never said where it listens")
	}
	return ""
}

// sseEvents reads a stream to its end, its event lines only.
func sseEvents(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "event: ") || strings.HasPrefix(l, "data: ") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// call sends a JSON request with the test's API key and checks the status.
func call(t *testing.T, method, url string, body any, status int) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("X-Api-Key", "sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s %s = %d %s, want %d", method, url, resp.StatusCode, data, status)
	}
	return resp
}

// decode decodes a response's JSON body into v.
func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("decode %s: %v", resp.Request.URL, err)
	}
}

// TestServeLimits takes each of serve's limits from its flag when given,
// else from runner.yaml's serve section (or RUNNER_SERVE_*), else leaves
// it to the server's default.
func TestServeLimits(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "runner.yaml"), "serve:\n  read_timeout: 2s\n  idle_timeout: 1m\n  max_streams: 7\n  max_tenant_streams: 3\n")
	t.Chdir(dir)
	t.Setenv("RUNNER_SERVE_MAX_CONNECTIONS", "50")
	root := newRoot()
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags([]string{"--idle-timeout", "5s", "--max-tenant-streams", "4"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(serve)
	if err != nil {
		t.Fatal(err)
	}
	got := serveLimits(serve, cfg.Serve.Limits)
	want := server.Limits{ReadTimeout: 2 * time.Second, IdleTimeout: 5 * time.Second, MaxConnections: 50, MaxStreams: 7, MaxTenantStreams: 4}
	if got != want {
		t.Errorf("limits = %+v, want %+v", got, want)
	}
}

// TestServeWebhooks reads runner.yaml's webhooks, one hook's map (named
// default) or a list of named hooks, each secret from the variable its
// secret_env names, and refuses a secret missing or not in the whsec_
// form, a hook without a name and an unknown setting, naming the hook.
func TestServeWebhooks(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	serve, _, err := newRoot().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	var allow []string
	load := func(yaml string) ([]HookConfig, error) {
		writeFile(t, filepath.Join(dir, "runner.yaml"), yaml)
		cfg, err := loadConfig(serve)
		if err != nil {
			return nil, err
		}
		allow = cfg.WebhooksAllow
		return cfg.Webhooks, nil
	}
	one, err := load("webhooks:\n  url: https://hooks.example/in\n  secret_env: HOOK_SECRET\n  events: [run.failed, approval.requested]\n")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOOK_SECRET", "")
	if _, err := webhooks("runner.yaml", one); err == nil || !strings.Contains(err.Error(), "runner.yaml:3:15: webhooks default: secret_env names HOOK_SECRET, which is not set") {
		t.Errorf("secret unset: %v", err)
	}
	t.Setenv("HOOK_SECRET", "hunter2")
	if _, err := webhooks("runner.yaml", one); err == nil || !strings.Contains(err.Error(), "whsec_") {
		t.Errorf("secret not whsec_: %v", err)
	}
	t.Setenv("HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	w, err := webhooks("runner.yaml", one)
	if err != nil {
		t.Fatal(err)
	}
	if h := w.Hooks; len(h) != 1 || h[0].Name != "default" || h[0].URL != "https://hooks.example/in" || len(h[0].Secret) != 24 ||
		!slices.Equal(h[0].Events, []string{"run.failed", "approval.requested"}) {
		t.Errorf("webhooks = %+v", w)
	}

	list, err := load("webhooks:\n  - {name: ops, url: https://ops.example/in, secret_env: HOOK_SECRET}\n" +
		"  - {name: audit, url: https://audit.example/in, secret_env: HOOK_SECRET, events: []}\n" +
		"webhooks_allow: [10.0.0.0/8, hooks.internal]\n")
	if err != nil {
		t.Fatal(err)
	}
	if w, err = webhooks("runner.yaml", list); err != nil {
		t.Fatal(err)
	}
	if h := w.Hooks; len(h) != 2 || h[0].Name != "ops" || !slices.Equal(h[0].Events, server.WebhookEvents) ||
		h[1].Name != "audit" || h[1].URL != "https://audit.example/in" || len(h[1].Events) != 0 {
		t.Errorf("webhooks = %+v", w)
	}
	if !slices.Equal(allow, []string{"10.0.0.0/8", "hooks.internal"}) {
		t.Errorf("webhooks_allow = %v", allow)
	}
	slack, err := load("webhooks:\n  - {name: team, url: https://hooks.slack.example/T1, secret_env: HOOK_SECRET, template: slack}\n" +
		"  - name: mine\n    url: https://mine.example/in\n    secret_env: HOOK_SECRET\n" +
		"    template: '{\"summary\": event + \" \" + data.thread_id, \"see\": link}'\n")
	if err != nil {
		t.Fatal(err)
	}
	if w, err = webhooks("runner.yaml", slack); err != nil {
		t.Fatal(err)
	}
	if body, err := w.Hooks[1].Template("run.failed", map[string]any{"thread_id": "t1"}, "https://r.example/ui/#/threads/t1"); err != nil ||
		!reflect.DeepEqual(body, map[string]any{"summary": "run.failed t1", "see": "https://r.example/ui/#/threads/t1"}) {
		t.Errorf("template mine: %v, %v", body, err)
	}
	if w.Hooks[0].Template == nil {
		t.Errorf("template slack: none")
	}

	for _, c := range []struct{ yaml, want string }{
		{"webhooks:\n  - {url: https://a.example, secret_env: HOOK_SECRET}\n", "runner.yaml:2:5: webhooks[0]: no name"},
		{"webhooks:\n  - {name: a, url: https://a.example, secret: x}\n", `runner.yaml:2:47: webhooks[0]: no setting "secret"`},
		{"webhooks:\n  - {name: a, events: run.failed}\n", "runner.yaml:2:23: webhooks[0].events: want []string, not a string"},
		{"webhooks:\n  - https://a.example\n", "runner.yaml:2:5: webhooks[0]: a hook is a map"},
		{"webhooks: https://a.example\n", "webhooks: a list of hooks"},
		{"webhooks:\n  - {name: a, url: https://a.example}\n", "runner.yaml:2:5: webhooks a: no secret_env"},
		{"webhooks:\n  - name: a\n    secret_env: HOOK_SECRET\n    template: '{\"text\": data.thread_id +}'\n",
			"webhooks a: template: runner.yaml:4:"},
		{"webhooks:\n  - name: a\n    secret_env: HOOK_SECRET\n    template: '{\"text\": evnt}'\n",
			`runner.yaml:4:25: error: unknown name "evnt" (did you mean "event"?)`},
	} {
		hooks, err := load(c.yaml)
		if err == nil {
			_, err = webhooks("runner.yaml", hooks)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestNotifyNamesHooks: a notify: naming a webhook runner.yaml does not
// define is a validate error at its file:line:col when runner.yaml is
// read, and keeps runner serve from starting, naming it at its line.
func TestNotifyNamesHooks(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir(filepath.Join(dir, "defs"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "defs", "ops.yaml"), "apiVersion: runner/v1\nkind: Pipeline\nmetadata: {name: p}\nnotify: [reviewrs]\n"+
		"state:\n  n: {type: integer}\nstart: s\nnodes:\n  s: {type: set, with: {n: '1'}, next: END}\n")
	if code, out, errOut := runCLI(t, "validate", "defs"); code != 0 {
		t.Errorf("validate without runner.yaml: exit %d, %s%s", code, out, errOut)
	}
	writeFile(t, filepath.Join(dir, "runner.yaml"), "paths: [defs]\nwebhooks:\n  - {name: reviewers, url: https://hooks.example/in, secret_env: HOOK_SECRET}\n")
	t.Setenv("HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	want := filepath.Join("defs", "ops.yaml") + `:4:10: error: notify names webhook "reviewrs", which runner.yaml's webhooks do not define`
	if code, out, _ := runCLI(t, "validate"); code != 1 || !strings.Contains(out, want) || !strings.Contains(out, `did you mean "reviewers"?`) {
		t.Errorf("validate: exit %d, %s; want %s", code, out, want)
	}
	if code, _, errOut := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--no-auth"); code != 2 || !strings.Contains(errOut, want) {
		t.Errorf("serve: exit %d, %s; want %s", code, errOut, want)
	}
}
