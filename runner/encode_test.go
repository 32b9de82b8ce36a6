package runner

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// controls holds every ASCII control character and DEL.
var controls = func() string {
	var b []byte
	for c := range 0x20 {
		b = append(b, 'x', byte(c))
	}
	return string(append(b, 0x7f))
}()

// TestEncodeJSON: the checkpoint encoder writes what encoding/json does.
func TestEncodeJSON(t *testing.T) {
	type rec struct {
		A int `json:"a"`
	}
	for _, v := range []any{
		nil, true, "plain", "<tag> & \"q\" \\ \n é \u2028", controls, "bad \xff\xfe utf-8 \u2029 €", int64(-42), 7, 0.0, 1.5, -2e-7, 3e21, 1e20, 123456789.125,
		[]any{}, []any(nil), map[string]any{}, map[string]any(nil),
		State{"b": []any{int64(1), "x", map[string]any{"z": nil, "a": false}}, "a": rec{A: 1}, "é": 1},
		Update{"n": 1}, []string{"typed"},
	} {
		want, _ := json.Marshal(v)
		got, err := MarshalJSON(v)
		if err != nil || string(got) != string(want) {
			t.Errorf("MarshalJSON(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"f": func() {}}} {
		if _, err := MarshalJSON(v); err == nil {
			t.Errorf("MarshalJSON(%T): no error", v)
		}
		if _, err := AppendJSON(nil, v, false); err == nil {
			t.Errorf("AppendJSON(%T, no HTML escapes): no error", v)
		}
	}
}

// TestAppendJSONNoHTMLEscape: without HTML escapes, AppendJSON writes
// what a json.Encoder with SetEscapeHTML(false) does, less its newline.
func TestAppendJSONNoHTMLEscape(t *testing.T) {
	for _, v := range []any{
		"plain", "<tag> & \"q\" \\ \n é \u2028", controls, "bad \xff utf-8 \u2029", map[string]any{"<k>": []any{"a&b", 1.5, nil}},
		State{"m": map[string]any{"x": "<y>"}}, []string{"<typed>"},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		got, err := AppendJSON([]byte("prefix "), v, false)
		if err != nil || string(got) != "prefix "+string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("AppendJSON(%#v) = %s, %v; want %s", v, got, err, want.Bytes())
		}
	}
}

// TestMarshalJSONOwnsItsBytes: MarshalJSON and WriteJSON encode into
// pooled buffers; what MarshalJSON returns is the caller's alone, and
// WriteJSON writes what a json.Encoder without HTML escapes writes.
func TestMarshalJSONOwnsItsBytes(t *testing.T) {
	first, _ := MarshalJSON(map[string]any{"a": "first"})
	for range 100 {
		if _, err := MarshalJSON(map[string]any{"b": "a later, longer encoding"}); err != nil {
			t.Fatal(err)
		}
	}
	if string(first) != `{"a":"first"}` {
		t.Fatalf("an earlier encoding changed: %s", first)
	}
	var got, want bytes.Buffer
	v := map[string]any{"<k>": "a&b"}
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	if err := WriteJSON(&got, v, false); err != nil || got.String() != want.String() {
		t.Fatalf("WriteJSON = %q, %v; want %q", got.String(), err, want.String())
	}
}

// TestMetaJSON: a checkpoint's meta is written as json.Marshal writes it.
func TestMetaJSON(t *testing.T) {
	started := time.Date(2026, 11, 25, 8, 0, 0, 123456789, time.UTC)
	for _, m := range []meta{
		{},
		{Usage: &RunUsage{ToolCalls: 2}},
		{Usage: &RunUsage{Usage: Usage{InputTokens: 10, OutputTokens: 3, CachedInputTokens: 4}, CostUSD: 0.0025,
			LLMCalls: 1, ToolCalls: 2, Iterations: 3, StructuredRetries: 1}},
		{Input: map[string]any{"q": "<tag> & é"}, Defs: map[string]string{"pipeline/p": "abc", "agent/a": "d\"ef"},
			Tenant: "acme", Turn: 3, Started: started, Requester: "alice", Usage: &RunUsage{}},
		{Error: &RunError{Code: "node_error", Node: "n", Message: "boom"}, Budget: &Budget{MaxTokens: 5},
			SideWrites: Update{"a": 1}, Pending: Update{"b": []any{"x"}}, Journal: []*callEntry{{}},
			Caught: map[string]any{"message": "m", "kind": "k"}},
	} {
		want, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := m.appendJSON(nil); err != nil || string(got) != string(want) {
			t.Errorf("meta.appendJSON = %s, %v\n              want %s", got, err, want)
		}
	}
	if _, err := (&meta{Usage: &RunUsage{CostUSD: math.NaN()}}).appendJSON(nil); err == nil {
		t.Error("meta.appendJSON of a NaN cost: no error")
	}
	if n := reflect.TypeFor[meta]().NumField(); n != 13 {
		t.Errorf("meta has %d fields, not 13: write the new ones in meta.appendJSON, and here", n)
	}
}
