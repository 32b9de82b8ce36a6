package builtins_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// Secrets with the characters encodings treat specially.
const (
	leakToken = `tok"en\/<b>&+=?é😀-0123456789`
	leakKey   = `sk-"K3Y\/<X>&=+?ü-abcdef9876`
)

// secretForms are the forms a secret takes on its way out of a service:
// raw, JSON-escaped (Go's, without HTML escaping, Python's ASCII, PHP's
// slashes), URL-escaped, hex, base64 in both alphabets with and without
// padding, and inside an HTTP Basic credential.
func secretForms(s string) map[string]string {
	b := []byte(s)
	goJSON, _ := json.Marshal(s)
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	noHTML := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(plain.String()), `"`), `"`)
	return map[string]string{
		"raw": s, "json": strings.TrimSuffix(strings.TrimPrefix(string(goJSON), `"`), `"`), "json-no-html": noHTML,
		"json-ascii": asciiEscaped(s), "json-slashes": strings.ReplaceAll(noHTML, "/", `\/`),
		"query": url.QueryEscape(s), "path": url.PathEscape(s),
		"query-lower": regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(url.QueryEscape(s), strings.ToLower),
		"hex":         hex.EncodeToString(b), "HEX": strings.ToUpper(hex.EncodeToString(b)),
		"base64": base64.StdEncoding.EncodeToString(b), "base64-raw": base64.RawStdEncoding.EncodeToString(b),
		"base64url": base64.URLEncoding.EncodeToString(b), "base64url-raw": base64.RawURLEncoding.EncodeToString(b),
		"basic":   base64.StdEncoding.EncodeToString([]byte("user:" + s)),
		"basic-1": base64.StdEncoding.EncodeToString([]byte("ab:" + s)),
		"basic-2": base64.StdEncoding.EncodeToString([]byte("a:" + s)),
	}
}

// asciiEscaped is s as Python's json.dumps writes it inside a string.
func asciiEscaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x80:
			b.WriteRune(r)
		default:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		}
	}
	return b.String()
}

// echoForms is every form of secret, one a line, as a service that echoes
// it would write them.
func echoForms(secret string) string {
	forms := secretForms(secret)
	names := make([]string, 0, len(forms))
	for n := range forms {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%s\n", n, forms[n])
	}
	return b.String()
}

// leaks names the forms of secret found in s. A base64 value counts when
// any alignment of it decodes to six bytes of the secret in a row, which
// catches what is left of a credential that was only partly replaced.
func leaks(s, secret string) []string {
	var found []string
	for name, f := range secretForms(secret) {
		if strings.Contains(s, f) {
			found = append(found, name)
		}
	}
	runs := regexp.MustCompile(`[A-Za-z0-9+/_-]{8,}`).FindAllString(s, -1)
	for _, run := range runs {
		for off := range 4 {
			part := run[off:]
			part = part[:len(part)/4*4]
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				dec, err := enc.DecodeString(part)
				for i := 0; err == nil && i+6 <= len(secret); i++ {
					if strings.Contains(string(dec), secret[i:i+6]) {
						return append(found, "base64 fragment "+run)
					}
				}
			}
		}
	}
	return found
}

// leakAPI echoes every credential it gets back in every encoding: in a
// tool's result and headers (/ok), in a tool's error (/fail/N), in a
// model's streamed reply (/v1) and in a model's 401 (/broken/v1).
func leakAPI(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", auth)
		_ = json.NewEncoder(w).Encode(map[string]any{"auth": auth, "forms": secretForms(strings.TrimPrefix(auth, "Bearer ")),
			"text": echoForms(strings.TrimPrefix(auth, "Bearer "))})
	})
	mux.HandleFunc("/fail/{form}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "rejected: "+secretForms(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))[r.PathValue("form")])
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		text := "your key:\n" + echoForms(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		var events []string
		for i := 0; i < len(text); i += 5 { // every form split across chunks
			piece, _ := json.Marshal(text[i:min(i+5, len(text))])
			events = append(events, openAIDelta(`{"content":`+string(piece)+`}`, "null"))
		}
		events = append(events, openAIDelta(`{}`, `"stop"`), openAIUsageChunk, "[DONE]")
		openAISSE(events...)(w, r)
	})
	mux.HandleFunc("/broken/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		msg, _ := json.Marshal("invalid key " + echoForms(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
		jsonReply(http.StatusUnauthorized, `{"error": {"message": `+string(msg)+`, "type": "invalid_request_error"}}`)(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

const leakSrc = `apiVersion: runner/v1
kind: Tool
metadata: {name: echo}
parameters: {type: object}
http:
  url: SERVER/ok
  headers: {Authorization: "Bearer ${secrets.token}"}
  secrets: {token: RUNNER_TEST_LEAK_TOKEN}
  allow_hosts: [127.0.0.1]
  response: '{"body": response.body, "echo": response.headers["x-echo"]}'
---
apiVersion: runner/v1
kind: Tool
metadata: {name: refuse}
parameters: {type: object, properties: {form: {type: string}}}
http:
  url: SERVER/fail/${args.form}
  headers: {Authorization: "Bearer ${secrets.token}"}
  secrets: {token: RUNNER_TEST_LEAK_TOKEN}
  allow_hosts: [127.0.0.1]
---
apiVersion: runner/v1
kind: Model
metadata: {name: echoing}
provider: openai
base_url: SERVER/v1
api_key_env: RUNNER_TEST_LEAK_KEY
pricing: {input_per_mtok: 1, output_per_mtok: 1}
---
apiVersion: runner/v1
kind: Model
metadata: {name: refusing}
provider: openai
base_url: SERVER/broken/v1
api_key_env: RUNNER_TEST_LEAK_KEY
pricing: {input_per_mtok: 1, output_per_mtok: 1}
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: leak}
input: {messages: {type: array}}
state:
  messages: {type: array, reducer: messages}
  echoed: {type: any}
  refused: {type: array}
  execs: {type: array, reducer: append}
start: call
nodes:
  call:
    type: tool
    with: {tool: echo, output: echoed, record: execs}
    next: refuse
  refuse:
    type: map
    with: {over: FORMS, tool: refuse, args: {form: item}, into: refused, on_failure: continue}
    next: ask
  ask:
    type: llm
    with: {model: echoing, stream: true}
    next: END
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: leak_fails}
input: {messages: {type: array}}
state:
  messages: {type: array, reducer: messages}
start: ask
nodes:
  ask:
    type: llm
    with: {model: refusing}
    next: END
`

// TestSecretsNeverLeak runs an http tool and a model against services
// that echo their credentials back in every encoding — in results,
// headers, errors, streamed text and a refusal — and looks for any form of
// either secret in everything the runs kept or showed: events, results,
// errors and checkpoints.
func TestSecretsNeverLeak(t *testing.T) {
	t.Setenv("RUNNER_TEST_LEAK_TOKEN", leakToken)
	t.Setenv("RUNNER_TEST_LEAK_KEY", leakKey)
	srv := leakAPI(t)
	var names []string
	for n := range secretForms(leakToken) {
		names = append(names, fmt.Sprintf("%q", n))
	}
	src := strings.NewReplacer("SERVER", srv.URL, "FORMS", "'["+strings.Join(names, ", ")+"]'").Replace(leakSrc)
	docs, diags := dsl.Parse("leak.yaml", []byte(src))
	c, proj := checked(t, docs, diags)

	t.Run("the detector sees every form", func(t *testing.T) {
		for _, secret := range []string{leakToken, leakKey} {
			if got, want := len(leaks(echoForms(secret), secret)), len(secretForms(secret)); got < want {
				t.Fatalf("leaks found %d forms in the echo, want %d", got, want)
			}
		}
	})
	for _, tc := range []struct {
		pipeline, status string
		events           []string // kinds of event the run must have shown
	}{
		{"leak", runner.StatusCompleted, []string{runner.EventToolResult, runner.EventLLMToken}},
		{"leak_fails", runner.StatusFailed, []string{runner.EventError}},
	} {
		t.Run(tc.pipeline, func(t *testing.T) {
			g, err := c.Compile(proj, tc.pipeline, dsl.CompileOptions{Tool: builtins.Tool, Provider: builtins.Providers()})
			if err != nil {
				t.Fatal(err)
			}
			st := store.NewMemory()
			defer st.Close()
			var mu sync.Mutex
			var events []runner.Event
			eng := &runner.Engine{Store: st, Sink: func(e runner.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }}
			res, err := eng.Run(context.Background(), g, "t1", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Fatalf("status %s, want %s (error %v)", res.Status, tc.status, res.Error)
			}
			for _, want := range tc.events {
				if !slices.ContainsFunc(events, func(e runner.Event) bool { return e.Type == want }) {
					t.Errorf("no %s event", want)
				}
			}
			var streamed strings.Builder // what a reader of the token events puts together
			for _, e := range events {
				if e.Type == runner.EventLLMToken {
					streamed.WriteString(e.Data.(map[string]any)["text"].(string))
				}
			}
			kept := map[string]any{"result": res, "events": events, "checkpoints": checkpoints(t, st, "t1"),
				"stream": streamed.String()}
			seen := strings.Builder{}
			walkStrings(t, kept, func(where, s string) {
				seen.WriteString(s)
				for _, secret := range []string{leakToken, leakKey} {
					if found := leaks(s, secret); len(found) > 0 {
						t.Errorf("%s holds the secret %s as %v: %.300q", where, secret[:6], found, s)
					}
				}
			})
			if n := strings.Count(seen.String(), runner.Redacted); n < 10 {
				t.Errorf("*** appears %d times: the services' echoes did not reach the run", n)
			}
		})
	}
}

// checkpoints returns every checkpoint of thread with its writes and
// snapshot.
func checkpoints(t *testing.T, st store.Store, thread string) []*store.Checkpoint {
	t.Helper()
	hist, err := st.History(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	var out []*store.Checkpoint
	for _, h := range hist {
		cps, err := st.Load(context.Background(), thread, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cps[len(cps)-1])
	}
	return out
}

// walkStrings calls f with every string of v's JSON encoding, and with
// the JSON text of every embedded JSON document (checkpoint writes).
func walkStrings(t *testing.T, v any, f func(where, s string)) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	f("the encoding", string(data))
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch x := v.(type) {
		case string:
			f(where, x)
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", where, i), e)
			}
		case map[string]any:
			for k, e := range x {
				f(where+" key", k)
				walk(where+"."+k, e)
			}
		}
	}
	walk("", doc)
}
