package dsl

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/runner-dev/runner/runner"
)

// Template is a text with embedded expressions, such as a prompt:
// "Investigate ${state.transaction_id} at step ${state.step_count}". Each
// ${...} is an expression; $${ writes a literal ${. It is safe for
// concurrent use.
type Template struct {
	text  string
	parts []templatePart
	size  atomic.Int64 // the length of the last rendering: the next one's first guess
}

// templatePart is a literal text or, if prog is set, an expression.
type templatePart struct {
	lit  string
	prog *Program
}

// CompileTemplate compiles the template src.Text: each ${...} is an
// expression in src.Lang compiled against env; errors point inside the
// template. The Template is nil if there are errors.
func CompileTemplate(src Source, env *Env) (*Template, Diagnostics) {
	t := &Template{text: src.Text}
	var diags Diagnostics
	var lit strings.Builder
	text := src.Text
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '$')
		if j < 0 {
			lit.WriteString(text[i:])
			break
		}
		lit.WriteString(text[i : i+j])
		i += j
		switch {
		case strings.HasPrefix(text[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(text[i:], "${"):
			t.addLiteral(&lit)
			end := t.addExpr(src, env, i, &diags)
			if end < 0 {
				return nil, diags
			}
			i = end
		default:
			lit.WriteByte('$')
			i++
		}
	}
	t.addLiteral(&lit)
	if diags.HasErrors(false) {
		return nil, diags
	}
	return t, diags
}

func (t *Template) addLiteral(lit *strings.Builder) {
	if lit.Len() > 0 {
		t.parts = append(t.parts, templatePart{lit: lit.String()})
		lit.Reset()
	}
}

// addExpr compiles the expression of the ${ at offset at and returns the
// offset after its closing brace, or -1 if it has none.
func (t *Template) addExpr(src Source, env *Env, at int, diags *Diagnostics) int {
	start := at + 2
	end := exprEnd(src.Text, start)
	if end < 0 {
		diags.Errorf(src.PosAt(at), CodeExprSyntax, "unterminated ${ in template").Hint = "close it with }, or write $${ for a literal ${"
		return -1
	}
	text := src.Text[start:end]
	if strings.TrimSpace(text) == "" {
		diags.Errorf(src.PosAt(at), CodeExprSyntax, "empty ${} in template")
		return end + 1
	}
	c := &compilation{src: src, base: start, text: text, env: env}
	p, ds := c.compile()
	*diags = append(*diags, ds...)
	if p != nil {
		t.parts = append(t.parts, templatePart{prog: p})
	}
	return end + 1
}

// exprEnd returns the offset of the } closing an expression that starts at
// from, skipping nested braces and string literals, or -1.
func exprEnd(text string, from int) int {
	depth := 0
	for i := from; i < len(text); i++ {
		switch c := text[i]; c {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i
			}
			depth--
		case '"', '\'', '`':
			i = stringEnd(text, i, c)
		}
	}
	return -1
}

// stringEnd returns the offset of the quote closing the string literal
// opened at i, or the end of text.
func stringEnd(text string, i int, quote byte) int {
	for i++; i < len(text); i++ {
		switch text[i] {
		case '\\':
			if quote != '`' {
				i++
			}
		case quote:
			return i
		}
	}
	return len(text)
}

// Text returns the template's source text.
func (t *Template) Text() string { return t.text }

// With returns the template with the expressions that read no variable
// but those in consts (not the clock, not $env) rendered once, with consts,
// into its text: a planner's list of tools is rendered when the planner
// is built, not at every call. An expression that fails stays, to fail
// when the template renders.
func (t *Template) With(consts map[string]any) *Template {
	out := &Template{text: t.text}
	var lit strings.Builder
	for _, p := range t.parts {
		if p.prog == nil {
			lit.WriteString(p.lit)
			continue
		}
		if p.prog.readsOnly(consts) {
			if v, err := p.prog.Eval(consts); err == nil {
				writeValue(&lit, v)
				continue
			}
		}
		out.addLiteral(&lit)
		out.parts = append(out.parts, p)
	}
	out.addLiteral(&lit)
	return out
}

// Render evaluates the template's expressions with vars and returns the
// text. Strings are inserted as they are, null as nothing, numbers and
// booleans as in JSON, lists and objects as JSON.
func (t *Template) Render(vars map[string]any) (string, error) {
	if len(t.parts) == 1 && t.parts[0].prog == nil { // text alone
		return t.parts[0].lit, nil
	}
	var b strings.Builder
	b.Grow(int(t.size.Load()))
	for _, p := range t.parts {
		if p.prog == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := p.prog.Eval(vars)
		if err != nil {
			return "", err
		}
		writeValue(&b, v)
	}
	t.size.Store(int64(b.Len()))
	return b.String(), nil
}

func writeValue(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
	case string:
		b.WriteString(v)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	default:
		if data, err := runner.MarshalJSON(v); err == nil {
			b.Write(data)
		} else {
			fmt.Fprint(b, v)
		}
	}
}

// Eval renders the template: a template is an Evaluator of strings.
func (t *Template) Eval(vars map[string]any) (any, error) { return t.Render(vars) }
