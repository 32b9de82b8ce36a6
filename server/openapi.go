package server

import (
	"cmp"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"
)

// openAPI describes the API as served, from the route table (endpoints):
// each route's method and path with its path parameters, its request body
// and answer as JSON Schemas of their Go types, the key it needs.
func (s *Server) openAPI() map[string]any {
	paths := map[string]any{}
	for _, ep := range s.endpoints() {
		method, path := ep.route()
		op := map[string]any{"summary": ep.summary, "operationId": operationID(ep.pattern), "responses": responses(ep)}
		if params := pathParams(path); len(params) > 0 {
			op["parameters"] = params
		}
		if ep.body != nil {
			op["requestBody"] = map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": schemaOf(ep.body)}}}
		}
		if ep.open {
			op["security"] = []any{}
		}
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		item[strings.ToLower(method)] = op
	}
	return map[string]any{"openapi": "3.1.0",
		"info":     map[string]any{"title": "runner", "version": s.cfg.Version, "description": "The LangGraph Agent Server API as runner serves it."},
		"paths":    paths,
		"security": []any{map[string]any{"apiKey": []any{}}, map[string]any{"bearer": []any{}}},
		"components": map[string]any{
			"securitySchemes": map[string]any{"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "x-api-key"},
				"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas": map[string]any{"Problem": schemaOf(reflect.TypeFor[problem]())}}}
}

// serveOpenAPI answers GET /openapi.json.
func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, s.openAPI())
	return nil
}

// responses are an endpoint's answers: its reply (an event stream for a
// stream), else a problem.
func responses(ep endpoint) map[string]any {
	ok := map[string]any{"description": "OK"}
	switch {
	case ep.stream:
		ok["content"] = map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}}
	case ep.reply != nil:
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": schemaOf(ep.reply)}}
	}
	problem := map[string]any{"description": "An RFC 9457 problem",
		"content": map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Problem"}}}}
	return map[string]any{ep.status(): ok, "default": problem}
}

var pathParam = regexp.MustCompile(`\{(\w+)\}`)

// pathParams are the parameters of a path pattern's {name} segments.
func pathParams(path string) []any {
	var out []any
	for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
		out = append(out, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	return out
}

// operationID names a route by its method and path: post_threads_thread_runs.
func operationID(pattern string) string {
	id := strings.NewReplacer(" /", "_", "/", "_", "{", "", "}", "", ".", "_", "-", "_").Replace(pattern)
	return strings.ToLower(strings.TrimSuffix(id, "_"))
}

var rawJSON = reflect.TypeFor[json.RawMessage]()

// schemaOf is the JSON Schema of the JSON encoding/json gives t: a
// struct's exported fields by their json names, maps as objects, slices
// as arrays; an interface or raw JSON is any value.
func schemaOf(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.Struct:
		props := map[string]any{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			props[cmp.Or(name, f.Name)] = schemaOf(f.Type)
		}
		return map[string]any{"type": "object", "properties": props}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Slice, reflect.Array:
		if t == rawJSON {
			return map[string]any{}
		}
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}
