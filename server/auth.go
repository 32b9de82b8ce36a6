package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// principal is the principal the request acts as (authenticate put it in
// its context).
func principal(ctx context.Context) access.Principal {
	p, _ := access.FromContext(ctx)
	return p
}

// threadKey is the store id of the thread the request's tenant knows as id.
func threadKey(ctx context.Context, id string) string {
	return access.ThreadKey(principal(ctx).Tenant, id)
}

// authenticate lets a request through as the principal of its
// credentials (caller), or as the local principal without auth; without
// good credentials it is 401 (503 when a token's issuer cannot be read).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := access.Local(), error(nil)
		if !s.cfg.NoAuth {
			p, err = s.caller(r)
		}
		switch {
		case errors.Is(err, access.ErrIssuerUnavailable):
			s.writeProblem(w, problemf(http.StatusServiceUnavailable, "%v", err))
			return
		case errors.Is(err, access.ErrToken):
			w.Header().Set("WWW-Authenticate", `Bearer realm="runner", error="invalid_token"`)
			s.writeProblem(w, problemf(http.StatusUnauthorized, "%v", err))
			return
		case err != nil:
			w.Header().Set("WWW-Authenticate", `Bearer realm="runner"`)
			s.writeProblem(w, problemf(http.StatusUnauthorized, "%v", err))
			return
		}
		notePrincipal(r.Context(), p)
		next.ServeHTTP(w, r.WithContext(access.NewContext(r.Context(), p)))
	})
}

// caller is the principal of r's credentials: an API key (x-api-key, or
// Authorization: Bearer), or else, when the server verifies tokens
// (Config.Tokens), a bearer JWT.
func (s *Server) caller(r *http.Request) (access.Principal, error) {
	key, bearer := r.Header.Get("X-Api-Key"), false
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); key == "" && ok {
		key, bearer = strings.TrimSpace(b), true
	}
	if p, ok := s.cfg.Keys.Lookup(key); ok {
		return p, nil
	}
	if bearer && s.cfg.Tokens != nil && access.IsJWT(key) {
		return s.cfg.Tokens.Principal(r.Context(), key)
	}
	if s.cfg.Tokens != nil {
		return access.Principal{}, errors.New("a valid API key (x-api-key header or Authorization: Bearer) or a bearer token of the configured issuer is required")
	}
	return access.Principal{}, errors.New("a valid API key is required (x-api-key header or Authorization: Bearer)")
}

// thread returns the record of the thread the request's principal knows
// as id, if the principal may use it: the one check (access.Authorize) of
// every endpoint that names a thread, a run, a stream or a conversation.
// Another tenant's thread, a child thread and an unknown one are the same
// 404.
func (s *Server) thread(ctx context.Context, id string) (*store.ThreadRecord, error) {
	p := principal(ctx)
	key := access.ThreadKey(p.Tenant, id)
	rec, err := s.runs.Thread(ctx, key)
	switch {
	case err == nil && access.Authorize(p, key, rec.Tenant) == nil:
		return rec, nil
	case err == nil, errors.Is(err, store.ErrNotFound):
		return nil, problemf(http.StatusNotFound, "no thread %q", id)
	}
	return nil, err
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
		h.Set("Access-Control-Expose-Headers", "Content-Location, Location, X-Request-Id, Retry-After")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Api-Key, Authorization, Last-Event-ID, Idempotency-Key, X-Request-Id")
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
