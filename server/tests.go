package server

import (
	"net/http"

	"github.com/runner-dev/runner/dsl"
)

// testsRequest is the body of POST /tests/run.
type testsRequest struct {
	// Filter runs only the Tests whose name contains it.
	Filter string `json:"filter"`
	// Cover adds what the Tests took of the project's pipelines and rule
	// sets (testrun.Coverage) to the report.
	Cover bool `json:"cover"`
}

// runTests runs the served project's Test documents with the harness
// runner test uses (mocks, scripts, a memory store each, a virtual clock;
// never a live call), those of the caller's tenant and those naming
// none. One request runs Tests at a time; another meanwhile is 429.
func (s *Server) runTests(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Tests == nil {
		return problemf(http.StatusNotFound, "this server serves no Test documents")
	}
	var req testsRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	p := principal(r.Context())
	var tests []*dsl.TestDef
	for _, t := range s.cfg.Tests.Tests(req.Filter) {
		if p.Sees(t.Tenant) {
			tests = append(tests, t)
		}
	}
	if len(tests) == 0 {
		return problemf(http.StatusNotFound, "no Test name contains %q", req.Filter)
	}
	if !s.testing.TryLock() {
		w.Header().Set("Retry-After", "1")
		return problemf(http.StatusTooManyRequests, "Tests are running for another request; try again when they are done")
	}
	defer s.testing.Unlock()
	rep := s.cfg.Tests.Report(r.Context(), tests, false, req.Cover)
	if rep.Coverage != nil { // another tenant's rule sets are not the caller's to see
		rep.Coverage = rep.Coverage.Seen(p.Sees)
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
