package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// Escalation. A gate whose rule escalates records, as it opens, when it
// escalates and to whom (its journal entry's Escalate), and its approval
// record the time (store.Approval.EscalateAt). Once that time has passed,
// Engine.Escalate widens the gate's reviewers without a run: no node runs
// again and nothing is called, since only who may decide changes. Under
// the lease of the thread (of its root, for a child thread's gate) it
// writes one checkpoint that repeats the pause with the reviewers
// widened — in the journal, where the decide path reads them, in the
// interrupt clients read, in the approval record GET /approvals reads,
// with the ledger's escalated record — in one write, so the thread, its
// approval and its ledger never disagree; a child thread's parents repeat
// their pause with the child's new interrupt too.

// escalation is a gate's escalation in the journal: when, to whom, and
// when it happened (nil: not yet).
type escalation struct {
	At   time.Time        `json:"at"`
	To   access.Reviewers `json:"to"`
	Done *time.Time       `json:"done,omitempty"`
}

// due reports whether the escalation is due at now and not done.
func (esc *escalation) due(now time.Time) bool {
	return esc != nil && esc.Done == nil && !now.Before(esc.At)
}

// widen returns a copy of e escalated at now: its ballot's reviewers, when
// it names some, with esc.To added (a gate anyone of the tenant may
// decide stays so).
func (e *callEntry) widen(now time.Time) *callEntry {
	cp, esc := *e, *e.Escalate
	esc.Done, cp.Escalate = &now, &esc
	if b := e.Ballot; b != nil && !b.Reviewers.Open() {
		nb := *b
		nb.Reviewers = access.Reviewers{Roles: union(b.Reviewers.Roles, esc.To.Roles), Principals: union(b.Reviewers.Principals, esc.To.Principals)}
		cp.Ballot = &nb
	}
	return &cp
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// Escalation is what Engine.Escalate did: the approval's record as it
// wrote it, and the calls it escalated.
type Escalation struct {
	Approval *store.Approval
	Calls    []string
}

// Escalate escalates approval a, the record of a pending approval of the
// engine's store, when its escalation is due on the engine's clock: the
// held calls' reviewers widen, an escalated record is appended to the
// ledger, with Outbox's deliveries, all in one checkpoint of a's thread
// written under the lease of its root (a root leased by a run is
// ErrThreadBusy: that run resumes the thread). It returns nil when
// nothing was due — the thread went on, or another escalated it first.
func (e *Engine) Escalate(ctx context.Context, a *store.Approval) (*Escalation, error) {
	if e.Store == nil {
		return nil, errors.New("escalating needs a store")
	}
	root := access.Root(a.Thread)
	l, err := e.Store.Acquire(ctx, root, sweeperPrefix+e.leaseOwner(), cmp.Or(e.LeaseTTL, DefaultLeaseTTL))
	if err != nil { // a run that finds it held waits (see acquire)
		return nil, busyElsewhere(root, err)
	}
	defer func() { _ = e.Store.Release(context.WithoutCancel(ctx), l) }()
	cps, err := e.Store.Load(ctx, a.Thread, 0)
	if err != nil {
		return nil, err
	}
	last := cps[len(cps)-1]
	intr := pendingInterrupt(last)
	var m meta
	if err := decodeInto(last.Meta, &m); err != nil {
		return nil, fmt.Errorf("thread %s: checkpoint %d: %w", a.Thread, last.ID, err)
	}
	now := e.clock().Now()
	held, done := heldEntries(m.Journal, intr), []string{}
	for i, en := range held {
		if en.Escalate.due(now) {
			held[i] = en.widen(now)
			done = append(done, en.ID)
		}
	}
	if last.Status != StatusInterrupted || len(held) == 0 || len(done) == 0 || a.ID != approvalID(a.Thread, held[0].ID) {
		return nil, nil
	}
	for i, en := range m.Journal {
		if k := slices.IndexFunc(held, func(h *callEntry) bool { return h.ID == en.ID }); k >= 0 {
			m.Journal[i] = held[k]
		}
	}
	widened(intr.Payload, held)
	rec := *a
	rec.UpdatedAt, rec.Status = now, store.ApprovalPending
	node, _ := recordNode(a.Record)
	rec.Record = holding(&rec, held, node)
	cp := repeat(last, now, intr, &meta{Journal: m.Journal, Pending: m.Pending})
	cp.Approvals = []*store.Approval{&rec}
	for _, en := range held {
		if slices.Contains(done, en.ID) {
			at := store.AuditEntry{Time: now, Event: store.AuditEscalated, Tenant: last.Tenant, Thread: a.Thread, Defs: last.ConfigHash}
			cp.Audit = append(cp.Audit, auditOf(at, en, digest(en.Args), nil))
		}
	}
	if root == a.Thread {
		cp.Lease = l.Token
	}
	if e.Outbox != nil {
		cp.Deliveries = e.Outbox(cp)
	}
	if err := e.Store.Put(ctx, cp); err != nil {
		return nil, err
	}
	if err := e.repeatParents(ctx, a.Thread, intr, l.Token, now); err != nil {
		return nil, err
	}
	return &Escalation{Approval: &rec, Calls: done}, nil
}

// heldEntries are the journal's entries of the calls a gate interrupt
// holds, in its order.
func heldEntries(journal []*callEntry, intr *Interrupt) []*callEntry {
	var out []*callEntry
	for _, id := range awaitingCalls(intr) {
		if k := slices.IndexFunc(journal, func(e *callEntry) bool { return e.ID == id }); k >= 0 {
			out = append(out, journal[k])
		}
	}
	return out
}

// widened sets, in a gate interrupt's payload, the held calls' ballots
// and escalation as they now stand.
func widened(payload map[string]any, held []*callEntry) {
	actions, _ := payload["action_requests"].([]any)
	for _, x := range actions {
		action, _ := x.(map[string]any)
		for _, en := range held {
			if action != nil && action["id"] == en.ID && en.Ballot != nil {
				action["ballot"] = en.Ballot
			}
		}
	}
	if b := held[0].Ballot; b != nil {
		payload["ballot"] = b
	}
	payload["escalation"] = held[0].Escalate
}

// recordNode reads the node of an approval's record.
func recordNode(rec json.RawMessage) (string, error) {
	var r struct {
		Node string `json:"node"`
	}
	err := json.Unmarshal(rec, &r)
	return r.Node, err
}

// repeat is the checkpoint after last that repeats its pause with the
// interrupt intr and meta m: no writes, the same step, node and next.
func repeat(last *store.Checkpoint, now time.Time, intr *Interrupt, m *meta) *store.Checkpoint {
	cp := &store.Checkpoint{Thread: last.Thread, ID: last.ID + 1, Parent: last.ID, Step: last.Step, Node: last.Node, Next: last.Next,
		Status: StatusInterrupted, Pipeline: last.Pipeline, ConfigHash: last.ConfigHash, Tenant: last.Tenant, CreatedAt: now}
	cp.Interrupt, _ = json.Marshal(intr) // decoded from JSON
	if m.Journal != nil || m.Pending != nil {
		cp.Meta, _ = m.appendJSON(nil)
	}
	return cp
}

// repeatParents repeats the pause of each parent of child thread thread,
// up to its root (leased with token), with the child's interrupt intr in
// place of the one it had: a parent's pending interrupt holds its
// child's, under the same ID.
func (e *Engine) repeatParents(ctx context.Context, thread string, intr *Interrupt, token int64, now time.Time) error {
	for t := thread; t != access.Root(t); {
		t = t[:strings.LastIndex(t, "/")]
		cps, err := e.Store.Load(ctx, t, 0)
		if err != nil {
			return err
		}
		last := cps[len(cps)-1]
		pi := pendingInterrupt(last)
		if last.Status != StatusInterrupted || pi == nil || !pi.replace(intr) {
			return nil
		}
		var m meta
		if err := decodeInto(last.Meta, &m); err != nil {
			return fmt.Errorf("thread %s: checkpoint %d: %w", t, last.ID, err)
		}
		cp := repeat(last, now, pi, &meta{Journal: m.Journal, Pending: m.Pending})
		if t == access.Root(t) {
			cp.Lease = token
		}
		if err := e.Store.Put(ctx, cp); err != nil {
			return err
		}
	}
	return nil
}

// replace gives the interrupt of i (or of one it waits on) with the ID
// of n n's payload, and reports whether it found one.
func (i *Interrupt) replace(n *Interrupt) bool {
	if i.ID == n.ID {
		i.Payload = n.Payload
		return true
	}
	for _, p := range i.Pending {
		if p.replace(n) {
			return true
		}
	}
	return false
}
