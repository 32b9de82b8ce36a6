// Package chatui_test drives LangChain's agent-chat-ui — built from the
// pinned create-agent-chat-app's vite template (package.json, build.mjs)
// — in headless Chromium against a real runner server.
package chatui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/server"
	"github.com/runner-dev/runner/server/browsertest"
)

// key is the API key the UI is configured with (sent as X-Api-Key).
const key = "sk-chat"

// TestAgentChatUI drives agent-chat-ui's ten flows against runner serve:
// the testdata agent "chat" on a scripted model, with a lookup tool and a
// refund the Agent Inbox reviews. Each flow is a subtest; a failing one
// names the flow and leaves a screenshot (failed-FLOW.png) in
// $RUNNER_SCREENSHOTS/chatui, beside one of each flow's end.
func TestAgentChatUI(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser suite takes a while; without -short it runs")
	}
	ui := httptest.NewServer(http.FileServer(http.Dir(dist(t))))
	t.Cleanup(ui.Close)
	root := browsertest.Chromium(t)
	api := serve(t, ui.URL)
	page := &chat{Browser: browsertest.Open(t, root, "chatui", "chat")}
	threads := map[string]string{}

	page.flow(t, "1-configure", func(t *testing.T, b *chat) {
		b.Do(chromedp.Navigate(ui.URL + "/"))
		b.until("the setup form", `!!document.querySelector('form #apiUrl')`, 10*time.Second)
		b.Do(chromedp.SetValue(chromedp.ID("apiUrl"), api.url), chromedp.SetValue(chromedp.ID("assistantId"), "chat"),
			chromedp.SetValue(chromedp.ID("apiKey"), key))
		b.click("button", "Continue")
		b.until("the chat page", `!!document.querySelector('textarea[placeholder="Type your message..."]') &&
			new URLSearchParams(location.search).get('assistantId') === 'chat'`, 10*time.Second)
		if got := b.Text(`localStorage.getItem('lg:chat:apiKey') + ' ' + new URLSearchParams(location.search).get('apiUrl')`); got != key+" "+api.url {
			t.Errorf("the UI keeps key and URL %q, want %q", got, key+" "+api.url)
		}
	})
	page.flow(t, "2-send-and-stream", func(t *testing.T, b *chat) {
		b.send("Hello there")
		b.until("the streamed answer", `${chat}.includes('Hello! You said: Hello there')`, 15*time.Second)
		threads["hello"] = b.thread()
		if threads["hello"] == "" {
			t.Fatal("no threadId in the URL after the first message")
		}
	})
	page.flow(t, "3-tool-call-and-hide", func(t *testing.T, b *chat) {
		b.send("Please look up order A-17")
		b.until("the tool call, its result and the answer", `${chat}.includes('lookup_order') &&
			${chat}.includes('Tool Result') && ${chat}.includes('The tool said:')`, 15*time.Second)
		b.Shot("3-tool-call")
		b.Do(chromedp.Click(chromedp.ID("render-tool-calls")))
		b.until("tool calls hidden", `!${chat}.includes('Tool Result') && !${chat}.includes('lookup_order') &&
			new URLSearchParams(location.search).get('hideToolCalls') === 'true'`, 5*time.Second)
		b.Do(chromedp.Click(chromedp.ID("render-tool-calls")))
		b.until("tool calls shown again", `${chat}.includes('Tool Result')`, 5*time.Second)
	})
	page.flow(t, "4-new-thread", func(t *testing.T, b *chat) {
		b.newThread()
		b.send("Second thread here")
		b.until("the answer on a new thread", `${chat}.includes('Hello! You said: Second thread here') &&
			!${chat}.includes('Hello there')`, 15*time.Second)
		threads["second"] = b.thread()
		if threads["second"] == "" || threads["second"] == threads["hello"] {
			t.Fatalf("the new thread is %q, the first %q", threads["second"], threads["hello"])
		}
	})
	page.flow(t, "5-history-switch", func(t *testing.T, b *chat) {
		b.Do(chromedp.Reload()) // the sidebar lists the threads it finds as it opens
		b.until("the chat page", `${chat}.includes('Hello! You said: Second thread here')`, 10*time.Second)
		b.jsClick(`document.querySelector('button:has(svg.lucide-panel-right-close)')`)
		b.until("both threads listed", `[...document.querySelectorAll('button')].some(e => e.textContent === 'Hello there') &&
			[...document.querySelectorAll('button')].some(e => e.textContent === 'Second thread here')`, 10*time.Second)
		b.Shot("5-history")
		b.click("button", "Hello there")
		b.until("the old conversation", `new URLSearchParams(location.search).get('threadId') === '`+threads["hello"]+`' &&
			${chat}.includes('The tool said:') && !${chat}.includes('You said: Second thread')`, 10*time.Second)
	})
	page.flow(t, "6-inbox-accept", func(t *testing.T, b *chat) {
		b.refund()
		b.click("button", "Accept")
		b.until("the refund's answer", `${chat}.includes('"refunded":true')`, 15*time.Second)
		if got := api.refund(t, b.thread()); !strings.Contains(got, `"reason":"arrived broken"`) {
			t.Errorf("the accepted refund ran with %s", got)
		}
	})
	page.flow(t, "7-inbox-edit", func(t *testing.T, b *chat) {
		b.refund()
		b.typeIn(`document.evaluate('//p[text()="Reason"]/following-sibling::textarea', document).iterateNext()`, " (edited)", false)
		b.click("button", "Submit")
		b.until("the edited refund's answer", `${chat}.includes('arrived broken (edited)') &&
			${chat}.includes('"refunded":true')`, 15*time.Second)
		if got := api.refund(t, b.thread()); !strings.Contains(got, `"reason":"arrived broken (edited)"`) {
			t.Errorf("the edited refund ran with %s", got)
		}
	})
	page.flow(t, "8-inbox-respond", func(t *testing.T, b *chat) {
		b.refund()
		b.typeIn(`document.querySelector('textarea[placeholder="Your response here..."]')`, "No refunds on Saturdays", false)
		b.click("button", "Send Response")
		b.until("the answer to the response", `${chat}.includes('The tool said: No refunds on Saturdays')`, 15*time.Second)
		if got := api.refund(t, b.thread()); got != "" {
			t.Errorf("the refund ran though the reviewer responded: %s", got)
		}
	})
	page.flow(t, "9-inbox-ignore-and-resolve", func(t *testing.T, b *chat) {
		for _, button := range []string{"Ignore", "Mark as Resolved"} {
			b.refund()
			thread := b.thread()
			b.click("button", button)
			b.until(button+": the card closes", `!${chat}.includes('Mark as Resolved')`, 15*time.Second)
			b.idle()
			st := api.state(t, thread)
			if len(st.Next) > 0 || len(st.Interrupts) > 0 {
				t.Errorf("%s: the thread still waits: next %v, interrupts %v", button, st.Next, st.Interrupts)
			}
			if got := api.refund(t, thread); got != "" {
				t.Errorf("%s: the refund ran: %s", button, got)
			}
		}
	})
	page.flow(t, "10-edit-and-regenerate", func(t *testing.T, b *chat) {
		b.newThread()
		b.send("First message")
		b.until("the first answer", `${chat}.includes('Hello! You said: First message')`, 15*time.Second)
		b.send("Second message")
		b.until("the second answer", `${chat}.includes('Hello! You said: Second message')`, 15*time.Second)
		b.idle()
		b.clickLast("button", "Edit")
		b.typeIn(`document.querySelector('textarea:not([placeholder])')`, "Edited message", true)
		b.click("button", "Submit")
		b.until("the answer to the edited message, on a fork of the thread", `${chat}.includes('Hello! You said: Edited message') &&
			!${chat}.includes('Second message') && ${chat}.includes('You said: First message') && ${chat}.includes('2 / 2')`, 15*time.Second)
		b.idle()
		before := b.Text(lastAnswer)
		b.clickLast("button", "Refresh")
		b.until("a regenerated answer", `(`+lastAnswer+`).includes('You said: Edited message') && (`+lastAnswer+`) !== `+strconv.Quote(before), 15*time.Second)
		if n := api.forks(t, b.thread()); n != 2 {
			t.Errorf("the thread's history forks at %d checkpoints, want 2 (the edited message, the regenerated answer)", n)
		}
	})
}

// lastAnswer is the text of the conversation's last answer.
const lastAnswer = `[...document.querySelectorAll('div.pt-8.pb-16 .py-1')].at(-1)?.innerText ?? ''`

// chat is agent-chat-ui's page in one tab.
type chat struct{ *browsertest.Browser }

// chatText is the conversation's text (not the thread list's).
const chatText = `(document.querySelector('div.pt-8.pb-16')?.innerText ?? '')`

// until waits for cond, where ${chat} stands for the conversation's text.
func (c *chat) until(what, cond string, within time.Duration) {
	c.T.Helper()
	c.Until(what, strings.ReplaceAll(cond, "${chat}", chatText), within)
}

// flow runs one of the UI's flows as a subtest named for it, with a
// screenshot of its end.
func (c *chat) flow(t *testing.T, name string, run func(*testing.T, *chat)) {
	t.Run(name, func(t *testing.T) {
		b := &chat{c.For(t, name)}
		run(t, b)
		b.Shot(name)
	})
}

// click clicks the first element of selector whose text is text, once
// there is one (and it is enabled).
func (c *chat) click(selector, text string) {
	c.T.Helper()
	c.jsClick(fmt.Sprintf(`[...document.querySelectorAll(%q)].find(e => e.textContent.trim() === %q && !e.disabled)`, selector, text))
}

// clickLast clicks the last such element.
func (c *chat) clickLast(selector, text string) {
	c.T.Helper()
	c.jsClick(fmt.Sprintf(`[...document.querySelectorAll(%q)].findLast(e => e.textContent.trim() === %q && !e.disabled)`, selector, text))
}

// jsClick clicks the element an expression finds, once there is one,
// with a script's click (the buttons shown only under the pointer need
// no pointer).
func (c *chat) jsClick(find string) {
	c.T.Helper()
	c.until("to click "+find, "!!("+find+")", 10*time.Second)
	c.Do(chromedp.Evaluate[chromedp.Void]("(" + find + ").click()"))
}

// send types a message and sends it.
func (c *chat) send(text string) {
	c.T.Helper()
	c.typeIn(`document.querySelector('textarea[placeholder="Type your message..."]')`, text, false)
	c.click("button", "Send")
}

// typeIn types text at the end of the field an expression finds, or in
// place of its text.
func (c *chat) typeIn(find, text string, replace bool) {
	c.T.Helper()
	c.until("the field "+find, "!!("+find+")", 10*time.Second)
	sel := "e.setSelectionRange(e.value.length, e.value.length)"
	if replace {
		sel = "e.select()"
	}
	c.Do(chromedp.Evaluate[chromedp.Void]("(e => { e.focus(); "+sel+" })("+find+")"), chromedp.KeyEvent(text))
}

// idle waits for the page to end its run: Send is back in place of
// Cancel.
func (c *chat) idle() {
	c.T.Helper()
	c.until("the run's end", `[...document.querySelectorAll('button')].some(e => e.textContent.trim() === 'Send')`, 15*time.Second)
}

// thread is the thread the page shows.
func (c *chat) thread() string {
	return c.Text(`new URLSearchParams(location.search).get('threadId') || ''`)
}

// newThread opens a new thread with the header's button.
func (c *chat) newThread() {
	c.T.Helper()
	c.idle()
	c.click("button", "New thread")
	c.until("an empty thread", `!new URLSearchParams(location.search).get('threadId') && ${chat}.trim() === ''`, 5*time.Second)
}

// refund asks for a refund on a new thread and waits for the inbox card.
func (c *chat) refund() {
	c.T.Helper()
	c.newThread()
	c.send("Please refund order A-17, it arrived broken")
	c.until("the Agent Inbox card", `${chat}.includes('refund_order') &&
		${chat}.includes('Mark as Resolved') && [...document.querySelectorAll('button')].some(e => e.textContent === 'Accept')`, 15*time.Second)
	c.Shot(c.Name + "-card")
}

// served is the runner server the UI talks to.
type served struct{ url string }

// serve starts runner's server with the testdata agent on a scripted
// model, one key and CORS for the UI's origin.
func serve(t *testing.T, origin string) *served {
	t.Helper()
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load("testdata")
	proj, more := checker.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatalf("definitions: %v", all)
	}
	agent := proj.Agents["chat"]
	model := func(*dsl.ModelDef) (runner.Provider, error) { return &clerk{}, nil }
	g, err := checker.Compile(proj, agent.Pipeline, dsl.CompileOptions{Tool: builtins.Tool, Agent: agent, Provider: model})
	if err != nil {
		t.Fatal(err)
	}
	url := browsertest.Serve(t, server.Config{Graphs: map[string]*runner.Graph{"chat": g},
		Keys: access.Keys{access.HashKey(key): {Tenant: "acme", Name: "alice"}}, CORSOrigins: []string{origin}, Heartbeat: time.Second})
	return &served{url: url}
}

// call calls the API as the UI's key (a GET without a body) and reads
// the answer into out.
func (s *served) call(t *testing.T, method, path string, body, out any) {
	t.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, in)
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, data)
	}
	if err := json.Unmarshal(bytes.TrimSpace(data), out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
}

// state is a thread's state as the API answers it.
type state struct {
	Values struct {
		Messages []map[string]any `json:"messages"`
	} `json:"values"`
	Next       []string `json:"next"`
	Interrupts []any    `json:"interrupts"`
}

func (s *served) state(t *testing.T, thread string) state {
	var st state
	s.call(t, "GET", "/threads/"+thread+"/state", nil, &st)
	return st
}

// refund is the refund_order tool's answer in a thread, or "".
func (s *served) refund(t *testing.T, thread string) string {
	for _, m := range s.state(t, thread).Values.Messages {
		if m["type"] == "tool" && m["name"] == "refund_order" {
			return fmt.Sprint(m["content"])
		}
	}
	return ""
}

// forks counts the checkpoints of a thread's history that more than one
// checkpoint follows.
func (s *served) forks(t *testing.T, thread string) int {
	var history []struct {
		Parent map[string]any `json:"parent_checkpoint"`
	}
	s.call(t, "POST", "/threads/"+thread+"/history", map[string]any{"limit": 100}, &history)
	children, forks := map[string]int{}, 0
	for _, h := range history {
		if h.Parent == nil {
			continue
		}
		p := fmt.Sprint(h.Parent["checkpoint_id"])
		if children[p]++; children[p] == 2 {
			forks++
		}
	}
	return forks
}

// clerk is the scripted model: it looks an order up or refunds it when
// asked, reports a tool's answer, and otherwise echoes the message with
// the number of its reply (a regenerated answer differs), streaming its
// text word by word.
type clerk struct{ calls atomic.Int64 }

func (c *clerk) Chat(_ context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	reply := runner.Message{Role: "assistant"}
	id := fmt.Sprintf("call_%d", c.calls.Add(1))
	switch text := strings.ToLower(last.Content); {
	case last.Role == "tool":
		reply.Content = "The tool said: " + last.Content
	case strings.Contains(text, "look up"):
		reply.ToolCalls = []runner.ToolCallRequest{{ID: id, Name: "lookup_order", Args: `{"order_id":"A-17"}`}}
	case strings.Contains(text, "refund"):
		reply.ToolCalls = []runner.ToolCallRequest{{ID: id, Name: "refund_order", Args: `{"order_id":"A-17","reason":"arrived broken"}`}}
	default:
		reply.Content = fmt.Sprintf("Hello! You said: %s (reply %d)", last.Content, c.calls.Load())
	}
	for i, w := range strings.SplitAfter(reply.Content, " ") {
		if req.OnToken != nil && w != "" {
			if i > 0 {
				time.Sleep(10 * time.Millisecond) // the answer arrives in pieces
			}
			req.OnToken(w)
		}
	}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	return &runner.ChatResponse{Message: reply, Usage: runner.Usage{InputTokens: 10, OutputTokens: 5}, FinishReason: finish}, nil
}

// dist builds agent-chat-ui (once per lockfile: build.mjs caches it) and
// returns the directory of its files.
func dist(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("node_modules/create-agent-chat-app"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("agent-chat-ui is not installed: run npm ci in server/chatui")
		}
		t.Skip("agent-chat-ui is not installed: run npm ci in server/chatui to run its browser suite")
	}
	out, err := exec.Command("node", "build.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("building agent-chat-ui: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
