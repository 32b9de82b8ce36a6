package dsl_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

const inputSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: declared}
input:
  n: {type: integer}
  ratio: {type: number}
  tags: {type: array, items: {type: string}}
  user: {type: object, properties: {name: {type: string}, age: {type: integer}}}
  level: {type: string, enum: [low, high]}
  extra: {type: any}
  loose: {type: any}
state:
  n: {type: integer, default: 0}
  ratio: {type: number}
  tags: {type: array}
  user: {type: object}
  level: {type: string}
  extra: {type: any}
  loose: {type: string}
  internal: {type: integer, default: 0}
start: a
nodes:
  a: {type: noop, next: END}
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: undeclared}
state:
  n: {type: integer, default: 0}
  note: {type: string, default: ""}
start: a
nodes:
  a: {type: noop, next: END}
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: contract}
input:
  id: {type: string, required: true, format: uuid}
  level: {type: string, enum: [low, high], required: true}
  note: {type: string, default: none}
  at: {type: string, format: date-time}
  site: {type: string, format: uri}
state:
  id: {type: string, default: ""}
  level: {type: string, default: low}
  note: {type: string, default: ""}
  at: {type: string, default: ""}
  site: {type: string, default: ""}
start: a
nodes:
  a: {type: noop, next: END}
`

func inputProject(t *testing.T) *dsl.Project {
	t.Helper()
	docs, diags := dsl.Parse("p.yaml", []byte(inputSrc))
	proj, more := newChecker(t).Check(docs)
	if diags = append(diags, more...); diags.HasErrors(false) {
		t.Fatal(diags.Error())
	}
	return proj
}

func TestCheckInput(t *testing.T) {
	proj := inputProject(t)
	tests := []struct {
		name     string
		pipeline string
		input    map[string]any
		want     map[string]any // when valid
		errs     []string       // the problems, in field order
	}{
		{"empty", "declared", nil, map[string]any{}, nil},
		{"integers become int64", "declared", map[string]any{"n": 3, "ratio": 2, "user": map[string]any{"age": 4.0}},
			map[string]any{"n": int64(3), "ratio": int64(2), "user": map[string]any{"age": int64(4)}}, nil},
		{"any value", "declared", map[string]any{"extra": []any{1, "x", nil}}, map[string]any{"extra": []any{int64(1), "x", nil}}, nil},
		{"enum", "declared", map[string]any{"level": "high"}, map[string]any{"level": "high"}, nil},
		{"undeclared field", "declared", map[string]any{"internal": 999}, nil,
			[]string{`input field "internal" is not declared in the input of pipeline declared; accepted: extra, level, loose, n, ratio, tags, user`}},
		{"did you mean", "declared", map[string]any{"tag": []any{}}, nil,
			[]string{`input field "tag" is not declared in the input of pipeline declared; did you mean "tags"?`}},
		{"wrong type", "declared", map[string]any{"n": "3"}, nil, []string{`input field "n": expected integer, got string`}},
		{"fraction for an integer", "declared", map[string]any{"n": 2.5}, nil, []string{`input field "n": expected integer, got number 2.5`}},
		{"null", "declared", map[string]any{"n": nil}, nil,
			[]string{`input field "n": expected integer, got null (leave the field out to keep its default)`}},
		{"list item", "declared", map[string]any{"tags": []any{"a", 2}}, nil, []string{`input field "tags[1]": expected string, got integer`}},
		{"object property", "declared", map[string]any{"user": map[string]any{"name": 1, "nmae": "x"}}, nil,
			[]string{`input field "user.name": expected string, got integer`,
				`input field "user.nmae" is not a declared property; did you mean "name"?`}},
		{"not in enum", "declared", map[string]any{"level": "mid"}, nil, []string{`input field "level": must be one of "low", "high", got "mid"`}},
		{"state type too", "declared", map[string]any{"loose": 5}, nil, []string{`input field "loose": expected string, got integer`}},
		{"every problem", "declared", map[string]any{"n": "x", "ratio": "y"}, nil,
			[]string{`input field "n": expected integer, got string`, `input field "ratio": expected number, got string`}},
		{"state field without a declaration", "undeclared", map[string]any{"n": 3}, map[string]any{"n": int64(3)}, nil},
		{"state type without a declaration", "undeclared", map[string]any{"note": 3}, nil, []string{`input field "note": expected string, got integer`}},
		{"not a state field", "undeclared", map[string]any{"nope": 3}, nil,
			[]string{`input field "nope" is not a state field of pipeline undeclared; did you mean "note"?`}},
		{"required and defaults", "contract", map[string]any{"id": "01890a5d-ac96-774b-bcce-b302099a8057", "level": "high"},
			map[string]any{"id": "01890a5d-ac96-774b-bcce-b302099a8057", "level": "high", "note": "none"}, nil},
		{"a default is not forced", "contract", map[string]any{"id": "01890a5d-ac96-774b-bcce-b302099a8057", "level": "low", "note": "mine"},
			map[string]any{"id": "01890a5d-ac96-774b-bcce-b302099a8057", "level": "low", "note": "mine"}, nil},
		{"required missing", "contract", nil, nil, []string{
			`input field "id" is required; give it a string value`,
			`input field "level" is required; give it a string value`}},
		{"formats", "contract", map[string]any{"id": "123", "level": "low", "at": "2025-01-31 09:30", "site": "example.com"}, nil, []string{
			`input field "at": must be an RFC 3339 date-time (2025-01-31T09:30:00Z), got "2025-01-31 09:30"`,
			`input field "id": must be a UUID (01890a5d-ac96-774b-bcce-b302099a8057), got "123"`,
			`input field "site": must be an absolute URI (https://example.com/x), got "example.com"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := proj.Pipelines[tt.pipeline].CheckInput(tt.input)
			if len(tt.errs) == 0 {
				if err != nil || !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %#v, %v; want %#v", got, err, tt.want)
				}
				return
			}
			var ie *dsl.InputError
			if !errors.As(err, &ie) || !errors.Is(err, runner.ErrInput) {
				t.Fatalf("err = %v, want an *InputError that is runner.ErrInput", err)
			}
			var msgs []string
			for _, p := range ie.Problems {
				msgs = append(msgs, p.String())
			}
			if !reflect.DeepEqual(msgs, tt.errs) {
				t.Errorf("problems:\ngot  %q\nwant %q", msgs, tt.errs)
			}
		})
	}
}

// TestCheckInputCopies: the caller's input is not changed.
func TestCheckInputCopies(t *testing.T) {
	proj := inputProject(t)
	user := map[string]any{"age": 4.0}
	if _, err := proj.Pipelines["declared"].CheckInput(map[string]any{"user": user}); err != nil {
		t.Fatal(err)
	}
	if user["age"] != 4.0 {
		t.Errorf("the input changed: %#v", user)
	}
}

// TestCompiledInputCheck: Engine.Run checks the input of a compiled graph,
// and refuses before it writes anything.
func TestCompiledInputCheck(t *testing.T) {
	proj := inputProject(t)
	g, err := newChecker(t).Compile(proj, "declared", dsl.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&runner.Engine{}).Run(t.Context(), g, "t", map[string]any{"internal": 999})
	if !errors.Is(err, runner.ErrInput) || err.Error() != `invalid input for pipeline declared: input field "internal" is not declared in the input of pipeline declared; accepted: extra, level, loose, n, ratio, tags, user` {
		t.Errorf("err = %v", err)
	}
	res, err := (&runner.Engine{}).Run(t.Context(), g, "t", map[string]any{"n": 4.0})
	if err != nil || res.State["n"] != int64(4) {
		t.Errorf("got %v, %v; want the state's n as int64(4)", res, err)
	}
}

// TestInputMissing: an input that lacks required fields names each with
// a placeholder of its type, for a hint to complete.
func TestInputMissing(t *testing.T) {
	_, err := inputProject(t).Pipelines["contract"].CheckInput(map[string]any{"note": "x"})
	ie, ok := errors.AsType[*dsl.InputError](err)
	if want := map[string]any{"id": "", "level": "low"}; !ok || !reflect.DeepEqual(ie.Missing(), want) {
		t.Errorf("Missing() of %v, want %v", err, want)
	}
}
