package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// assistant is an assistant as the API shows it: a graph the YAML defines
// (one per graph, version 1, read-only) or one a client created, at its
// current version.
type assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at,omitempty"`
}

// assistant is the YAML-defined assistant of graph name.
func (s *Server) assistant(name string) assistant {
	at := stamp(s.started)
	a := assistant{AssistantID: AssistantID(name), GraphID: name, Name: name, Config: map[string]any{}, Context: map[string]any{},
		Metadata: map[string]any{"created_by": "system"}, Version: 1, CreatedAt: at, UpdatedAt: at}
	g := s.cfg.Graphs[name]
	if g.Agent != nil {
		a.Metadata["model"], a.Metadata["pipeline"] = g.Agent.Model, g.Name
	}
	if g.Description != "" {
		a.Description = &g.Description
	}
	return a
}

// storedJSON is a stored assistant (or one version of it) as the API
// shows it.
func storedJSON(a *store.Assistant) assistant {
	out := assistant{AssistantID: a.ID, GraphID: a.GraphID, Name: a.Name, Config: metadata(a.Config), Context: metadata(a.Context),
		Metadata: metadata(a.Metadata), Version: a.Version, CreatedAt: stamp(a.CreatedAt), UpdatedAt: stamp(a.UpdatedAt)}
	if a.Description != "" {
		out.Description = &a.Description
	}
	return out
}

// resolved is what an assistant id names: the graph it runs and the
// configurable values it gives runs (nil for a YAML-defined one).
type resolved struct {
	view   assistant
	name   string // the graph's
	g      *runner.Graph
	stored *store.Assistant
}

// resolve finds the assistant id (or graph name) names for the request's
// tenant: a YAML-defined one, else one the tenant created; otherwise a 404
// that lists the YAML-defined ones.
func (s *Server) resolve(ctx context.Context, id string) (*resolved, error) {
	name, g, unknown := s.graph(id)
	if unknown == nil {
		return &resolved{view: s.assistant(name), name: name, g: g}, nil
	}
	if s.assistants != nil {
		a, err := s.assistants.Assistant(ctx, principal(ctx).Tenant, id)
		if err == nil && s.cfg.Graphs[a.GraphID] != nil {
			return &resolved{view: storedJSON(a), name: a.GraphID, g: s.cfg.Graphs[a.GraphID], stored: a}, nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return nil, unknown
}

// mutable resolves an assistant a client created: a YAML-defined one is
// read-only (409).
func (s *Server) mutable(ctx context.Context, id string) (*resolved, error) {
	a, err := s.resolve(ctx, id)
	if err == nil && a.stored == nil {
		return nil, problemf(http.StatusConflict, "assistant %s (graph %s) is defined in YAML and read-only: create an assistant from its graph to configure it", id, a.name)
	}
	return a, err
}

// assistantBody is what POST /assistants and PATCH /assistants/{id} take.
type assistantBody struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	IfExists    string         `json:"if_exists"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
}

// createAssistant creates an assistant from a graph, its config checked
// against the graph's configurable parameters.
func (s *Server) createAssistant(w http.ResponseWriter, r *http.Request) error {
	var q assistantBody
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	if s.assistants == nil {
		return problemf(http.StatusNotImplemented, "the store keeps no assistants")
	}
	if !slices.Contains([]string{"", "raise", "do_nothing"}, q.IfExists) {
		return problemf(http.StatusUnprocessableEntity, "if_exists: %q is neither raise nor do_nothing", q.IfExists)
	}
	if q.AssistantID == "" {
		q.AssistantID = uuid.Must(uuid.NewV7()).String()
	} else if old, err := s.resolve(r.Context(), q.AssistantID); err == nil {
		if q.IfExists == "do_nothing" {
			writeJSON(w, http.StatusOK, old.view)
			return nil
		}
		return problemf(http.StatusConflict, "assistant %s exists (if_exists: do_nothing returns it)", q.AssistantID)
	}
	a := &store.Assistant{ID: q.AssistantID, Tenant: principal(r.Context()).Tenant, Version: 1, GraphID: q.GraphID,
		Name: cmp.Or(q.Name, q.GraphID), Description: q.Description}
	if err := s.fill(a, q, nil); err != nil {
		return err
	}
	err := s.assistants.PutAssistant(r.Context(), a)
	if errors.Is(err, store.ErrConflict) && q.IfExists == "do_nothing" { // created meanwhile
		return s.writeAssistant(w, r, q.AssistantID)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, storedJSON(a))
	return nil
}

// fill sets a's graph, config, context and metadata from q over base (the
// version a follows; nil for a new assistant): config and context replace
// base's when given, metadata is merged into base's. The configurable
// values are checked against the graph's parameters (422 at the field).
func (s *Server) fill(a *store.Assistant, q assistantBody, base *store.Assistant) error {
	cfg, cx, meta := q.Config, q.Context, map[string]any{}
	if base != nil {
		if cfg == nil {
			cfg = metadata(base.Config)
		}
		if cx == nil {
			cx = metadata(base.Context)
		}
		meta = metadata(base.Metadata)
	}
	maps.Copy(meta, q.Metadata)
	g := s.cfg.Graphs[a.GraphID]
	if g == nil {
		return problemf(http.StatusUnprocessableEntity, "graph_id: no graph %q is served; the graphs are: %s", a.GraphID, strings.Join(sortedNames(s.cfg.Graphs), ", "))
	}
	if _, err := configure(g, configurableOf(cfg), cx); err != nil {
		return err
	}
	a.Config, _ = json.Marshal(orMap(cfg))
	a.Context, _ = json.Marshal(orMap(cx))
	a.Metadata, _ = json.Marshal(meta)
	return nil
}

// configurableOf is a config's configurable values (nil: none).
func configurableOf(cfg map[string]any) map[string]any {
	c, _ := cfg["configurable"].(map[string]any)
	return c
}

// langgraphKeys are the configurable keys LangGraph's own clients and
// servers set, which are no parameter of a pipeline: a run ignores them.
var langgraphKeys = []string{"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "run_id", "assistant_id", "graph_id", "user_id"}

// configure merges a run's or an assistant's configurable values over its
// context and checks them against g's parameters: the values a run
// starts with, or a 422 that names the field.
func configure(g *runner.Graph, configurable, context map[string]any) (map[string]any, error) {
	values := map[string]any{}
	for _, m := range []map[string]any{context, configurable} {
		for k, v := range m {
			if !slices.Contains(langgraphKeys, k) && !strings.HasPrefix(k, "langgraph_") && !strings.HasPrefix(k, "__") {
				values[k] = v
			}
		}
	}
	if len(values) == 0 {
		return nil, nil
	}
	if g.Configure == nil {
		return nil, problemf(http.StatusUnprocessableEntity, "config.configurable: pipeline %s declares no configurable parameters, so it takes none (got %s)",
			g.Name, strings.Join(slices.Sorted(maps.Keys(values)), ", "))
	}
	out, err := g.Configure(runner.NormalizeJSON(values).(map[string]any))
	if err != nil {
		return nil, problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	return out, nil
}

// patchAssistant writes a new version of an assistant and makes it
// current.
func (s *Server) patchAssistant(w http.ResponseWriter, r *http.Request) error {
	var q assistantBody
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	cur, err := s.mutable(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	versions, err := s.assistants.AssistantVersions(r.Context(), cur.stored.Tenant, cur.stored.ID)
	if err != nil {
		return err
	}
	a := &store.Assistant{ID: cur.stored.ID, Tenant: cur.stored.Tenant, Version: versions[0].Version + 1,
		GraphID: cmp.Or(q.GraphID, cur.stored.GraphID), Name: cmp.Or(q.Name, cur.stored.Name), Description: cmp.Or(q.Description, cur.stored.Description)}
	if err := s.fill(a, q, cur.stored); err != nil {
		return err
	}
	if err := s.assistants.PutAssistant(r.Context(), a); err != nil {
		return err
	}
	return s.writeAssistant(w, r, a.ID)
}

// setLatest makes a version of an assistant its current one.
func (s *Server) setLatest(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Version int `json:"version"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	cur, err := s.mutable(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.assistants.SetAssistantVersion(r.Context(), cur.stored.Tenant, cur.stored.ID, q.Version); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return problemf(http.StatusNotFound, "assistant %s has no version %d", cur.stored.ID, q.Version)
		}
		return err
	}
	return s.writeAssistant(w, r, cur.stored.ID)
}

// writeAssistant answers with the assistant id as it now stands.
func (s *Server) writeAssistant(w http.ResponseWriter, r *http.Request, id string) error {
	a, err := s.resolve(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.view)
	return nil
}

// listVersions lists an assistant's versions, newest first, those whose
// metadata has the query's.
func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Metadata      map[string]any `json:"metadata"`
		Limit, Offset int
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	if err := checkPage(q.Limit, q.Offset); err != nil {
		return err
	}
	a, err := s.resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	versions := []assistant{a.view}
	if a.stored != nil {
		list, err := s.assistants.AssistantVersions(r.Context(), a.stored.Tenant, a.stored.ID)
		if err != nil {
			return err
		}
		versions = versions[:0]
		for i := range list {
			v := storedJSON(&list[i])
			v.UpdatedAt = ""
			versions = append(versions, v)
		}
	}
	versions = slices.DeleteFunc(versions, func(v assistant) bool { return !subset(q.Metadata, v.Metadata) })
	writeJSON(w, http.StatusOK, page(versions, q.Limit, q.Offset))
	return nil
}

// deleteAssistant deletes an assistant a client created, with its
// versions.
func (s *Server) deleteAssistant(w http.ResponseWriter, r *http.Request) error {
	a, err := s.mutable(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.assistants.DeleteAssistant(r.Context(), a.stored.Tenant, a.stored.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// assistantQuery selects assistants: by graph id, a part of the name and
// metadata.
type assistantQuery struct {
	GraphID  string         `json:"graph_id"`
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
	Limit    int            `json:"limit"`
	Offset   int            `json:"offset"`
}

// matching lists the tenant's assistants the request's query selects:
// those it created, newest first, then the YAML-defined ones by name.
func (s *Server) matching(r *http.Request) ([]assistant, assistantQuery, error) {
	var q assistantQuery
	if err := decodeBody(r, &q); err != nil {
		return nil, q, err
	}
	if err := checkPage(q.Limit, q.Offset); err != nil {
		return nil, q, err
	}
	var all []assistant
	if s.assistants != nil {
		stored, err := s.assistants.Assistants(r.Context(), principal(r.Context()).Tenant)
		if err != nil {
			return nil, q, err
		}
		for i := range stored {
			all = append(all, storedJSON(&stored[i]))
		}
	}
	for _, name := range sortedNames(s.cfg.Graphs) {
		all = append(all, s.assistant(name))
	}
	return slices.DeleteFunc(all, func(a assistant) bool {
		return q.GraphID != "" && q.GraphID != a.GraphID || !strings.Contains(a.Name, q.Name) || !subset(q.Metadata, a.Metadata)
	}), q, nil
}

// searchAssistants lists the assistants the query selects, a page of
// them.
func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request) error {
	out, q, err := s.matching(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page(out, q.Limit, q.Offset))
	return nil
}

// countAssistants counts the assistants the query selects.
func (s *Server) countAssistants(w http.ResponseWriter, r *http.Request) error {
	out, _, err := s.matching(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, len(out))
	return nil
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request) error {
	return s.writeAssistant(w, r, r.PathValue("id"))
}

// getAssistantGraph draws the graph as nodes and edges (graphJSON).
func (s *Server) getAssistantGraph(w http.ResponseWriter, r *http.Request) error {
	a, err := s.resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, graphJSON(a.g))
	return nil
}

// apiNode names runner's END as LangGraph's __end__.
func apiNode(n string) string {
	if n == runner.End {
		return "__end__"
	}
	return n
}

// getAssistantSchemas gives the input's declared JSON Schema and lists
// the state fields: runner's compiled graph keeps their names, not their
// declared types.
func (s *Server) getAssistantSchemas(w http.ResponseWriter, r *http.Request) error {
	a, err := s.resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	props := map[string]any{}
	for f := range a.g.Fields {
		props[f] = map[string]any{}
	}
	schema := map[string]any{"type": "object", "title": a.g.Name, "properties": props}
	input := schema
	if a.g.InputSchema != nil {
		input = a.g.InputSchema
	}
	writeJSON(w, http.StatusOK, map[string]any{"graph_id": a.name, "input_schema": input, "output_schema": schema,
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

// configFor is the configurable values run q starts with: the
// assistant's context and config.configurable, then the run's over them,
// checked against the graph's parameters (422 at the field).
func (a *resolved) configFor(q *runRequest) (map[string]any, error) {
	configurable, context := map[string]any{}, map[string]any{}
	if a.stored != nil {
		maps.Copy(configurable, configurableOf(metadata(a.stored.Config)))
		maps.Copy(context, metadata(a.stored.Context))
	}
	if q.Config != nil {
		maps.Copy(configurable, q.Config.Configurable)
	}
	maps.Copy(context, q.Context)
	return configure(a.g, configurable, context)
}
