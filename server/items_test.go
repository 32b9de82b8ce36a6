package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStoreAPI drives the store group as LangGraph's SDK calls it: put,
// get (null when missing), search by prefix and filter, namespaces,
// delete; each tenant sees its own items only.
func TestStoreAPI(t *testing.T) {
	e := newEnv(t)
	if flags, _ := e.call("GET", "/info", nil, 200)["flags"].(map[string]any); flags["store"] != true {
		t.Errorf("/info flags = %v, want store: true", flags)
	}
	for _, it := range []map[string]any{
		{"namespace": []string{"user", "u1"}, "key": "editor", "value": map[string]any{"fact": "uses Helix", "kind": "pref"}},
		{"namespace": []string{"user", "u1", "notes"}, "key": "n1", "value": map[string]any{"fact": "likes tea", "kind": "note"}, "ttl": 60},
		{"namespace": []string{"user", "u2"}, "key": "editor", "value": map[string]any{"fact": "uses vim", "kind": "pref"}},
	} {
		e.call("PUT", "/store/items", it, http.StatusNoContent)
	}
	got := e.call("GET", "/store/items?namespace=user.u1&key=editor", nil, 200)
	if v, _ := got["value"].(map[string]any); v["fact"] != "uses Helix" || got["key"] != "editor" || got["created_at"] == nil {
		t.Errorf("GET item = %v", got)
	}
	if body := strings.TrimSpace(string(e.raw("GET", "/store/items?namespace=user.u1&key=nope", nil, 200))); body != "null" {
		t.Errorf("GET of a missing item = %s, want null", body)
	}

	found := e.call("POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"user"}, "filter": map[string]any{"kind": "pref"}}, 200)
	if items, _ := found["items"].([]any); len(items) != 2 {
		t.Errorf("search of prefs = %v, want u1's and u2's", found)
	}
	found = e.call("POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"user", "u1"}, "limit": 1}, 200)
	if items, _ := found["items"].([]any); len(items) != 1 || items[0].(map[string]any)["key"] != "n1" {
		t.Errorf("search of u1, limit 1 = %v, want the newest, n1", found)
	}
	ns := e.call("POST", "/store/namespaces", map[string]any{"prefix": []string{"user"}, "max_depth": 2}, 200)
	if b, _ := json.Marshal(ns["namespaces"]); string(b) != `[["user","u1"],["user","u2"]]` {
		t.Errorf("namespaces = %s", b)
	}

	e.key = otherKey
	if found := e.call("POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"user"}}, 200); len(found["items"].([]any)) != 0 {
		t.Errorf("tenant other sees %v", found)
	}
	e.call("DELETE", "/store/items", map[string]any{"namespace": []string{"user", "u1"}, "key": "editor"}, http.StatusNoContent)
	e.key = testKey
	e.call("GET", "/store/items?namespace=user.u1&key=editor", nil, 200) // still there: other's delete was of its own
	e.call("DELETE", "/store/items", map[string]any{"namespace": []string{"user", "u1"}, "key": "editor"}, http.StatusNoContent)
	if body := strings.TrimSpace(string(e.raw("GET", "/store/items?namespace=user.u1&key=editor", nil, 200))); body != "null" {
		t.Errorf("GET after DELETE = %s, want null", body)
	}
}

// TestStoreAPIRefusals: bad namespaces, values, TTLs, filters and limits
// are 422 problems that say what to send.
func TestStoreAPIRefusals(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		method, path string
		body         any
		want         string
	}{
		{"PUT", "/store/items", map[string]any{"namespace": []string{"a.b"}, "key": "k", "value": map[string]any{}}, "period"},
		{"PUT", "/store/items", map[string]any{"namespace": []string{}, "key": "k", "value": map[string]any{}}, "namespace is empty"},
		{"PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": []int{1}}, "JSON object"},
		{"PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{}, "ttl": -1}, "ttl"},
		{"GET", "/store/items?namespace=a", nil, "key is required"},
		{"POST", "/store/items/search", map[string]any{"filter": map[string]any{"n": map[string]any{"$near": 1}}}, "unknown operator"},
		{"POST", "/store/items/search", map[string]any{"limit": 0}, "limit"},
		{"POST", "/store/namespaces", map[string]any{"max_depth": 0}, "max_depth"},
	}
	for _, c := range cases {
		body := e.raw(c.method, c.path, c.body, http.StatusUnprocessableEntity)
		var p struct{ Detail string }
		if err := json.Unmarshal(body, &p); err != nil || !strings.Contains(p.Detail, c.want) {
			t.Errorf("%s %s %v: problem %s, want its detail to say %q", c.method, c.path, c.body, body, c.want)
		}
	}
}
