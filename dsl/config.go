package dsl

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Expression is a with: value holding an expression of any result type. The
// checker compiles it against the node's environment; after a successful
// check Program is set.
type Expression struct {
	Program *Program
	node    *yaml.Node
}

// UnmarshalYAML keeps the node; the checker compiles it.
func (e *Expression) UnmarshalYAML(n *yaml.Node) error { e.node = n; return nil }

// Set reports whether the expression is written in with: (a node type's
// Check sees it even when it did not compile).
func (e *Expression) Set() bool { return e.node != nil || e.Program != nil }

// Condition is an Expression that must be boolean.
type Condition struct{ Expression }

// UnmarshalYAML keeps the node; the checker compiles it.
func (c *Condition) UnmarshalYAML(n *yaml.Node) error { c.node = n; return nil }

// TemplateText is a with: string with ${ ... } interpolations.
type TemplateText struct {
	Template *Template
	node     *yaml.Node
}

// UnmarshalYAML keeps the node; the checker compiles it.
func (t *TemplateText) UnmarshalYAML(n *yaml.Node) error { t.node = n; return nil }

// decodeString decodes a string: a plain string scalar at once, anything
// else (with its error) through the YAML decoder.
func decodeString(n *yaml.Node, s *string) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		*s = n.Value
		return nil
	}
	return n.Decode(s)
}

// FieldRef names a state field a node writes. A config may preset a default
// name; the checker verifies the field is declared.
type FieldRef struct {
	Name string
	node *yaml.Node
}

// UnmarshalYAML reads the field name.
func (f *FieldRef) UnmarshalYAML(n *yaml.Node) error { f.node = n; return decodeString(n, &f.Name) }

// ToolRef names a Tool document.
type ToolRef struct {
	Name string
	node *yaml.Node
}

// UnmarshalYAML reads the tool name.
func (t *ToolRef) UnmarshalYAML(n *yaml.Node) error { t.node = n; return decodeString(n, &t.Name) }

// PipelineRef names a Pipeline document.
type PipelineRef struct {
	Name string
	node *yaml.Node
}

// UnmarshalYAML reads the pipeline name.
func (p *PipelineRef) UnmarshalYAML(n *yaml.Node) error { p.node = n; return decodeString(n, &p.Name) }

// JSONSchemaDoc is a with: value holding a JSON Schema (an llm node's
// output_schema, an interrupt node's resume_schema). The checker verifies
// that it compiles and that its references stay inside it.
type JSONSchemaDoc struct {
	Doc  map[string]any
	node *yaml.Node
}

// UnmarshalYAML decodes the schema and keeps the node.
func (s *JSONSchemaDoc) UnmarshalYAML(n *yaml.Node) error { s.node = n; return n.Decode(&s.Doc) }

// ModelRef names a Model document; empty, it is the agent's model, which
// the pipeline then needs from the agent that runs it.
type ModelRef struct {
	Name string
	node *yaml.Node
}

// UnmarshalYAML reads the model name.
func (m *ModelRef) UnmarshalYAML(n *yaml.Node) error { m.node = n; return decodeString(n, &m.Name) }

// VarTyper is implemented by a node config, or by a struct inside one (a
// parallel node's branch), whose expressions' extra variables have types
// that depend on its own values: a subgraph's `result` is the state of the
// pipeline it names. The types it returns override the node type's Vars
// for the expressions inside the value.
type VarTyper interface {
	VarTypes(c *NodeCheck) map[string]*Type
}

// configVisitor receives the checked parts of a node config. vars are the
// extra variables the struct tag `vars:"a,b"` gives the value's
// expressions; the tag `kind:"array"` fixes an expression's result kind.
// enterTyped is called for a value that types its variables, and the
// function it returns once the value has been visited.
type configVisitor interface {
	enterTyped(t VarTyper) (leave func())
	visitExpression(e *Expression, want *Type, vars []string)
	visitWrite(f *FieldRef, e *Expression, vars []string) // e's value is written to state field f
	visitTemplate(t *TemplateText, vars []string)
	visitField(f *FieldRef)
	visitTool(t *ToolRef)
	visitPipeline(p *PipelineRef)
	visitSchema(s *JSONSchemaDoc)
	visitModel(m *ModelRef)
}

var (
	markerExpr  = reflect.TypeFor[Expression]()
	markerCond  = reflect.TypeFor[Condition]()
	markerTmpl  = reflect.TypeFor[TemplateText]()
	markerField = reflect.TypeFor[FieldRef]()
	markerTool  = reflect.TypeFor[ToolRef]()
	markerPipe  = reflect.TypeFor[PipelineRef]()
	markerJSON  = reflect.TypeFor[JSONSchemaDoc]()
	markerModel = reflect.TypeFor[ModelRef]()
)

// visitConfig walks a decoded config value and hands its checked parts to v.
func visitConfig(val reflect.Value, vars []string, v configVisitor) {
	switch val.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !val.IsNil() {
			visitConfig(val.Elem(), vars, v)
		}
		return
	case reflect.Slice, reflect.Array:
		for i := range val.Len() {
			visitConfig(val.Index(i), vars, v)
		}
		return
	case reflect.Map:
		iter := val.MapRange()
		for iter.Next() {
			visitMapEntry(val, iter.Key(), iter.Value(), vars, v)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	if visitMarker(val, vars, v) {
		return
	}
	if val.CanAddr() {
		if t, ok := val.Addr().Interface().(VarTyper); ok {
			defer v.enterTyped(t)()
		}
	}
	for i := range val.NumField() {
		f := val.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		fvars := vars
		if tag := f.Tag.Get("vars"); tag != "" {
			fvars = append(append([]string(nil), vars...), strings.Split(tag, ",")...)
		}
		if kind := f.Tag.Get("kind"); kind != "" && f.Type == markerExpr { // the value's kind is fixed
			v.visitExpression(val.Field(i).Addr().Interface().(*Expression), &Type{Kind: Kind(kind)}, fvars)
			continue
		}
		visitConfig(val.Field(i), fvars, v)
	}
}

// visitMapEntry visits a map's key (map values are not addressable, so a
// marker value is copied, visited and stored back).
// A map from state fields to expressions writes each value to its field:
// the expression must give the field's type.
func visitMapEntry(m, key, elem reflect.Value, vars []string, v configVisitor) {
	k := reflect.New(key.Type()).Elem()
	k.Set(key)
	visitConfig(k, vars, v)
	e := reflect.New(elem.Type()).Elem()
	e.Set(elem)
	if k.Type() == markerField && e.Type() == markerExpr {
		v.visitWrite(k.Addr().Interface().(*FieldRef), e.Addr().Interface().(*Expression), vars)
	} else {
		visitConfig(e, vars, v)
	}
	m.SetMapIndex(key, e)
}

// visitMarker handles the checked types; it reports whether val was one.
func visitMarker(val reflect.Value, vars []string, v configVisitor) bool {
	if !val.CanAddr() {
		cp := reflect.New(val.Type()).Elem()
		cp.Set(val)
		val = cp
	}
	switch val.Type() {
	case markerExpr:
		v.visitExpression(val.Addr().Interface().(*Expression), nil, vars)
	case markerCond:
		v.visitExpression(&val.Addr().Interface().(*Condition).Expression, BoolType, vars)
	case markerTmpl:
		v.visitTemplate(val.Addr().Interface().(*TemplateText), vars)
	case markerField:
		v.visitField(val.Addr().Interface().(*FieldRef))
	case markerTool:
		v.visitTool(val.Addr().Interface().(*ToolRef))
	case markerPipe:
		v.visitPipeline(val.Addr().Interface().(*PipelineRef))
	case markerJSON:
		v.visitSchema(val.Addr().Interface().(*JSONSchemaDoc))
	case markerModel:
		v.visitModel(val.Addr().Interface().(*ModelRef))
	default:
		return false
	}
	return true
}

// collectPipelineRefs calls f for every PipelineRef in a node config.
func collectPipelineRefs(cfg any, f func(*PipelineRef)) {
	if cfg != nil {
		visitConfig(reflect.ValueOf(cfg), nil, pipelineRefs(f))
	}
}

// pipelineRefs is a configVisitor that only sees pipeline references.
type pipelineRefs func(*PipelineRef)

func (pipelineRefs) enterTyped(VarTyper) func()                   { return func() {} }
func (pipelineRefs) visitExpression(*Expression, *Type, []string) {}
func (pipelineRefs) visitWrite(*FieldRef, *Expression, []string)  {}
func (pipelineRefs) visitTemplate(*TemplateText, []string)        {}
func (pipelineRefs) visitField(*FieldRef)                         {}
func (pipelineRefs) visitTool(*ToolRef)                           {}
func (pipelineRefs) visitModel(*ModelRef)                         {}
func (f pipelineRefs) visitPipeline(p *PipelineRef)               { f(p) }
func (pipelineRefs) visitSchema(*JSONSchemaDoc)                   {}
