package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/schemas"
)

// A JSON Schema written in a definition (a tool's parameters and returns,
// an llm node's output_schema, a resume_schema) may refer only to itself
// and to runner's own schemas. Definitions come from anyone who can open a
// pull request, and `runner validate` runs them in CI: a $ref that read
// files would let a definition read /proc/self/environ or hang on a FIFO,
// and one that fetched URLs would reach the network. So every compiler in
// this package uses confinedLoader, which serves the embedded schemas and
// refuses everything else without reading it, and the checker reports each
// refused reference at its own position.

// EmbeddedSchemas is the base URL of runner's own schemas (package
// schemas) for $ref in a definition's JSON Schema, e.g.
// "runner://schemas/defs.json#/$defs/duration".
const EmbeddedSchemas = "runner://schemas/"

// inlineSchemaURL is the URL a definition's own JSON Schema is compiled
// under. It names no file: a relative $ref resolved against it is refused
// by the loader like any other.
const inlineSchemaURL = "runner://definition/schema.json"

// refKeywords are the keywords whose value is a URL the compiler resolves.
var refKeywords = map[string]bool{"$ref": true, "$dynamicRef": true, "$recursiveRef": true, "$schema": true}

// dataKeywords hold instance values, not schemas: a "$ref" key inside them
// is data.
var dataKeywords = map[string]bool{"enum": true, "const": true, "default": true, "examples": true}

// namedSchemaKeywords map names to subschemas: their keys are names (a
// property may be called "$ref"), their values schemas.
var namedSchemaKeywords = map[string]bool{"properties": true, "patternProperties": true, "$defs": true,
	"definitions": true, "dependentSchemas": true, "dependencies": true}

// newSchemaCompiler returns a JSON Schema compiler that reads nothing from
// outside the process: see confinedLoader.
func newSchemaCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.UseLoader(confinedLoader{})
	return c
}

// confinedLoader is the only URLLoader of this package's compilers. It
// loads runner's embedded schemas and refuses every other URL — file,
// path, http(s) or any scheme — before touching it. (The library serves
// the json-schema.org meta-schemas from its own embedded copies without
// asking a loader.)
type confinedLoader struct{}

// Load returns the embedded schema u names, or a RefError.
func (confinedLoader) Load(u string) (any, error) {
	name, ok := strings.CutPrefix(u, EmbeddedSchemas)
	if !ok {
		return nil, &RefError{URL: u, Reason: refOutside(u)}
	}
	data, err := embeddedSchema(name)
	if err != nil {
		return nil, &RefError{URL: u, Reason: err.Error()}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

// embeddedSchema returns the schema file called name in package schemas.
func embeddedSchema(name string) ([]byte, error) {
	if fs.ValidPath(name) {
		if data, err := schemas.FS.ReadFile(name); err == nil {
			return data, nil
		}
	}
	return nil, fmt.Errorf("runner has no embedded schema %q", name)
}

// RefError is a JSON Schema reference the compiler refused to load.
type RefError struct {
	URL    string
	Reason string
}

func (e *RefError) Error() string {
	return fmt.Sprintf("$ref %q is not allowed: %s; %s", e.URL, e.Reason, refRule)
}

// refused returns the RefError behind a compiler's failure to load a
// reference (the library's LoadURLError does not unwrap), else err.
func refused(err error) error {
	if le, ok := errors.AsType[*jsonschema.LoadURLError](err); ok {
		if re, ok := errors.AsType[*RefError](le.Err); ok {
			return re
		}
	}
	return err
}

// refRule says what a reference may name, and what to do instead.
const refRule = `a schema may refer only to itself ("#/$defs/NAME") or to runner's own schemas ("` +
	EmbeddedSchemas + `defs.json#/$defs/NAME"); copy what you need under $defs`

// refOutside says what a reference outside the definition points at.
func refOutside(ref string) string {
	u, err := url.Parse(ref)
	switch {
	case err != nil:
		return "it is not a valid URL"
	case u.Scheme == "file":
		return "it refers to a file"
	case u.Scheme == "http" || u.Scheme == "https":
		return "it refers to the network"
	case u.Scheme != "":
		return fmt.Sprintf("it refers to a %s: URL", u.Scheme)
	case strings.HasPrefix(ref, "/"):
		return "it refers to an absolute path"
	}
	return "it refers to a relative path"
}

// refProblem returns why the value of a reference keyword is refused, or
// "" when it stays inside the schema or runner's embedded schemas.
func refProblem(keyword, ref string) string {
	switch {
	case keyword == "$schema":
		if strings.HasPrefix(ref, "https://json-schema.org/") || strings.HasPrefix(ref, "http://json-schema.org/") {
			return "" // a draft's meta-schema, which the library embeds
		}
		return refOutside(ref)
	case strings.HasPrefix(ref, "#"):
		return ""
	case strings.HasPrefix(ref, EmbeddedSchemas):
		name, _, _ := strings.Cut(strings.TrimPrefix(ref, EmbeddedSchemas), "#")
		if _, err := embeddedSchema(name); err != nil {
			return err.Error()
		}
		return ""
	}
	return refOutside(ref)
}

// schemaRefs calls f for each reference keyword of the JSON Schema n: the
// keyword's key node and its value. It walks schema positions only, so
// "$ref" as a property name or inside enum, const, default or examples is
// not one.
func schemaRefs(n *yaml.Node, f func(key, value *yaml.Node)) {
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			schemaRefs(c, f)
		}
	case yaml.MappingNode:
		pairs(n, func(k, v *yaml.Node) {
			switch {
			case refKeywords[k.Value]:
				f(k, v)
			case dataKeywords[k.Value]:
			case namedSchemaKeywords[k.Value]:
				pairs(v, func(_, s *yaml.Node) { schemaRefs(s, f) })
			default:
				schemaRefs(v, f)
			}
		})
	}
}

// checkSchemaRefs reports every reference of the JSON Schema n that leaves
// it, at the reference's value; it reports whether there was one.
func (k *check) checkSchemaRefs(d *Document, n *yaml.Node) bool {
	found := false
	schemaRefs(n, func(key, v *yaml.Node) {
		if v.Kind != yaml.ScalarNode {
			return // the compiler reports a reference that is not a string
		}
		if why := refProblem(key.Value, v.Value); why != "" {
			dg := k.diags.Errorf(d.Pos(v), CodeSchemaRefOutside, "%s %q is not allowed: %s", key.Value, v.Value, why)
			dg.Hint = refRule
			if key.Value == "$schema" {
				dg.Hint = "$schema may name a draft's meta-schema, such as https://json-schema.org/draft/2020-12/schema"
			}
			found = true
		}
	})
	return found
}
