package builtins_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// searchToolSrc is a memory_search tool over the user's namespace.
const searchToolSrc = `apiVersion: runner/v1
kind: Tool
metadata: {name: memory_search}
parameters: {type: object, properties: {filter: {type: object}, limit: {type: integer}}}
memory: {op: search, namespace: '["user", state.user_id]'}
`

// BenchmarkMemorySearch calls memory_search on SQLite over 10,000 items in
// the user's namespace — the newest 10, and the newest 10 of a kind one
// item in ten has — and, one after the other in each iteration, a
// checkpoint Put of the same store as the baseline; it reports the
// median of each and the search's ratio to the Put (the target: a search
// under 2 ms).
func BenchmarkMemorySearch(b *testing.B) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "s.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	items := st.(store.ItemStore)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	for i := range 10_000 {
		kind := "note"
		if i%10 == 0 {
			kind = "pref"
		}
		v, _ := json.Marshal(map[string]any{"text": fmt.Sprintf("fact %d about the user's project", i), "kind": kind})
		if err := items.PutItem(ctx, "acme", &store.Item{Namespace: []string{"user", "u1"}, Key: fmt.Sprint("fact-", i),
			Value: v, UpdatedAt: base.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			b.Fatal(err)
		}
	}
	tool := searchTool(b)
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"newest", map[string]any{}},
		{"filtered", map[string]any{"filter": map[string]any{"kind": "pref"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			call := &runner.ToolCall{Name: "memory_search", Args: c.args, State: runner.State{"user_id": "u1"},
				Memory: runner.Memory{Items: items, Tenant: "acme"}}
			cp := &store.Checkpoint{Thread: "baseline-" + c.name, Node: "agent", Status: "running", Pipeline: "bench",
				ConfigHash: "abc123", Writes: json.RawMessage(`{"step":1}`)}
			var searches, puts []time.Duration
			for b.Loop() {
				start := time.Now()
				out, err := tool.Call(ctx, call)
				if err != nil {
					b.Fatal(err)
				}
				searched := time.Now()
				cp.ID++
				cp.Parent = cp.ID - 1
				if err := st.Put(ctx, cp); err != nil {
					b.Fatal(err)
				}
				searches, puts = append(searches, searched.Sub(start)), append(puts, time.Since(searched))
				if n := len(out.(map[string]any)["items"].([]any)); n != 10 {
					b.Fatalf("the search found %d items, want 10", n)
				}
			}
			s, p := median(searches), median(puts)
			b.ReportMetric(float64(s.Microseconds())/1000, "search-ms")
			b.ReportMetric(float64(p.Microseconds())/1000, "checkpoint-put-ms")
			b.ReportMetric(float64(s)/float64(p), "ratio")
		})
	}
}

// searchTool is the memory_search tool of searchToolSrc, as compiled.
func searchTool(b *testing.B) runner.Tool {
	docs, diags := dsl.Parse("search.yaml", []byte(searchToolSrc))
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		b.Fatal(err)
	}
	proj, more := c.Check(docs)
	if diags = append(diags, more...); diags.HasErrors(false) {
		b.Fatal(diags.Error())
	}
	tool, err := builtins.Tool(proj.Tools["memory_search"])
	if err != nil {
		b.Fatal(err)
	}
	return tool
}

// median returns the median of ds (which it sorts).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
