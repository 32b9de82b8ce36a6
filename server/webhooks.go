package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// The events a webhook is told of.
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalDecided   = "approval.decided"
	EventApprovalExpired   = "approval.expired"
	EventApprovalEscalated = "approval.escalated"
	EventRunCompleted      = "run.completed"
	EventRunFailed         = "run.failed"
)

// WebhookEvents are the events a webhook can subscribe to.
var WebhookEvents = []string{EventApprovalRequested, EventApprovalDecided, EventApprovalExpired, EventApprovalEscalated,
	EventRunCompleted, EventRunFailed}

// Webhooks is where the server sends its notifications: to each of
// Hooks the events it wants, from the store's outbox
// (store.WebhookStore), at least once, retried with exponential backoff
// and jitter. A run's own webhook URL (the LangGraph run field) is told
// of its end, signed with the first hook's secret.
type Webhooks struct {
	// Hooks are the configured receivers, by distinct names.
	Hooks []Hook
	// Every is how often the outbox is looked at (default 1s); Backoff
	// the wait before the first retry, doubled each time up to an hour
	// (default 5s); Attempts how many are made before a delivery is
	// given up (default 12).
	Every    time.Duration
	Backoff  time.Duration
	Attempts int
	// Allow lets a run's own webhook reach these networks (CIDRs or
	// addresses) or hosts (by name), closed to it otherwise when private
	// (hookguard.go).
	Allow []string
}

// Hook is one receiver of notifications: the events of Events are
// POSTed to URL, signed with Secret as the Standard Webhooks
// specification says.
type Hook struct {
	// Name names the hook in the delivery log (store.Delivery.Hook).
	Name string
	// URL receives the notifications ("": none; the hook's secret still
	// signs the runs' own webhooks when it is the first).
	URL string
	// Secret is the signing key, the bytes a whsec_ secret encodes
	// (ParseWebhookSecret).
	Secret []byte
	// Events are the events the hook is told of, from every agent.
	Events []string
	// Template, when set, makes the body the hook is sent
	// (SlackTemplate, or an expression's); nil: the notification's JSON,
	// {type, timestamp, data}.
	Template Template
}

// hookRun is the Hook of the deliveries to a run's own webhook.
const hookRun = "run"

// Outbox dispatch: a claim lapses after claimTTL (an attempt takes at
// most postTimeout); claimBatch deliveries are claimed at a time and
// posted by postWorkers at once.
const (
	claimTTL    = time.Minute
	postTimeout = 15 * time.Second
	claimBatch  = 64
	postWorkers = 8
	maxBackoff  = time.Hour
)

// ParseWebhookSecret decodes a Standard Webhooks secret: whsec_ followed
// by the key in base64.
func ParseWebhookSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, "whsec_")
	if !ok {
		return nil, errors.New("a webhook secret starts with whsec_ (whsec_ then the key in base64)")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < 24 {
		return nil, errors.New("a webhook secret is whsec_ then at least 24 random bytes in base64")
	}
	return key, nil
}

// SignWebhook is the webhook-signature of a message: v1, then the base64
// HMAC-SHA256, keyed with secret, of "id.timestamp.body".
func SignWebhook(secret []byte, id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%s.%d.", id, ts)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// check fills in cfg's defaults and checks its hooks.
func (cfg *Webhooks) check() error {
	names := map[string]bool{hookRun: true}
	for i, h := range cfg.Hooks {
		if names[h.Name] || h.Name == "" {
			return fmt.Errorf("server: webhooks[%d]: the name %q is empty, taken or reserved; give each hook its own name", i, h.Name)
		}
		names[h.Name] = true
		for _, ev := range h.Events {
			if !slices.Contains(WebhookEvents, ev) {
				return fmt.Errorf("server: webhooks %s: no event %q; the events are %s", h.Name, ev, strings.Join(WebhookEvents, ", "))
			}
		}
		if len(h.Secret) == 0 {
			return fmt.Errorf("server: webhooks %s: no secret; name the variable that holds it (secret_env)", h.Name)
		}
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 5 * time.Second
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 12
	}
	return nil
}

// signs reports whether the server can sign notifications: it has a hook.
func (cfg *Webhooks) signs() bool { return len(cfg.Hooks) > 0 }

// secret is the key of the deliveries of the hook named name: a run's
// own are signed with the first hook's.
func (cfg *Webhooks) secret(name string) []byte {
	if name == hookRun && cfg.signs() {
		return cfg.Hooks[0].Secret
	}
	for _, h := range cfg.Hooks {
		if h.Name == name {
			return h.Secret
		}
	}
	return nil
}

// notify enqueues event, with data, for each hook that wants it or is
// routed, and for url (a run's own, "" for none).
func (s *Server) notify(tenant, event string, data map[string]any, url string, routed ...string) {
	ds := s.deliveries(tenant, event, data, url, routed)
	if len(ds) == 0 {
		return
	}
	if err := s.hooks.Enqueue(context.WithoutCancel(s.ctx), ds...); err != nil {
		s.cfg.Log.Error("webhook not enqueued", "event", event, "tenant", tenant, "err", err)
	}
}

// deliveries are the deliveries of event, with data, to each hook that
// wants it (its Events) or that routed names (a notify: of the rule, the
// agent or the pipeline), one to a hook, and to url (a run's own, "" for
// none).
func (s *Server) deliveries(tenant, event string, data map[string]any, url string, routed []string) []*store.Delivery {
	if s.hooks == nil || !s.cfg.Webhooks.signs() {
		return nil
	}
	now := time.Now().UTC()
	body, err := json.Marshal(map[string]any{"type": event, "timestamp": now.Format(time.RFC3339Nano), "data": data})
	if err != nil {
		s.cfg.Log.Error("webhook body", "event", event, "err", err)
		return nil
	}
	var ds []*store.Delivery
	add := func(hook, url string, body []byte) *store.Delivery {
		d := &store.Delivery{ID: "msg_" + uuid.NewString(), Tenant: tenant, Hook: hook, Event: event, URL: url,
			Body: body, Status: store.DeliveryPending, NextAt: now, CreatedAt: now, UpdatedAt: now}
		ds = append(ds, d)
		return d
	}
	for _, h := range s.cfg.Webhooks.Hooks {
		if h.URL == "" || !slices.Contains(h.Events, event) && !slices.Contains(routed, h.Name) {
			continue
		}
		if h.Template == nil {
			add(h.Name, h.URL, body)
			continue
		}
		b, err := s.templated(h.Template, event, body)
		if d := add(h.Name, h.URL, b); err != nil { // in the log, not sent
			d.Body, d.Status, d.LastError = body, store.DeliveryFailed, "template: "+err.Error()
		}
	}
	if url != "" {
		add(hookRun, url, body)
	}
	return ds
}

// templated is the body t makes of a notification's message msg (its
// JSON: the data as a template reads it).
func (s *Server) templated(t Template, event string, msg []byte) ([]byte, error) {
	var m struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, err
	}
	link := ""
	if id, _ := m.Data["thread_id"].(string); id != "" && s.cfg.PublicURL != "" {
		link = strings.TrimSuffix(s.cfg.PublicURL, "/") + "/ui/#/threads/" + neturl.PathEscape(id)
	}
	v, err := t(event, m.Data, link)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// The approval notifications are made from the gate events of the audit
// ledger (store.Checkpoint.Audit) as the checkpoint that records them is
// written, and written with it, in the same transaction
// (runner.Engine.Outbox, store.Checkpoint.Deliveries): the gate is
// recorded with its notification or not at all, so a crash just after the
// checkpoint loses none, on SQLite as on PostgreSQL, with one replica or
// several (whichever claims the delivery sends it). This needs no cursor
// over the ledger shared by the replicas, and no event is derived twice.

// gateEvents are the notifications of the ledger's gate events.
var gateEvents = map[string]string{store.AuditOpened: EventApprovalRequested, store.AuditVoted: EventApprovalDecided,
	store.AuditDecided: EventApprovalDecided, store.AuditExpired: EventApprovalExpired, store.AuditEscalated: EventApprovalEscalated}

// outbox is the runner.Engine.Outbox of l's runs: a notification of each
// kind of gate event cp records (one approval.requested for a gate that
// holds two calls), with the calls it concerns.
func (s *Server) outbox(l *liveRun) func(cp *store.Checkpoint) []*store.Delivery {
	return s.gateOutbox(l.rec.Tenant, l.g, hookWatch{l: l}.runData)
}

// gateOutbox is the runner.Engine.Outbox of tenant's gates of g (nil:
// a graph not served here, whose notify: is not known), whose
// notifications say of the run what run returns (the approval sweep's
// escalation, made by no run: its thread and assistant).
func (s *Server) gateOutbox(tenant string, g *runner.Graph, run func() map[string]any) func(cp *store.Checkpoint) []*store.Delivery {
	if s.hooks == nil || !s.cfg.Webhooks.signs() {
		return nil
	}
	return func(cp *store.Checkpoint) []*store.Delivery {
		var order []string
		calls := map[string][]store.AuditEntry{}
		for _, rec := range cp.Audit {
			e, err := rec.Entry()
			if ev := gateEvents[e.Event]; err == nil && ev != "" {
				if calls[ev] == nil {
					order = append(order, ev)
				}
				calls[ev] = append(calls[ev], e)
			}
		}
		var ds []*store.Delivery
		for _, ev := range order {
			var routed []string
			if g != nil {
				routed = slices.Clone(g.Notify)
				for _, e := range calls[ev] {
					routed = append(routed, ruleNotify(g, tenant, e.Rule)...)
				}
			}
			ds = append(ds, s.deliveries(tenant, ev, gateData(run(), cp, ev, calls[ev]), "", routed)...)
		}
		return ds
	}
}

// ruleNotify is the notify: of g's require_hitl rule key, as it stands
// for tenant (its own rule of that key, if it has one).
func ruleNotify(g *runner.Graph, tenant, key string) []string {
	var out []string
	for _, r := range g.Rules {
		if r.Key != key || r.Action.HITL == nil || r.Tenant != "" && r.Tenant != tenant {
			continue
		}
		if out = r.Action.HITL.Notify; r.Tenant != "" {
			break
		}
	}
	return out
}

// gateData is what a notification of event says of the gate events es
// of cp: data, the run's ids, with the gate's thread (a subgraph's, below
// the run's) and node, the approval, the first call's rule, tool,
// decision, principal and quorum, and every call's; approval.requested
// adds the interrupts a reviewer answers, approval.escalated who may
// decide now.
func gateData(data map[string]any, cp *store.Checkpoint, event string, es []store.AuditEntry) map[string]any {
	first := es[0]
	data["gate_thread_id"], data["node"] = access.ThreadID(cp.Thread), cp.Node
	data["rule"], data["tool"], data["call"] = first.Rule, first.Tool, first.Call
	if first.Decision != "" {
		data["decision"], data["principal"], data["quorum"] = first.Decision, first.Principal, first.Quorum
	}
	if len(cp.Approvals) > 0 {
		data["approval_id"] = cp.Approvals[0].ID
	}
	list := make([]map[string]any, len(es))
	for i, e := range es {
		list[i] = map[string]any{"call": e.Call, "tool": e.Tool, "rule": e.Rule, "decision": e.Decision, "principal": e.Principal, "quorum": e.Quorum}
	}
	data["calls"] = list
	switch {
	case event == EventApprovalRequested:
		var intr runner.Interrupt
		if json.Unmarshal(cp.Interrupt, &intr) == nil {
			data["interrupts"] = interruptList(&intr)
		}
	case event == EventApprovalEscalated && len(cp.Approvals) > 0:
		data["reviewers"] = cp.Approvals[0].Reviewers
	}
	return data
}

// hookWatch enqueues the notification of a run's end.
type hookWatch struct {
	s *Server
	l *liveRun
}

func (hookWatch) event(runner.Event) {}

func (h hookWatch) end(e runEnd) {
	event := EventRunFailed
	switch e.status {
	case store.RunSuccess:
		event = EventRunCompleted
	case store.RunError, store.RunTimeout:
	default: // interrupted: an approval, or a stop, is not an end
		return
	}
	data := h.runData()
	data["status"] = e.status
	if e.err != "" {
		data["error"] = e.err
	}
	url := ""
	if h.l.q != nil {
		url = h.l.q.Webhook
	}
	h.s.notify(h.l.rec.Tenant, event, data, url, h.l.g.Notify...)
}

// runData is what every notification of the run says of it.
func (h hookWatch) runData() map[string]any {
	r := h.l.rec
	return map[string]any{"run_id": r.ID, "thread_id": access.ThreadID(r.Thread), "assistant_id": AssistantID(r.Assistant), "agent": r.Assistant}
}

// deliverAll sends the outbox's due deliveries every Webhooks.Every until
// the server stops.
func (s *Server) deliverAll() {
	defer close(s.delivered)
	if s.hooks == nil || !s.cfg.Webhooks.signs() {
		return
	}
	t := time.NewTicker(s.cfg.Webhooks.Every)
	defer t.Stop()
	for {
		for s.deliverDue() {
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// deliverDue claims a batch of due deliveries and attempts each, and
// reports whether it found a full batch (more may be due).
func (s *Server) deliverDue() bool {
	ds, err := s.hooks.Claim(s.ctx, time.Now(), claimTTL, claimBatch)
	if err != nil {
		if s.ctx.Err() == nil {
			s.cfg.Log.Error("webhook outbox", "err", err)
		}
		return false
	}
	work := make(chan *store.Delivery)
	var wg sync.WaitGroup
	for range min(postWorkers, len(ds)) {
		wg.Go(func() {
			for d := range work {
				s.attempt(d)
			}
		})
	}
	for _, d := range ds {
		work <- d
	}
	close(work)
	wg.Wait()
	return len(ds) == claimBatch && s.ctx.Err() == nil
}

// attempt posts d and settles how it went: delivered on a 2xx, else
// retried after a backoff, or failed after its last attempt. An attempt
// the server's stop cut short is due again at once, not counted.
func (s *Server) attempt(d *store.Delivery) {
	status, err := s.post(d)
	ctx := context.WithoutCancel(s.ctx)
	now := time.Now().UTC()
	d.UpdatedAt, d.NextAt = now, now
	switch {
	case err == nil && status/100 == 2:
		d.Attempts++
		d.Status, d.LastStatus, d.LastError = store.DeliveryDelivered, status, ""
	case s.ctx.Err() != nil:
	default:
		d.Attempts++
		d.LastStatus, d.LastError = status, ""
		if err != nil {
			d.LastError = err.Error()
		} else {
			d.LastError = http.StatusText(status)
		}
		if d.Attempts >= s.cfg.Webhooks.Attempts {
			d.Status = store.DeliveryFailed
		} else {
			d.NextAt = now.Add(backoff(s.cfg.Webhooks.Backoff, d.Attempts))
		}
	}
	if err := s.hooks.Settle(ctx, d); err != nil {
		s.cfg.Log.Error("webhook delivery not settled", "delivery", d.ID, "err", err)
	}
}

// backoff is the wait after the attempts-th failed attempt: base doubled
// each time, at most maxBackoff, less a random jitter of up to a half.
func backoff(base time.Duration, attempts int) time.Duration {
	d := base << min(attempts-1, 20)
	if d <= 0 || d > maxBackoff {
		d = maxBackoff
	}
	return d - rand.N(d/2+1)
}

// post sends d signed and returns the receiver's status.
func (s *Server) post(d *store.Delivery) (int, error) {
	secret := s.cfg.Webhooks.secret(d.Hook)
	if secret == nil {
		return 0, fmt.Errorf("no hook named %q in runner.yaml's webhooks to sign with", d.Hook)
	}
	ctx, cancel := context.WithTimeout(s.ctx, postTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", d.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", SignWebhook(secret, d.ID, ts, d.Body))
	client := s.hookClient
	if d.Hook == hookRun && !s.guard.allowsHost(req.URL.Hostname()) {
		client = s.runHookClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	resp.Body.Close()
	return resp.StatusCode, nil
}

// deliveryPage is a page of the webhook delivery log; Next, when set, is
// the after of the next page.
type deliveryPage struct {
	Deliveries []*store.Delivery `json:"deliveries"`
	Next       string            `json:"next,omitempty"`
}

// listDeliveries answers GET /webhooks/deliveries: the caller's tenant's
// deliveries, newest first, of status when given, limit a page (default
// 50) after the cursor after.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	if s.hooks == nil {
		return problemf(http.StatusNotImplemented, "the server's store keeps no webhook outbox: serve with the memory, SQLite or PostgreSQL store")
	}
	v := r.URL.Query()
	q := store.DeliveryQuery{Tenant: principal(r.Context()).Tenant, Status: v.Get("status"), Limit: 50}
	statuses := []string{store.DeliveryPending, store.DeliveryDelivered, store.DeliveryFailed}
	if q.Status != "" && !slices.Contains(statuses, q.Status) {
		return fieldProblem("status", "one of %s, not %q", strings.Join(statuses, ", "), q.Status)
	}
	var err error
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit < 1 || q.Limit > 1000 {
			return fieldProblem("limit", "a number of deliveries from 1 to 1000, not %q", l)
		}
	}
	if c := v.Get("after"); c != "" {
		if q.After, err = parseCursor(c); err != nil {
			return fieldProblem("after", "the next of a page, not %q", c)
		}
	}
	list, err := s.hooks.Deliveries(r.Context(), q)
	if err != nil {
		return err
	}
	page := deliveryPage{Deliveries: list}
	if page.Deliveries == nil {
		page.Deliveries = []*store.Delivery{}
	}
	if len(list) == q.Limit {
		last := list[len(list)-1]
		page.Next = fmt.Sprintf("%d_%s", last.CreatedAt.UnixNano(), last.ID)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}
