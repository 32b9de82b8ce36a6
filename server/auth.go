package server

import (
	"context"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
)

type tenantKey struct{}

// tenantOf is the tenant of the request's API key.
func tenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// authenticate lets a request through with the tenant of its API key
// (x-api-key, or Authorization: Bearer); without a known key it is 401.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.NoAuth {
			next.ServeHTTP(w, r)
			return
		}
		key := r.Header.Get("X-Api-Key")
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); key == "" && ok {
			key = strings.TrimSpace(b)
		}
		tenant, ok := s.tenantForKey(key)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="runner"`)
			writeProblem(w, problemf(http.StatusUnauthorized, "a valid API key is required (x-api-key header or Authorization: Bearer)"))
			return
		}
		noteTenant(r.Context(), tenant)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

// tenantForKey looks a key up by its hash, comparing in constant time.
func (s *Server) tenantForKey(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	h := HashKey(key)
	for hash, tenant := range s.cfg.APIKeys {
		if subtle.ConstantTimeCompare([]byte(strings.ToLower(hash)), []byte(h)) == 1 {
			return tenant, true
		}
	}
	return "", false
}

// cors answers preflight requests and marks responses for the configured
// origins, exposing the headers that locate a run.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		allowed := origin != "" && (slices.Contains(s.cfg.CORSOrigins, "*") || slices.Contains(s.cfg.CORSOrigins, origin))
		if !allowed {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "Content-Location, Location")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Api-Key, Authorization, Last-Event-ID, Idempotency-Key")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitBody caps request bodies at the configured size.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		next.ServeHTTP(w, r)
	})
}
