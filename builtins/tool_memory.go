package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// memoryTool is a tool of the memory kind: a get, put or search of the
// run's long-term memory (runner.ToolCall.Memory), in the namespace its
// definition computes from the call's args and state. What it cannot do
// with the args and state it was given (a bad namespace, a value that is
// not an object) fails for good; a store error may be retried.
type memoryTool struct {
	name string
	def  *dsl.MemoryDef
}

func (t *memoryTool) Call(ctx context.Context, call *runner.ToolCall) (any, error) {
	mem := call.Memory
	if mem.Items == nil {
		return nil, runner.Permanent(fmt.Errorf("tool %s: the run has no memory store (run it with a store: sqlite, postgres or memory)", t.name))
	}
	vars := map[string]any{"args": call.Args, "state": map[string]any(call.State)}
	ns, err := t.namespace(vars)
	if err != nil {
		return nil, runner.Permanent(fmt.Errorf("tool %s: %w", t.name, err))
	}
	var result any
	switch t.def.Op {
	case dsl.MemoryGet:
		result, err = t.get(ctx, mem, ns, vars)
	case dsl.MemoryPut:
		result, err = t.put(ctx, mem, ns, vars, call.Key)
	default:
		result, err = t.search(ctx, mem, ns, vars)
	}
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.name, err)
	}
	result = runner.NormalizeJSON(result)
	if t.def.Response == nil {
		return result, nil
	}
	out, err := t.def.Response.Eval(map[string]any{"args": call.Args, "result": result})
	if err != nil {
		return nil, runner.Permanent(fmt.Errorf("tool %s: response: %w", t.name, err))
	}
	return out, nil
}

// namespace evaluates the definition's namespace.
func (t *memoryTool) namespace(vars map[string]any) ([]string, error) {
	v, err := t.def.Namespace.Eval(vars)
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	list, ok := runner.NormalizeJSON(v).([]any)
	if !ok {
		return nil, fmt.Errorf("namespace: %T, want a list of strings such as [\"user\", state.user_id]", v)
	}
	ns := make([]string, len(list))
	for i, l := range list {
		if ns[i], ok = l.(string); !ok {
			return nil, fmt.Errorf("namespace %v: label %d is %T, want a string", list, i, l)
		}
	}
	if err := store.CheckNamespace(ns); err != nil {
		return nil, fmt.Errorf("namespace %q: %w", ns, err)
	}
	return ns, nil
}

// value is the expression p over vars, or the argument arg when p is nil.
func value(p *dsl.Program, vars map[string]any, arg string) (any, error) {
	if p == nil {
		return vars["args"].(map[string]any)[arg], nil
	}
	v, err := p.Eval(vars)
	if err != nil {
		return nil, runner.Permanent(fmt.Errorf("%s: %w", arg, err))
	}
	return v, nil
}

// key is the item's key; a put without one uses fallback.
func (t *memoryTool) key(vars map[string]any, fallback string) (string, error) {
	v, err := value(t.def.Key, vars, "key")
	if err != nil {
		return "", err
	}
	k, _ := v.(string)
	switch {
	case k != "":
		return k, nil
	case fallback != "":
		return fallback, nil
	}
	return "", runner.Permanent(errors.New("key: none given; pass args.key, or set memory.key"))
}

func (t *memoryTool) get(ctx context.Context, mem runner.Memory, ns []string, vars map[string]any) (any, error) {
	key, err := t.key(vars, "")
	if err != nil {
		return nil, err
	}
	it, err := mem.Items.Item(ctx, mem.Tenant, ns, key, true)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return itemJSON(it), nil
}

func (t *memoryTool) put(ctx context.Context, mem runner.Memory, ns []string, vars map[string]any, callKey string) (any, error) {
	key, err := t.key(vars, callKey)
	if err != nil {
		return nil, err
	}
	v, err := value(t.def.Value, vars, "value")
	if err != nil {
		return nil, err
	}
	if v == nil && t.def.Value == nil {
		v = withoutKey(vars["args"].(map[string]any))
	}
	if _, ok := runner.NormalizeJSON(v).(map[string]any); !ok {
		return nil, runner.Permanent(fmt.Errorf("value: %T, want an object", v))
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, runner.Permanent(fmt.Errorf("value: %w", err))
	}
	if err := mem.Items.PutItem(ctx, mem.Tenant, &store.Item{Namespace: ns, Key: key, Value: raw, TTL: t.def.TTL}); err != nil {
		return nil, err
	}
	return map[string]any{"namespace": ns, "key": key}, nil
}

// withoutKey is args without its key: the value of a put given neither
// memory.value nor args.value.
func withoutKey(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if k != "key" {
			out[k] = v
		}
	}
	return out
}

func (t *memoryTool) search(ctx context.Context, mem runner.Memory, ns []string, vars map[string]any) (any, error) {
	q := store.ItemQuery{Prefix: ns, Refresh: true}
	f, err := value(t.def.Filter, vars, "filter")
	if err != nil {
		return nil, err
	}
	if f != nil {
		obj, ok := f.(map[string]any)
		if !ok {
			return nil, runner.Permanent(fmt.Errorf("filter: %T, want an object", f))
		}
		if q.Filter, err = store.ParseFilter(obj); err != nil {
			return nil, runner.Permanent(err)
		}
	}
	limit, err := value(t.def.Limit, vars, "limit")
	if err != nil {
		return nil, err
	}
	if limit != nil {
		n, ok := runner.NormalizeJSON(limit).(int64)
		if !ok || n < 1 || n > store.MaxItemLimit {
			return nil, runner.Permanent(fmt.Errorf("limit: %v, want a whole number from 1 to %d", limit, store.MaxItemLimit))
		}
		q.Limit = int(n)
	}
	items, err := mem.Items.SearchItems(ctx, mem.Tenant, q)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i := range items {
		out[i] = itemJSON(&items[i])
	}
	return map[string]any{"items": out}, nil
}

// itemJSON is an item as the tool returns it: as the store API does.
func itemJSON(it *store.Item) map[string]any {
	var v any
	_ = json.Unmarshal(it.Value, &v) // the store keeps JSON objects only
	return map[string]any{"namespace": it.Namespace, "key": it.Key, "value": v,
		"created_at": it.CreatedAt.Format(time.RFC3339Nano), "updated_at": it.UpdatedAt.Format(time.RFC3339Nano)}
}
