package builtins_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
)

const (
	tokenEnv = "RUNNER_TEST_HTTP_TOKEN"
	token    = "s3cr3t-t0ken+value"
)

// testAPI is a server whose paths exercise an http tool: /echo returns
// what it received, /status/N answers N, /leak echoes the Authorization
// header in a failure, /leak-ok in a success, /text answers plain text,
// /slow waits for the client to give up and /redirect sends the client to
// another host.
func testAPI(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/echo/{city}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var decoded any
		_ = json.Unmarshal(body, &decoded)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Request-Id", "req-42")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "city": r.PathValue("city"), "days": r.URL.Query().Get("days"),
			"auth": r.Header.Get("Authorization") == "Bearer "+token, "x_city": r.Header.Get("X-City"),
			"idempotency_key": r.Header.Get("Idempotency-Key"), "content_type": r.Header.Get("Content-Type"),
			"body": decoded,
		})
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		var code int
		_ = json.Unmarshal([]byte(r.PathValue("code")), &code)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "upstream says no "+strings.Repeat("x", 300))
	})
	mux.HandleFunc("/leak", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "bad credentials: "+r.Header.Get("Authorization"))
	})
	mux.HandleFunc("/leak-ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		_ = json.NewEncoder(w).Encode(map[string]any{"you_sent": r.Header.Get("Authorization")})
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "hello")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/text", http.StatusFound)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// httpTools are tools against the test server (SERVER is its URL, HOST
// its host:port).
const httpTools = `
apiVersion: runner/v1
kind: Tool
metadata: {name: weather}
parameters:
  type: object
  properties: {city: {type: string}, days: {type: integer}}
  required: [city]
http:
  method: POST
  url: SERVER/echo/${args.city}?days=${args.days ?? 1}
  headers: {Authorization: "Bearer ${secrets.token}", X-City: "${args.city}"}
  secrets: {token: RUNNER_TEST_HTTP_TOKEN}
  allow_hosts: [127.0.0.1]
  body: '{"city": args.city, "days": args.days ?? 1}'
  response: '{"status": response.status, "request_id": response.headers["x-request-id"], "echo": response.body}'
---
apiVersion: runner/v1
kind: Tool
metadata: {name: api}
parameters:
  type: object
  properties: {path: {type: string}}
  required: [path]
http:
  url: SERVER/${args.path}
  headers: {Authorization: "Bearer ${secrets.token}"}
  secrets: {token: RUNNER_TEST_HTTP_TOKEN}
  allow_hosts: [127.0.0.1]
---
apiVersion: runner/v1
kind: Tool
metadata: {name: by_port}
parameters: {type: object}
http:
  url: SERVER/text
  allow_hosts: [HOST]
---
apiVersion: runner/v1
kind: Tool
metadata: {name: other_port}
parameters: {type: object}
http:
  url: ${"SERVER"}/text # computed: validate cannot see the host, the tool checks it
  allow_hosts: ["127.0.0.1:1"]
---
apiVersion: runner/v1
kind: Tool
metadata: {name: elsewhere}
parameters: {type: object}
http:
  url: ${"SERVER"}/text
  allow_hosts: [api.example.com, example.org]
---
apiVersion: runner/v1
kind: Tool
metadata: {name: closed}
parameters: {type: object}
http:
  url: http://127.0.0.1:1/x?key=${secrets.token}
  secrets: {token: RUNNER_TEST_HTTP_TOKEN}
  allow_hosts: [127.0.0.1]
---
apiVersion: runner/v1
kind: Tool
metadata: {name: unset}
parameters: {type: object}
http:
  url: SERVER/text
  headers: {X-Key: "${secrets.key}"}
  secrets: {key: RUNNER_TEST_HTTP_UNSET}
  allow_hosts: [127.0.0.1]
`

// httpTool builds the tool called name of httpTools against srv.
func httpTool(t *testing.T, srv *httptest.Server, name string) runner.Tool {
	t.Helper()
	u, _ := url.Parse(srv.URL)
	src := strings.NewReplacer("SERVER", srv.URL, "HOST", u.Host).Replace(httpTools)
	return buildTool(t, src, name)
}

func TestHTTPTool(t *testing.T) {
	t.Setenv(tokenEnv, token)
	srv := testAPI(t)
	cases := []struct {
		name string
		tool string
		args map[string]any
		key  string
		want string
	}{
		{"request and response mapping", "weather", map[string]any{"city": "Lisbon", "days": 3}, "thread:4:0",
			`{"echo":{"auth":true,"body":{"city":"Lisbon","days":3},"city":"Lisbon","content_type":"application/json",` +
				`"days":"3","idempotency_key":"thread:4:0","method":"POST","x_city":"Lisbon"},"request_id":"req-42","status":200}`},
		{"no idempotency key without a call key", "weather", map[string]any{"city": "Oslo"}, "",
			`{"echo":{"auth":true,"body":{"city":"Oslo","days":1},"city":"Oslo","content_type":"application/json",` +
				`"days":"1","idempotency_key":"","method":"POST","x_city":"Oslo"},"request_id":"req-42","status":200}`},
		{"text body is a string", "api", map[string]any{"path": "text"}, "", `"hello"`},
		{"secret echoed in a result is redacted", "api", map[string]any{"path": "leak-ok"}, "", `{"you_sent":"Bearer ***"}`},
		{"host:port entry", "by_port", nil, "", `"hello"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := httpTool(t, srv, c.tool).Call(context.Background(), &runner.ToolCall{Name: c.tool, Args: c.args, Key: c.key})
			if err != nil {
				t.Fatal(err)
			}
			if s := asJSON(t, got); s != c.want {
				t.Errorf("got  %s\nwant %s", s, c.want)
			}
		})
	}
}

func TestHTTPToolErrors(t *testing.T) {
	t.Setenv(tokenEnv, token)
	srv := testAPI(t)
	cases := []struct {
		name      string
		tool      string
		path      string
		want      []string
		permanent bool
		kind      string // what a node's on_error sees
	}{
		{"server error is retried", "api", "status/503",
			[]string{"tool api: HTTP 503 from 127.0.0.1:", ": upstream says no xxx"}, false, "http_5xx"},
		{"not found is permanent", "api", "status/404", []string{"tool api: HTTP 404 from "}, true, "http_4xx"},
		{"too many requests is retried", "api", "status/429", []string{"HTTP 429"}, false, "http_4xx"},
		{"request timeout is retried", "api", "status/408", []string{"HTTP 408"}, false, "http_4xx"},
		{"echoed secret is redacted", "api", "leak", []string{"HTTP 500", "bad credentials: Bearer ***"}, false, "http_5xx"},
		{"host not allowed", "elsewhere", "", []string{`tool elsewhere: host "127.0.0.1:`, `is not in allow_hosts [api.example.com, example.org]`}, true, "error"},
		{"port not allowed", "other_port", "", []string{"is not in allow_hosts [127.0.0.1:1]"}, true, "error"},
		{"redirect to a host not allowed", "api", "redirect", []string{`redirect: host "localhost:`}, true, "error"},
		{"connection refused hides a secret in the url", "closed", "", []string{"tool closed: request to 127.0.0.1:1: "}, false, "error"},
		{"unset secret", "unset", "", []string{"secret key: environment variable RUNNER_TEST_HTTP_UNSET is not set"}, true, "error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			call := &runner.ToolCall{Name: c.tool, Args: map[string]any{"path": c.path}}
			if c.path == "" {
				call.Args = nil
			}
			n, err := attempts(t, context.Background(), httpTool(t, srv, c.tool), call)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), url.QueryEscape(token)) {
				t.Errorf("error %q reveals the secret", err)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes long; the body should be cut to 200", len(err.Error()))
			}
			if kind := runner.ErrorKindsOf(err)[0]; kind != c.kind {
				t.Errorf("error kind %s, want %s", kind, c.kind)
			}
			if want := map[bool]int{true: 1, false: 3}[c.permanent]; n != want {
				t.Errorf("ran %d times, want %d (permanent: %v)", n, want, c.permanent)
			}
		})
	}
}

func TestHTTPToolTimeout(t *testing.T) {
	t.Setenv(tokenEnv, token)
	srv := testAPI(t)
	tool := httpTool(t, srv, "api") // before the clock starts: checking the definitions may take longer under -race
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tool.Call(ctx, &runner.ToolCall{Args: map[string]any{"path": "slow"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "tool api: request to 127.0.0.1:") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s; the deadline was 100ms", d)
	}
}

func TestHTTPToolConcurrent(t *testing.T) {
	t.Setenv(tokenEnv, token)
	tool := httpTool(t, testAPI(t), "weather")
	errs := make(chan error, 8)
	for i := range cap(errs) {
		go func() {
			_, err := tool.Call(context.Background(), &runner.ToolCall{Args: map[string]any{"city": "Lima", "days": i}})
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
