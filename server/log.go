package server

import (
	"context"
	"net/http"
	"time"

	"github.com/runner-dev/runner/runner/access"
)

// requestInfo is what the request log learns while a request is served:
// its id, and the principal its key authenticated (never the key
// itself).
type requestInfo struct {
	id string
	p  access.Principal
}

type requestInfoKey struct{}

// notePrincipal records the request's principal for its log line.
func notePrincipal(ctx context.Context, p access.Principal) {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		info.p = p
	}
}

// requestIDOf is the id of the request ctx serves ("": none).
func requestIDOf(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// logRequests gives every request its id (X-Request-Id on the response)
// and logs it once it is served: id, method, path, status, duration,
// tenant and principal.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r)
		info := &requestInfo{id: id}
		w.Header().Set(requestIDHeader, id)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)))
		s.cfg.Log.Info("request", "request_id", id, "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration_ms", time.Since(start).Milliseconds(), "tenant", info.p.Tenant, "principal", info.p.Name)
	})
}

// statusRecorder remembers a response's status; Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap is the writer underneath.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
