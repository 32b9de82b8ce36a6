package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// An approval nobody answers takes its rule's on_expire decision when
// its expiry passes, with no client request: every Config.ApprovalsEvery
// the server looks for pending approvals past their expiry and resumes
// each one's thread without a verdict (runner.ResumeOptions.Expire), in
// a run of the thread like any other, which applies on_expire. The run is
// made under the thread's lease, and only when no run of the thread is
// pending or running: a run resuming the thread already (a reviewer's, or
// another replica's sweep) wins, and the sweep leaves the thread alone.
// A gate inside a subgraph (a child thread's) expires with a run of its
// root thread, which resumes the child.
//
// The same sweep escalates the approvals whose rule's escalate is due:
// it claims each escalation in the store (ClaimEscalation, a
// compare-and-set), so of several replicas one escalates it, and the
// engine widens its reviewers without a run (runner.Engine.Escalate: a
// checkpoint repeating the pause, under the thread's lease), whose
// approval.escalated notification is written with it (gateOutbox). An
// escalation that fails (its thread busy) is claimed again once its
// claim lapses.

// DefaultApprovalsEvery is the interval of the approval sweep when
// Config.ApprovalsEvery is zero.
const DefaultApprovalsEvery = 30 * time.Second

// expireAll sweeps the approvals past their expiry every
// Config.ApprovalsEvery until the server shuts down; it does nothing when
// the store keeps no approvals.
func (s *Server) expireAll() {
	defer close(s.expired)
	if _, ok := s.cfg.Store.(store.ApprovalStore); !ok {
		return
	}
	s.every(cmp.Or(s.cfg.ApprovalsEvery, DefaultApprovalsEvery), func() {
		if n, err := s.expireDue(s.ctx); err != nil && s.ctx.Err() == nil {
			s.cfg.Log.Warn("approval sweep", "expiring", n, "err", err)
		}
		if n, err := s.escalateDue(s.ctx); err != nil && s.ctx.Err() == nil {
			s.cfg.Log.Warn("approval sweep", "escalated", n, "err", err)
		}
	})
}

// escalationClaim is how long a sweep's claim of an escalation holds
// before another sweep may try it again.
const escalationClaim = time.Minute

// escalateDue escalates each pending approval whose escalation is due,
// and returns how many it escalated; the error is the first that kept
// one from escalating (the others are tried still).
func (s *Server) escalateDue(ctx context.Context) (int, error) {
	as, err := s.approvals()
	if err != nil {
		return 0, err
	}
	now := time.Now()
	due, err := as.Approvals(ctx, store.ApprovalQuery{AllTenants: true, Status: store.ApprovalPending, EscalateBefore: now, Oldest: true})
	if err != nil {
		return 0, fmt.Errorf("server: looking for approvals to escalate: %w", err)
	}
	n := 0
	var first error
	for _, a := range due {
		won, err := as.ClaimEscalation(ctx, a.ID, a.EscalateAt, now.Add(escalationClaim))
		if err != nil || !won {
			first = cmp.Or(first, err)
			continue
		}
		run := func() map[string]any {
			return map[string]any{"thread_id": access.ThreadID(access.Root(a.Thread)), "assistant_id": AssistantID(a.Agent)}
		}
		e := &runner.Engine{Store: s.cfg.Store, LeaseTTL: s.cfg.LeaseTTL, Outbox: s.gateOutbox(a.Tenant, s.cfg.Graphs[a.Agent], run)}
		esc, err := e.Escalate(ctx, a)
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("server: escalating approval %s: %w", a.ID, err))
			continue
		}
		if esc == nil {
			continue
		}
		n++
		s.cfg.Log.Info("approval escalated", "approval", a.ID, "thread", a.Thread, "reviewers", esc.Approval.Reviewers)
	}
	return n, first
}

// expireDue starts a run to expire each thread with a pending approval
// past its expiry, and returns how many it started; the error is the
// first that kept one from starting (the others are tried still).
func (s *Server) expireDue(ctx context.Context) (int, error) {
	as, err := s.approvals()
	if err != nil {
		return 0, err
	}
	due, err := as.Approvals(ctx, store.ApprovalQuery{AllTenants: true, Status: store.ApprovalPending,
		ExpiresBefore: time.Now(), Oldest: true})
	if err != nil {
		return 0, fmt.Errorf("server: looking for expired approvals: %w", err)
	}
	n, seen := 0, map[string]bool{}
	var first error
	for _, a := range due {
		root := access.Root(a.Thread) // a child's gate expires with its root's run
		if seen[root] || s.cfg.Graphs[a.Agent] == nil {
			continue // one run a thread; a graph another server serves
		}
		seen[root] = true
		start, err := s.expireRun(ctx, a, root)
		if err != nil {
			first = cmp.Or(first, err)
		} else if start != nil {
			start()
			n++
		}
	}
	return n, first
}

// expireRun makes, under the lease of a's root thread root, the run of
// root that expires a, unless a is no longer pending or a run of the
// thread is pending or running; it returns what starts the run, to be
// called once the lease is released (nil: no run was made).
func (s *Server) expireRun(ctx context.Context, a *store.Approval, root string) (func(), error) {
	lease, err := s.cfg.Store.Acquire(ctx, root, s.owner, s.leaseTTL())
	if errors.Is(err, store.ErrLeased) { // a run holds the thread: it resumes it
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("server: expiring approval %s: %w", a.ID, err)
	}
	defer func() { _ = s.cfg.Store.Release(context.WithoutCancel(ctx), lease) }()
	if cur, err := s.cfg.Store.(store.ApprovalStore).Approval(ctx, a.ID); err != nil || cur.Status != store.ApprovalPending {
		return nil, err
	}
	if busy, err := s.firstUnended(ctx, &store.RunRecord{Thread: root}); err != nil || busy != nil {
		return nil, err
	}
	as := access.Principal{Tenant: a.Tenant}
	q := &runRequest{AssistantID: a.Agent, expire: true, opts: runner.RunOptions{As: as}}
	if err := q.read(); err != nil {
		return nil, err
	}
	if _, err := s.prepare(access.NewContext(ctx, as), q); err != nil {
		return nil, fmt.Errorf("server: expiring approval %s: %w", a.ID, err)
	}
	kwargs, _ := json.Marshal(keptRequest{runRequest: q, As: as, Expire: true})
	rec := &store.RunRecord{ID: uuid.Must(uuid.NewV7()).String(), Thread: root, Tenant: a.Tenant, Assistant: a.Agent,
		Status: store.RunPending, MultitaskStrategy: q.MultitaskStrategy, Kwargs: kwargs, Metadata: json.RawMessage(`{}`)}
	rec, _, err = s.runs.CreateRun(ctx, rec, nil)
	if err != nil {
		return nil, fmt.Errorf("server: expiring approval %s: %w", a.ID, err)
	}
	meta := map[string]any{"run_id": rec.ID, "thread_id": access.ThreadID(rec.Thread), "attempt": 1}
	if _, err := s.runs.AppendEvents(ctx, rec.ID, s.add(nil, rec.ID, "metadata", meta)); err != nil {
		return nil, fmt.Errorf("server: expiring approval %s: %w", a.ID, err)
	}
	s.cfg.Log.Info("approval expired: resuming its thread", "approval", a.ID, "thread", root, "run", rec.ID)
	l := newLiveRun(s.ctx, rec, q, s.cfg.Graphs[a.Agent], false)
	return func() { s.resume(l) }, nil
}
