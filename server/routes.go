package server

import (
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/runner-dev/runner/server/console"
)

// endpoint is one route of the API: the method and path it serves, what
// it does, the Go types of its JSON request body and answer (nil: none,
// or no fixed shape), whether it answers with an event stream, whether it
// needs no key (open), and its handler. The router and GET /openapi.json
// are both made from the endpoints.
type endpoint struct {
	pattern, summary string
	body, reply      reflect.Type
	stream, open     bool
	handle           func(http.ResponseWriter, *http.Request) error
}

// route is the endpoint's method and path; a pattern of every method (an
// MCP session's) is described as its POST.
func (ep endpoint) route() (method, path string) {
	if method, path, ok := strings.Cut(ep.pattern, " "); ok {
		return method, path
	}
	return http.MethodPost, ep.pattern
}

// status is the status of the endpoint's answer when it succeeds.
func (ep endpoint) status() string {
	if strings.HasPrefix(ep.pattern, http.MethodDelete) {
		return "204"
	}
	return "200"
}

// serve serves the endpoint, writing the error it returns as a problem.
func (s *Server) serve(ep endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := ep.handle(w, r); err != nil {
			s.writeProblem(w, err)
		}
	}
}

// plain is h as an endpoint's handler.
func plain(h http.HandlerFunc) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		h(w, r)
		return nil
	}
}

// endpoints is the API's route table. Every route that names a thread, a
// run, a stream or a conversation authorises through Server.thread; the
// isolation test walks them all.
func (s *Server) endpoints() []endpoint {
	var (
		object     = reflect.TypeFor[map[string]any]()
		objects    = reflect.TypeFor[[]map[string]any]()
		run        = reflect.TypeFor[runRequest]()
		one        = reflect.TypeFor[assistant]()
		many       = reflect.TypeFor[[]assistant]()
		query      = reflect.TypeFor[assistantQuery]()
		assistants = reflect.TypeFor[assistantBody]()
	)
	eps := []endpoint{
		{pattern: "POST /assistants", summary: "Create an assistant from a graph, with config, context and metadata", body: assistants, reply: one, handle: s.createAssistant},
		{pattern: "POST /assistants/search", summary: "Search the assistants by graph, name and metadata", body: query, reply: many, handle: s.searchAssistants},
		{pattern: "POST /assistants/count", summary: "Count the assistants a search selects", body: query, reply: reflect.TypeFor[int](), handle: s.countAssistants},
		{pattern: "GET /assistants/{id}", summary: "Get an assistant at its current version", reply: one, handle: s.getAssistant},
		{pattern: "PATCH /assistants/{id}", summary: "Write a new version of an assistant and make it current", body: assistants, reply: one, handle: s.patchAssistant},
		{pattern: "DELETE /assistants/{id}", summary: "Delete an assistant with its versions", handle: s.deleteAssistant},
		{pattern: "POST /assistants/{id}/latest", summary: "Make a version of an assistant its current one", body: reflect.TypeFor[struct {
			Version int `json:"version"`
		}](), reply: one, handle: s.setLatest},
		{pattern: "POST /assistants/{id}/versions", summary: "List an assistant's versions, newest first", body: query, reply: many, handle: s.listVersions},
		{pattern: "GET /assistants/{id}/graph", summary: "Draw an assistant's graph as nodes and edges", reply: object, handle: s.getAssistantGraph},
		{pattern: "GET /assistants/{id}/schemas", summary: "An assistant's state fields", reply: object, handle: s.getAssistantSchemas},
		{pattern: "GET /assistants/{id}/policy", summary: "An assistant's rules, budgets and tools", reply: object, handle: s.getAssistantPolicy},

		{pattern: "POST /threads", summary: "Create a thread", body: object, reply: object, handle: s.createThread},
		{pattern: "POST /threads/search", summary: "Search the threads by status, metadata and values", body: object, reply: objects, handle: s.searchThreads},
		{pattern: "GET /threads/{thread}", summary: "Get a thread with its values and interrupts", reply: object, handle: s.getThread},
		{pattern: "PATCH /threads/{thread}", summary: "Merge metadata into a thread's", body: object, reply: object, handle: s.patchThread},
		{pattern: "DELETE /threads/{thread}", summary: "Delete a thread with its runs and checkpoints", handle: s.deleteThread},
		{pattern: "GET /threads/{thread}/state", summary: "A thread's state at its newest checkpoint", reply: object, handle: s.getState},
		{pattern: "GET /threads/{thread}/state/{checkpoint}", summary: "A thread's state at a checkpoint", reply: object, handle: s.getState},
		{pattern: "POST /threads/{thread}/state", summary: "Write values to a thread as a node would", body: object, reply: object, handle: s.updateState},
		{pattern: "POST /threads/{thread}/history", summary: "A thread's states, newest first", body: object, reply: objects, handle: s.history},
		{pattern: "GET /threads/{thread}/history", summary: "A thread's states, newest first (limit, before in the query)", reply: objects, handle: s.history},
		{pattern: "GET /threads/{thread}/stream", summary: "Stream the events of a thread's runs", stream: true, handle: s.threadStream},
		{pattern: "POST /threads/{thread}/copy", summary: "Fork a thread from a checkpoint into a new thread", body: object, reply: object, handle: s.copyThread},

		{pattern: "POST /threads/{thread}/runs", summary: "Start a run in the background", body: run, reply: object, handle: s.createBackgroundRun},
		{pattern: "POST /threads/{thread}/runs/stream", summary: "Start a run and stream its events", body: run, stream: true, handle: s.createStreamRun},
		{pattern: "POST /threads/{thread}/runs/wait", summary: "Start a run and answer with its final values", body: run, reply: object, handle: s.createWaitRun},
		{pattern: "POST /runs/stream", summary: "Start a run on a thread of its own and stream its events", body: run, stream: true, handle: s.createStreamRun},
		{pattern: "POST /runs/wait", summary: "Start a run on a thread of its own and answer with its final values", body: run, reply: object, handle: s.createWaitRun},
		{pattern: "GET /threads/{thread}/runs", summary: "List a thread's runs", reply: objects, handle: s.listRuns},
		{pattern: "GET /threads/{thread}/runs/{run}", summary: "Get a run", reply: object, handle: s.getRun},
		{pattern: "DELETE /threads/{thread}/runs/{run}", summary: "Delete a run that has ended", handle: s.deleteRun},
		{pattern: "GET /threads/{thread}/runs/{run}/join", summary: "Wait for a run and answer with its final values", reply: object, handle: s.joinRun},
		{pattern: "GET /threads/{thread}/runs/{run}/stream", summary: "Rejoin a run's stream", stream: true, handle: s.joinStream},
		{pattern: "POST /threads/{thread}/runs/{run}/cancel", summary: "Cancel a run (action interrupt or rollback)", handle: s.cancelRun},
		{pattern: "POST /execute", summary: "Run an agent on a conversation (seed 000's endpoint)", body: reflect.TypeFor[executeRequest](), reply: object, handle: s.executeAgent},
		{pattern: "GET /conversations/{id}/stream", summary: "Stream a conversation's executions", stream: true, handle: s.conversationStream},
		{pattern: "POST /a2a/{assistant_id}", summary: "An assistant over A2A: JSON-RPC message/send, message/stream, tasks/get", body: reflect.TypeFor[rpcRequest](), reply: object, handle: s.a2aRPC},
		{pattern: "GET /.well-known/agent-card.json", summary: "The A2A agent card of the assistant_id query parameter's assistant", reply: reflect.TypeFor[a2a.AgentCard](), handle: s.agentCard},
		{pattern: "POST /tests/run", summary: "Run the project's Test documents", body: object, reply: object, handle: s.runTests},
		{pattern: "GET /approvals/stream", summary: "Tell when the tenant's approvals may have changed", stream: true, handle: s.approvalsStream},
		{pattern: "GET /approvals", summary: "List the approvals the caller may decide, pending ones by default", reply: reflect.TypeFor[approvalPage](), handle: s.listApprovals},
		{pattern: "GET /approvals/{id}", summary: "Get an approval", reply: reflect.TypeFor[approval](), handle: s.getApproval},
		{pattern: "POST /approvals/{id}/decide", summary: "Decide an approval as the caller's principal and resume its thread", body: object, reply: object, handle: s.decideApproval},
		{pattern: "GET /webhooks/deliveries", summary: "The tenant's webhook delivery log, newest first (status, limit, after)", reply: reflect.TypeFor[deliveryPage](), handle: s.listDeliveries},
		{pattern: "GET /audit", summary: "The tenant's audit ledger as JSON Lines, for its auditors (since, verify)", handle: s.exportAudit},

		{pattern: "GET /ok", summary: "Health check", reply: object, open: true, handle: plain(s.ok)},
		{pattern: "GET /healthz", summary: "Health check", reply: object, open: true, handle: plain(s.ok)},
		{pattern: "GET /readyz", summary: "Whether the server takes runs", reply: object, open: true, handle: plain(s.ready)},
		{pattern: "GET /info", summary: "The server's version and what it serves", reply: object, open: true, handle: plain(s.info)},
		{pattern: "GET /openapi.json", summary: "This description of the API", reply: object, open: true, handle: s.serveOpenAPI},
	}
	if s.items != nil {
		eps = append(eps,
			endpoint{pattern: "PUT /store/items", summary: "Put an item in the long-term memory store", body: object, handle: s.putItem},
			endpoint{pattern: "GET /store/items", summary: "Get an item by namespace and key", reply: object, handle: s.getItem},
			endpoint{pattern: "DELETE /store/items", summary: "Delete an item", body: object, handle: s.deleteItem},
			endpoint{pattern: "POST /store/items/search", summary: "Search items under a namespace prefix by filter", body: object, reply: object, handle: s.searchItems},
			endpoint{pattern: "POST /store/namespaces", summary: "List the namespaces of the items", body: object, reply: object, handle: s.listNamespaces})
	}
	if s.crons != nil {
		cron, crons, query := reflect.TypeFor[cronJSON](), reflect.TypeFor[[]cronJSON](), reflect.TypeFor[cronQuery]()
		eps = append(eps,
			endpoint{pattern: "POST /threads/{thread}/runs/crons", summary: "Schedule runs on a thread", body: object, reply: cron, handle: s.createCron},
			endpoint{pattern: "POST /runs/crons", summary: "Schedule runs, each on a thread of its own", body: object, reply: cron, handle: s.createCron},
			endpoint{pattern: "POST /runs/crons/search", summary: "Search the crons by assistant, thread and metadata", body: query, reply: crons, handle: s.searchCrons},
			endpoint{pattern: "POST /runs/crons/count", summary: "Count the crons a search selects", body: query, reply: reflect.TypeFor[int](), handle: s.countCrons},
			endpoint{pattern: "PATCH /runs/crons/{cron_id}", summary: "Change a cron's schedule, end, payload or whether it is enabled", body: object, reply: cron, handle: s.updateCron},
			endpoint{pattern: "DELETE /runs/crons/{cron_id}", summary: "Delete a cron", handle: s.deleteCron})
	}
	if s.cfg.MCP {
		eps = append(eps, endpoint{pattern: "/mcp", summary: "The agents as MCP tools (streamable HTTP: POST, GET, DELETE)", handle: plain(s.mcpHandler().ServeHTTP)})
	}
	if !s.cfg.OwnMetricsListener {
		eps = append(eps, endpoint{pattern: "GET /metrics", summary: "Metrics in the Prometheus text format", open: true, handle: plain(s.metrics.handler().ServeHTTP)})
	}
	return eps
}

// routes is the router, made from the route table: the open routes,
// then the API's behind its key, its body limit, and a 404 problem for
// what is no route.
func (s *Server) routes() *http.ServeMux {
	api, mux := http.NewServeMux(), http.NewServeMux()
	for _, ep := range s.table {
		if ep.open {
			mux.Handle(ep.pattern, s.serve(ep))
		} else {
			api.Handle(ep.pattern, s.serve(ep))
		}
	}
	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, problemf(http.StatusNotFound, "no endpoint %s %s", r.Method, r.URL.Path))
	})
	mux.Handle("/", console.Front(s.authenticate(s.limitStreams(s.limitBody(api)))))
	outer := http.NewServeMux()
	outer.Handle("/", s.bound(s.logRequests(s.cors(mux))))
	return outer
}

// serves reports whether the route table has pattern.
func (s *Server) serves(pattern string) bool {
	return slices.ContainsFunc(s.table, func(ep endpoint) bool { return ep.pattern == pattern })
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
		s.writeProblem(w, problemf(http.StatusServiceUnavailable, "shutting down"))
		return
	}
	if err := s.storeWritable(r.Context()); err != nil {
		s.writeProblem(w, problemf(http.StatusServiceUnavailable, "the store cannot be written; the server's log says why"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// info describes the server as LangGraph's /info does, its flags saying
// which of the API's groups the route table serves.
func (s *Server) info(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": s.cfg.Version, "runtime": "runner",
		"flags": map[string]bool{"assistants": s.serves("POST /assistants"), "crons": s.serves("POST /runs/crons"),
			"store": s.serves("PUT /store/items"), "a2a": s.serves("POST /a2a/{assistant_id}"), "mcp": s.serves("/mcp"),
			"langsmith": false}})
}
