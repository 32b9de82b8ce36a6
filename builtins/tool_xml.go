package builtins

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/runner-dev/runner/runner"
)

// xmlValidate checks a document with a real XML parser (encoding/xml, in
// strict mode): it must be well-formed — tags matched, attributes quoted,
// entities known, exactly one root element and no text outside it — and,
// when args.root names one, its root element must have that name and the
// attributes args.attributes lists. It returns {valid, error, line}: an
// invalid document is a result, not a failed call, so that a pipeline can
// route it (back to its generator with the error as feedback); line is
// where the parser found the problem (0 when valid).
func xmlValidate(ctx context.Context, call *runner.ToolCall) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	doc, _ := call.Args["xml"].(string)
	root, _ := call.Args["root"].(string)
	var attrs []string
	list, _ := call.Args["attributes"].([]any)
	for _, a := range list {
		if s, ok := a.(string); ok {
			attrs = append(attrs, s)
		}
	}
	line, err := checkXML(ctx, doc, root, attrs)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return map[string]any{"valid": false, "error": err.Error(), "line": int64(line)}, nil
	}
	return map[string]any{"valid": true, "error": "", "line": int64(0)}, nil
}

// checkXML parses doc and returns the line of its first problem with the
// problem, or nil when the document is well-formed and its root fits.
func checkXML(ctx context.Context, doc, root string, attrs []string) (int, error) {
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict = true
	line := func() int { l, _ := dec.InputPos(); return l }
	depth, roots := 0, 0
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return line(), ctx.Err()
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if se, ok := errors.AsType[*xml.SyntaxError](err); ok {
				return se.Line, errors.New(se.Msg)
			}
			return line(), err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if roots++; roots > 1 {
					return line(), fmt.Errorf("a second root element <%s> after the root element closed: a document has exactly one root", t.Name.Local)
				}
				if err := checkRoot(t, root, attrs); err != nil {
					return line(), err
				}
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return line(), fmt.Errorf("text %q outside the root element", abbreviate(string(bytes.TrimSpace(t)), 40))
			}
		}
	}
	if roots == 0 {
		return line(), errors.New("no root element: the document is empty or holds only comments and declarations")
	}
	return 0, nil
}

// checkRoot checks the root element's name and required attributes.
func checkRoot(t xml.StartElement, root string, attrs []string) error {
	if root != "" && t.Name.Local != root {
		return fmt.Errorf("the root element is <%s>, want <%s>", t.Name.Local, root)
	}
	for _, want := range attrs {
		found := false
		for _, a := range t.Attr {
			if a.Name.Local == want {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("the root element <%s> has no %s attribute", t.Name.Local, want)
		}
	}
	return nil
}

// abbreviate shortens s to at most n runes, marking the cut.
func abbreviate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
