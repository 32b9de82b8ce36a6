package server

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// How the request that creates a run follows it.
const (
	inBackground = iota // answered at once with the run
	awaited             // answered with its final values (runs/wait)
	streamed            // answered with its events as they come (runs/stream)
)

// createRun admits a run: on the path's thread (created with the run
// under if_not_exists create, unless it exists) or, without one, on a new
// thread of its own (stateless). With an Idempotency-Key the tenant
// already used, the run that key created is returned and nothing else
// happens. A run awaited or streamed is returned live, counting the
// caller as one of its streams (release it with streams.Done): a
// stateless run's thread outlives it. A refusal is a problem, and leaves
// no run behind.
func (s *Server) createRun(r *http.Request, how int) (*store.RunRecord, *liveRun, error) {
	ctx := r.Context()
	q, err := parseRunRequest(r)
	if err != nil {
		return nil, nil, err
	}
	if q.Webhook != "" && !s.cfg.Webhooks.signs() {
		return nil, nil, fieldProblem("webhook", "the server has no webhook secret to sign with; set webhooks.secret_env in runner.yaml")
	}
	if q.Webhook != "" {
		if err := s.guard.checkURL(ctx, q.Webhook); err != nil {
			return nil, nil, fieldProblem("webhook", "%s", err)
		}
	}
	a, err := s.prepare(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	name := a.name
	thread, stateless := r.PathValue("thread"), r.PathValue("thread") == ""
	// The existing thread's record, read once; with if_not_exists create,
	// only if creating the thread finds it there (a read fewer for a new one).
	var existing *store.ThreadRecord
	create := stateless || q.IfNotExists == "create"
	switch {
	case stateless:
		thread = uuid.Must(uuid.NewV7()).String()
	case !create:
		if existing, err = s.thread(ctx, thread); err != nil {
			return nil, nil, err
		}
	default:
		if err := access.CheckThreadID(thread); err != nil {
			return nil, nil, fieldProblem("thread_id", "%v", err)
		}
	}
	key := threadKey(ctx, thread)
	kwargs, _ := json.Marshal(keptRequest{runRequest: q, As: q.opts.As})
	meta, _ := json.Marshal(orMap(q.Metadata))
	status := store.RunPending
	if !s.busy(key) { // it starts at once, unless admit finds the thread busy after all
		status = store.RunRunning
	}
	rec := &store.RunRecord{ID: uuid.Must(uuid.NewV7()).String(), Thread: key,
		Tenant: principal(ctx).Tenant, Assistant: name, Status: status, MultitaskStrategy: q.MultitaskStrategy,
		IdempotencyKey: r.Header.Get("Idempotency-Key"), Kwargs: kwargs, Metadata: meta}
	var newThread *store.ThreadRecord // created with the run, in one write
	if create {
		tag, _ := json.Marshal(graphTag(name))
		newThread = &store.ThreadRecord{ID: key, Tenant: rec.Tenant, Metadata: tag}
	}
	run, created, err := s.runs.CreateRun(ctx, rec, newThread)
	if errors.Is(err, store.ErrConflict) && create && !stateless {
		// the thread exists: it must be the tenant's, and is tagged as an existing thread
		if existing, err = s.thread(ctx, thread); err == nil {
			run, created, err = s.runs.CreateRun(ctx, rec, nil)
		}
	}
	if err != nil || !created {
		return run, nil, err
	}
	rec = run
	l, err := s.admit(ctx, rec, existing, q, stateless, how)
	if err != nil {
		s.discard(ctx, rec, stateless)
		return nil, nil, err
	}
	return rec, l, nil
}

// discard deletes the record of a run refused as it was admitted, and the
// thread of a stateless one: a refusal leaves no run behind.
func (s *Server) discard(ctx context.Context, rec *store.RunRecord, stateless bool) {
	ctx = context.WithoutCancel(ctx)
	if err := s.runs.DeleteRun(ctx, rec.ID); err != nil {
		s.cfg.Log.Error("a refused run's record is left", "run", rec.ID, "err", err)
	}
	if stateless {
		_ = s.runs.DeleteThread(ctx, rec.Thread)
		_ = s.cfg.Store.Delete(ctx, rec.Thread)
	}
}

// prepare resolves the assistant of q, a run's request, and reads q for
// its graph: the nodes it names, its command.update, its config.
func (s *Server) prepare(ctx context.Context, q *runRequest) (*resolved, error) {
	a, err := s.resolve(ctx, q.AssistantID)
	if err != nil {
		return nil, err
	}
	if err := q.forGraph(a.g); err != nil {
		return nil, err
	}
	if err := q.checkUpdate(a.g); err != nil {
		return nil, err
	}
	q.opts.Config, err = a.configFor(q)
	return a, err
}

// admit tags the run's existing thread, whose record is existing (nil:
// the thread was created with the run), then starts the run, queues it or
// refuses it, as the thread's state and the multitask strategy say. A run
// that starts at once on an existing thread checks its lease here: a
// thread another server runs is a 409 before the run is made.
func (s *Server) admit(ctx context.Context, rec *store.RunRecord, existing *store.ThreadRecord, q *runRequest, stateless bool, how int) (*liveRun, error) {
	threadCreated := existing == nil
	if !threadCreated {
		if err := s.tagThread(ctx, rec, existing); err != nil {
			return nil, err
		}
	}
	g := s.cfg.Graphs[rec.Assistant]
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	busy := s.busy(rec.Thread)
	if busy && q.MultitaskStrategy == "reject" {
		return nil, problemf(http.StatusConflict, "thread %s is busy with another run (multitask_strategy reject)", access.ThreadID(rec.Thread)).as(typeThreadBusy)
	}
	if q.CheckpointID != "" {
		if busy {
			return nil, problemf(http.StatusConflict, "thread %s is busy with another run: a run from checkpoint %s needs it idle", access.ThreadID(rec.Thread), q.CheckpointID).as(typeThreadBusy)
		}
		if err := s.rewind(ctx, g, rec.Thread, q.CheckpointID); err != nil {
			return nil, err
		}
	}
	var p *planned
	if !busy {
		np, err := s.plan(ctx, g, rec.Thread, q, threadCreated)
		if err != nil {
			return nil, err
		}
		if !threadCreated {
			if err := s.checkFree(ctx, rec.Thread); err != nil {
				return nil, err
			}
		}
		p = &np
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, problemf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	l := newLiveRun(s.ctx, rec, q, g, stateless)
	l.plan, l.requestID = p, requestIDOf(ctx)
	s.live[rec.ID] = l
	s.runAdmitted(rec.Thread)
	s.changes.publish(rec.Tenant, threadChange{Thread: access.ThreadID(rec.Thread), Reason: "run_admitted"})
	var watched *liveRun
	if how != inBackground {
		l.streams.Add(1)
		watched = l
	}
	meta := s.add(nil, rec.ID, "metadata", map[string]any{"run_id": rec.ID, "thread_id": access.ThreadID(rec.Thread), "attempt": 1})
	if !busy && how != streamed { // written with the run's first events
		l.pending = meta
		s.start(l)
		return watched, nil
	}
	if how == streamed {
		l.readers.Add(1) // until its stream is done
	}
	seq := s.append(ctx, rec.ID, meta)
	if !busy { // its stream writes the metadata event, then starts it
		l.launch, l.meta = s.activate(l), store.RunEvent{Seq: seq, Event: "metadata", Data: meta[0].Data}
		return watched, nil
	}
	if cur := s.active[rec.Thread]; cur != nil {
		switch q.MultitaskStrategy {
		case "interrupt":
			cur.cancel(errCancelled)
		case "rollback":
			cur.cancel(errRollback)
		}
	}
	if rec.Status == store.RunRunning { // created to start at once: it waits
		rec.Status = store.RunPending
		if err := s.runs.SetRunStatus(ctx, rec.ID, store.RunPending); err != nil {
			s.cfg.Log.Error("run status not saved", "run", rec.ID, "err", err)
		}
	}
	s.queued[rec.Thread] = append(s.queued[rec.Thread], l)
	return watched, nil
}

// checkFree refuses a run on thread when another server runs it (or
// ran it until it stopped, its lease not yet expired): a 409 saying until
// when (asProblem), before the run is made.
func (s *Server) checkFree(ctx context.Context, thread string) error {
	return (&runner.Engine{Store: s.cfg.Store, LeaseTTL: s.cfg.LeaseTTL}).CheckFree(ctx, thread)
}

// graphTag is the metadata that names the graph a thread runs.
func graphTag(name string) map[string]any {
	return map[string]any{"graph_id": name, "assistant_id": AssistantID(name)}
}

// tagThread records on the run's existing thread, whose record is t, the
// graph it runs when it names none this server serves (a client may have
// set graph_id itself).
func (s *Server) tagThread(ctx context.Context, rec *store.RunRecord, t *store.ThreadRecord) error {
	meta := metadata(t.Metadata)
	if name, _ := meta["graph_id"].(string); s.cfg.Graphs[name] != nil {
		// another graph of the same pipeline (another agent) may continue it
		if s.cfg.Graphs[name].Name != s.cfg.Graphs[rec.Assistant].Name {
			return problemf(http.StatusConflict, "thread %s runs %s, not %s", access.ThreadID(rec.Thread), name, rec.Assistant)
		}
		return nil
	}
	maps.Copy(meta, graphTag(rec.Assistant))
	t.Metadata, _ = json.Marshal(meta)
	return s.runs.UpdateThread(ctx, t)
}

// rewind makes checkpoint id the thread's newest, when it is not, so the
// run replays the thread from there (Engine.Rewind).
func (s *Server) rewind(ctx context.Context, g *runner.Graph, thread, id string) error {
	cp, err := parseCheckpoint(id)
	if err != nil {
		return err
	}
	h, err := s.cfg.Store.History(ctx, thread)
	if err != nil {
		return err
	}
	if h[len(h)-1].ID == cp {
		return nil
	}
	if _, err := (&runner.Engine{Store: s.cfg.Store}).Rewind(ctx, g, thread, cp); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return problemf(http.StatusNotFound, "thread %s has no checkpoint %s", access.ThreadID(thread), id)
		}
		return err
	}
	return nil
}

// runJSON is a run as the API shows it.
func runJSON(r *store.RunRecord) map[string]any {
	return map[string]any{"run_id": r.ID, "thread_id": access.ThreadID(r.Thread), "assistant_id": assistantOf(r),
		"created_at": stamp(r.CreatedAt), "updated_at": stamp(r.UpdatedAt), "status": r.Status,
		"metadata": metadata(r.Metadata), "kwargs": metadata(r.Kwargs), "multitask_strategy": r.MultitaskStrategy}
}

// assistantOf is the id of the assistant a run ran: the one a client
// created that the run named, else its graph's.
func assistantOf(r *store.RunRecord) string {
	if id, _ := metadata(r.Kwargs)["assistant_id"].(string); id != "" && id != r.Assistant && id != AssistantID(r.Assistant) {
		return id
	}
	return AssistantID(r.Assistant)
}

// createBackgroundRun starts a run and returns it at once.
func (s *Server) createBackgroundRun(w http.ResponseWriter, r *http.Request) error {
	rec, _, err := s.createRun(r, inBackground)
	if err != nil {
		return err
	}
	setRunLocation(w, rec, false)
	writeJSON(w, http.StatusOK, runJSON(rec))
	return nil
}

// createWaitRun starts a run and answers with its final values.
func (s *Server) createWaitRun(w http.ResponseWriter, r *http.Request) error {
	rec, l, err := s.createRun(r, awaited)
	if err != nil {
		return err
	}
	created := l != nil
	if created {
		defer l.streams.Done()
	} else { // an earlier request with its Idempotency-Key created it
		l = s.liveRun(rec.ID)
	}
	setRunLocation(w, rec, false)
	err = s.answer(w, r, rec, l, created)
	if l != nil && l.q.OnDisconnect == "cancel" && r.Context().Err() != nil {
		l.cancel(errCancelled)
	}
	return err
}

// createStreamRun starts a run and streams its events.
func (s *Server) createStreamRun(w http.ResponseWriter, r *http.Request) error {
	rec, l, err := s.createRun(r, streamed)
	if err != nil {
		return err
	}
	setRunLocation(w, rec, true)
	if l == nil { // an earlier request with its Idempotency-Key created it: rejoin
		s.stream(w, r, rec.ID, s.liveRun(rec.ID), 0, nil)
		return nil
	}
	defer l.streams.Done()
	defer l.detach()
	sw := s.openStream(w)
	defer sw.close()
	s.relay(r.Context(), sw, relayed{run: rec.ID, l: l, after: s.begin(sw, l), idOf: seqID})
	if l.q.OnDisconnect == "cancel" && r.Context().Err() != nil && !l.ended() {
		l.cancel(errCancelled)
	}
	return nil
}

// setRunLocation points the client at the run and, for a stream, at the
// stream to rejoin.
func setRunLocation(w http.ResponseWriter, rec *store.RunRecord, stream bool) {
	loc := "/threads/" + access.ThreadID(rec.Thread) + "/runs/" + rec.ID
	w.Header().Set("Content-Location", loc)
	if stream {
		w.Header().Set("Location", loc+"/stream")
	}
}

func (s *Server) liveRun(id string) *liveRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id]
}

// answer writes what runs/wait and join return once the run, live here
// as l (nil: it is not), has ended: one running on another server (or
// about to be taken over from a stopped one, reclaim.go) is polled until
// it ends or runs here. A run that goes on past a heartbeat interval is
// answered 200 at once, with a newline at every beat before the JSON
// (which parsers skip), so no client's read timeout fires on a long run,
// as LangGraph's server does. A run this request created (created) that
// was refused as it started is answered with its problem while no byte
// has gone out, and leaves no run behind.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, rec *store.RunRecord, l *liveRun, created bool) error {
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	rc := http.NewResponseController(w)
	for started := false; ; {
		if l == nil {
			l = s.liveRun(rec.ID)
		}
		var done <-chan struct{}
		var poll <-chan time.Time
		var final any
		switch {
		case l != nil:
			done = l.done
		case s.unended(r.Context(), rec.ID):
			poll = time.After(remotePoll)
		default:
			out, err := s.pastValues(r.Context(), rec)
			if err != nil && !started {
				return err
			}
			c := make(chan struct{})
			close(c)
			final, done = out, c
		}
		select {
		case <-done:
			if l != nil && !started && created && l.refused != nil {
				w.Header().Del("Content-Location")
				s.discard(r.Context(), rec, false)
				return l.refused
			}
			if l != nil {
				final = l.final
			}
			if !started {
				writeJSON(w, http.StatusOK, final)
				return nil
			}
			return runner.WriteJSON(w, final, false)
		case <-poll:
		case <-beat.C:
			if !started {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				started = true
			}
			if _, err := w.Write([]byte("\n")); err != nil {
				return nil
			}
			_ = rc.Flush()
		case <-r.Context().Done():
			if !started {
				return r.Context().Err()
			}
			return nil
		}
	}
}

// wait returns what runs/wait returns once the run, live here as l (nil:
// it is not), has ended.
func (s *Server) wait(ctx context.Context, rec *store.RunRecord, l *liveRun) (any, error) {
	if l != nil {
		select {
		case <-l.done:
			return l.final, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.pastValues(ctx, rec)
}

// pastValues returns what runs/wait returns for a run that ended before:
// the thread's values.
func (s *Server) pastValues(ctx context.Context, rec *store.RunRecord) (any, error) {
	t, err := s.runs.Thread(ctx, rec.Thread)
	if err != nil {
		return nil, err
	}
	g := s.threadGraph(ctx, t)
	ts, err := s.state(ctx, t, 0)
	if err != nil || ts == nil || g == nil {
		return map[string]any{}, err
	}
	out := clone(outValues(ts.State))
	if ts.Interrupt != nil {
		out["__interrupt__"] = interruptsOf(ts)
	}
	return out, nil
}
