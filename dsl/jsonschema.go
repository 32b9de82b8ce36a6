package dsl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxSchemaErrors is how many problems a validation message lists.
const maxSchemaErrors = 3

// JSONSchema is a compiled JSON Schema (tool parameters, resume values) whose
// failures read "/where: what; ...".
type JSONSchema struct {
	s       *jsonschema.Schema
	printer *message.Printer
}

// CompileJSONSchema compiles a JSON Schema given as a decoded value; a nil one
// accepts anything. A $ref may name only a part of doc or runner's embedded
// schemas (EmbeddedSchemas); any other is a *RefError, and nothing is read.
func CompileJSONSchema(doc map[string]any) (*JSONSchema, error) {
	if doc == nil {
		doc = map[string]any{}
	}
	v, err := toSchemaJSON(doc)
	if err != nil {
		return nil, err
	}
	c := newSchemaCompiler()
	if err := c.AddResource(inlineSchemaURL, v); err != nil {
		return nil, err
	}
	s, err := c.Compile(inlineSchemaURL)
	if err != nil {
		return nil, refused(err)
	}
	return &JSONSchema{s: s, printer: message.NewPrinter(language.English)}, nil
}

// Check validates a JSON-like value.
func (s *JSONSchema) Check(v any) error {
	doc, err := toSchemaJSON(v)
	if err != nil {
		return err
	}
	err = s.s.Validate(doc)
	ve, ok := errors.AsType[*jsonschema.ValidationError](err)
	if !ok {
		return err
	}
	leaves := leafErrors(ve)
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		return slices.Compare(a.InstanceLocation, b.InstanceLocation)
	})
	var msgs []string
	for _, e := range leaves[:min(len(leaves), maxSchemaErrors)] {
		msgs = append(msgs, "/"+strings.Join(e.InstanceLocation, "/")+": "+e.ErrorKind.LocalizedString(s.printer))
	}
	if n := len(leaves) - maxSchemaErrors; n > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", n))
	}
	return errors.New(strings.Join(msgs, "; "))
}

// leafErrors flattens a validation error tree to the errors without causes.
func leafErrors(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leafErrors(c)...)
	}
	return out
}

// toSchemaJSON returns v as the schema library takes it: v itself when it
// holds only nil, bools, strings, finite numbers, []any and
// map[string]any (what decoded JSON and expressions give), else v
// round-tripped through JSON.
func toSchemaJSON(v any) (any, error) {
	if schemaReady(v) {
		return v, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// schemaReady reports whether v holds only values the schema library
// validates as they are.
func schemaReady(v any) bool {
	switch v := v.(type) {
	case nil, bool, string, json.Number, int, int64:
		return true
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case []any:
		for _, e := range v {
			if !schemaReady(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if !schemaReady(e) {
				return false
			}
		}
		return true
	}
	return false
}
