package builtins_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// ledgerOf reads the default tenant's ledger of e's store, verified, as
// its entries.
func ledgerOf(t *testing.T, e *runner.Engine) []store.AuditEntry {
	t.Helper()
	a := e.Store.(store.AuditStore)
	storetest.Verify(t, a)
	recs, err := a.Audit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]store.AuditEntry, len(recs))
	for i, r := range recs {
		if out[i], err = r.Entry(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// digestOf is the hex SHA-256 of v's JSON.
func digestOf(v any) string {
	b, _ := json.Marshal(v)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestGateEventsInTheLedger: at a gate of each kind, the pause appends
// an opened record and the decision a decided one — rule, definitions,
// call, tool, digests of its arguments (and of the result a gate on it
// reviews), the decision and who gave it; a refused verdict appends
// nothing.
func TestGateEventsInTheLedger(t *testing.T) {
	tools := map[string]string{"before_tool_call": "create_entity", "after_tool_call": "lookup", "before_llm_call": "llm:tiny"}
	for _, k := range gateKinds {
		t.Run(k.name, func(t *testing.T) {
			g, e := deskRig(t, k.agent, k.script, false), engine(t)
			ctx := context.Background()
			if _, err := e.RunWith(ctx, g, "t", nil, runner.RunOptions{RunID: "run-1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"approved": true}}); err == nil {
				t.Fatal("a verdict without the reviewer the resume_schema requires was taken")
			}
			opened := ledgerOf(t, e)
			if len(opened) != 1 || opened[0].Event != store.AuditOpened || opened[0].Run != "run-1" {
				t.Fatalf("after the pause and a refused verdict the ledger holds %+v, want one opened record of run-1", opened)
			}
			if _, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: approvedBy, RunOptions: runner.RunOptions{RunID: "run-2"}}); err != nil {
				t.Fatal(err)
			}
			got := ledgerOf(t, e)
			if len(got) != 2 {
				t.Fatalf("the ledger holds %d records, want opened and decided: %+v", len(got), got)
			}
			o, d := got[0], got[1]
			if d.Event != store.AuditDecided || d.Decision != "approve" || d.Principal != "dana" || d.Quorum != "1/1" || d.Run != "run-2" {
				t.Errorf("the decided record = %+v", d)
			}
			for _, r := range got {
				if r.Tool != tools[k.name] || r.Rule == "" || r.Defs != g.Hash || r.Thread != "t" || r.Call != o.Call || r.Args != o.Args || len(r.Args) != 64 {
					t.Errorf("record %+v: want tool %s, the graph's hash, the same call and arguments", r, tools[k.name])
				}
			}
			if (k.name == "after_tool_call") != (d.Result != "") {
				t.Errorf("result digest %q: want one exactly for a gate on a result", d.Result)
			}
		})
	}
}

// TestEditInTheLedger: an edit's record keeps the digest of the
// arguments the call was held with and adds the edited ones'.
func TestEditInTheLedger(t *testing.T) {
	k := gateKinds[0]
	g, e := deskRig(t, k.agent, k.script, false), engine(t)
	ctx := context.Background()
	if _, err := e.Run(ctx, g, "t", nil); err != nil {
		t.Fatal(err)
	}
	edited := map[string]any{"name": "Acme 2"}
	verdict := map[string]any{"reviewer": "dana", "decisions": []any{map[string]any{"type": "edit",
		"edited_action": map[string]any{"name": "create_entity", "args": edited}}}}
	if _, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: verdict}); err != nil {
		t.Fatal(err)
	}
	got := ledgerOf(t, e)
	if len(got) != 2 {
		t.Fatalf("ledger = %+v", got)
	}
	d := got[1]
	want := digestOf(map[string]any{"name": "Acme"})
	if d.Decision != "edit" || d.Args != want || d.EditedArgs != digestOf(edited) {
		t.Errorf("edit record %s = %+v\nwant args %s, edited %s", d.Call, d, want, digestOf(edited))
	}
	if got[0].Event != store.AuditOpened || got[0].Args != want || got[0].EditedArgs != "" {
		t.Errorf("opened record = %+v", got[0])
	}
}
