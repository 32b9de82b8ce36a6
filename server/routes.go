package server

import "net/http"

// route is one endpoint of the router: a pattern of http.ServeMux and its
// handler.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// publicRoutes need no key: health, readiness, info and, unless it has a
// listener of its own, metrics.
func (s *Server) publicRoutes() []route {
	rs := []route{{"GET /ok", s.ok}, {"GET /healthz", s.ok}, {"GET /readyz", s.ready}, {"GET /info", s.info}}
	if !s.cfg.OwnMetricsListener {
		rs = append(rs, route{"GET /metrics", s.metrics.handler().ServeHTTP})
	}
	return rs
}

// apiRoutes are the endpoints that need a key, each answering its error
// as a problem. Every one that names a thread, a run, a stream or a
// conversation authorises through Server.thread; the isolation test walks
// them all.
func (s *Server) apiRoutes() []route {
	api := func(pattern string, h func(http.ResponseWriter, *http.Request) error) route {
		return route{pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				writeProblem(w, err)
			}
		}}
	}
	return []route{
		api("POST /assistants", s.createAssistant),
		api("POST /assistants/search", s.searchAssistants),
		api("POST /assistants/count", s.countAssistants),
		api("GET /assistants/{id}", s.getAssistant),
		api("PATCH /assistants/{id}", s.patchAssistant),
		api("DELETE /assistants/{id}", s.deleteAssistant),
		api("POST /assistants/{id}/latest", s.setLatest),
		api("POST /assistants/{id}/versions", s.listVersions),
		api("GET /assistants/{id}/graph", s.getAssistantGraph),
		api("GET /assistants/{id}/schemas", s.getAssistantSchemas),

		api("POST /threads", s.createThread),
		api("POST /threads/search", s.searchThreads),
		api("GET /threads/{thread}", s.getThread),
		api("PATCH /threads/{thread}", s.patchThread),
		api("DELETE /threads/{thread}", s.deleteThread),
		api("GET /threads/{thread}/state", s.getState),
		api("GET /threads/{thread}/state/{checkpoint}", s.getState),
		api("POST /threads/{thread}/state", s.updateState),
		api("POST /threads/{thread}/history", s.history),
		api("GET /threads/{thread}/stream", s.threadStream),

		api("POST /threads/{thread}/runs", s.createBackgroundRun),
		api("POST /threads/{thread}/runs/stream", s.createStreamRun),
		api("POST /threads/{thread}/runs/wait", s.createWaitRun),
		api("POST /runs/stream", s.createStreamRun),
		api("POST /runs/wait", s.createWaitRun),
		api("GET /threads/{thread}/runs", s.listRuns),
		api("GET /threads/{thread}/runs/{run}", s.getRun),
		api("DELETE /threads/{thread}/runs/{run}", s.deleteRun),
		api("GET /threads/{thread}/runs/{run}/join", s.joinRun),
		api("GET /threads/{thread}/runs/{run}/stream", s.joinStream),
		api("POST /threads/{thread}/runs/{run}/cancel", s.cancelRun),
		api("POST /execute", s.executeAgent),
		api("GET /conversations/{id}/stream", s.conversationStream),
		api("POST /tests/run", s.runTests),
		{"/mcp", s.mcpHandler().ServeHTTP},
	}
}

// routes is the router: the public routes, then the API's behind its key,
// its body limit, and a 404 problem for what is no route.
func (s *Server) routes() *http.ServeMux {
	api := http.NewServeMux()
	for _, rt := range s.apiRoutes() {
		api.HandleFunc(rt.pattern, rt.handler)
	}
	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, problemf(http.StatusNotFound, "no endpoint %s %s", r.Method, r.URL.Path))
	})

	mux := http.NewServeMux()
	for _, rt := range s.publicRoutes() {
		mux.HandleFunc(rt.pattern, rt.handler)
	}
	mux.Handle("/", s.authenticate(s.limitStreams(s.limitBody(api))))
	outer := http.NewServeMux()
	outer.Handle("/", s.bound(s.logRequests(s.cors(mux))))
	return outer
}

// ok is LangGraph's health check.
func (s *Server) ok(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// ready reports whether the server takes runs: not while it shuts down,
// nor when its store cannot be written (storeWritable).
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		writeProblem(w, problemf(http.StatusServiceUnavailable, "shutting down"))
		return
	}
	if err := s.storeWritable(r.Context()); err != nil {
		writeProblem(w, problemf(http.StatusServiceUnavailable, "the store cannot be written; the server's log says why"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// info describes the server as LangGraph's /info does.
func (s *Server) info(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": s.cfg.Version, "runtime": "runner",
		"flags": map[string]bool{"assistants": true, "crons": false, "langsmith": false}})
}
