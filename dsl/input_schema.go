package dsl

import "slices"

// InputSchema is the JSON Schema of the pipeline's run input, as its
// input: declares it: each field's type (any: no type), description,
// enum, format and default, and the fields a run must carry as required.
// It is nil when the pipeline declares no input.
func (p *Pipeline) InputSchema() map[string]any {
	in := p.Doc.Get("input")
	if in == nil {
		return nil
	}
	fields, ok := toJSON(in).(map[string]any)
	if !ok {
		return nil
	}
	props := map[string]any{}
	var required []string
	for name, f := range fields {
		field, _ := f.(map[string]any)
		if field["required"] == true {
			required = append(required, name)
		}
		delete(field, "required")
		props[name] = jsonSchemaOf(field)
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if required != nil {
		slices.Sort(required)
		s["required"] = required
	}
	return s
}

// jsonSchemaOf turns a declared type into JSON Schema: "any" is no type.
func jsonSchemaOf(t map[string]any) map[string]any {
	if t["type"] == string(Any) {
		delete(t, "type")
	}
	if items, ok := t["items"].(map[string]any); ok {
		t["items"] = jsonSchemaOf(items)
	}
	if props, ok := t["properties"].(map[string]any); ok {
		for k, v := range props {
			if m, ok := v.(map[string]any); ok {
				props[k] = jsonSchemaOf(m)
			}
		}
	}
	return t
}

// descriptionOf is a document's metadata.description.
func descriptionOf(d *Document) string {
	return scalarValue(mapGet(d.Get("metadata"), "description"))
}
