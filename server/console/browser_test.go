package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/builtins/testrun"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/access/accesstest"
	"github.com/runner-dev/runner/server"
	"github.com/runner-dev/runner/server/browsertest"
)

// The keys of the suite: three people of tenant acme — carol a cfo, who
// alone may decide a payout — and tenant other.
const aliceKey, bobKey, carolKey, otherKey = "sk-alice", "sk-bob", "sk-carol", "sk-other"

// rule37Script pauses rule_37 at its approval gate on create_entity, then
// answers with a reply that tries to run script: a <script> element and a
// javascript: link, which the console must render inert.
const rule37Script = `[
 {"node": "initial_llm_call", "tool_calls": [{"id": "c1", "name": "create_entity",
   "args": {"name": "Mitchell Ranch 3H", "entity_type": "well", "api_number": "42-329-12399"}}], "usage": {"input": 1200, "output": 34}},
 {"node": "initial_llm_call", "text": "Created **Mitchell Ranch 3H**. <script>window.__xss = 1</script> [click me](javascript:window.__xss=2) and [the filing](https://example.com/filing)",
   "usage": {"input": 1300, "output": 12}}]`

// served is runner serve as the suite drives it: the shipped rule_37 on a
// scripted model, the CLI's payout (a gate only a cfo may decide, by two),
// the shipped Tests and the console's testdata ones, a SQLite store, API
// keys and, beside them, an OIDC issuer's bearer tokens (the console signs
// in with keys either way).
type served struct {
	url string
	t   *testing.T
}

func serve(t *testing.T) *served {
	t.Helper()
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load("../../pipelines", "../../agents", "../../rules", "testdata", "../../cmd/runner/testdata/payout.yaml")
	proj, more := checker.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatalf("definitions: %v", all)
	}
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(rule37Script), 0o600); err != nil {
		t.Fatal(err)
	}
	replies, err := dsl.LoadScript(script)
	if err != nil {
		t.Fatal(err)
	}
	graphs := map[string]*runner.Graph{}
	for _, name := range []string{"rule_37", "payout"} {
		agent := proj.Agents[name]
		if graphs[name], err = checker.Compile(proj, agent.Pipeline, dsl.CompileOptions{Tool: builtins.Tool, Agent: agent,
			Provider: builtins.ScriptedProviders(replies)}); err != nil {
			t.Fatal(err)
		}
	}
	tokens, err := access.NewTokens(access.OIDC{Issuer: accesstest.NewIssuer(t).URL, Audience: accesstest.Audience})
	if err != nil {
		t.Fatal(err)
	}
	url := browsertest.Serve(t, server.Config{Graphs: graphs, Tokens: tokens,
		Keys: access.Keys{access.HashKey(aliceKey): {Tenant: "acme", Name: "alice"}, access.HashKey(bobKey): {Tenant: "acme", Name: "bob"},
			access.HashKey(carolKey): {Tenant: "acme", Name: "carol", Roles: []string{"cfo"}}, access.HashKey(otherKey): {Tenant: "other"}},
		Tests: &testrun.Suite{Checker: checker, Project: proj}, Heartbeat: time.Second})
	return &served{url: url, t: t}
}

// api calls the server as tenant acme and decodes the answer into out.
func (s *served) api(method, path string, body, out any) {
	s.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.url+path, bytes.NewReader(b))
	req.Header.Set("X-Api-Key", aliceKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		s.t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(bytes.TrimSpace(data), out); err != nil {
			s.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// pause starts assistant on a new thread id with input and waits for its
// gate.
func (s *served) pause(id, assistant string, input map[string]any) {
	s.t.Helper()
	s.api("POST", "/threads", map[string]any{"thread_id": id, "metadata": map[string]any{"graph_id": assistant}}, nil)
	var out map[string]any
	s.api("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": assistant, "input": input}, &out)
	if out["__interrupt__"] == nil {
		s.t.Fatalf("thread %s did not pause: %v", id, out)
	}
}

// well is rule_37's input asking to add well id.
func well(id string) map[string]any {
	return map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the " + id + " well."}}}
}

// record is the create_entity record of a thread's tool_results.
func (s *served) record(thread string) map[string]any {
	var st map[string]any
	s.api("GET", "/threads/"+thread+"/state", nil, &st)
	recs, _ := st["values"].(map[string]any)["tool_results"].([]any)
	for _, r := range recs {
		if m, _ := r.(map[string]any); m["tool_name"] == "create_entity" {
			return m
		}
	}
	return nil
}

// browser is one browser context (its own session storage) on one tab
// of the console.
type browser struct {
	*browsertest.Browser
	url string
}

// open makes a new browser context (fresh storage) on the console.
func open(t *testing.T, root context.Context, url, name string) *browser {
	b := &browser{Browser: browsertest.Open(t, root, "console", name), url: url}
	b.Do(chromedp.Navigate(url + "/ui/"))
	return b
}

// go opens a page of the console by its hash route.
func (b *browser) goTo(route, ready string) {
	b.T.Helper()
	b.Do(chromedp.Navigate(b.url + "/ui/#" + route))
	b.Until("page "+route, ready, 10*time.Second)
}

// signIn signs in with key on the sign-in page.
func (b *browser) signIn(key string) {
	b.T.Helper()
	b.Until("the sign-in page", `location.hash.startsWith('#/signin') && !!document.querySelector('#key')`, 10*time.Second)
	b.Do(chromedp.SendKeys(chromedp.CSS("#key"), key), chromedp.Click(chromedp.CSS("form button[type=submit]")))
	b.Until("signed in", `location.hash === '#/inbox' && !!document.querySelector('h1') && document.querySelector('h1').textContent === 'Approvals inbox'`, 10*time.Second)
}

// TestConsoleInBrowser drives the console in headless Chromium against
// the real server: sign in, start rule_37 from its page and watch it
// reach the gate on the graph, approve it from the inbox in a second
// browser context and see the first one's live run go on (and every open
// inbox drop the card), a model reply's script rendered inert, reject
// another with a note (keyboard only), edit a third with an invalid then
// a valid argument, a payout only a cfo may decide shown in the cfo's
// inbox (with its quorum) and in no one else's, fork a thread from its second checkpoint and continue
// it, run the Tests and see the failing one at its file:line, the health
// page, and another tenant seeing none of it. Each page is screenshot to
// $RUNNER_SCREENSHOTS/console (default: the test's temporary directory).
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser suite takes a while; without -short it runs")
	}
	root := browsertest.Chromium(t)
	s := serve(t)

	// Alice signs in and starts rule_37 from its page.
	alice := open(t, root, s.url, "alice")
	alice.signIn(aliceKey)
	alice.Until("the empty inbox", `document.body.innerText.includes('Nothing waits for a decision')`, 5*time.Second)
	alice.goTo("/assistants", `!!document.querySelector('.cards a')`)
	alice.Shot("assistants")
	alice.Do(chromedp.Click(chromedp.Search(`//ul[contains(@class, "cards")]//a[text()="rule_37"]`)))
	alice.Until("the assistant page", `!!document.querySelector('svg.graph [data-node=approval_node].interrupt') && !!document.querySelector('#in-messages')`, 10*time.Second)
	if labels := alice.Text(`[...document.querySelectorAll('.edge-label title')].map(t => t.textContent).join('|')`); !strings.Contains(labels, "len(state.pending_tool_calls) > 0") {
		t.Errorf("the graph's conditional routes are not labelled: %s", labels)
	}
	alice.Shot("assistant")
	alice.Do(chromedp.SetValue(chromedp.CSS("#in-messages"), `[{"role": "user", "content": "Add the Mitchell Ranch 3H well."}]`),
		chromedp.Click(chromedp.CSS("form[aria-labelledby=start-h] button[type=submit]")))
	alice.Until("the run reaches the gate on the graph", `location.hash.includes('/live') &&
		!!document.querySelector('svg.graph [data-node=tool_node].paused') &&
		!!document.querySelector('.pause .approval button.approve')`, 15*time.Second)
	thread := strings.TrimPrefix(strings.Split(alice.Text(`location.hash`), "/live")[0], "#/threads/")
	alice.Shot("live-run-paused")

	// Two more threads pause for the reject and the edit, and a payout
	// for two cfos.
	s.pause("reject-me", "rule_37", well("reject-me"))
	s.pause("edit-me", "rule_37", well("edit-me"))
	s.pause("pay-me", "payout", map[string]any{"amount": 20000})

	// Bob approves Alice's from his inbox, which has no payout (he is no
	// cfo); Alice's live run goes on, and Carol's inbox, open elsewhere
	// with the payout too, drops the card.
	bob := open(t, root, s.url, "bob")
	bob.signIn(bobKey)
	bob.Until("three approvals read, no payout", `document.querySelectorAll('.inbox-item button.approve').length === 3 &&
		document.querySelectorAll('.inbox-item').length === 3 && !document.querySelector('.inbox-item a[href="#/threads/pay-me"]')`, 5*time.Second)
	bob.Shot("inbox")
	carol := open(t, root, s.url, "carol")
	carol.signIn(carolKey)
	carol.Until("four approvals, the payout with its quorum", `document.querySelectorAll('.inbox-item').length === 4 &&
		document.querySelector('.inbox-item:has(a[href="#/threads/pay-me"])').textContent.includes('0 of 2 approvals')`, 5*time.Second)
	card := fmt.Sprintf(`.inbox-item:has(a[href="#/threads/%s"])`, thread)
	bob.Do(chromedp.Click(chromedp.CSS(card + " button.approve")))
	decided := time.Now()
	carol.Until("the decided approval leaves the other inbox", `document.querySelectorAll('.inbox-item').length === 3`, 3*time.Second)
	t.Logf("the decided approval left the other inbox %v after the click", time.Since(decided).Round(time.Millisecond))
	alice.Until("the live run goes on to its end", `document.querySelector('svg.graph [data-node=output_format].done') !== null &&
		document.querySelector('.messages').textContent.includes('Created')`, 15*time.Second)
	alice.Shot("live-run")

	// The reply's <script> and javascript: link are inert.
	if got := alice.Text(`JSON.stringify({xss: window.__xss === undefined ? 'none' : String(window.__xss),
		scripts: document.querySelectorAll('main script').length,
		jsLinks: document.querySelectorAll('a[href^="javascript"]').length,
		safeLink: !!document.querySelector('.messages a[href="https://example.com/filing"]'),
		shown: document.querySelector('.messages').textContent.includes('<script>window.__xss = 1</script>'),
		strong: !!document.querySelector('.messages strong')})`); got != `{"xss":"none","scripts":0,"jsLinks":0,"safeLink":true,"shown":true,"strong":true}` {
		t.Errorf("the model's reply was not rendered inert: %s", got)
	}
	if rec := s.record(thread); rec == nil || rec["status"] != "SUCCESS" {
		t.Errorf("approved create_entity: %v", rec)
	}

	// Bob rejects the oldest with a note, by keyboard alone.
	bob.goTo("/inbox?order=oldest", `document.querySelectorAll('.inbox-item').length === 2 &&
		document.querySelectorAll('.inbox-item button.approve').length === 2`)
	bob.Do(chromedp.KeyEvent("j"))
	bob.Until("the first card has focus", `document.activeElement.classList.contains('inbox-item') &&
		document.activeElement.querySelector('a[href="#/threads/reject-me"]') !== null`, 3*time.Second)
	bob.Do(chromedp.KeyEvent("\t"), chromedp.KeyEvent("\t"))
	bob.Until("the note has focus", `document.activeElement.tagName === 'TEXTAREA'`, 3*time.Second)
	bob.Do(chromedp.KeyEvent("not this lease"), chromedp.KeyEvent("\t"), chromedp.KeyEvent("\t"))
	bob.Until("Reject has focus", `document.activeElement.classList.contains('reject')`, 3*time.Second)
	bob.Do(chromedp.KeyEvent("\r"))
	bob.Until("one approval left", `document.querySelectorAll('.inbox-item').length === 1`, 5*time.Second)
	if rec := s.record("reject-me"); rec == nil || rec["status"] != "DENIED" || !strings.Contains(fmt.Sprint(rec), "not this lease") {
		t.Errorf("rejected create_entity: %v", rec)
	}

	// Bob edits the last: an invalid API number is refused in the page,
	// a valid one runs.
	bob.Do(chromedp.Click(chromedp.CSS(".inbox-item button.edit")))
	bob.Until("the edit form", `!!document.querySelector('.edit-form input[id$="-api_number"]')`, 3*time.Second)
	bob.Do(chromedp.SetValue(chromedp.CSS(`.edit-form input[id$="-api_number"]`), "42-1"),
		chromedp.Click(chromedp.CSS(".edit-form button[type=submit]")))
	bob.Until("the invalid argument refused", `document.querySelector('.edit-form').textContent.includes('api_number must match')`, 3*time.Second)
	bob.Shot("inbox-edit-invalid")
	bob.Do(chromedp.SetValue(chromedp.CSS(`.edit-form input[id$="-api_number"]`), "42-329-12400"),
		chromedp.Click(chromedp.CSS(".edit-form button[type=submit]")))
	bob.Until("the inbox empty", `document.body.innerText.includes('Nothing waits for a decision')`, 5*time.Second)
	if rec := s.record("edit-me"); rec == nil || rec["status"] != "SUCCESS" || rec["input"].(map[string]any)["api_number"] != "42-329-12400" {
		t.Errorf("edited create_entity: %v", rec)
	}
	// The payout waits still, in Carol's inbox alone.
	carol.Until("the payout alone", `document.querySelectorAll('.inbox-item').length === 1 &&
		!!document.querySelector('.inbox-item a[href="#/threads/pay-me"]') && !!document.querySelector('.inbox-item button.approve')`, 5*time.Second)
	carol.Shot("inbox-cfo")

	// Alice forks her thread from its second checkpoint and continues it.
	alice.goTo("/threads/"+thread, `!!document.querySelector('.history [data-checkpoint="2"] button.fork')`)
	alice.Shot("thread")
	alice.Do(chromedp.Click(chromedp.CSS(`.history [data-checkpoint="2"] button.fork`)))
	alice.Until("the confirmation", `!!document.querySelector('dialog.confirm[open]')`, 3*time.Second)
	alice.Do(chromedp.Click(chromedp.CSS("dialog.confirm button[type=submit]")))
	alice.Until("the fork's page", `location.hash.startsWith('#/threads/') && !location.hash.includes('`+thread+`') && !!document.querySelector('button.continue')`, 5*time.Second)
	fork := strings.TrimPrefix(alice.Text(`location.hash`), "#/threads/")
	alice.Do(chromedp.Click(chromedp.CSS("button.continue")))
	alice.Until("the confirmation", `!!document.querySelector('dialog.confirm[open]')`, 3*time.Second)
	alice.Do(chromedp.Click(chromedp.CSS("dialog.confirm button[type=submit]")))
	alice.Until("the fork continues to the gate", `location.hash.includes('/live') && !!document.querySelector('svg.graph [data-node=tool_node].paused')`, 15*time.Second)
	var forked map[string]any
	s.api("GET", "/threads/"+fork, nil, &forked)
	if forked["status"] != "interrupted" {
		t.Errorf("the fork %s is %v, want interrupted at the gate again", fork, forked["status"])
	}

	// The Tests: the failing one at its file:line.
	alice.goTo("/tests", `!!document.querySelector('#test-filter')`)
	alice.Do(chromedp.SendKeys(chromedp.CSS("#test-filter"), "console_"), chromedp.Click(chromedp.CSS("form button[type=submit]")))
	alice.Until("the report", `!!document.querySelector('.summary')`, 20*time.Second)
	if got := alice.Text(`document.querySelector('.summary').textContent + ' | ' + [...document.querySelectorAll('.failure')].map(f => f.textContent).join(' | ')`); !strings.Contains(got, "1 passed, 1 failed") ||
		!strings.Contains(got, "console_fails") || !strings.Contains(got, "testdata/tests.yaml:34:11") || !strings.Contains(got, "status interrupted, want completed") {
		t.Errorf("the Tests page shows %q, want console_fails at testdata/tests.yaml:34:11 with what differed", got)
	}
	alice.Shot("tests")

	alice.goTo("/health", `document.body.innerText.includes('Ready: the server takes runs') && document.body.innerText.includes('Runs ended')`)
	alice.Shot("health")
	alice.goTo("/threads", `document.querySelectorAll('table.threads tbody tr').length >= 4`)
	alice.Shot("threads")

	// Another tenant sees none of it; logging out forgets the key.
	other := open(t, root, s.url, "other")
	other.signIn(otherKey)
	other.Until("an empty inbox", `document.body.innerText.includes('Nothing waits for a decision')`, 5*time.Second)
	other.goTo("/threads", `document.body.innerText.includes('No thread matches')`)
	other.goTo("/threads/"+thread, `document.querySelector('.error') !== null && document.querySelector('.error').textContent.includes('404')`)
	other.Shot("other-tenant")
	other.Do(chromedp.Click(chromedp.CSS("#logout")))
	other.Until("logged out", `location.hash.startsWith('#/signin') && sessionStorage.length === 0`, 3*time.Second)
}
