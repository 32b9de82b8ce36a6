package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/runner-dev/runner/runner"
)

// assistant is a graph as the API shows it: one assistant per graph,
// fixed for the server's life.
type assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
}

func (s *Server) assistant(name string) assistant {
	at := stamp(s.started)
	a := assistant{AssistantID: AssistantID(name), GraphID: name, Name: name, Config: map[string]any{}, Context: map[string]any{},
		Metadata: map[string]any{"created_by": "system"}, Version: 1, CreatedAt: at, UpdatedAt: at}
	if g := s.cfg.Graphs[name]; g.Agent != nil {
		a.Metadata["model"], a.Metadata["pipeline"] = g.Agent.Model, g.Name
	}
	return a
}

// searchAssistants lists the assistants, by graph_id and name if given.
func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		GraphID  string         `json:"graph_id"`
		Name     string         `json:"name"`
		Metadata map[string]any `json:"metadata"`
		Limit    int            `json:"limit"`
		Offset   int            `json:"offset"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	var out []assistant
	for _, name := range sortedNames(s.cfg.Graphs) {
		a := s.assistant(name)
		if (q.GraphID == "" || q.GraphID == name) && strings.Contains(name, q.Name) && subset(q.Metadata, a.Metadata) {
			out = append(out, a)
		}
	}
	writeJSON(w, http.StatusOK, page(out, q.Limit, q.Offset))
	return nil
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request) error {
	name, _, err := s.graph(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.assistant(name))
	return nil
}

// getAssistantGraph draws the graph as nodes and edges, from __start__
// to __end__.
func (s *Server) getAssistantGraph(w http.ResponseWriter, r *http.Request) error {
	_, g, err := s.graph(r.PathValue("id"))
	if err != nil {
		return err
	}
	type node struct {
		ID   string         `json:"id"`
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	type edge struct {
		Source      string `json:"source"`
		Target      string `json:"target"`
		Conditional bool   `json:"conditional"`
	}
	nodes := []node{{ID: "__start__", Type: "schema", Data: map[string]any{"name": "__start__"}}}
	edges := []edge{{Source: "__start__", Target: g.Start}}
	for _, name := range sortedNames(g.Nodes) {
		st := g.Nodes[name]
		nodes = append(nodes, node{ID: name, Type: "runnable", Data: map[string]any{"name": name, "type": st.Type}})
		for _, rt := range st.Routes {
			edges = append(edges, edge{Source: name, Target: apiNode(rt.To), Conditional: rt.When != nil || len(st.Routes) > 1})
		}
	}
	nodes = append(nodes, node{ID: "__end__", Type: "schema", Data: map[string]any{"name": "__end__"}})
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes, "edges": edges})
	return nil
}

// apiNode names runner's END as LangGraph's __end__.
func apiNode(n string) string {
	if n == runner.End {
		return "__end__"
	}
	return n
}

// getAssistantSchemas lists the state fields: runner's compiled graph
// keeps their names, not their declared types.
func (s *Server) getAssistantSchemas(w http.ResponseWriter, r *http.Request) error {
	name, g, err := s.graph(r.PathValue("id"))
	if err != nil {
		return err
	}
	props := map[string]any{}
	for f := range g.Fields {
		props[f] = map[string]any{}
	}
	schema := map[string]any{"type": "object", "title": g.Name, "properties": props}
	writeJSON(w, http.StatusOK, map[string]any{"graph_id": name, "input_schema": schema, "output_schema": schema,
		"state_schema": schema, "config_schema": map[string]any{"type": "object", "properties": map[string]any{}}})
	return nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// page is list[offset:offset+limit] (limit <= 0: 10), never nil.
func page[T any](list []T, limit, offset int) []T {
	if limit <= 0 {
		limit = 10
	}
	offset = min(max(offset, 0), len(list))
	return append([]T{}, list[offset:min(len(list), offset+limit)]...)
}
