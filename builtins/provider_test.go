package builtins_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
)

// apiRecord is what a fake provider endpoint received.
type apiRecord struct {
	mu     sync.Mutex
	calls  int
	path   string
	header http.Header
	body   map[string]any
}

// last is the last request's path, headers and decoded body.
func (a *apiRecord) last() (string, http.Header, map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.path, a.header, a.body
}

// callCount is the number of requests received.
func (a *apiRecord) callCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// serveAPI starts a fake endpoint that records each request and answers
// with reply.
func serveAPI(t *testing.T, reply http.HandlerFunc) (*httptest.Server, *apiRecord) {
	t.Helper()
	api := &apiRecord{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		api.mu.Lock()
		api.calls++
		api.path, api.header, api.body = r.URL.Path, r.Header.Clone(), body
		api.mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, api
}

// jsonReply answers with status, a JSON body and header pairs.
func jsonReply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// decodeJSON decodes a JSON literal of a test.
func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON in test: %v\n%s", err, s)
	}
	return v
}

// assertField compares one field of a request body with JSON want; want
// "" means the field must be absent.
func assertField(t *testing.T, body map[string]any, field, want string) {
	t.Helper()
	got, present := body[field]
	gotJSON, _ := json.Marshal(got)
	switch {
	case want == "" && present:
		t.Errorf("request %s = %s, want it absent", field, gotJSON)
	case want != "" && !reflect.DeepEqual(got, decodeJSON(t, want)):
		t.Errorf("request %s:\n got %s\nwant %s", field, gotJSON, want)
	}
}
