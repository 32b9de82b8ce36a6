package server

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// The store group of the API: the long-term memory store's items, the
// tenant's own, as LangGraph's /store serves them. A TTL is given in
// minutes; reads refresh it unless refresh_ttl is false. Semantic search
// (query) needs an embedding model, which runner does not configure: a
// query is ignored, as LangGraph ignores it without an index.

// itemStore is the server's item store, or a 501 when its store keeps none.
func (s *Server) itemStore() (store.ItemStore, error) {
	if s.items == nil {
		return nil, problemf(http.StatusNotImplemented, "the server's store keeps no items: serve with the memory, SQLite or PostgreSQL store")
	}
	return s.items, nil
}

// putItem stores an item: PUT /store/items.
func (s *Server) putItem(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Namespace []string        `json:"namespace"`
		Key       string          `json:"key"`
		Value     json.RawMessage `json:"value"`
		Index     any             `json:"index"`
		TTL       *float64        `json:"ttl"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	items, err := s.itemStore()
	if err != nil {
		return err
	}
	it := &store.Item{Namespace: q.Namespace, Key: q.Key, Value: q.Value}
	if it.TTL, err = ttlMinutes(q.TTL); err != nil {
		return err
	}
	if err := items.PutItem(r.Context(), principal(r.Context()).Tenant, it); err != nil {
		return problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ttlMinutes is a TTL given in minutes (nil: none).
func ttlMinutes(m *float64) (time.Duration, error) {
	if m == nil {
		return 0, nil
	}
	if *m <= 0 || *m > math.MaxInt64/float64(time.Minute) {
		return 0, problemf(http.StatusUnprocessableEntity, "ttl is %v; give the minutes an item lives after its last write or read (> 0), or null for ever", *m)
	}
	return time.Duration(*m * float64(time.Minute)), nil
}

// getItem answers with an item, or null when there is none: GET
// /store/items?namespace=a.b&key=k.
func (s *Server) getItem(w http.ResponseWriter, r *http.Request) error {
	items, err := s.itemStore()
	if err != nil {
		return err
	}
	ns, key, err := itemQuery(r)
	if err != nil {
		return err
	}
	refresh := true
	if v := r.URL.Query().Get("refresh_ttl"); v != "" {
		if refresh, err = strconv.ParseBool(v); err != nil {
			return problemf(http.StatusUnprocessableEntity, "refresh_ttl is %q; want true or false", v)
		}
	}
	it, err := items.Item(r.Context(), principal(r.Context()).Tenant, ns, key, refresh)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusOK, nil)
		return nil
	} else if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, it)
	return nil
}

// itemQuery is the namespace and key of GET /store/items.
func itemQuery(r *http.Request) ([]string, string, error) {
	q := r.URL.Query()
	ns := strings.Split(q.Get("namespace"), ".")
	if err := store.CheckNamespace(ns); err != nil {
		return nil, "", problemf(http.StatusUnprocessableEntity, "namespace: %v", err)
	}
	if q.Get("key") == "" {
		return nil, "", problemf(http.StatusUnprocessableEntity, "key is required: GET /store/items?namespace=a.b&key=k")
	}
	return ns, q.Get("key"), nil
}

// deleteItem removes an item, if there is one: DELETE /store/items.
func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Namespace []string `json:"namespace"`
		Key       string   `json:"key"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	items, err := s.itemStore()
	if err != nil {
		return err
	}
	if err := store.CheckNamespace(q.Namespace); err != nil {
		return problemf(http.StatusUnprocessableEntity, "namespace: %v", err)
	}
	if err := items.DeleteItem(r.Context(), principal(r.Context()).Tenant, q.Namespace, q.Key); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// searchItems answers with the items under a namespace prefix that match
// a filter: POST /store/items/search.
func (s *Server) searchItems(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Prefix  []string       `json:"namespace_prefix"`
		Filter  map[string]any `json:"filter"`
		Limit   *int           `json:"limit"`
		Offset  int            `json:"offset"`
		Query   string         `json:"query"`
		Refresh *bool          `json:"refresh_ttl"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	items, err := s.itemStore()
	if err != nil {
		return err
	}
	conds, err := store.ParseFilter(q.Filter)
	if err != nil {
		return problemf(http.StatusUnprocessableEntity, "filter: %v", err)
	}
	sq := store.ItemQuery{Prefix: q.Prefix, Filter: conds, Offset: q.Offset, Refresh: q.Refresh == nil || *q.Refresh}
	if sq.Limit, err = pageLimit(q.Limit, store.MaxItemLimit); err != nil {
		return err
	}
	found, err := items.SearchItems(r.Context(), principal(r.Context()).Tenant, sq)
	if err != nil {
		return problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": found})
	return nil
}

// pageLimit is a request's limit: nil for the default (0), else between
// 1 and most.
func pageLimit(limit *int, most int) (int, error) {
	switch {
	case limit == nil:
		return 0, nil
	case *limit < 1 || *limit > most:
		return 0, problemf(http.StatusUnprocessableEntity, "limit is %d; want 1 to %d", *limit, most)
	}
	return *limit, nil
}

// listNamespaces answers with the namespaces of the tenant's items: POST
// /store/namespaces.
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Prefix   []string `json:"prefix"`
		Suffix   []string `json:"suffix"`
		MaxDepth *int     `json:"max_depth"`
		Limit    *int     `json:"limit"`
		Offset   int      `json:"offset"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	items, err := s.itemStore()
	if err != nil {
		return err
	}
	nq := store.NamespaceQuery{Prefix: q.Prefix, Suffix: q.Suffix, Offset: q.Offset}
	if q.MaxDepth != nil {
		nq.MaxDepth = *q.MaxDepth
		if nq.MaxDepth < 1 {
			return problemf(http.StatusUnprocessableEntity, "max_depth is %d; want 1 or more, or none for whole namespaces", nq.MaxDepth)
		}
	}
	if nq.Limit, err = pageLimit(q.Limit, math.MaxInt32); err != nil {
		return err
	}
	ns, err := items.Namespaces(r.Context(), principal(r.Context()).Tenant, nq)
	if err != nil {
		return problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": ns})
	return nil
}

// sweepItems removes the expired items of every tenant: the item store's
// retention, swept with the runs of stopped servers (sweep); replicas
// sweeping at once remove each item once.
func (s *Server) sweepItems() {
	if s.items == nil {
		return
	}
	n, err := s.items.SweepItems(s.ctx, time.Now())
	switch {
	case s.ctx.Err() != nil: // the server is stopping
	case err != nil:
		s.cfg.Log.Warn("item sweep", "err", err)
	case n > 0:
		s.cfg.Log.Info("item sweep", "expired", n)
	}
}
