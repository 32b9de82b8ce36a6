package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// errStore marks a failure of the checkpoint store: the run stops and the
// error is returned, since nothing more can be made durable.
var errStore = errors.New("checkpoint store")

// cpRecord is what one checkpoint records.
type cpRecord struct {
	node, next, status string
	writes             Update
	sideWrites         Update // what calls and rules set this step, merged after writes
	state              State
	snapshot           bool
	step               bool  // a step's checkpoint, which the durability mode may defer
	branchFrom         int64 // > 0: the checkpoint this one replays from (a snapshot), its parent
	interrupt          *Interrupt
	err                *RunError
	last               bool // the run's end or pause: it writes nothing after
}

// meta is a checkpoint's bookkeeping. Snapshots carry the input and the
// hash of every definition, to explain a refused resume.
type meta struct {
	Input map[string]any    `json:"input,omitempty"`
	Defs  map[string]string `json:"defs,omitempty"`
	Error *RunError         `json:"error,omitempty"`
	// Usage is the run's usage when it changed this step; Budget the
	// budget once a human extended it.
	Usage  *RunUsage `json:"usage,omitempty"`
	Budget *Budget   `json:"budget,omitempty"`
	// SideWrites are the state updates calls and rules made this step; Journal the
	// calls of a step not yet finished (see gate.go); Tenant the tenant
	// the thread runs for.
	SideWrites Update       `json:"side_writes,omitempty"`
	Pending    Update       `json:"pending,omitempty"` // the side writes of a step not done
	Journal    []*callEntry `json:"journal,omitempty"`
	Tenant     string       `json:"tenant,omitempty"`
	// Turn is the step the run's turn of the thread began at: limits
	// count the steps of a turn.
	Turn int `json:"turn,omitempty"`
	// Started is when the run's turn began (what expressions see as
	// run.started_at).
	Started time.Time `json:"started,omitzero"`
	// Requester is the principal who started the turn (RunOptions.As):
	// the requester its gates record.
	Requester string `json:"requester,omitempty"`
	// Caught is the error a route caught this step (or, in a snapshot,
	// before): what expressions see as error from here on.
	Caught map[string]any `json:"caught,omitempty"`
}

// snapshotEvery is how many times its size the writes since a snapshot
// add up to before the state is written whole again: snapshots cost a step
// at most half what it writes, and a resume replays at most twice a
// state's worth of writes. (At once its size, the fraud loop wrote three
// snapshots a run, a third of the bytes its checkpoints encode.)
const snapshotEvery = 2

// checkpoint writes the next checkpoint of the thread, durably unless the
// run's durability mode defers a step's checkpoint (durability.go): in
// async mode it is queued, in exit mode not written at all, and the next
// checkpoint written is a snapshot. It holds the step's writes; the whole
// state is written again only once the writes since the last snapshot add
// up to snapshotEvery times its size. So a step costs what it changed, not
// what the state holds, and a resume replays a bounded suffix.
func (r *Run) checkpoint(ctx context.Context, c cpRecord) error {
	st := r.engine.Store
	if st == nil {
		r.id++
		return nil
	}
	deferred := r.defers(c)
	if deferred && r.durability() == DurabilityExit {
		r.unsaved = true
		return nil
	}
	if !deferred {
		if err := r.flush(); err != nil {
			return fmt.Errorf("%w: %v", errStore, err)
		}
	}
	snap := c.snapshot || r.unsaved || (r.snapSize > 0 && r.sinceSnap >= snapshotEvery*r.snapSize)
	parent := r.id
	if c.branchFrom > 0 {
		parent = c.branchFrom
	}
	cp := &store.Checkpoint{Thread: r.Thread, ID: r.id + 1, Parent: parent, Step: r.step, Node: c.node, Next: c.next,
		Status: c.status, Pipeline: r.Graph.Name, ConfigHash: r.Graph.Hash, Tenant: r.tenant, CreatedAt: r.clock.Now(), Lease: r.lease.token()}
	cp.Release = cp.Lease != 0 && c.last // the thread is free with its final state
	if cp.ID == 1 {
		cp.ChildOf = r.engine.parent // a child thread is its parent's to delete
	}
	if r.approval != nil { // opened, voted on or decided with this checkpoint
		cp.Approvals, r.approval = []*store.Approval{r.approval}, nil
	}
	m := meta{Error: c.err, SideWrites: c.sideWrites}
	if r.caughtNew || snap { // a snapshot carries it on
		m.Caught, r.caughtNew = r.caught, false
	}
	if len(r.calls) > 0 {
		m.Journal, m.Pending = r.journalEntries(), r.sideUpd
	}
	cp.Audit = r.audit
	if r.ownsMeter {
		m.Usage, m.Budget = r.meter.record(snap)
	}
	// The JSON sits in a scratch buffer while written (Put keeps a copy):
	// the state's or the writes', then the meta's.
	p := scratch.Get().(*[]byte)
	defer freeScratch(p)
	b := (*p)[:0]
	var err error
	if snap {
		m.Input, m.Defs, m.Tenant, m.Turn, m.Started, m.Requester = r.input, r.Graph.Defs, r.tenant, r.turn, r.started, r.requester
		b, err = AppendJSON(b, c.state, true)
		cp.Snapshot = b[:len(b):len(b)]
	} else if c.writes != nil {
		b, err = AppendJSON(b, c.writes, true)
		cp.Writes = b[:len(b):len(b)]
	}
	if err == nil && c.interrupt != nil {
		cp.Interrupt, err = json.Marshal(c.interrupt)
	}
	if err == nil && (snap || c.err != nil || m.Usage != nil || m.SideWrites != nil || m.Journal != nil || m.Caught != nil) {
		n := len(b)
		b, err = m.appendJSON(b)
		cp.Meta = b[n:]
	}
	*p = b
	if err != nil {
		return fmt.Errorf("node %s: the state cannot be saved: %w", c.node, err)
	}
	if len(cp.Audit) > 0 && r.engine.Outbox != nil {
		cp.Deliveries = r.engine.Outbox(cp)
	}
	if deferred { // written later: its own copies
		cp.Snapshot, cp.Writes, cp.Meta = bytes.Clone(cp.Snapshot), bytes.Clone(cp.Writes), bytes.Clone(cp.Meta)
		err = r.putAsync(ctx, cp)
	} else {
		err = st.Put(ctx, cp)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errStore, err)
	}
	r.unsaved = false
	r.audit = r.audit[len(cp.Audit):] // appended with the checkpoint
	if cp.Release {
		r.lease.released = true
	}
	if snap {
		r.sinceSnap, r.snapSize = 0, len(cp.Snapshot)
	} else {
		r.sinceSnap += len(cp.Writes)
	}
	r.id = cp.ID
	if r.engine.Sink != nil {
		r.send(Event{Type: EventCheckpoint, Node: c.node, Data: map[string]any{"id": cp.ID, "parent": cp.Parent,
			"next": cp.Next, "status": c.status}, State: c.state})
	}
	return nil
}

// merge applies an update to state, in place, through the field
// reducers. Every reducer runs before any field is written, so a failing
// update leaves the state as it was.
func merge(g *Graph, state State, upd Update) (State, error) {
	return mergeGrowing(g, state, upd, nil)
}

// mergeGrowing is merge with the lists the append reducer may grow in
// place (nil: none).
func mergeGrowing(g *Graph, state State, upd Update, grow lists) (State, error) {
	if len(upd) == 0 {
		return state, nil
	}
	type change struct {
		field string
		value any
	}
	var buf [8]change
	changes := buf[:0]
	for k, v := range upd {
		f, ok := g.Fields[k]
		if !ok {
			return nil, fmt.Errorf("update of %q, which is not a state field", k)
		}
		var nv any
		var err error
		if grow != nil && isAppend(f.Reducer) {
			nv, err = grow.append(k, state[k], v)
		} else {
			nv, err = f.Reducer(state[k], v)
		}
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		changes = append(changes, change{k, nv})
	}
	for _, c := range changes {
		state[c.field] = c.value
	}
	return state, nil
}

// rebuild replays checkpoints — a snapshot, then writes — into a state.
func rebuild(g *Graph, cps []*store.Checkpoint) (State, *meta, error) {
	var state State
	if err := decodeInto(cps[0].Snapshot, &state); err != nil {
		return nil, nil, fmt.Errorf("checkpoint %d: %w", cps[0].ID, err)
	}
	var m meta
	grow := lists{}
	for i, cp := range cps {
		var cm meta
		if err := decodeInto(cp.Meta, &cm); err != nil {
			return nil, nil, fmt.Errorf("checkpoint %d: %w", cp.ID, err)
		}
		m.latest(&cm)
		m.Journal, m.Pending = cm.Journal, cm.Pending // only the newest checkpoint's: its step is not done
		if i == 0 {
			continue
		}
		var upd Update
		if err := decodeInto(cp.Writes, &upd); err != nil {
			return nil, nil, fmt.Errorf("checkpoint %d: %w", cp.ID, err)
		}
		for _, u := range []Update{upd, cm.SideWrites} {
			var err error
			if state, err = mergeGrowing(g, state, u, grow); err != nil {
				return nil, nil, fmt.Errorf("checkpoint %d: %w", cp.ID, err)
			}
		}
	}
	return state, &m, nil
}

// decodeInto decodes a checkpoint's JSON field into a state, an update or
// its meta; an empty field leaves v unchanged.
func decodeInto(data []byte, v any) error {
	if len(data) == 0 {
		return nil
	}
	if m, ok := v.(*meta); ok {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(m); err != nil {
			return err
		}
		m.normalize()
		return nil
	}
	raw, err := DecodeJSON(data)
	if err != nil {
		return err
	}
	obj, _ := raw.(map[string]any)
	switch p := v.(type) {
	case *State:
		*p = obj
	case *Update:
		*p = obj
	}
	return nil
}

// checkResumable refuses to resume a finished thread, or one whose
// definitions changed (unless forced), naming what changed.
func checkResumable(g *Graph, cps []*store.Checkpoint, force bool) error {
	last := cps[len(cps)-1]
	if last.Status == StatusCompleted {
		return notResumable(fmt.Errorf("thread %s already completed", last.Thread))
	}
	if last.Pipeline != g.Name {
		return notResumable(fmt.Errorf("thread %s runs pipeline %s, not %s", last.Thread, last.Pipeline, g.Name))
	}
	if last.ConfigHash != g.Hash && !force {
		var m meta
		_ = decodeInto(cps[0].Meta, &m)
		return notResumable(fmt.Errorf("thread %s ran under other definitions (changed: %s); resume with --force to continue under the new ones",
			last.Thread, changedDefs(m.Defs, g.Defs)))
	}
	if g.Nodes[last.Next] == nil {
		return notResumable(fmt.Errorf("thread %s cannot resume: it stopped before node %q, which pipeline %s no longer has; "+
			"restore the node under that name (or the definitions the thread ran with), or start a new thread", last.Thread, last.Next, g.Name))
	}
	return nil
}

func changedDefs(old, cur map[string]string) string {
	var out []string
	for k, h := range cur {
		if old[k] != h {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			out = append(out, k+" (removed)")
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "unknown"
	}
	return strings.Join(out, ", ")
}

// normalize turns the JSON numbers of the meta's free-form values into
// int64 or float64, as in the state.
func (m *meta) normalize() {
	m.Input = normalizeObject(m.Input)
	m.SideWrites = normalizeObject(m.SideWrites)
	m.Pending = normalizeObject(m.Pending)
	for _, e := range m.Journal {
		e.Args = normalizeObject(e.Args)
		if e.Decision != nil {
			e.Decision.Args, e.Decision.Extra = normalizeObject(e.Decision.Args), normalizeObject(e.Decision.Extra)
		}
		e.State = normalizeObject(e.State)
		if e.Exec != nil {
			e.Exec.Input = normalizeObject(e.Exec.Input)
			e.Exec.Output = NormalizeJSON(e.Exec.Output)
		}
	}
}

// latest folds a newer checkpoint's meta into m: the first snapshot's
// input and definitions, the newest usage and budget.
func (m *meta) latest(n *meta) {
	if m.Input == nil && m.Defs == nil {
		m.Input, m.Defs, m.Tenant, m.Turn, m.Started, m.Requester = n.Input, n.Defs, n.Tenant, n.Turn, n.Started, n.Requester
	}
	if n.Usage != nil {
		m.Usage = n.Usage
	}
	if n.Budget != nil {
		m.Budget = n.Budget
	}
	if n.Caught != nil {
		m.Caught = n.Caught
	}
}
