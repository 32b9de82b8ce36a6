package server_test

import (
	"strings"
	"testing"
)

// TestRunInputContract: a run whose input misses a required field, or has
// one that does not fit, is a 422 naming the field, and leaves no thread
// and no checkpoint behind.
func TestRunInputContract(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"fraud_investigator": fraudScript}))
	cases := []struct {
		name, path string
		input      map[string]any
		want       string
	}{
		{"stateless, no input", "/runs/wait", nil, `input field "transaction_id" is required`},
		{"stateless, wrong type", "/runs/stream", map[string]any{"transaction_id": 7}, `input field "transaction_id": expected string, got integer`},
		{"on a new thread", "/threads/t-new/runs", map[string]any{"max_steps": 3}, `input field "transaction_id" is required`},
	}
	e.call("POST", "/threads", map[string]any{"thread_id": "t-new"}, 200)
	for _, c := range cases {
		body := map[string]any{"assistant_id": "fraud_investigator"}
		if c.input != nil {
			body["input"] = c.input
		}
		p := e.call("POST", c.path, body, 422)
		if detail, _ := p["detail"].(string); !strings.Contains(detail, c.want) {
			t.Errorf("%s: detail %q, want %q", c.name, detail, c.want)
		}
	}
	if threads := e.list("POST", "/threads/search", map[string]any{}); len(threads) != 1 {
		t.Errorf("%d threads, want only t-new: a refused run left its thread", len(threads))
	}
	if cps, _ := e.store.History(t.Context(), "t-new"); len(cps) != 0 {
		t.Errorf("t-new has %d checkpoints, want none", len(cps))
	}
	e.call("POST", "/runs/wait", map[string]any{"assistant_id": "fraud_investigator", "input": map[string]any{"transaction_id": "txn_1001"}}, 200)
}

// TestUnknownAssistant: the 404 for an unknown assistant names the likely
// one meant and the assistants there are.
func TestUnknownAssistant(t *testing.T) {
	e := newEnv(t)
	p := e.call("POST", "/runs/wait", map[string]any{"assistant_id": "aproval"}, 404)
	want := `no assistant "aproval"; did you mean "approval"? the assistants are: approval, fail, hold, slow, steps`
	if p["detail"] != want {
		t.Errorf("detail %q, want %q", p["detail"], want)
	}
}
