package builtins

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/runner-dev/runner/runner"
)

// sampleJSON is the bundled sample of the fraud-investigation workload:
// customers, their transactions with recent history, and known fraud cases.
//
//go:embed sample/transactions.json
var sampleJSON string

// sampleData is sampleJSON decoded, its numbers normalized (int64 or
// float64).
type sampleData struct {
	Customers    []map[string]any    `json:"customers"`
	KnownCases   []any               `json:"known_cases"`
	Transactions []sampleTransaction `json:"transactions"`
}

// sampleTransaction is one transaction with its customer's recent history.
type sampleTransaction struct {
	CustomerID  string         `json:"customer_id"`
	Transaction map[string]any `json:"transaction"`
	Recent      []any          `json:"recent_transactions"`
}

// sampleTransactionContext returns {"context": {transaction, customer,
// recent_transactions, known_cases}} for args.transaction_id, a state
// update the tool node merges. The sample's transactions, and the severity
// the fraud_investigation tools reach for each:
//
//   - txn_1001 card testing, then a foreign electronics purchase 24x the
//     customer's average on a device seen in two known cases: CRITICAL
//   - txn_1002 an everyday grocery purchase at home: LOW
//   - txn_1003 a small foreign online-casino charge, one similar case: MEDIUM
//   - txn_1004 card testing, then an amount spike at home: HIGH
//   - txn_1005 a foreign jewellery purchase 20x the average, two similar
//     cases: HIGH
//   - txn_1006 a large furniture purchase at home, nothing else: LOW
//   - txn_1007 rapid transit taps at home (velocity only): MEDIUM
//   - txn_1008 rapid foreign wire transfers from a new account's device
//     seen in a money-mule case: CRITICAL
func sampleTransactionContext(ctx context.Context, call *runner.ToolCall) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := sample()
	if err != nil {
		return nil, err
	}
	id, _ := call.Args["transaction_id"].(string)
	t := s.transaction(id)
	if t == nil {
		return nil, runner.Permanent(fmt.Errorf("transaction %q is not in the sample (known: %s)", id, strings.Join(s.ids(), ", ")))
	}
	return map[string]any{"context": runner.CloneJSON(map[string]any{
		"transaction":         t.Transaction,
		"customer":            s.customer(t.CustomerID),
		"recent_transactions": t.Recent,
		"known_cases":         s.KnownCases,
	})}, nil
}

// sample is the bundled sample, decoded once; a call answers with a copy
// of its parts (runner.CloneJSON), so that no call sees another's changes.
var sample = sync.OnceValues(func() (*sampleData, error) {
	dec := json.NewDecoder(strings.NewReader(sampleJSON))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var s sampleData
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("bundled sample: %w", err)
	}
	for i, c := range s.Customers {
		s.Customers[i] = runner.NormalizeJSON(c).(map[string]any)
	}
	for i, t := range s.Transactions {
		s.Transactions[i].Transaction = runner.NormalizeJSON(t.Transaction).(map[string]any)
		s.Transactions[i].Recent = runner.NormalizeJSON(t.Recent).([]any)
	}
	s.KnownCases = runner.NormalizeJSON(s.KnownCases).([]any)
	return &s, nil
})

func (s *sampleData) transaction(id string) *sampleTransaction {
	for i := range s.Transactions {
		if s.Transactions[i].Transaction["id"] == id {
			return &s.Transactions[i]
		}
	}
	return nil
}

func (s *sampleData) customer(id string) map[string]any {
	for _, c := range s.Customers {
		if c["id"] == id {
			return c
		}
	}
	return nil
}

func (s *sampleData) ids() []string {
	ids := make([]string, len(s.Transactions))
	for i, t := range s.Transactions {
		ids[i], _ = t.Transaction["id"].(string)
	}
	return ids
}
