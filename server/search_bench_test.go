package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// threadsServer is a server of n threads of tenant acme, each run with g
// on input to its end or its pause, on a memory store; testKey is carol's,
// a cfo of acme.
func threadsServer(b *testing.B, g *runner.Graph, n int, input map[string]any) http.Handler {
	b.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	rs := st.(store.RunStore)
	e := &runner.Engine{Store: st, Tenant: "acme"}
	for i := range n {
		id := access.ThreadKey("acme", fmt.Sprintf("t%05d", i))
		if err := rs.CreateThread(ctx, &store.ThreadRecord{ID: id, Tenant: "acme", Metadata: []byte(`{"graph_id":"` + g.Name + `"}`)}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Run(ctx, g, id, input); err != nil {
			b.Fatal(err)
		}
	}
	srv, err := server.New(ctx, server.Config{Store: st, Graphs: map[string]*runner.Graph{g.Name: g},
		Keys: access.Keys{access.HashKey(testKey): {Tenant: "acme", Name: "carol", Roles: []string{"cfo"}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Shutdown(ctx) })
	return srv
}

// pages times the server answering the searches, one after the other,
// once: server time, without a network between.
func pages(b *testing.B, srv http.Handler, bodies ...map[string]any) time.Duration {
	b.Helper()
	var took time.Duration
	for _, body := range bodies {
		data, _ := json.Marshal(body)
		req := httptest.NewRequest("POST", "/threads/search", bytes.NewReader(data))
		req.Header.Set("X-Api-Key", testKey)
		rec := httptest.NewRecorder()
		start := time.Now()
		srv.ServeHTTP(rec, req)
		took += time.Since(start)
		if rec.Code != 200 {
			b.Fatalf("search %v: %d %s", body, rec.Code, rec.Body)
		}
	}
	return took
}

// BenchmarkThreadSearch pages through 10,000 threads 20 at a time, the
// thread list's page: a page costs what it shows, not what the tenant
// has. The baseline is the same page of 100 threads, in the same run;
// ratio is the page of 10,000 over it.
func BenchmarkThreadSearch(b *testing.B) {
	small, large := threadsServer(b, stepsGraph(), 100, nil), threadsServer(b, stepsGraph(), 10000, nil)
	page := map[string]any{"limit": 20, "offset": 60}
	var base, big time.Duration
	for b.Loop() {
		base += pages(b, small, page)
		big += pages(b, large, page)
	}
	b.ReportMetric(float64(big.Microseconds())/float64(b.N)/1000, "ms/page-of-10000")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N)/1000, "ms/page-of-100")
	b.ReportMetric(float64(big)/float64(base), "ratio")
}

// BenchmarkInbox times the console's inbox as it loads: GET /approvals
// listing 1,000 pending payouts a cfo may decide (real gates, run on a
// memory store), then the thread of each of the first screen's cards —
// server time (target: under 300 ms), with an inbox of 100 as the
// baseline of the same run.
func BenchmarkInbox(b *testing.B) {
	g := payoutAgent(b, "../cmd/runner/testdata/payout.yaml")
	pay := map[string]any{"amount": 20000}
	small, large := threadsServer(b, g, 100, pay), threadsServer(b, g, 1000, pay)
	var base, big time.Duration
	for b.Loop() {
		base += inboxLoad(b, small, 100)
		big += inboxLoad(b, large, 1000)
	}
	b.ReportMetric(float64(big.Microseconds())/float64(b.N)/1000, "ms/1000-approvals")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N)/1000, "ms/100-approvals")
	b.ReportMetric(float64(big)/float64(base), "ratio")
}

// inboxLoad times the requests of the console's inbox on srv, which lists n
// approvals: the list, then the threads of the first screen's 5 cards.
func inboxLoad(b *testing.B, srv http.Handler, n int) time.Duration {
	b.Helper()
	get := func(path string) ([]byte, time.Duration) {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("X-Api-Key", testKey)
		rec := httptest.NewRecorder()
		start := time.Now()
		srv.ServeHTTP(rec, req)
		took := time.Since(start)
		if rec.Code != 200 {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.Bytes(), took
	}
	body, took := get("/approvals?limit=1000")
	var page struct {
		Approvals []struct {
			ThreadID string `json:"thread_id"`
		}
	}
	if err := json.Unmarshal(body, &page); err != nil || len(page.Approvals) != n {
		b.Fatalf("GET /approvals: %d approvals, want %d (%v)", len(page.Approvals), n, err)
	}
	for _, a := range page.Approvals[:5] {
		_, d := get("/threads/" + a.ThreadID)
		took += d
	}
	return took
}
