package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// valuesRef is the stored name of a values event kept as a reference to
// the checkpoint whose state it shows, written when no stream reads the
// run as it goes: a reader rebuilds it from that checkpoint
// (resolveEvents), so a replay shows what a live stream would have.
// References are written only for checkpoints written before the step's
// event (durability sync) and while the server prunes no history
// (Config.Retention unset): the checkpoint a reference names is then in
// the store, and stays there.
const valuesRef = "values@checkpoint"

// valuesRefData is a valuesRef event's data.
type valuesRefData struct {
	Thread     string `json:"thread"`
	Checkpoint int64  `json:"checkpoint"`
	// Assistant is the graph whose reducers rebuild the state.
	Assistant string `json:"assistant"`
}

// byReference reports whether l's values events may be stored as
// references: no stream reads them live, each step's checkpoint is in the
// store before its event (an async run's may be queued still) and
// nothing prunes checkpoints.
func (s *Server) byReference(l *liveRun) bool {
	sync := l.g.Durability == "" || l.g.Durability == runner.DurabilitySync
	return l.readers.Load() == 0 && sync && s.cfg.Retention == (runner.Retention{})
}

// emitValuesRef queues the values event of checkpoint id as a reference;
// the caller holds l.emitMu.
func (s *Server) emitValuesRef(l *liveRun, id int64) {
	s.emitLocked(l, valuesRef, valuesRefData{Thread: l.rec.Thread, Checkpoint: id, Assistant: l.rec.Assistant})
}

// resolveEvents turns the references among evs into the values events
// they stand for, in place.
func (s *Server) resolveEvents(ctx context.Context, evs []store.RunEvent) error {
	for i := range evs {
		if evs[i].Event != valuesRef {
			continue
		}
		data, err := s.resolveValues(ctx, evs[i].Data)
		if err != nil {
			return fmt.Errorf("run %s event %d: %w", evs[i].Run, evs[i].Seq, err)
		}
		evs[i].Event, evs[i].Data = "values", data
	}
	return nil
}

// resolveValues rebuilds the values a reference stands for.
func (s *Server) resolveValues(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var ref valuesRefData
	if err := json.Unmarshal(raw, &ref); err != nil {
		return nil, err
	}
	g := s.cfg.Graphs[ref.Assistant]
	if g == nil {
		return nil, fmt.Errorf("the values of checkpoint %d: no graph %q", ref.Checkpoint, ref.Assistant)
	}
	ts, err := (&runner.Engine{Store: s.cfg.Store}).State(ctx, g, ref.Thread, ref.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("the values of checkpoint %d: %w", ref.Checkpoint, err)
	}
	return runner.MarshalJSON(outValues(ts.State))
}
