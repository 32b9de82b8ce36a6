package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// The scheduler fires the crons' ticks: at start, then every
// Config.CronEvery on Config.Clock, it lists the crons due and, for each,
// claims its tick by moving the cron's next run on (store.ClaimTick), so
// of the replicas sharing a store exactly one fires a tick, and starts its
// run as the cron's creator would (the run's Idempotency-Key names the
// cron and the tick). A tick found due later than missedAfter was missed
// (every replica was down, say): all the ticks missed are one, fired once
// (CronMissed "once") or skipped ("skip"); the cron goes on at its next
// tick after now either way. A replica that stops between its claim and
// the run's creation loses that tick: a tick fires at most once.

// DefaultCronEvery is how often the scheduler looks for ticks due when
// Config.CronEvery is not set.
const DefaultCronEvery = 10 * time.Second

// The policies for missed ticks (Config.CronMissed).
const (
	MissedOnce = "once"
	MissedSkip = "skip"
)

// missedAfter is how late a tick may be found due and still be on time:
// a minute, or two of the scheduler's intervals if that is longer.
func (s *Server) missedAfter() time.Duration { return max(time.Minute, 2*s.cfg.CronEvery) }

// schedule fires the ticks due until the server shuts down.
func (s *Server) schedule() {
	defer close(s.scheduled)
	if s.crons == nil {
		return
	}
	for {
		s.fireDue(s.ctx)
		if s.cfg.Clock.Sleep(s.ctx, s.cfg.CronEvery) != nil {
			return
		}
	}
}

// fireDue fires every tick due now whose claim this server wins.
func (s *Server) fireDue(ctx context.Context) {
	now := s.cfg.Clock.Now()
	due, err := s.crons.DueCrons(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Log.Warn("crons: listing the ticks due", "err", err)
		}
		return
	}
	for i := range due {
		s.fireTick(ctx, &due[i], now)
	}
}

// fireTick claims c's tick due at now and fires it, unless the policy
// skips it as missed.
func (s *Server) fireTick(ctx context.Context, c *store.Cron, now time.Time) {
	var next time.Time // a schedule that no longer parses ticks no more
	sched, err := runner.ParseSchedule(c.Schedule, c.Timezone)
	if err == nil {
		next = nextTick(sched, c.EndTime, now)
	}
	won, claimErr := s.crons.ClaimTick(ctx, c.Tenant, c.ID, c.NextRun, next)
	log := s.cfg.Log.With("cron", c.ID, "tenant", c.Tenant, "tick", c.NextRun)
	switch {
	case claimErr != nil:
		log.Warn("crons: claiming a tick", "err", claimErr)
		return
	case !won: // another replica fired it
		return
	case err != nil:
		log.Warn("crons: the schedule does not parse; the cron ticks no more", "err", err)
		return
	}
	if late := now.Sub(c.NextRun); late > s.missedAfter() {
		log.Info("crons: ticks missed", "late", late.String(), "policy", s.cfg.CronMissed)
		if s.cfg.CronMissed == MissedSkip {
			return
		}
	}
	rec, err := s.fireCron(c)
	if err != nil {
		log.Warn("crons: starting the tick's run", "err", err)
		return
	}
	log.Info("crons: tick fired", "run", rec.ID, "thread", access.ThreadID(rec.Thread))
}

// fireCron starts the run of a tick of c, as c's creator would ask for it.
func (s *Server) fireCron(c *store.Cron) (*store.RunRecord, error) {
	payload := map[string]json.RawMessage{}
	if len(c.Payload) > 0 {
		if err := json.Unmarshal(c.Payload, &payload); err != nil {
			return nil, fmt.Errorf("the cron's payload: %w", err)
		}
	}
	path := "/runs"
	if c.Thread == "" {
		payload["on_completion"] = json.RawMessage(strconv.Quote(c.OnRunCompleted))
	} else {
		path = "/threads/" + c.Thread + "/runs"
	}
	body, _ := json.Marshal(payload)
	ctx := access.NewContext(s.ctx, access.Principal{Tenant: c.Tenant, Name: c.UserID})
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.SetPathValue("thread", c.Thread)
	r.Header.Set("Idempotency-Key", "cron:"+c.ID+":"+strconv.FormatInt(c.NextRun.UnixNano(), 10))
	rec, _, err := s.createRun(r, inBackground)
	return rec, err
}

// syncSchedules keeps a cron of each run an agent's definition schedules
// (its schedule:), the default tenant's, of an id made from the agent's
// name and the entry's place, keeping its threads: a new or changed entry
// is written, its next tick after now; an unchanged one is left as it
// stands, its next tick too (ticks missed while no replica ran follow the
// policy); the cron of an entry no longer defined is deleted.
func (s *Server) syncSchedules(ctx context.Context) error {
	if s.crons == nil {
		return nil
	}
	have, err := s.crons.Crons(ctx, "")
	if err != nil {
		return fmt.Errorf("server: the crons of the agents' schedules: %w", err)
	}
	want := s.definedCrons()
	now := s.cfg.Clock.Now().UTC()
	for _, c := range have {
		if w, ok := want[c.ID]; ok && w.Schedule == c.Schedule && w.Timezone == c.Timezone && bytes.Equal(w.Payload, c.Payload) {
			delete(want, c.ID)
		} else if !ok && bytes.Contains(c.Metadata, []byte(`"schedule_of":`)) {
			if err := s.crons.DeleteCron(ctx, "", c.ID); err != nil {
				return fmt.Errorf("server: deleting the cron of a schedule no longer defined: %w", err)
			}
		}
	}
	for _, c := range want {
		sched, err := runner.ParseSchedule(c.Schedule, c.Timezone)
		if err != nil {
			return fmt.Errorf("server: agent %s: %w", c.Assistant, err)
		}
		c.NextRun, c.CreatedAt, c.UpdatedAt = sched.Next(now), now, now
		if err := s.crons.PutCron(ctx, c); err != nil {
			return fmt.Errorf("server: agent %s's schedule: %w", c.Assistant, err)
		}
	}
	return nil
}

// definedCrons are the crons of the agents' schedules, by id.
func (s *Server) definedCrons() map[string]*store.Cron {
	out := map[string]*store.Cron{}
	for name, g := range s.cfg.Graphs {
		for i, sc := range g.Schedule {
			at := fmt.Sprintf("%s/schedule/%d", name, i)
			id := uuid.NewSHA1(assistantNS, []byte(at)).String()
			payload, _ := json.Marshal(map[string]any{"assistant_id": name, "input": sc.Input})
			meta, _ := json.Marshal(map[string]string{"schedule_of": at})
			out[id] = &store.Cron{ID: id, Assistant: name, Schedule: sc.Cron, Timezone: sc.Timezone, Payload: payload,
				Metadata: meta, OnRunCompleted: "keep", Enabled: true}
		}
	}
	return out
}
