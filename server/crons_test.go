package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// virtualClock is the schedulers' clock in tests: time moves only when
// the test advances it, and an advance returns once every scheduler it
// woke is asleep again, its pass done.
type virtualClock struct {
	mu       sync.Mutex
	cond     *sync.Cond
	now      time.Time
	sleepers map[chan struct{}]time.Time // each sleeper's wake time
}

func newVirtualClock(now time.Time) *virtualClock {
	c := &virtualClock{now: now, sleepers: map[chan struct{}]time.Time{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	if d <= 0 {
		c.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	c.sleepers[ch] = c.now.Add(d)
	c.cond.Broadcast()
	c.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.sleepers, ch)
		c.cond.Broadcast()
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *virtualClock) WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, cause)
}

// waitSleepers waits until n schedulers sleep.
func (c *virtualClock) waitSleepers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.sleepers) < n {
		c.cond.Wait()
	}
}

// advance moves the time d on, wakes the sleepers due and waits until
// they sleep again.
func (c *virtualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	n := len(c.sleepers)
	for ch, at := range c.sleepers {
		if !at.After(c.now) {
			close(ch)
			delete(c.sleepers, ch)
		}
	}
	for len(c.sleepers) < n {
		c.cond.Wait()
	}
}

// onClock makes a server's scheduler run on clk, looking every 10s.
func onClock(clk *virtualClock, missed string) func(*server.Config) {
	return func(cfg *server.Config) {
		cfg.Clock, cfg.CronEvery, cfg.CronMissed = clk, 10*time.Second, missed
	}
}

// cronStart is when the tests' clocks start: 30 s before a minute.
var cronStart = time.Date(2026, 3, 1, 9, 59, 30, 0, time.UTC)

// firedTicks lists the ticks of cron id that started a run, in order,
// and a zero time for each other run of the store.
func firedTicks(t *testing.T, st store.Store, id string) []time.Time {
	t.Helper()
	runs, err := st.(store.RunStore).RunsWithStatus(context.Background(), store.RunPending, store.RunRunning,
		store.RunSuccess, store.RunError, store.RunTimeout, store.RunInterrupted)
	if err != nil {
		t.Fatal(err)
	}
	var ticks []time.Time
	for _, r := range runs {
		var tick time.Time
		if ns, ok := strings.CutPrefix(r.IdempotencyKey, "cron:"+id+":"); ok {
			var n int64
			fmt.Sscan(ns, &n)
			tick = time.Unix(0, n).UTC()
		}
		ticks = append(ticks, tick)
	}
	slices.SortFunc(ticks, time.Time.Compare)
	return ticks
}

// minutes are the n minute ticks from 10:00 on.
func minutes(from, n int) []time.Time {
	var out []time.Time
	for i := range n {
		out = append(out, time.Date(2026, 3, 1, 10, from+i, 0, 0, time.UTC))
	}
	return out
}

// TestCronTwoReplicas: a cron every minute on two replicas sharing a
// store fires once per minute for 5 minutes, each replica looking for
// ticks every 10 s of a virtual clock.
func TestCronTwoReplicas(t *testing.T) {
	clk := newVirtualClock(cronStart)
	a := newEnv(t, onClock(clk, ""))
	newEnvOn(t, a.store, onClock(clk, ""))
	clk.waitSleepers(2)
	c := a.call("POST", "/runs/crons", map[string]any{"assistant_id": "steps", "schedule": "* * * * *",
		"on_run_completed": "keep", "metadata": map[string]any{"team": "ops"}}, 200)
	if c["next_run_date"] != "2026-03-01T10:00:00Z" || c["thread_id"] != nil || c["enabled"] != true {
		t.Fatalf("created %v; want the next run at 10:00, stateless, enabled", c)
	}
	for range 30 {
		clk.advance(10 * time.Second)
	}
	if got, want := firedTicks(t, a.store, c["cron_id"].(string)), minutes(0, 5); !slices.Equal(got, want) {
		t.Errorf("ticks fired in 5 minutes on two replicas: %v, want each minute once: %v", got, want)
	}
	list := a.list("POST", "/runs/crons/search", map[string]any{"assistant_id": "steps"})
	if len(list) != 1 || list[0].(map[string]any)["next_run_date"] != "2026-03-01T10:05:00Z" {
		t.Errorf("the cron after 5 minutes: %v; want its next run at 10:05", list)
	}
}

// TestCronMissedTicks: the ticks missed while no server ran fire once at
// the next start (once), or are skipped (skip); the cron goes on at its
// next tick either way.
func TestCronMissedTicks(t *testing.T) {
	for _, tc := range []struct {
		missed string
		fired  []time.Time // at the restart
	}{
		{server.MissedOnce, minutes(0, 1)},
		{server.MissedSkip, nil},
	} {
		t.Run(tc.missed, func(t *testing.T) {
			clk := newVirtualClock(cronStart)
			a := newEnv(t, onClock(clk, tc.missed))
			clk.waitSleepers(1)
			c := a.call("POST", "/runs/crons", map[string]any{"assistant_id": "steps", "schedule": "* * * * *",
				"on_run_completed": "keep"}, 200)
			id := c["cron_id"].(string)
			a.srv.Shutdown(context.Background())
			clk.advance(5 * time.Minute) // 10:04:30: ticks 10:00 to 10:04 missed
			newEnvOn(t, a.store, onClock(clk, tc.missed))
			clk.waitSleepers(1)
			if got := firedTicks(t, a.store, id); !slices.Equal(got, tc.fired) {
				t.Errorf("ticks fired at the restart: %v, want %v", got, tc.fired)
			}
			clk.advance(time.Minute) // 10:05:30
			if got, want := firedTicks(t, a.store, id), append(tc.fired, minutes(5, 1)...); !slices.Equal(got, want) {
				t.Errorf("ticks fired a minute after the restart: %v, want %v", got, want)
			}
		})
	}
}

// TestCronOnThread: a thread's cron runs on that thread.
func TestCronOnThread(t *testing.T) {
	clk := newVirtualClock(cronStart)
	e := newEnv(t, onClock(clk, ""))
	clk.waitSleepers(1)
	th := e.call("POST", "/threads", map[string]any{}, 200)["thread_id"].(string)
	e.call("POST", "/threads/"+th+"/runs/crons", map[string]any{"assistant_id": "steps", "schedule": "0 10 * * *"}, 200)
	clk.advance(time.Minute)
	runs := e.list("GET", "/threads/"+th+"/runs", nil)
	if len(runs) != 1 {
		t.Fatalf("runs of the thread after its cron's tick: %v, want one", runs)
	}
}

// TestCronCreatesItsThread: a cron made with if_not_exists create on a
// thread that does not exist yet is accepted (without it: 404); its first
// tick's run creates the thread, the caller's tenant's, which another
// tenant cannot see; a later tick runs on it again.
func TestCronCreatesItsThread(t *testing.T) {
	clk := newVirtualClock(cronStart)
	e := newEnv(t, onClock(clk, ""))
	clk.waitSleepers(1)
	cron := map[string]any{"assistant_id": "steps", "schedule": "0 * * * *"}
	e.raw("POST", "/threads/nightly/runs/crons", cron, 404)
	cron["if_not_exists"] = "create"
	if c := e.call("POST", "/threads/nightly/runs/crons", cron, 200); c["thread_id"] != "nightly" {
		t.Fatalf("created %v, want a cron on thread nightly", c)
	}
	e.raw("GET", "/threads/nightly", nil, 404) // made by the first tick, not before
	clk.advance(time.Minute)                   // 10:00:30
	th := e.call("GET", "/threads/nightly", nil, 200)
	if meta, _ := th["metadata"].(map[string]any); meta["graph_id"] != "steps" {
		t.Errorf("the thread the tick created: %v, want one of graph steps", th)
	}
	e.key = otherKey
	e.raw("GET", "/threads/nightly", nil, 404)
	e.key = testKey
	first := e.list("GET", "/threads/nightly/runs", nil)[0].(map[string]any)["run_id"].(string)
	e.call("GET", "/threads/nightly/runs/"+first+"/join", nil, 200) // the thread is free for the next tick
	clk.advance(time.Hour)                                          // 11:00:30
	if runs := e.list("GET", "/threads/nightly/runs", nil); len(runs) != 2 {
		t.Errorf("runs of the created thread after two ticks: %d, want 2", len(runs))
	}
}

// TestCronAPI: create, search, count, update and delete crons, what is
// refused (422 saying why), and another tenant's crons unseen.
func TestCronAPI(t *testing.T) {
	clk := newVirtualClock(cronStart)
	e := newEnv(t, onClock(clk, ""))
	body := func(kv ...any) map[string]any {
		m := map[string]any{"assistant_id": "steps", "schedule": "0 18 * * *"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		path string
		body map[string]any
		code int
		want string
	}{
		{"bad cron syntax", "/runs/crons", body("schedule", "0 25 * * *"), 422, "above maximum"},
		{"bad time zone", "/runs/crons", body("timezone", "Mars/Olympus"), 422, "IANA"},
		{"no schedule", "/runs/crons", map[string]any{"assistant_id": "steps"}, 422, "schedule is required"},
		{"unknown assistant", "/runs/crons", body("assistant_id", "nope"), 404, "no assistant"},
		{"a webhook", "/runs/crons", body("webhook", "http://x"), 422, "webhook"},
		{"on_run_completed", "/runs/crons", body("on_run_completed", "archive"), 422, "delete or keep"},
		{"unknown thread", "/threads/nope/runs/crons", body(), 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(e.raw("POST", tc.path, tc.body, tc.code))
			if !strings.Contains(got, tc.want) {
				t.Errorf("answer %s, want it to say %q", got, tc.want)
			}
		})
	}
	first := e.call("POST", "/runs/crons", body("timezone", "Europe/Paris", "metadata", map[string]any{"team": "ops"},
		"end_time", "2026-03-01T12:00:00Z"), 200)
	if first["next_run_date"] != nil || first["end_time"] != "2026-03-01T12:00:00Z" || first["on_run_completed"] != "delete" {
		t.Errorf("a cron ending before its first tick (18:00 Paris): %v; want no next run, deleting its threads", first)
	}
	id := first["cron_id"].(string)
	second := e.call("POST", "/runs/crons", body("schedule", "*/5 * * * *"), 200)
	if second["next_run_date"] != "2026-03-01T10:00:00Z" {
		t.Errorf("next run of */5 at 09:59:30 = %v", second["next_run_date"])
	}
	got := e.list("POST", "/runs/crons/search", map[string]any{"metadata": map[string]any{"team": "ops"}, "select": []string{"cron_id", "schedule"}})
	if len(got) != 1 || len(got[0].(map[string]any)) != 2 || got[0].(map[string]any)["cron_id"] != id {
		t.Errorf("search by metadata, two fields: %v; want the first cron's id and schedule", got)
	}
	if n := e.raw("POST", "/runs/crons/count", map[string]any{"assistant_id": "steps"}, 200); strings.TrimSpace(string(n)) != "2" {
		t.Errorf("count = %s, want 2", n)
	}
	upd := e.call("PATCH", "/runs/crons/"+id, map[string]any{"end_time": nil, "enabled": false, "input": map[string]any{"note": "x"}}, 200)
	if upd["end_time"] != nil || upd["enabled"] != false || upd["next_run_date"] != "2026-03-01T17:00:00Z" ||
		upd["payload"].(map[string]any)["input"] == nil || upd["schedule"] != "0 18 * * *" {
		t.Errorf("updated: %v; want no end, disabled, next at 18:00 Paris, its input, its schedule kept", upd)
	}
	e.raw("PATCH", "/runs/crons/"+id, map[string]any{"schedule": "nope"}, 422)
	e.key = otherKey
	if got := e.list("POST", "/runs/crons/search", map[string]any{}); len(got) != 0 {
		t.Errorf("another tenant's search: %v, want none", got)
	}
	e.raw("PATCH", "/runs/crons/"+id, map[string]any{"enabled": true}, 404)
	e.raw("DELETE", "/runs/crons/"+id, nil, 404)
	e.key = testKey
	e.raw("DELETE", "/runs/crons/"+id, nil, 204)
	e.raw("DELETE", "/runs/crons/"+id, nil, 404)
	if got := e.list("POST", "/runs/crons/search", map[string]any{"sort_by": "next_run_date", "sort_order": "asc"}); len(got) != 1 {
		t.Errorf("crons after the delete: %v, want one", got)
	}
}

// TestCronSchedulesInYAML: an agent's schedule: is a cron of the default
// tenant, written at start when new or changed, kept (with its next
// tick) when unchanged, deleted when no longer defined; its tick runs the
// agent with the entry's input.
func TestCronSchedulesInYAML(t *testing.T) {
	clk := newVirtualClock(cronStart)
	e := newEnv(t, onClock(clk, ""))
	clk.waitSleepers(1)
	e.srv.Shutdown(context.Background()) // the store's, and it serves no schedule
	st, crons := e.store, e.store.(store.CronStore)
	scheduled := func(entries ...runner.Scheduled) func(*server.Config) {
		return func(cfg *server.Config) {
			g := stepsGraph()
			g.Schedule = entries
			cfg.Graphs["steps"] = g
			cfg.Clock, cfg.CronEvery = clk, 10*time.Second
		}
	}
	list := func() []store.Cron {
		t.Helper()
		l, err := crons.Crons(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	hourly := runner.Scheduled{Cron: "@hourly", Input: map[string]any{"note": "tick"}}
	newEnvOn(t, st, scheduled(hourly)).srv.Shutdown(context.Background())
	first := list()
	if len(first) != 1 || first[0].Assistant != "steps" || !first[0].NextRun.Equal(minutes(0, 1)[0]) ||
		string(first[0].Payload) != `{"assistant_id":"steps","input":{"note":"tick"}}` {
		t.Fatalf("crons of an hourly schedule: %+v", first)
	}
	clk.advance(2 * time.Hour) // missed while no server ran
	newEnvOn(t, st, scheduled(hourly))
	clk.waitSleepers(1)
	if got := firedTicks(t, st, first[0].ID); !slices.Equal(got, minutes(0, 1)) {
		t.Errorf("ticks of the unchanged schedule fired at the restart: %v, want the one at 10:00 (policy once)", got)
	}
	changed := runner.Scheduled{Cron: "30 * * * *", Timezone: "Asia/Kolkata"}
	newEnvOn(t, st, scheduled(changed)).srv.Shutdown(context.Background())
	if l := list(); len(l) != 1 || l[0].ID != first[0].ID || l[0].Schedule != "30 * * * *" || l[0].Timezone != "Asia/Kolkata" {
		t.Errorf("crons of the changed schedule: %+v", l)
	}
	newEnvOn(t, st, scheduled()).srv.Shutdown(context.Background())
	if l := list(); len(l) != 0 {
		t.Errorf("crons of no schedule: %+v, want none", l)
	}
}
