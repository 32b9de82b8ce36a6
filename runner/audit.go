package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// The audit ledger. Each gate event — a call held, decided, expired,
// escalated — is noted as the gate's journal changes and appended to the
// store's ledger with the next checkpoint written (store.Checkpoint.Audit),
// in the same write: the ledger holds a gate event exactly when the thread
// does (an escalation writes its own checkpoint: escalate.go).

// ledger notes event on the journal entry e, as it stands, with the
// decision d (nil: none yet), to append with the next checkpoint; args
// is the digest of the arguments the call was held with (an edit
// replaces e's).
func (r *Run) ledger(event string, e *callEntry, args string, d *Decision) {
	a := auditOf(store.AuditEntry{Time: r.clock.Now(), Event: event, Tenant: r.tenant, Thread: r.Thread, Run: r.runID, Defs: r.Graph.Hash}, e, args, d)
	r.mu.Lock()
	r.audit = append(r.audit, a)
	r.mu.Unlock()
}

// auditOf is the ledger record of a gate event on the journal entry e,
// as it stands, with the decision d (nil: none yet); a says when, what
// and whose.
func auditOf(a store.AuditEntry, e *callEntry, args string, d *Decision) *store.AuditRecord {
	a.Rule, a.Call, a.Tool, a.Args, a.Quorum = e.Rule, e.ID, e.Tool, args, quorum(e.Ballot, d)
	if e.Exec != nil {
		a.Result = digest(e.Exec.Value())
	}
	if d != nil {
		a.Decision, a.Principal = d.Type, d.Reviewer
		if d.Type == DecisionEdit {
			a.EditedArgs = digest(d.Args)
		}
	}
	return store.NewAudit(a)
}

// quorum is how far a gate's quorum is, "votes/needed": a gate without a
// ballot needs its one decision.
func quorum(b *access.Ballot, d *Decision) string {
	switch {
	case b != nil:
		return fmt.Sprintf("%d/%d", len(b.Voted), max(b.Quorum, 1))
	case d != nil:
		return "1/1"
	}
	return "0/1"
}

// digest is the hex SHA-256 of v's JSON (object keys sorted).
func digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
