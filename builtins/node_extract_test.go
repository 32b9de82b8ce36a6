package builtins_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// extractPipeline is a pipeline of one extract node with the given with:
// block (indented by six spaces).
func extractPipeline(with string) string {
	return `apiVersion: runner/v1
kind: Pipeline
metadata: {name: ex}
state:
  messages: {type: array}
  history: {type: array}
  injected_skill_ids: {type: array, items: {type: string}}
  doc: {type: string}
  out: {type: any}
  note: {type: string}
start: x
nodes:
  x:
    type: extract
    with:
` + with + `
    next: END
`
}

// checkExtract parses and checks src; it returns the diagnostics.
func checkExtract(t *testing.T, src string) (*dsl.Checker, *dsl.Project, dsl.Diagnostics) {
	t.Helper()
	docs, diags := dsl.Parse("test.yaml", []byte(src))
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	proj, more := c.Check(docs)
	return c, proj, append(diags, more...)
}

// compileExtract checks src, which must be valid, and compiles pipeline ex.
func compileExtract(t *testing.T, src string) (*runner.Graph, error) {
	t.Helper()
	c, proj, diags := checkExtract(t, src)
	if diags.HasErrors(false) {
		t.Fatalf("invalid definitions:\n%s", diags.Error())
	}
	return c.Compile(proj, "ex", dsl.CompileOptions{Tool: builtins.Tool})
}

func msg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

const (
	skillSelect = `      pattern: 'SKILL_SELECT:([A-Za-z0-9_.-]+)'
      all: true
      exclude: state.injected_skill_ids
      to: out
      note: note`
	parsePlan = `      patterns: ['(?s)<plan>\s*(.*?)\s*</plan>', '(?s)(\{.*\})']
      json: true
      to: out
      note: note
      default: '{"delegate_to": "end", "tools": []}'`
)

func TestExtract(t *testing.T) {
	cases := []struct {
		name     string
		with     string
		input    map[string]any
		want     string // the JSON of state.out
		wantNote string
		wantErr  string // an error event the node emits
	}{
		{
			name: "skill select: duplicates and exclusions, last assistant message only",
			with: skillSelect,
			input: map[string]any{
				"injected_skill_ids": []any{"old"},
				"messages": []any{
					msg("assistant", "SKILL_SELECT:stale"),
					msg("user", "use SKILL_SELECT:user_said"),
					msg("assistant", "SKILL_SELECT:old then SKILL_SELECT:pdf, SKILL_SELECT:web-search and SKILL_SELECT:pdf again"),
					msg("tool", "SKILL_SELECT:tool_said"),
				},
			},
			want:     `["pdf","web-search"]`,
			wantNote: "out: pattern 1 of 1 matched",
		},
		{
			name:     "skill select: no match is an empty list",
			with:     skillSelect,
			input:    map[string]any{"messages": []any{msg("assistant", "no skills needed")}},
			want:     `[]`,
			wantNote: "out: no pattern matched; wrote an empty list",
		},
		{
			name: "skill select: every match excluded is an empty list",
			with: skillSelect,
			input: map[string]any{"injected_skill_ids": []any{"pdf"},
				"messages": []any{msg("assistant", "SKILL_SELECT:pdf SKILL_SELECT:pdf")}},
			want:     `[]`,
			wantNote: "out: no pattern matched; wrote an empty list",
		},
		{
			name: "skill select: content parts",
			with: skillSelect,
			input: map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "SKILL_SELECT:a"},
				map[string]any{"type": "text", "text": "SKILL_SELECT:b"},
			}}}},
			want:     `["a","b"]`,
			wantNote: "out: pattern 1 of 1 matched",
		},
		{
			name: "plan JSON inside tags",
			with: parsePlan,
			input: map[string]any{"messages": []any{msg("assistant",
				"I will delegate.\n<plan>\n{\"delegate_to\": \"coder\", \"tools\": [\"grep\"], \"n\": 2}\n</plan>\nThe {braces} after do not matter.")}},
			want:     `{"delegate_to":"coder","n":2,"tools":["grep"]}`,
			wantNote: "out: pattern 1 of 2 matched",
		},
		{
			name:     "plan without tags: the fallback pattern",
			with:     parsePlan,
			input:    map[string]any{"messages": []any{msg("assistant", `Plan: {"delegate_to": "web", "tools": []} — done`)}},
			want:     `{"delegate_to":"web","tools":[]}`,
			wantNote: "out: pattern 2 of 2 matched",
		},
		{
			name:     "plan with invalid JSON: the default, a note and an error event",
			with:     parsePlan,
			input:    map[string]any{"messages": []any{msg("assistant", "<plan>{delegate_to: coder}</plan>")}},
			want:     `{"delegate_to":"end","tools":[]}`,
			wantNote: "out: pattern 1 of 2 matched but its JSON is invalid (invalid character 'd' looking for beginning of object key string); used the default",
			wantErr:  "out: pattern 1 of 2 matched but its JSON is invalid",
		},
		{
			name:     "plan with no assistant message: the default",
			with:     parsePlan,
			input:    map[string]any{"messages": []any{msg("user", `<plan>{"delegate_to": "user"}</plan>`)}},
			want:     `{"delegate_to":"end","tools":[]}`,
			wantNote: "out: no assistant message in messages; used the default",
		},
		{
			name:     "single value without a group is the whole match",
			with:     "      pattern: 'ticket-[0-9]+'\n      to: out\n      note: note",
			input:    map[string]any{"messages": []any{msg("assistant", "see ticket-42 and ticket-7")}},
			want:     `"ticket-42"`,
			wantNote: "out: pattern 1 of 1 matched",
		},
		{
			name:     "no match without a default is null",
			with:     "      pattern: 'ticket-[0-9]+'\n      to: out\n      note: note",
			input:    map[string]any{"messages": []any{msg("assistant", "no tickets")}},
			want:     `null`,
			wantNote: "out: no pattern matched; wrote null",
		},
		{
			name:     "expr: DONE",
			with:     "      expr: 'text contains \"DONE\" ? \"done\" : \"continue\"'\n      to: out\n      note: note",
			input:    map[string]any{"messages": []any{msg("assistant", "All DONE.")}},
			want:     `"done"`,
			wantNote: "out: expr matched",
		},
		{
			name:  "expr: not done",
			with:  "      expr: 'text contains \"DONE\" ? \"done\" : \"continue\"'\n      to: out",
			input: map[string]any{"messages": []any{msg("assistant", "still working")}},
			want:  `"continue"`,
		},
		{
			name:     "expr: null finds nothing, so the default",
			with:     "      expr: 'text == \"\" ? nil : text'\n      default: '\"empty\"'\n      to: out\n      note: note",
			input:    map[string]any{"messages": []any{msg("assistant", "")}},
			want:     `"empty"`,
			wantNote: "out: expr found nothing; used the default",
		},
		{
			name:  "expr with all: distinct values minus the excluded",
			with:  "      expr: 'split(text, \",\")'\n      all: true\n      exclude: '[\"b\"]'\n      to: out",
			input: map[string]any{"messages": []any{msg("assistant", "a,b,a,c")}},
			want:  `["a","c"]`,
		},
		{
			name: "from names another messages field",
			with: "      from: history\n      pattern: 'SKILL_SELECT:(\\w+)'\n      to: out",
			input: map[string]any{"messages": []any{msg("assistant", "SKILL_SELECT:no")},
				"history": []any{msg("assistant", "SKILL_SELECT:yes")}},
			want: `"yes"`,
		},
		{
			name:     "text overrides the messages",
			with:     "      text: state.doc\n      pattern: 'id=(\\d+)'\n      json: true\n      to: out\n      note: note",
			input:    map[string]any{"doc": "row id=17", "messages": []any{msg("assistant", "id=99")}},
			want:     `17`,
			wantNote: "out: pattern 1 of 1 matched",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := compileExtract(t, extractPipeline(c.with))
			if err != nil {
				t.Fatal(err)
			}
			e := engine(t)
			var mu sync.Mutex
			var errs []runner.Event
			e.Sink = func(ev runner.Event) {
				if ev.Type == runner.EventError {
					mu.Lock()
					errs = append(errs, ev)
					mu.Unlock()
				}
			}
			res, err := e.Run(context.Background(), g, "t", c.input)
			if err != nil || res.Status != runner.StatusCompleted {
				t.Fatalf("%v %+v", err, res)
			}
			got, err := json.Marshal(res.State["out"])
			if err != nil || string(got) != c.want {
				t.Errorf("out = %s (%v), want %s", got, err, c.want)
			}
			if note, _ := res.State["note"].(string); note != c.wantNote {
				t.Errorf("note = %q, want %q", note, c.wantNote)
			}
			checkErrorEvents(t, errs, c.wantErr)
		})
	}
}

// checkErrorEvents wants one error event from node x containing want, or
// none when want is empty.
func checkErrorEvents(t *testing.T, errs []runner.Event, want string) {
	t.Helper()
	if want == "" {
		if len(errs) != 0 {
			t.Errorf("error events %+v, want none", errs)
		}
		return
	}
	if len(errs) != 1 || errs[0].Node != "x" {
		t.Fatalf("error events %+v, want one from node x", errs)
	}
	if data, _ := errs[0].Data.(map[string]any); !strings.Contains(data["error"].(string), want) {
		t.Errorf("error event %v, want %q", data, want)
	}
}

func TestExtractValidation(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want string // in the checker's diagnostics: validate refuses it
	}{
		{
			name: "a bad regular expression names the pattern",
			src:  extractPipeline("      patterns: ['<plan>(.*)</plan>', '(\\{.*']\n      to: out"),
			want: `test.yaml:16:39: error: pattern 2 "(\\{.*" is not a valid regular expression: error parsing regexp: missing closing )`,
		},
		{
			name: "to is required",
			src:  extractPipeline("      pattern: 'x'"),
			want: `missing required field "to" in nodes.x.with`,
		},
		{
			name: "pattern and expr are exclusive",
			src:  extractPipeline("      pattern: 'x'\n      expr: text\n      to: out"),
			want: "error: mapping has the wrong shape in nodes.x.with: expected a mapping with pattern, or a mapping with patterns, or a mapping with expr",
		},
		{
			name: "one of pattern, patterns, expr is required",
			src:  extractPipeline("      to: out"),
			want: "expected a mapping with pattern, or a mapping with patterns, or a mapping with expr",
		},
		{
			name: "text and from are exclusive",
			src:  extractPipeline("      text: state.doc\n      from: messages\n      pattern: 'x'\n      to: out"),
			want: "test.yaml:17:13: error: set text: or from:, not both",
		},
		{
			name: "an undeclared to field",
			src:  extractPipeline("      pattern: 'x'\n      to: plan"),
			want: `writes state field "plan", which is not declared`,
		},
		{
			name: "an unknown key",
			src:  extractPipeline("      pattern: 'x'\n      into: out\n      to: out"),
			want: `unknown field "into" in nodes.x.with`,
		},
		{
			name: "no messages field and no text",
			src:  strings.Replace(extractPipeline("      pattern: 'x'\n      to: out"), "  messages: {type: array}\n", "", 1),
			want: `test.yaml:13:11: error: extract reads the last assistant message of state field "messages", which is not declared`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, diags := checkExtract(t, c.src)
			if got := diags.Error(); !strings.Contains(got, c.want) {
				t.Errorf("diagnostics:\n%s\nwant them to contain %q", got, c.want)
			}
		})
	}
}
