package builtins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// maxArgErrors is how many argument problems an error message lists.
const maxArgErrors = 3

// Tool builds the runtime tool of a checked Tool document: its expr, http
// or builtin implementation behind a check of every call's arguments
// against the tool's parameter schema. It is what cmd/runner passes as
// dsl.CompileOptions.Tool.
func Tool(def *dsl.ToolDef) (runner.Tool, error) {
	impl, err := toolImpl(def)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", def.Name, err)
	}
	schema, err := compileParameters(def.Parameters)
	if err != nil {
		return nil, fmt.Errorf("tool %s: parameters: %w", def.Name, err)
	}
	return &checkedTool{name: def.Name, params: schema, impl: impl,
		printer: message.NewPrinter(language.English)}, nil
}

// toolImpl returns the implementation a definition sets.
func toolImpl(def *dsl.ToolDef) (runner.Tool, error) {
	switch {
	case def.Expr != nil:
		return exprTool(def.Name, def.Expr), nil
	case def.HTTP != nil:
		return newHTTPTool(def.Name, def.HTTP), nil
	case def.Builtin != "":
		return builtinTool(def.Builtin)
	}
	return nil, errors.New("no implementation: set one of expr, http or builtin")
}

// compileParameters compiles a parameter schema; a missing one accepts any
// arguments.
func compileParameters(params map[string]any) (*jsonschema.Schema, error) {
	if params == nil {
		params = map[string]any{}
	}
	doc, err := toSchemaJSON(params)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file:///parameters.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("file:///parameters.json")
}

// toSchemaJSON round-trips v through JSON so that it holds what the schema
// library expects: json.Numbers, []any and map[string]any.
func toSchemaJSON(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// checkedTool validates a call's arguments before calling the tool.
type checkedTool struct {
	name    string
	params  *jsonschema.Schema
	impl    runner.Tool
	printer *message.Printer
}

// Call refuses arguments that do not match the parameter schema, for good:
// retrying with the same arguments cannot help.
func (t *checkedTool) Call(ctx context.Context, call *runner.ToolCall) (any, error) {
	if reason := t.invalid(call.Args); reason != "" {
		return nil, runner.Permanent(fmt.Errorf("tool %s: invalid arguments: %s", t.name, reason))
	}
	return t.impl.Call(ctx, call)
}

// invalid says why args do not match the parameter schema, or returns "".
func (t *checkedTool) invalid(args map[string]any) string {
	if args == nil {
		args = map[string]any{}
	}
	v, err := toSchemaJSON(args)
	if err != nil {
		return err.Error()
	}
	err = t.params.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	leaves := leafErrors(ve)
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		return slices.Compare(a.InstanceLocation, b.InstanceLocation)
	})
	return t.describe(leaves)
}

// describe renders the first few problems, each as "/where: what".
func (t *checkedTool) describe(leaves []*jsonschema.ValidationError) string {
	var msgs []string
	for _, e := range leaves[:min(len(leaves), maxArgErrors)] {
		msg := e.ErrorKind.LocalizedString(t.printer)
		if len(e.InstanceLocation) > 0 {
			msg = "/" + strings.Join(e.InstanceLocation, "/") + ": " + msg
		}
		msgs = append(msgs, msg)
	}
	if n := len(leaves) - maxArgErrors; n > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(msgs, "; ")
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

// decodeJSON decodes one JSON value with integers as int64 and other
// numbers as float64, as expressions and checkpoints expect.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return normalizeNumbers(v), nil
}

// normalizeNumbers turns json.Numbers into int64 or float64, deeply.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}
