package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner/store"
)

// TestOpenAPI: GET /openapi.json describes every route of the route table
// the router is made from — its method, path parameters, request body and
// answer — and every route it describes is served (none answers with the
// router's "no endpoint"); /info's flags say which groups are served.
func TestOpenAPI(t *testing.T) {
	s, err := New(context.Background(), Config{Store: store.NewMemory(), NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	defer s.Shutdown(context.Background())
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	get(t, hs.URL+"/openapi.json", &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	described := 0
	for _, ep := range s.table {
		method, path := ep.route()
		op := doc.Paths[path][strings.ToLower(method)]
		if op == nil || op["summary"] == "" {
			t.Errorf("%s is not described", ep.pattern)
			continue
		}
		if strings.Contains(path, "{") && op["parameters"] == nil {
			t.Errorf("%s: no path parameters", ep.pattern)
		}
		if ep.body != nil && op["requestBody"] == nil {
			t.Errorf("%s: no request body", ep.pattern)
		}
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			described++
			req, _ := http.NewRequest(strings.ToUpper(method), hs.URL+pathParam.ReplaceAllString(path, "x"), strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var p problem
			_ = json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
			if strings.HasPrefix(p.Detail, "no endpoint") {
				t.Errorf("%s %s is described but not served: %s", method, path, p.Detail)
			}
		}
	}
	if described != len(s.table) {
		t.Errorf("%d operations described, the route table has %d", described, len(s.table))
	}
	run := doc.Paths["/threads/{thread}/runs/wait"]["post"]
	props := run["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["properties"].(map[string]any)
	for _, f := range []string{"assistant_id", "input", "command", "config", "stream_mode"} {
		if props[f] == nil {
			t.Errorf("the run body's schema has no %s: %v", f, props)
		}
	}
	var info struct{ Flags map[string]bool }
	get(t, hs.URL+"/info", &info)
	if !info.Flags["assistants"] || !info.Flags["crons"] || !info.Flags["store"] {
		t.Errorf("info flags %v", info.Flags)
	}
}

func get(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
}
