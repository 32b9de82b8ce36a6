package dsl

import (
	"fmt"
	"maps"
	"math"
	"net/mail"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
)

// InputError is a run input that does not fit its pipeline: a field the
// pipeline does not accept, or a value of the wrong type; or values
// written to a thread's state that do not fit its fields (State). It
// wraps runner.ErrInput.
type InputError struct {
	Pipeline string
	Problems []InputProblem
	// State marks values written to a thread's state (CheckState), not
	// a run's input.
	State bool
}

// InputProblem is one field of a run input that does not fit.
type InputProblem struct {
	// Path locates the value: field names and list indexes, from the
	// input's top-level field down.
	Path []any
	// Message says what is wrong ("expected integer, got string"); Hint,
	// when set, what to do.
	Message string
	Hint    string
	unknown bool  // the field is not accepted (not: its value does not fit)
	missing *Type // the type of a required field the input lacks
}

// keyed reports whether the problem is the field itself, not its value.
func (p InputProblem) keyed() bool { return p.unknown || p.missing != nil }

// Field renders the problem's path: messages[0].role.
func (p InputProblem) Field() string {
	var b strings.Builder
	for i, s := range p.Path {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// Text is the problem without its hint: input field "n": expected integer, got string.
func (p InputProblem) Text() string { return p.text("input") }

// text is Text for values of what (input, state).
func (p InputProblem) text(what string) string {
	if len(p.Path) == 0 {
		return what + ": " + p.Message
	}
	if p.keyed() {
		return fmt.Sprintf("%s field %q %s", what, p.Field(), p.Message)
	}
	return fmt.Sprintf("%s field %q: %s", what, p.Field(), p.Message)
}

func (p InputProblem) String() string { return withHint(p.Text(), p.Hint) }

// withHint is msg followed by hint, when there is one.
func withHint(msg, hint string) string {
	if hint != "" {
		return msg + "; " + hint
	}
	return msg
}

// fieldErrors are problems as runner.FieldErrors gives them: each
// problem's path from the field, with its message and hint.
func fieldErrors(problems []InputProblem) []runner.FieldError {
	out := make([]runner.FieldError, len(problems))
	for i, p := range problems {
		msg := p.Message
		if p.keyed() { // "is not a state field of ...": the field itself
			msg = "the field " + msg
		}
		out[i] = runner.FieldError{Path: p.Field(), Message: withHint(msg, p.Hint)}
	}
	return out
}

// node returns the YAML node of the problem in an input mapping n: the
// key of a field that is not accepted, else the value; the innermost
// node found when the path leaves the document (a missing field's
// mapping).
func (p InputProblem) node(n *yaml.Node) *yaml.Node {
	for i, seg := range p.Path {
		var next *yaml.Node
		switch seg := seg.(type) {
		case string:
			if i == len(p.Path)-1 && p.keyed() {
				next = mapKey(n, seg)
			} else {
				next = mapGet(n, seg)
			}
		case int:
			if it := items(n); seg < len(it) {
				next = it[seg]
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

func (e *InputError) Error() string {
	what, err := "input", runner.ErrInput.Error()
	if e.State {
		what, err = "state", "invalid state values"
	}
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = withHint(p.text(what), p.Hint)
	}
	return fmt.Sprintf("%s for pipeline %s: %s", err, e.Pipeline, strings.Join(msgs, "; "))
}

// Unwrap makes an InputError a runner.ErrInput.
func (e *InputError) Unwrap() error { return runner.ErrInput }

// FieldErrors locates each problem (runner.FieldErrors).
func (e *InputError) FieldErrors() []runner.FieldError { return fieldErrors(e.Problems) }

// CheckInput checks a run input against the pipeline and returns it
// normalised: integers as int64 (an integral number is accepted for an
// integer), the declared defaults of the fields it leaves out filled in.
// A pipeline that declares `input:` accepts only those fields, each of its
// declared type (enum, format) and of its state field's type, and needs
// its required fields; one without an `input:` declaration accepts any
// state field of the field's type. The error is an *InputError naming
// every field that does not fit or is missing.
func (p *Pipeline) CheckInput(input map[string]any) (map[string]any, error) {
	out, problems := p.checkInput(runner.NormalizeJSON(input))
	if len(problems) > 0 {
		return nil, &InputError{Pipeline: p.Name, Problems: problems}
	}
	return out, nil
}

// DeclaresInput reports whether the pipeline declares its `input:`.
func (p *Pipeline) DeclaresInput() bool { return p.Input != nil && p.Input.Fields != nil }

// checkInput is CheckInput on a normalised value.
func (p *Pipeline) checkInput(v any) (map[string]any, []InputProblem) {
	if v == nil {
		v = map[string]any{}
	}
	input, ok := v.(map[string]any)
	if !ok {
		return nil, []InputProblem{{Message: "must be an object, got " + string(kindOfValue(v))}}
	}
	decl, where := p.State, "a state field of pipeline "+p.Name
	if p.DeclaresInput() {
		decl, where = p.Input, "declared in the input of pipeline "+p.Name
	}
	var problems []InputProblem
	out := make(map[string]any, len(input))
	for _, name := range slices.Sorted(maps.Keys(input)) {
		t, ok := decl.Fields[name]
		if !ok {
			problems = append(problems, InputProblem{Path: []any{name}, Message: "is not " + where, unknown: true,
				Hint: hintOr(didYouMean(name, decl.FieldNames()), acceptedFields(decl))})
			continue
		}
		c := &conformance{}
		val, _ := c.conform(input[name], t, []any{name})
		if st := p.State.Fields[name]; st != nil && st != t && len(c.problems) == 0 {
			val, _ = c.conform(val, st, []any{name})
		}
		problems = append(problems, c.problems...)
		out[name] = val
	}
	return out, append(problems, p.fillInput(out)...)
}

// CheckState checks values written to a thread's state — a state edit, a
// command's update, a resumed run's input — against the pipeline's state
// fields, as CheckInput checks a run's input (runner.Graph.CheckState):
// each must be a state field, its value of the field's type; a field
// whose reducer appends (append, messages) also takes one item. It returns
// them normalised; the error is an *InputError (State) naming every field
// that does not fit.
func (p *Pipeline) CheckState(values map[string]any) (map[string]any, error) {
	values, _ = runner.NormalizeJSON(values).(map[string]any)
	var problems []InputProblem
	out := make(map[string]any, len(values))
	for _, name := range slices.Sorted(maps.Keys(values)) {
		t, ok := p.State.Fields[name]
		if !ok {
			problems = append(problems, InputProblem{Path: []any{name}, Message: "is not a state field of pipeline " + p.Name, unknown: true,
				Hint: hintOr(didYouMean(name, p.State.FieldNames()), acceptedFields(p.State))})
			continue
		}
		if _, list := values[name].([]any); !list && appends(p.field(name)) {
			t = t.Items // one item to append
		}
		c := &conformance{}
		out[name], _ = c.conform(values[name], t, []any{name})
		problems = append(problems, c.problems...)
	}
	if len(problems) > 0 {
		return nil, &InputError{Pipeline: p.Name, Problems: problems, State: true}
	}
	return out, nil
}

// field returns the state field called name, or nil.
func (p *Pipeline) field(name string) *Field {
	for _, f := range p.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// appends reports whether f's reducer appends what it is given: a list's
// items, or one item.
func appends(f *Field) bool { return f != nil && (f.Reducer == "append" || f.Reducer == "messages") }

// fillInput adds the declared defaults of the fields input leaves out,
// and returns a problem for each required field it lacks.
func (p *Pipeline) fillInput(input map[string]any) []InputProblem {
	var problems []InputProblem
	for _, name := range p.InputRequired {
		if _, ok := input[name]; !ok {
			t := p.Input.Fields[name]
			problems = append(problems, InputProblem{Path: []any{name}, missing: t,
				Message: "is required", Hint: fmt.Sprintf("give it a %s value", t)})
		}
	}
	for name, def := range p.InputDefaults {
		if _, ok := input[name]; !ok {
			input[name] = runner.CloneJSON(def)
		}
	}
	return problems
}

// Missing returns the required fields the input lacks, each with a
// placeholder of its type (its first enum value, else the type's zero
// value), for a hint to complete.
func (e *InputError) Missing() map[string]any {
	out := map[string]any{}
	for _, pr := range e.Problems {
		if t := pr.missing; t != nil {
			out[pr.Field()] = placeholder(t)
		}
	}
	return out
}

// placeholder is an example value of t: its first enum value, else its
// kind's zero value.
func placeholder(t *Type) any {
	if len(t.Enum) > 0 {
		return t.Enum[0]
	}
	switch t.Kind {
	case String:
		return ""
	case Integer, Number:
		return 0
	case Boolean:
		return false
	case Array:
		return []any{}
	case Object:
		return map[string]any{}
	}
	return nil
}

// acceptedFields is the hint for an unknown input field.
func acceptedFields(decl *Type) string {
	if len(decl.Fields) == 0 {
		return "the pipeline accepts no input fields"
	}
	return "accepted: " + strings.Join(decl.FieldNames(), ", ")
}

// conformance collects the problems of a value checked against a type.
type conformance struct{ problems []InputProblem }

func (c *conformance) fail(path []any, format string, args ...any) {
	c.problems = append(c.problems, InputProblem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// conform checks a normalised value against t and returns it with an
// integral number made an integer where t wants one; it reports whether
// it changed (what changed is copied).
func (c *conformance) conform(v any, t *Type, path []any) (any, bool) {
	if t == nil || t.Kind == Any {
		return v, false
	}
	if v == nil {
		c.fail(path, "expected %s, got null (leave the field out to keep its default)", t)
		return v, false
	}
	changed := false
	switch t.Kind {
	case Integer:
		v, changed = c.integer(v, path)
	case Number:
		c.kind(v, t, path, Integer, Number)
	case String, Boolean:
		c.kind(v, t, path, t.Kind)
	case Array:
		v, changed = c.array(v, t, path)
	case Object:
		v, changed = c.object(v, t, path)
	}
	if len(t.Enum) > 0 && !enumHas(t.Enum, v) {
		c.fail(path, "must be one of %s, got %s", enumList(t.Enum), jsonText(v))
	}
	if s, ok := v.(string); ok && t.Format != "" && !formatOK(t.Format, s) {
		c.fail(path, "must be %s, got %s", formats[t.Format].what, jsonText(v))
	}
	return v, changed
}

// kind checks that v has one of the kinds.
func (c *conformance) kind(v any, t *Type, path []any, kinds ...Kind) {
	got := kindOfValue(v)
	for _, k := range kinds {
		if got == k {
			return
		}
	}
	c.fail(path, "expected %s, got %s", t, got)
}

// integer accepts an int64, or a float64 with an integral value.
func (c *conformance) integer(v any, path []any) (any, bool) {
	switch n := v.(type) {
	case int64:
		return n, false
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<63 {
			return int64(n), true
		}
		c.fail(path, "expected integer, got number %s", strconv.FormatFloat(n, 'g', -1, 64))
		return v, false
	}
	c.fail(path, "expected integer, got %s", kindOfValue(v))
	return v, false
}

func (c *conformance) array(v any, t *Type, path []any) (any, bool) {
	list, ok := v.([]any)
	if !ok {
		c.fail(path, "expected %s, got %s", t, kindOfValue(v))
		return v, false
	}
	var out []any
	for i, item := range list {
		if n, changed := c.conform(item, t.Items, append(path[:len(path):len(path)], i)); changed {
			if out == nil {
				out = slices.Clone(list)
			}
			out[i] = n
		}
	}
	if out == nil {
		return list, false
	}
	return out, true
}

func (c *conformance) object(v any, t *Type, path []any) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.fail(path, "expected %s, got %s", t, kindOfValue(v))
		return v, false
	}
	if t.Fields == nil {
		return m, false
	}
	var out map[string]any
	for _, k := range slices.Sorted(maps.Keys(m)) {
		sub := append(path[:len(path):len(path)], k)
		ft, ok := t.Fields[k]
		if !ok {
			c.problems = append(c.problems, InputProblem{Path: sub, Message: "is not a declared property", unknown: true,
				Hint: hintOr(didYouMean(k, t.FieldNames()), "declared: "+strings.Join(t.FieldNames(), ", "))})
			continue
		}
		if n, changed := c.conform(m[k], ft, sub); changed {
			if out == nil {
				out = maps.Clone(m)
			}
			out[k] = n
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}

func enumHas(enum []any, v any) bool {
	for _, e := range enum {
		if reflect.DeepEqual(e, v) {
			return true
		}
	}
	return false
}

func enumList(enum []any) string {
	s := make([]string, len(enum))
	for i, e := range enum {
		s[i] = jsonText(e)
	}
	return strings.Join(s, ", ")
}

// jsonText renders a value for a message, cut to 40 bytes.
func jsonText(v any) string {
	s := fmt.Sprintf("%v", v)
	if str, ok := v.(string); ok {
		s = strconv.Quote(str)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// formats are the string formats an input field can declare.
var formats = map[string]struct {
	what string // how a message names it
	ok   func(string) bool
}{
	"date-time": {"an RFC 3339 date-time (2025-01-31T09:30:00Z)", func(s string) bool { _, err := time.Parse(time.RFC3339, s); return err == nil }},
	"date":      {"a date (2025-01-31)", func(s string) bool { _, err := time.Parse(time.DateOnly, s); return err == nil }},
	"email":     {"an email address (ada@example.com)", func(s string) bool { a, err := mail.ParseAddress(s); return err == nil && a.Address == s }},
	"uri":       {"an absolute URI (https://example.com/x)", func(s string) bool { u, err := url.Parse(s); return err == nil && u.Scheme != "" }},
	"uuid":      {"a UUID (01890a5d-ac96-774b-bcce-b302099a8057)", uuidPattern.MatchString},
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// formatOK reports whether s has the format (an unknown format, which
// the schema refuses, accepts any string).
func formatOK(format, s string) bool {
	f, ok := formats[format]
	return !ok || f.ok(s)
}
