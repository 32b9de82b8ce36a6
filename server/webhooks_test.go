package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/server"
)

// hookSecret is the test's Standard Webhooks secret.
const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// verify checks a webhook request as the Standard Webhooks specification
// says a receiver must, written from the specification: the signed
// content is "id.timestamp.body", HMAC-SHA256 keyed with the base64 key
// after whsec_, and webhook-signature lists space-separated "v1,<base64>"
// signatures, one of which must match; the timestamp must be recent.
func verify(secret string, h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return fmt.Errorf("webhook-id %q, webhook-timestamp %q", id, ts)
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %s is %s off", ts, d)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		v, b64, _ := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if v == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no signature of %q matches", h.Get("webhook-signature"))
}

// receiver is a webhook endpoint that verifies what it gets, keeping
// each message by webhook-id; it can be stopped and started again on
// its address.
type receiver struct {
	t      *testing.T
	secret string // the whsec_ secret it verifies with
	addr   string
	hs     *httptest.Server
	mu     sync.Mutex
	got    map[string]map[string]any // webhook-id → the message
	hits   int
}

func newReceiver(t *testing.T) *receiver {
	return newReceiverOf(t, hookSecret)
}

// newReceiverOf is a receiver verifying with secret.
func newReceiverOf(t *testing.T, secret string) *receiver {
	r := &receiver{t: t, secret: secret, got: map[string]map[string]any{}}
	r.start()
	r.addr = r.hs.Listener.Addr().String()
	t.Cleanup(func() { r.hs.Close() })
	return r
}

func (r *receiver) start() {
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := verify(r.secret, req.Header, body); err != nil {
			r.t.Errorf("webhook %s: %v", req.Header.Get("webhook-id"), err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			r.t.Errorf("webhook body %s: %v", body, err)
		}
		r.mu.Lock()
		r.got[req.Header.Get("webhook-id")] = m
		r.hits++
		r.mu.Unlock()
	}))
	if r.addr != "" {
		l, err := net.Listen("tcp", r.addr)
		if err != nil {
			r.t.Fatal(err)
		}
		hs.Listener.Close()
		hs.Listener = l
	}
	hs.Start()
	r.hs = hs
}

func (r *receiver) url() string { return "http://" + r.addr + "/hooks" }

// count is how many distinct messages arrived, and how many requests.
func (r *receiver) count() (distinct, hits int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got), r.hits
}

// waitFor waits until n distinct messages arrived.
func (r *receiver) waitFor(n int, within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, _ := r.count()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the receiver got %d messages of %d within %s", got, n, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// events lists the types of the messages received.
func (r *receiver) events() map[string][]map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]map[string]any{}
	for _, m := range r.got {
		out[m["type"].(string)] = append(out[m["type"].(string)], m)
	}
	return out
}

// hooksTo configures the test's webhook to url, retried quickly.
func hooksTo(url string) func(*server.Config) {
	return func(c *server.Config) {
		key, err := server.ParseWebhookSecret(hookSecret)
		if err != nil {
			panic(err)
		}
		c.Webhooks = server.Webhooks{Hooks: []server.Hook{{Name: "default", URL: url, Secret: key, Events: server.WebhookEvents}},
			Every: 10 * time.Millisecond, Backoff: 20 * time.Millisecond, Attempts: 1000, Allow: []string{"127.0.0.0/8"}}
	}
}

// TestWebhooksBurst: of a burst of notifications, during which the
// receiver is stopped and started again and the server is stopped and
// another started on its store, the receiver gets every one at least
// once, each with a valid Standard Webhooks signature, and the outbox
// records each delivered.
func TestWebhooksBurst(t *testing.T) {
	const n = 1000
	rcv := newReceiver(t)
	db := filepath.Join(t.TempDir(), "state.db")
	open := func() (*server.Server, store.Store) {
		st, err := sqlite.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		cfg := server.Config{Store: st, Graphs: map[string]*runner.Graph{}, Keys: access.Keys{access.HashKey(testKey): {Tenant: "acme"}}}
		hooksTo(rcv.url())(&cfg)
		s, err := server.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s, st
	}
	stop := func(s *server.Server, st store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		st.Close()
	}
	s, st := open()
	for i := range n {
		switch i {
		case n / 4: // the receiver stops once it has some
			rcv.waitFor(1, 10*time.Second)
			rcv.hs.Close()
		case n / 2: // the server stops too, and another takes over its store
			stop(s, st)
			s, st = open()
		case 3 * n / 4:
			rcv.start()
		}
		s.Notify("acme", server.EventRunCompleted, map[string]any{"i": i})
	}
	rcv.waitFor(n, 60*time.Second)
	distinct, hits := rcv.count()
	t.Logf("%d notifications, %d requests", distinct, hits)
	seen := map[float64]bool{}
	for _, m := range rcv.events()[server.EventRunCompleted] {
		seen[m["data"].(map[string]any)["i"].(float64)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct notifications, want %d", len(seen), n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds, err := st.(store.WebhookStore).Deliveries(context.Background(), store.DeliveryQuery{Tenant: "acme", Status: store.DeliveryDelivered})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == n {
			retried := 0
			for _, d := range ds {
				if d.Attempts > 1 {
					retried++
				}
			}
			if retried == 0 {
				t.Fatal("no delivery was retried: the receiver's stop came after the burst")
			}
			t.Logf("%d deliveries retried", retried)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the outbox has %d deliveries delivered, want %d", len(ds), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop(s, st)
}

// TestWebhooksOfRuns: a run that completes, one that fails, and an
// approval requested and decided each notify the webhook, with the run's
// ids; a webhook filtered to run.failed gets that alone.
func TestWebhooksOfRuns(t *testing.T) {
	rcv := newReceiver(t)
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}), hooksTo(rcv.url()))
	e.call("POST", "/threads", map[string]any{"thread_id": "ok"}, 200)
	e.call("POST", "/threads/ok/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	e.call("POST", "/threads", map[string]any{"thread_id": "bad"}, 200)
	e.call("POST", "/threads/bad/runs/wait", map[string]any{"assistant_id": "fail"}, 200)
	e.call("POST", "/threads", map[string]any{"thread_id": "conv"}, 200)
	e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}}, 200)
	e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37",
		"command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}}, 200)
	rcv.waitFor(5, 10*time.Second) // completed twice (steps, the approved run), failed, requested, decided
	got := rcv.events()
	for ev, want := range map[string]int{server.EventRunCompleted: 2, server.EventRunFailed: 1,
		server.EventApprovalRequested: 1, server.EventApprovalDecided: 1} {
		if len(got[ev]) != want {
			t.Errorf("%s: %d messages, want %d: %v", ev, len(got[ev]), want, got[ev])
		}
	}
	failed := got[server.EventRunFailed][0]["data"].(map[string]any)
	if failed["thread_id"] != "bad" || failed["status"] != "error" || failed["error"] == "" {
		t.Errorf("run.failed says %v", failed)
	}
	asked := got[server.EventApprovalRequested][0]["data"].(map[string]any)
	if asked["thread_id"] != "conv" || asked["approval_id"] == nil || asked["interrupts"] == nil {
		t.Errorf("approval.requested says %v", asked)
	}

	deadline := time.Now().Add(10 * time.Second) // the receiver has them; the outbox settles them just after
	for len(e.call("GET", "/webhooks/deliveries?status=delivered", nil, 200)["deliveries"].([]any)) < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	page := e.call("GET", "/webhooks/deliveries?limit=3", nil, 200)
	first, _ := page["deliveries"].([]any)
	if len(first) != 3 || page["next"] == nil {
		t.Fatalf("a page of 3: %v", page)
	}
	rest := e.call("GET", "/webhooks/deliveries?after="+page["next"].(string), nil, 200)["deliveries"].([]any)
	if len(rest) != 2 || rest[0].(map[string]any)["status"] != store.DeliveryDelivered || rest[0].(map[string]any)["attempts"] != 1.0 {
		t.Fatalf("the next page: %v", rest)
	}
	e.raw("GET", "/webhooks/deliveries?status=sent", nil, http.StatusUnprocessableEntity)
	e.key = otherKey
	if other := e.call("GET", "/webhooks/deliveries", nil, 200)["deliveries"].([]any); len(other) != 0 {
		t.Errorf("tenant other sees acme's deliveries: %v", other)
	}

	only := newReceiver(t)
	f := newEnv(t, hooksTo(only.url()), func(c *server.Config) { c.Webhooks.Hooks[0].Events = []string{server.EventRunFailed} })
	f.call("POST", "/threads", map[string]any{"thread_id": "ok"}, 200)
	f.call("POST", "/threads/ok/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	f.call("POST", "/threads", map[string]any{"thread_id": "bad"}, 200)
	f.call("POST", "/threads/bad/runs/wait", map[string]any{"assistant_id": "fail"}, 200)
	only.waitFor(1, 10*time.Second)
	time.Sleep(100 * time.Millisecond) // ten dispatch intervals: anything else would have come
	if ev := only.events(); len(ev[server.EventRunFailed]) != 1 || len(ev) != 1 {
		t.Errorf("a webhook for run.failed got %v", ev)
	}
}

// TestRunWebhookGuard: a run's webhook (any API client's) may not reach
// loopback, private, link-local or metadata addresses: the POST is
// refused at webhook when its host is one or resolves to one, and a
// delivery whose name resolves to one by the time it connects (as a
// rebinding DNS would make it) is refused at connect, the receiver never
// reached; runner.yaml's webhooks_allow lets a network or a host through.
func TestRunWebhookGuard(t *testing.T) {
	own := newReceiver(t)
	_, port, _ := net.SplitHostPort(own.addr)
	e := newEnv(t, hooksTo(""), func(c *server.Config) { c.Webhooks.Allow = nil })
	e.call("POST", "/threads", map[string]any{"thread_id": "t"}, 200)
	for _, url := range []string{own.url(), "http://localhost:" + port + "/hooks", "http://[::1]/in", "http://169.254.169.254/latest/meta-data",
		"http://10.1.2.3/in", "https://192.168.0.7/in", "http://100.100.100.200/", "http://0.0.0.0:" + port + "/", "http://[::ffff:127.0.0.1]/"} {
		b := e.raw("POST", "/threads/t/runs", map[string]any{"assistant_id": "steps", "webhook": url}, http.StatusUnprocessableEntity)
		if !strings.Contains(string(b), `"webhook"`) || !strings.Contains(string(b), "webhooks_allow") {
			t.Errorf("webhook %s: %s", url, b)
		}
	}

	// Connect time: a delivery to a name that resolves to loopback.
	rebound := &store.Delivery{ID: "msg_rebound", Tenant: "acme", Hook: "run", Event: server.EventRunCompleted,
		URL: "http://localhost:" + port + "/hooks", Body: []byte(`{}`), Status: store.DeliveryPending,
		NextAt: time.Now(), CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := e.store.(store.WebhookStore).Enqueue(context.Background(), rebound); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds, err := e.store.(store.WebhookStore).Deliveries(context.Background(), store.DeliveryQuery{Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 1 && ds[0].Attempts > 0 {
			if !strings.Contains(ds[0].LastError, "127.0.0.1: a run's webhook may not reach") || ds[0].Status != store.DeliveryPending {
				t.Errorf("the rebound delivery: %+v", ds[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rebound delivery was not attempted: %+v", ds)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, hits := own.count(); got != 0 || hits != 0 {
		t.Errorf("the receiver on loopback was reached: %v", own.events())
	}

	byName := newEnv(t, hooksTo(""), func(c *server.Config) { c.Webhooks.Allow = []string{"localhost"} })
	byName.call("POST", "/threads", map[string]any{"thread_id": "t"}, 200)
	byName.raw("POST", "/threads/t/runs", map[string]any{"assistant_id": "steps", "webhook": "http://127.0.0.1:" + port + "/hooks"}, http.StatusUnprocessableEntity)
	byName.call("POST", "/threads/t/runs/wait", map[string]any{"assistant_id": "steps", "webhook": "http://localhost:" + port + "/hooks"}, 200)
	own.waitFor(1, 10*time.Second)
	if _, err := server.New(context.Background(), server.Config{Store: store.NewMemory(), NoAuth: true, Webhooks: server.Webhooks{Allow: []string{"10.0.0.0/33"}}}); err == nil ||
		!strings.Contains(err.Error(), "webhooks_allow[0]") {
		t.Errorf("a bad webhooks_allow: %v", err)
	}
}

// TestRunWebhook: a run's webhook (the LangGraph run field) is told of
// its end, signed, apart from the configured webhook's events; a webhook
// that is not an http(s) URL is refused, and so is any on a server
// without a secret.
func TestRunWebhook(t *testing.T) {
	hooks, own := newReceiver(t), newReceiver(t)
	e := newEnv(t, hooksTo(hooks.url()), func(c *server.Config) { c.Webhooks.Hooks[0].Events = []string{server.EventRunFailed} })
	e.call("POST", "/threads", map[string]any{"thread_id": "t"}, 200)
	e.call("POST", "/threads/t/runs/wait", map[string]any{"assistant_id": "steps", "webhook": own.url()}, 200)
	own.waitFor(1, 10*time.Second)
	done := own.events()[server.EventRunCompleted]
	if len(done) != 1 || done[0]["data"].(map[string]any)["thread_id"] != "t" || done[0]["data"].(map[string]any)["status"] != "success" {
		t.Fatalf("the run's webhook got %v", own.events())
	}
	e.raw("POST", "/threads/t/runs", map[string]any{"assistant_id": "steps", "webhook": "ftp://hooks.example/in"}, http.StatusUnprocessableEntity)
	time.Sleep(100 * time.Millisecond) // ten dispatch intervals: the configured webhook wants run.failed alone
	if got, _ := hooks.count(); got != 0 {
		t.Errorf("the configured webhook got %v", hooks.events())
	}

	bare := newEnv(t)
	bare.call("POST", "/threads", map[string]any{"thread_id": "t"}, 200)
	if b := bare.raw("POST", "/threads/t/runs", map[string]any{"assistant_id": "steps", "webhook": own.url()}, http.StatusUnprocessableEntity); !strings.Contains(string(b), "secret_env") {
		t.Errorf("a webhook on a server without a secret: %s", b)
	}
}

// TestWebhooksSeveralHooks: each configured hook gets the events it
// wants, signed with its own secret, and the delivery log names the hook
// of each delivery.
func TestWebhooksSeveralHooks(t *testing.T) {
	const opsSecret = "whsec_c2Vjb25kLWhvb2stc2VjcmV0LWtleS0xMjM0"
	all, ops := newReceiver(t), newReceiverOf(t, opsSecret)
	key, err := server.ParseWebhookSecret(opsSecret)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, hooksTo(all.url()), func(c *server.Config) {
		c.Webhooks.Hooks = append(c.Webhooks.Hooks, server.Hook{Name: "ops", URL: ops.url(), Secret: key, Events: []string{server.EventRunFailed}})
	})
	e.call("POST", "/threads", map[string]any{"thread_id": "ok"}, 200)
	e.call("POST", "/threads/ok/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	e.call("POST", "/threads", map[string]any{"thread_id": "bad"}, 200)
	e.call("POST", "/threads/bad/runs/wait", map[string]any{"assistant_id": "fail"}, 200)
	all.waitFor(2, 10*time.Second)
	ops.waitFor(1, 10*time.Second)
	if ev := ops.events(); len(ev[server.EventRunFailed]) != 1 || len(ev) != 1 {
		t.Errorf("hook ops (run.failed) got %v", ev)
	}
	if ev := all.events(); len(ev[server.EventRunFailed]) != 1 || len(ev[server.EventRunCompleted]) != 1 {
		t.Errorf("hook default (all events) got %v", ev)
	}
	hooks := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for hooks["default"] != 2 || hooks["ops"] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery log's delivered hooks: %v, want default twice, ops once", hooks)
		}
		time.Sleep(10 * time.Millisecond)
		clear(hooks)
		for _, d := range e.call("GET", "/webhooks/deliveries?status=delivered", nil, 200)["deliveries"].([]any) {
			hooks[d.(map[string]any)["hook"].(string)]++
		}
	}
}

// TestWebhooksSlackTemplate: a hook with the slack template gets Slack
// incoming-webhook bodies, {"text": ...}, naming the agent, rule, tool
// and thread, with the console's link to the thread; a template that
// fails leaves its delivery failed in the log, saying why.
func TestWebhooksSlackTemplate(t *testing.T) {
	slack := newReceiver(t)
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}), hooksTo(slack.url()), func(c *server.Config) {
		c.Webhooks.Hooks[0].Template = server.SlackTemplate
		c.Webhooks.Hooks = append(c.Webhooks.Hooks, server.Hook{Name: "broken", URL: slack.url(), Secret: c.Webhooks.Hooks[0].Secret,
			Events:   []string{server.EventApprovalRequested},
			Template: func(string, map[string]any, string) (any, error) { return nil, errors.New("no body") }})
		c.PublicURL = "https://runner.example.com/"
	})
	e.call("POST", "/threads", map[string]any{"thread_id": "conv"}, 200)
	e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}}, 200)
	slack.waitFor(1, 10*time.Second)
	slack.mu.Lock()
	defer slack.mu.Unlock()
	for _, m := range slack.got {
		text, ok := m["text"].(string)
		t.Logf("slack: %s", text)
		if !ok || len(m) != 1 {
			t.Fatalf("not a Slack body, {\"text\": ...}: %v", m)
		}
		for _, want := range []string{"Approval requested: agent *rule_37*", ", rule `", ", tool `", ", thread `conv`",
			" <https://runner.example.com/ui/#/threads/conv|open in the console>"} {
			if !strings.Contains(text, want) {
				t.Errorf("the Slack text %q does not say %q", text, want)
			}
		}
	}
	ds, err := e.store.(store.WebhookStore).Deliveries(context.Background(), store.DeliveryQuery{Tenant: "acme", Status: store.DeliveryFailed})
	if err != nil || len(ds) != 1 || ds[0].Hook != "broken" || ds[0].LastError != "template: no body" {
		t.Errorf("the broken template's delivery: %+v, %v", ds, err)
	}
}

// TestWebhooksRouted: an approval event goes to the hooks its rule's
// notify names, those its agent's notify names, and those subscribed to
// the event, each once; a hook subscribed to nothing and named by no
// notify gets nothing, and a run end goes to the agent's hooks and the
// subscribed ones only.
func TestWebhooksRouted(t *testing.T) {
	rcv := newReceiver(t)
	g := payoutAgent(t, "../cmd/runner/testdata/expiring.yaml")
	g.Notify = []string{"payments"}
	for _, r := range g.Rules {
		if r.Action.HITL != nil {
			r.Action.HITL.Notify = []string{"reviewers", "both"}
		}
	}
	e := newEnv(t, hooksTo(rcv.url()), func(c *server.Config) {
		c.Graphs["payout"] = g
		c.Graphs["steps"].Notify = []string{"payments"}
		key := c.Webhooks.Hooks[0].Secret
		for _, h := range []server.Hook{{Name: "reviewers"}, {Name: "payments"}, {Name: "quiet"}, {Name: "both", Events: []string{server.EventApprovalRequested}}} {
			h.URL, h.Secret = rcv.url(), key
			c.Webhooks.Hooks = append(c.Webhooks.Hooks, h)
		}
	})
	pausePayout(e, "p1")
	e.call("POST", "/threads", map[string]any{"thread_id": "s"}, 200)
	e.call("POST", "/threads/s/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	got := map[string]int{}
	for _, d := range e.call("GET", "/webhooks/deliveries", nil, 200)["deliveries"].([]any) {
		d := d.(map[string]any)
		got[d["hook"].(string)+" "+d["event"].(string)]++
	}
	want := map[string]int{"default approval.requested": 1, "reviewers approval.requested": 1, "payments approval.requested": 1,
		"both approval.requested": 1, "default run.completed": 1, "payments run.completed": 1}
	if !maps.Equal(got, want) {
		t.Errorf("deliveries by hook and event: %v, want %v", got, want)
	}
}
