package server

import "net/http"

// routes maps the API's endpoints; health, info and metrics need no key.
func (s *Server) routes() *http.ServeMux {
	api := http.NewServeMux()
	handle := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		api.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				writeProblem(w, err)
			}
		})
	}
	handle("POST /assistants", s.createAssistant)
	handle("POST /assistants/search", s.searchAssistants)
	handle("POST /assistants/count", s.countAssistants)
	handle("GET /assistants/{id}", s.getAssistant)
	handle("PATCH /assistants/{id}", s.patchAssistant)
	handle("DELETE /assistants/{id}", s.deleteAssistant)
	handle("POST /assistants/{id}/latest", s.setLatest)
	handle("POST /assistants/{id}/versions", s.listVersions)
	handle("GET /assistants/{id}/graph", s.getAssistantGraph)
	handle("GET /assistants/{id}/schemas", s.getAssistantSchemas)

	handle("POST /threads", s.createThread)
	handle("POST /threads/search", s.searchThreads)
	handle("GET /threads/{thread}", s.getThread)
	handle("PATCH /threads/{thread}", s.patchThread)
	handle("DELETE /threads/{thread}", s.deleteThread)
	handle("GET /threads/{thread}/state", s.getState)
	handle("GET /threads/{thread}/state/{checkpoint}", s.getState)
	handle("POST /threads/{thread}/state", s.updateState)
	handle("POST /threads/{thread}/history", s.history)
	handle("GET /threads/{thread}/stream", s.threadStream)

	handle("POST /threads/{thread}/runs", s.createBackgroundRun)
	handle("POST /threads/{thread}/runs/stream", s.createStreamRun)
	handle("POST /threads/{thread}/runs/wait", s.createWaitRun)
	handle("POST /runs/stream", s.createStreamRun)
	handle("POST /runs/wait", s.createWaitRun)
	handle("GET /threads/{thread}/runs", s.listRuns)
	handle("GET /threads/{thread}/runs/{run}", s.getRun)
	handle("DELETE /threads/{thread}/runs/{run}", s.deleteRun)
	handle("GET /threads/{thread}/runs/{run}/join", s.joinRun)
	handle("GET /threads/{thread}/runs/{run}/stream", s.joinStream)
	handle("POST /threads/{thread}/runs/{run}/cancel", s.cancelRun)
	handle("POST /execute", s.executeAgent)
	handle("GET /conversations/{id}/stream", s.conversationStream)
	handle("POST /tests/run", s.runTests)
	api.Handle("/mcp", s.mcpHandler())
	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, problemf(http.StatusNotFound, "no endpoint %s %s", r.Method, r.URL.Path))
	})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", s.ok)
	mux.HandleFunc("GET /healthz", s.ok)
	mux.HandleFunc("GET /readyz", s.ready)
	mux.HandleFunc("GET /info", s.info)
	if !s.cfg.OwnMetricsListener {
		mux.Handle("GET /metrics", s.metrics.handler())
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
