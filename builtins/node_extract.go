package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// ExtractConfig is the with: block of an extract node.
type ExtractConfig struct {
	// Text is the text to scan; unset, the content of the last assistant
	// message of the From field (default "messages") is scanned.
	Text dsl.Expression `yaml:"text" kind:"string"`
	From dsl.FieldRef   `yaml:"from"`
	// Exactly one of Pattern, Patterns (tried in order: the first that
	// matches wins) and Expr, which sees the scanned text as `text`.
	Pattern  string         `yaml:"pattern"`
	Patterns []string       `yaml:"patterns"`
	Expr     dsl.Expression `yaml:"expr" vars:"text"`
	// All collects every distinct match, in order of first appearance,
	// instead of the first. JSON parses the matched text as JSON.
	All  bool `yaml:"all"`
	JSON bool `yaml:"json"`
	// Exclude is a list of values that do not count as matches.
	Exclude dsl.Expression `yaml:"exclude" kind:"array"`
	// Default is written when nothing matches or the JSON is invalid.
	Default dsl.Expression `yaml:"default"`
	// To receives the result; Note, when set, a line saying how it was
	// obtained.
	To   dsl.FieldRef `yaml:"to"`
	Note dsl.FieldRef `yaml:"note"`
}

// ExtractNode pulls values out of a text — by default the last assistant
// message — with regular expressions or an expression. It never fails on
// what it reads: when nothing matches or the JSON is invalid it writes the
// default.
var ExtractNode = dsl.NodeType{
	Name: "extract",
	Doc: "Scans a text — `text`, or the content of the last assistant message of `from` (default messages) — with a regular expression " +
		"(`pattern`, or `patterns` tried in order: the first that matches wins; the value is the first capture group, or the whole match) " +
		"or an expression (`expr`, which sees the text as `text`), and writes the value to `to`. `all: true` collects every distinct match " +
		"in order of first appearance; values listed by `exclude` do not count as matches; `json: true` parses the value as JSON. " +
		"When nothing matches or the JSON is invalid, `default` is written (unset: null, or [] with all), never an error; " +
		"`note` receives a line saying which pattern matched or why the default was used.",
	Schema: `{
  "type": "object",
  "properties": {
    "text": {"$ref": "defs.json#/$defs/expression"},
    "from": {"$ref": "defs.json#/$defs/name"},
    "pattern": {"type": "string", "minLength": 1},
    "patterns": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
    "expr": {"$ref": "defs.json#/$defs/expression"},
    "all": {"type": "boolean"},
    "json": {"type": "boolean"},
    "exclude": {"$ref": "defs.json#/$defs/expression"},
    "default": {"$ref": "defs.json#/$defs/expression"},
    "to": {"$ref": "defs.json#/$defs/name"},
    "note": {"$ref": "defs.json#/$defs/name"}
  },
  "required": ["to"],
  "oneOf": [
    {"required": ["pattern"], "not": {"anyOf": [{"required": ["patterns"]}, {"required": ["expr"]}]}},
    {"required": ["patterns"], "not": {"anyOf": [{"required": ["pattern"]}, {"required": ["expr"]}]}},
    {"required": ["expr"], "not": {"anyOf": [{"required": ["pattern"]}, {"required": ["patterns"]}]}}
  ],
  "additionalProperties": false
}`,
	Config: func() any { return &ExtractConfig{} },
	Check:  checkExtract,
	Build:  buildExtract,
}

// errTextAndFrom refuses a node that sets both text: and from:.
var errTextAndFrom = errors.New("set text: or from:, not both: text: replaces the message that from: names")

// errNoSource refuses scanning the messages of an undeclared field.
func errNoSource(field string) error {
	return fmt.Errorf("extract reads the last assistant message of state field %q, which is not declared; declare it, or set text or from", field)
}

// source is the state field whose last assistant message is scanned
// when text: is not set.
func (c *ExtractConfig) source() string {
	if c.From.Name == "" {
		return "messages"
	}
	return c.From.Name
}

// patterns returns the regular expressions with the path of each in with:.
func (c *ExtractConfig) patterns() (patterns, paths []string) {
	if c.Pattern != "" {
		return []string{c.Pattern}, []string{"pattern"}
	}
	for i := range c.Patterns {
		paths = append(paths, "patterns."+strconv.Itoa(i))
	}
	return c.Patterns, paths
}

// compilePattern compiles the i-th (0-based) of a node's patterns.
func compilePattern(i int, p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("pattern %d %q is not a valid regular expression: %w", i+1, p, err)
	}
	return re, nil
}

// checkExtract refuses text: with from:, a scanned messages field that is
// not declared, and patterns that do not compile.
func checkExtract(cfg any, chk *dsl.NodeCheck) {
	c := cfg.(*ExtractConfig)
	if c.Text.Set() && c.From.Name != "" {
		chk.Errorf("from", "%v", errTextAndFrom)
	}
	if !c.Text.Set() && c.From.Name == "" && !chk.HasField(c.source()) { // a from: field is checked as a field reference
		chk.Errorf("from", "%v", errNoSource(c.source()))
	}
	patterns, paths := c.patterns()
	for i, p := range patterns {
		if _, err := compilePattern(i, p); err != nil {
			chk.Errorf(paths[i], "%v", err)
		}
	}
}

func buildExtract(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*ExtractConfig)
	if c.Text.Program != nil && c.From.Name != "" {
		return nil, errTextAndFrom
	}
	n := &extractNode{cfg: c, node: b.Node.Name, from: c.source()}
	if c.Text.Program == nil && !b.HasField(n.from) {
		return nil, errNoSource(n.from)
	}
	patterns, _ := c.patterns()
	for i, p := range patterns {
		re, err := compilePattern(i, p)
		if err != nil {
			return nil, err
		}
		n.res = append(n.res, re)
	}
	return n, nil
}

// extractNode scans a text and writes what it found.
type extractNode struct {
	cfg  *ExtractConfig
	node string
	from string
	res  []*regexp.Regexp
}

// extraction is what a scan found: values (one unless all) and how.
type extraction struct {
	values []any
	how    string // "pattern 2 of 3 matched"; empty: nothing found
	why    string // why nothing was found
}

// Run scans the text and writes the result, or the default.
func (n *extractNode) Run(_ context.Context, in *runner.Input) (runner.Update, error) {
	vars := in.Vars()
	x, err := n.extract(in.State, vars)
	if err != nil {
		return nil, runner.Permanent(err)
	}
	if x.how != "" && n.cfg.JSON {
		if err := parseJSONValues(x.values); err != nil {
			x = extraction{why: fmt.Sprintf("%s but its JSON is invalid (%v)", x.how, err)}
			in.Run.Emit(runner.EventError, n.node, map[string]any{"error": n.cfg.To.Name + ": " + x.why, "recovered": true})
		}
	}
	if x.how != "" {
		return n.update(n.result(x.values), x.how), nil
	}
	v, how, err := n.fallback(vars)
	if err != nil {
		return nil, runner.Permanent(err)
	}
	return n.update(v, x.why+"; "+how), nil
}

// extract finds the values in the text to scan.
func (n *extractNode) extract(state runner.State, vars map[string]any) (extraction, error) {
	excluded, err := n.excluded(vars)
	if err != nil {
		return extraction{}, err
	}
	if n.cfg.Text.Program == nil {
		text, ok := lastAssistantText(state[n.from])
		if !ok {
			return extraction{why: "no assistant message in " + n.from}, nil
		}
		return n.scan(text, vars, excluded)
	}
	v, err := n.cfg.Text.Program.Eval(vars)
	if err != nil {
		return extraction{}, fmt.Errorf("text: %w", err)
	}
	text, ok := v.(string)
	if v != nil && !ok {
		return extraction{}, fmt.Errorf("text: want a string, got %T", v)
	}
	return n.scan(text, vars, excluded)
}

// lastAssistantText is the content of the last message with role
// assistant: a string, or the text parts of a list of content parts.
func lastAssistantText(messages any) (string, bool) {
	list, _ := messages.([]any)
	for i := len(list) - 1; i >= 0; i-- {
		m, _ := list[i].(map[string]any)
		if m["role"] != "assistant" {
			continue
		}
		switch c := m["content"].(type) {
		case string:
			return c, true
		case []any:
			var parts []string
			for _, p := range c {
				if part, ok := p.(map[string]any); ok {
					if s, ok := part["text"].(string); ok {
						parts = append(parts, s)
					}
				}
			}
			return strings.Join(parts, "\n"), true
		}
		return "", true
	}
	return "", false
}

// excluded evaluates exclude into a set of value keys.
func (n *extractNode) excluded(vars map[string]any) (map[string]bool, error) {
	p := n.cfg.Exclude.Program
	if p == nil {
		return nil, nil
	}
	v, err := p.Eval(vars)
	if err != nil {
		return nil, fmt.Errorf("exclude: %w", err)
	}
	list, ok := v.([]any)
	if v != nil && !ok {
		return nil, fmt.Errorf("exclude: want a list, got %T", v)
	}
	set := make(map[string]bool, len(list))
	for _, e := range list {
		set[valueKey(e)] = true
	}
	return set, nil
}

// scan finds the values in text.
func (n *extractNode) scan(text string, vars map[string]any, excluded map[string]bool) (extraction, error) {
	if n.cfg.Expr.Program != nil {
		return n.evalExpr(text, vars, excluded)
	}
	for i, re := range n.res {
		if vals := n.matches(re, text, excluded); len(vals) > 0 {
			return extraction{values: vals, how: fmt.Sprintf("pattern %d of %d matched", i+1, len(n.res))}, nil
		}
	}
	return extraction{why: "no pattern matched"}, nil
}

// matches returns the distinct, not excluded values re finds in text: the
// first capture group, or the whole match; only the first unless all.
func (n *extractNode) matches(re *regexp.Regexp, text string, excluded map[string]bool) []any {
	var vals []any
	seen := map[string]bool{}
	limit := 1
	if n.cfg.All || len(excluded) > 0 {
		limit = -1
	}
	for _, m := range re.FindAllStringSubmatch(text, limit) {
		v := m[0]
		if len(m) > 1 {
			v = m[1]
		}
		if excluded[v] || seen[v] {
			continue
		}
		seen[v] = true
		if vals = append(vals, v); !n.cfg.All {
			break
		}
	}
	return vals
}

// evalExpr computes the values with the expression; null finds nothing.
func (n *extractNode) evalExpr(text string, vars map[string]any, excluded map[string]bool) (extraction, error) {
	ev := make(map[string]any, len(vars)+1)
	for k, v := range vars {
		ev[k] = v
	}
	ev["text"] = text
	v, err := n.cfg.Expr.Program.Eval(ev)
	if err != nil {
		return extraction{}, fmt.Errorf("expr: %w", err)
	}
	var vals []any
	if list, ok := v.([]any); ok && n.cfg.All {
		vals = list
	} else if v != nil {
		vals = []any{v}
	}
	if vals = distinct(vals, excluded); len(vals) == 0 {
		return extraction{why: "expr found nothing"}, nil
	}
	return extraction{values: vals, how: "expr matched"}, nil
}

// distinct drops repeated and excluded values, keeping the order.
func distinct(vals []any, excluded map[string]bool) []any {
	var out []any
	seen := map[string]bool{}
	for _, v := range vals {
		k := valueKey(v)
		if !excluded[k] && !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

// valueKey compares values: a string is itself, anything else its JSON.
func valueKey(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// parseJSONValues replaces every string of vals by its JSON value, in
// place; vals is the node's own slice.
func parseJSONValues(vals []any) error {
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		parsed, err := runner.DecodeJSON([]byte(s))
		if err != nil {
			return err
		}
		vals[i] = parsed
	}
	return nil
}

// result is the value written: the list with all, else the single value.
func (n *extractNode) result(vals []any) any {
	if n.cfg.All {
		return vals
	}
	return vals[0]
}

// fallback is the default's value, or null ([] with all) when unset.
func (n *extractNode) fallback(vars map[string]any) (any, string, error) {
	if p := n.cfg.Default.Program; p != nil {
		v, err := p.Eval(vars)
		if err != nil {
			return nil, "", fmt.Errorf("default: %w", err)
		}
		return v, "used the default", nil
	}
	if n.cfg.All {
		return []any{}, "wrote an empty list", nil
	}
	return nil, "wrote null", nil
}

// update writes the result and, when configured, the note.
func (n *extractNode) update(v any, how string) runner.Update {
	upd := runner.Update{n.cfg.To.Name: v}
	if n.cfg.Note.Name != "" {
		upd[n.cfg.Note.Name] = n.cfg.To.Name + ": " + how
	}
	return upd
}
