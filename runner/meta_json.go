package runner

import (
	"encoding/json"
	"slices"
)

// appendJSON appends m as json.Marshal writes it (fields in order, empty
// ones left out, HTML escaped) without its reflection: a step's
// checkpoint carries a meta, most often the usage alone, and marshaling
// it was a sixtieth of a served run's CPU. The rare parts (an error, an
// extended budget, a journal) still go through json.Marshal.
func (m *meta) appendJSON(b []byte) ([]byte, error) {
	e := jsonEncoder{escapeHTML: true}
	o := jsonObject{b: append(b, '{'), e: e}
	if len(m.Input) > 0 {
		o.value("input", m.Input)
	}
	if len(m.Defs) > 0 {
		o.key("defs")
		o.b = e.appendStrings(o.b, m.Defs)
	}
	if m.Error != nil {
		o.marshal("error", m.Error)
	}
	if m.Usage != nil {
		o.key("usage")
		var err error
		if o.b, err = m.Usage.appendJSON(o.b); err != nil && o.err == nil {
			o.err = err
		}
	}
	if m.Budget != nil {
		o.marshal("budget", m.Budget)
	}
	if len(m.SideWrites) > 0 {
		o.value("side_writes", m.SideWrites)
	}
	if len(m.Pending) > 0 {
		o.value("pending", m.Pending)
	}
	if len(m.Journal) > 0 {
		o.marshal("journal", m.Journal)
	}
	if m.Tenant != "" {
		o.value("tenant", m.Tenant)
	}
	if m.Turn != 0 {
		o.value("turn", m.Turn)
	}
	if !m.Started.IsZero() {
		o.marshal("started", m.Started)
	}
	if m.Requester != "" {
		o.value("requester", m.Requester)
	}
	if len(m.Caught) > 0 {
		o.value("caught", m.Caught)
	}
	return append(o.b, '}'), o.err
}

// appendJSON appends u as json.Marshal writes it.
func (u *RunUsage) appendJSON(b []byte) ([]byte, error) {
	o := jsonObject{b: append(b, '{'), e: jsonEncoder{escapeHTML: true}}
	o.value("input_tokens", u.InputTokens)
	o.value("output_tokens", u.OutputTokens)
	for _, f := range []struct {
		key string
		v   any
		set bool
	}{
		{"cached_input_tokens", u.CachedInputTokens, u.CachedInputTokens != 0},
		{"cost_usd", u.CostUSD, u.CostUSD != 0},
		{"llm_calls", u.LLMCalls, u.LLMCalls != 0},
		{"tool_calls", u.ToolCalls, u.ToolCalls != 0},
		{"iterations", u.Iterations, u.Iterations != 0},
		{"structured_retries", u.StructuredRetries, u.StructuredRetries != 0},
	} {
		if f.set {
			o.value(f.key, f.v)
		}
	}
	return append(o.b, '}'), o.err
}

// appendStrings appends a map of strings, its keys sorted.
func (e jsonEncoder) appendStrings(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.appendString(append(e.appendString(b, k), ':'), m[k])
	}
	return append(b, '}')
}

// jsonObject writes an object's members, remembering the first error.
type jsonObject struct {
	b   []byte
	e   jsonEncoder
	n   int
	err error
}

func (o *jsonObject) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.e.appendString(o.b, k), ':')
}

func (o *jsonObject) value(k string, v any) {
	o.key(k)
	var err error
	if o.b, err = o.e.append(o.b, v); err != nil && o.err == nil {
		o.err = err
	}
}

func (o *jsonObject) marshal(k string, v any) {
	o.key(k)
	out, err := json.Marshal(v)
	if err != nil && o.err == nil {
		o.err = err
	}
	o.b = append(o.b, out...)
}
