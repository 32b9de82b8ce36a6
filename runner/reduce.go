package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/google/uuid"
)

// Reducer merges a node's update of a field into its current value.
type Reducer func(old, update any) (any, error)

// Reducers by the name documents use.
var Reducers = map[string]Reducer{
	"replace":  Replace,
	"append":   Append,
	"add":      Add,
	"merge":    Merge,
	"messages": Messages,
	"readonly": Readonly,
}

// Replace takes the update.
func Replace(_, update any) (any, error) { return update, nil }

// ErrReadonly is the error of an update of a readonly field.
var ErrReadonly = errors.New("readonly: the field is set only by the run's input or its default; no node, tool or rule may update it")

// Readonly refuses every update: the field keeps what the run's input or
// its default gave it. The step's merge names the field ("field input:
// readonly: ..."), and the node's update is not applied.
func Readonly(_, _ any) (any, error) { return nil, ErrReadonly }

// Append appends the update — a list's elements, or one value — to the
// list. The result never shares its array with the old value.
func Append(old, update any) (any, error) {
	list, ok := old.([]any)
	if old != nil && !ok {
		return nil, fmt.Errorf("append: the field holds %T, not a list", old)
	}
	if more, ok := update.([]any); ok {
		return append(slices.Clip(list), more...), nil
	}
	return append(slices.Clip(list), update), nil
}

// lists lets a run's append reducer grow lists in place, amortised O(1) a
// step instead of a copy of the whole list: it holds, per field, the list
// the run last appended to, with its spare capacity. The state holds that
// list clipped to its length, so whoever else appends to it copies it,
// and only the run writes past its end; a list the run did not make, or
// not the newest it made for the field, is copied first, as Append does.
type lists map[string][]any

// appendPC identifies the Append reducer, which lists stands in for.
var appendPC = reflect.ValueOf(Append).Pointer()

// isAppend reports whether f is the Append reducer.
func isAppend(f Reducer) bool { return reflect.ValueOf(f).Pointer() == appendPC }

// append is Append of update to old, the value of field.
func (l lists) append(field string, old, update any) (any, error) {
	list, ok := old.([]any)
	if old != nil && !ok {
		return Append(old, update)
	}
	full := l[field]
	if len(list) == 0 || len(full) != len(list) || &full[0] != &list[0] {
		full = slices.Clip(list)
	}
	if more, ok := update.([]any); ok {
		full = append(full, more...)
	} else {
		full = append(full, update)
	}
	l[field] = full
	return slices.Clip(full), nil
}

// Add adds numbers; integers stay integers.
func Add(old, update any) (any, error) {
	a, aInt, okA := number(old)
	b, bInt, okB := number(update)
	if !okA || !okB {
		return nil, fmt.Errorf("add: cannot add %T to %T", update, old)
	}
	if aInt && bInt {
		return int64(a) + int64(b), nil
	}
	return a + b, nil
}

// number reads a JSON-like number; a nil is zero.
func number(v any) (f float64, isInt bool, ok bool) {
	switch n := v.(type) {
	case nil:
		return 0, true, true
	case int:
		return float64(n), true, true
	case int64:
		return float64(n), true, true
	case float64:
		return n, n == float64(int64(n)), true
	}
	return 0, false, false
}

// Merge merges maps key by key (the update wins).
func Merge(old, update any) (any, error) {
	a, okA := old.(map[string]any)
	b, okB := update.(map[string]any)
	if (old != nil && !okA) || !okB {
		return nil, fmt.Errorf("merge: cannot merge %T into %T", update, old)
	}
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out, nil
}

// Messages appends chat messages. A message whose "id" matches an existing
// one replaces it, and {"type": "remove", "id": ...} removes it; a tool
// message must answer a tool call of an earlier assistant message that no
// other tool message answered yet. A message without an id is stored with
// the one messageIDs gives it.
func Messages(old, update any) (any, error) {
	msgs, _ := old.([]any)
	out := slices.Clip(msgs)
	adds, _ := messageIDs(msgs, update)
	for _, m := range adds {
		msg, ok := m.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("messages: a message is an object, not %T", m)
		}
		i := indexByID(out, msg["id"])
		if msg["type"] == "remove" {
			if i < 0 {
				return nil, fmt.Errorf("messages: no message %v to remove", msg["id"])
			}
			out = slices.Delete(slices.Clone(out), i, i+1)
			continue
		}
		if i >= 0 {
			out = slices.Clone(out)
			out[i] = msg
			continue
		}
		if err := checkToolReply(out, msg); err != nil {
			return nil, err
		}
		out = append(out, msg)
	}
	return out, nil
}

// messageNS is the namespace of the ids messageIDs gives.
var messageNS = uuid.MustParse("6f1d2c3b-8a4e-5f70-9b1c-2d3e4f5a6b7c")

// messageIDs returns the messages of update (a list, or one message) for
// a field that holds msgs, those without an id given one, and whether it
// gave any. The id of the j-th of them is a UUID (version 5) of the last
// message's id in msgs, the length of msgs, j and the message itself: the
// same run gives the same ids (a scripted Test is reproducible, a replay
// of a thread's writes rebuilds its state), and no two messages a field
// holds at once share one — a message added after the last one stays
// after it while both are kept.
func messageIDs(msgs []any, update any) ([]any, bool) {
	adds, ok := update.([]any)
	if !ok {
		adds = []any{update}
	}
	var out []any
	j := 0
	for i, m := range adds {
		msg, ok := m.(map[string]any)
		if !ok || idOf(msg) != "" {
			continue
		}
		if out == nil {
			out = slices.Clone(adds)
		}
		last := ""
		if len(msgs) > 0 {
			last = idOf(msgs[len(msgs)-1])
		}
		body, _ := json.Marshal(msg)
		withID := maps.Clone(msg)
		withID["id"] = uuid.NewSHA1(messageNS, fmt.Appendf(nil, "%s/%d/%d/%s", last, len(msgs), j, body)).String()
		out[i], j = withID, j+1
	}
	if out == nil {
		return adds, false
	}
	return out, true
}

// idOf returns a message's id, "" when it has none.
func idOf(m any) string {
	mm, _ := m.(map[string]any)
	id, _ := mm["id"].(string)
	return id
}

// messagesPC identifies the Messages reducer.
var messagesPC = reflect.ValueOf(Messages).Pointer()

// withMessageIDs gives the messages of upd that have none the ids the
// Messages reducer would give them, so that the update a step records and
// streams holds the messages as the state keeps them. upd is not changed.
func withMessageIDs(g *Graph, state State, upd Update) Update {
	var out Update
	for k, v := range upd {
		f, ok := g.Fields[k]
		if !ok || f.Reducer == nil || reflect.ValueOf(f.Reducer).Pointer() != messagesPC {
			continue
		}
		msgs, _ := state[k].([]any)
		if withIDs, gave := messageIDs(msgs, v); gave {
			if out == nil {
				out = maps.Clone(upd)
			}
			out[k] = withIDs
		}
	}
	if out == nil {
		return upd
	}
	return out
}

func indexByID(msgs []any, id any) int {
	if id == nil || id == "" {
		return -1
	}
	for i, m := range msgs {
		if mm, ok := m.(map[string]any); ok && mm["id"] == id {
			return i
		}
	}
	return -1
}

// checkToolReply enforces tool-call pairing for a tool message.
func checkToolReply(msgs []any, msg map[string]any) error {
	if msg["role"] != "tool" {
		return nil
	}
	id := msg["tool_call_id"]
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "tool" && m["tool_call_id"] == id {
			return fmt.Errorf("messages: tool call %v is answered twice", id)
		}
		if m["role"] == "assistant" && callsTool(m, id) {
			return nil
		}
	}
	return fmt.Errorf("messages: tool message answers unknown tool call %v", id)
}

func callsTool(assistant map[string]any, id any) bool {
	calls, _ := assistant["tool_calls"].([]any)
	for _, c := range calls {
		if cm, ok := c.(map[string]any); ok && cm["id"] == id {
			return true
		}
	}
	return false
}
