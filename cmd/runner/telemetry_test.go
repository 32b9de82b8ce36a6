package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/access"
)

// lockedBuffer is a buffer written by one goroutine, read by another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeTelemetry starts the binary with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a local OTLP/HTTP receiver and a separate metrics listener:
// a run's spans reach the receiver by the time the server has shut down,
// /metrics is served on its own address only, and the logs are JSON lines
// with the request's tenant and never its key.
func TestServeTelemetry(t *testing.T) {
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var exported bytes.Buffer
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			mu.Lock()
			exported.Write(b)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "keys.yaml"), access.HashKey("sk-test")+": acme\n")
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--store", "memory:",
		"--script", "pipelines/orchestration/script.json", "--api-keys", filepath.Join(dir, "keys.yaml"))
	cmd.Dir = "../.."
	cmd.Env = append(cmd.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_SERVICE_NAME=runner-test", "GOGC=")
	pr, pw := io.Pipe()
	var logs lockedBuffer
	cmd.Stderr = io.MultiWriter(pw, &logs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	base, metricsURL := serveAddresses(t, pr)

	body, _ := json.Marshal(map[string]any{"assistant_id": "rule_37",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}})
	req, _ := http.NewRequest("POST", base+"/runs/wait", bytes.NewReader(body))
	req.Header.Set("X-Api-Key", "sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("run: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := http.Get(base + "/metrics"); err != nil || resp.StatusCode != 401 {
		t.Errorf("/metrics on the API address: %v %v, want 401 (it is served on --metrics-addr only)", resp.StatusCode, err)
	}
	mresp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(m), `runner_runs_total{assistant="rule_37",pipeline="orchestration",status="interrupted"} 1`) ||
		!strings.Contains(string(m), fmt.Sprintf("\ngo_gc_gogc_percent %d\n", serveGC)) {
		t.Errorf("metrics:\n%s", m)
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v", err)
	}
	mu.Lock()
	spans := exported.String()
	mu.Unlock()
	for _, want := range []string{"invoke_agent rule_37", "node initial_llm_call", "chat gpt-4o", "approval tool_node", "runner-test"} {
		if !strings.Contains(spans, want) {
			t.Errorf("exported spans have no %q", want)
		}
	}
	var sawRequest bool
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "runner: ") {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line is not JSON: %q", line)
			continue
		}
		if strings.Contains(line, "sk-test") {
			t.Errorf("the API key is in the log: %s", line)
		}
		if rec["msg"] == "request" && rec["path"] == "/runs/wait" && rec["tenant"] == "acme" && rec["status"] == 200.0 {
			sawRequest = true
		}
	}
	if !sawRequest {
		t.Errorf("no request log line for the run:\n%s", logs.String())
	}
}

// serveAddresses reads the API's and the metrics listener's addresses
// from serve's stderr.
func serveAddresses(t *testing.T, stderr io.Reader) (api, metrics string) {
	t.Helper()
	apis, metricses := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "runner: metrics at "); ok {
				metricses <- rest
			} else if _, addr, ok := strings.Cut(sc.Text(), " on http://"); ok {
				apis <- "http://" + addr
			}
		}
	}()
	for api == "" || metrics == "" {
		select {
		case api = <-apis:
		case metrics = <-metricses:
		case <-time.After(60 * time.Second):
			t.Fatal("the server never said where it listens")
		}
	}
	return api, metrics
}

// TestLogBuffer: info lines wait to be written together; a warning is
// written at once with the lines before it, in order; lines held are
// written after logFlushAfter without anything else happening, and at
// once when logMaxBuffer bytes wait.
func TestLogBuffer(t *testing.T) {
	var out lockedBuffer
	log, logs, err := newLogger(&out, "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("one")
	log.With("k", "v").Info("two")
	if got := out.String(); got != "" {
		t.Fatalf("info lines written at once: %q", got)
	}
	log.With("k", "v").Warn("three")
	got := out.String()
	if strings.Count(got, "\n") != 3 || !(strings.Index(got, `"one"`) < strings.Index(got, `"two"`) && strings.Index(got, `"two"`) < strings.Index(got, `"three"`)) {
		t.Fatalf("after a warning: %q, want the three lines in order", got)
	}
	log.Info("four")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), `"four"`) {
		if time.Now().After(deadline) {
			t.Fatal("an info line held is never written")
		}
		time.Sleep(logFlushAfter / 5)
	}
	before := len(out.String())
	log.Info(strings.Repeat("x", logMaxBuffer))
	if len(out.String()) <= before+logMaxBuffer {
		t.Error("a full buffer is not written at once")
	}
	if err := logs.Flush(); err != nil {
		t.Error(err)
	}
}
