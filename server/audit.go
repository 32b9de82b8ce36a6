package server

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// exportAudit answers GET /audit: the caller's tenant's audit ledger as
// JSON Lines (store.ExportAudit), for its auditors alone; since (RFC
// 3339) limits the records written, and verify=true checks the whole
// chain first, answering 409 with the record where it breaks.
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request) error {
	a, ok := s.cfg.Store.(store.AuditStore)
	if !ok {
		return problemf(http.StatusNotImplemented, "the server's store keeps no audit ledger: serve with the memory, SQLite or PostgreSQL store")
	}
	p := principal(r.Context())
	if err := access.MayAudit(p); err != nil {
		return problemf(http.StatusForbidden, "%v", err)
	}
	q := store.AuditQuery{Tenant: p.Tenant}
	qs := r.URL.Query()
	var err error
	if v := qs.Get("since"); v != "" {
		if q.Since, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return problemf(http.StatusUnprocessableEntity, "since is %q; want a time in RFC 3339, like 2026-01-31T00:00:00Z", v)
		}
	}
	verify := false
	if v := qs.Get("verify"); v != "" {
		if verify, err = strconv.ParseBool(v); err != nil {
			return problemf(http.StatusUnprocessableEntity, "verify is %q; want true or false", v)
		}
	}
	if verify {
		if _, err := store.ExportAudit(r.Context(), a, q, true, io.Discard); err != nil {
			if b, ok := errors.AsType[*store.AuditBreak](err); ok {
				return problemf(http.StatusConflict, "%v", b)
			}
			return err
		}
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, err = store.ExportAudit(r.Context(), a, q, false, w)
	return err
}
