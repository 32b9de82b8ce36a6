package dsl

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// PosAt returns the file position of byte offset off of s.Text, mapping it
// through the YAML scalar's quotes, escapes, line folding and indentation.
// When that is not possible (no Src, or Text is not part of the scalar's
// value) it returns the scalar's own position.
func (s Source) PosAt(off int) Pos {
	fallback := posOf(s.File, s.Node)
	if s.Node == nil || s.Src == nil || s.Node.Line < 1 {
		return fallback
	}
	base := strings.Index(s.Node.Value, s.Text)
	if base < 0 {
		return fallback
	}
	start, ok := scalarStart(s.Src, s.Node)
	if !ok {
		return fallback
	}
	sc := scalarWalk{src: s.Src, value: s.Node.Value, dq: s.Node.Style&yaml.DoubleQuotedStyle != 0,
		sq: s.Node.Style&yaml.SingleQuotedStyle != 0}
	j, ok := sc.find(start, base+min(max(off, 0), len(s.Text)))
	if !ok {
		return fallback
	}
	return posOfByte(s.File, s.Src, j)
}

// scalarStart returns the offset in src of the first byte of n's content:
// after the opening quote, or on the line after a block scalar's header.
func scalarStart(src []byte, n *yaml.Node) (int, bool) {
	j := 0
	for l := 1; l < n.Line; l++ {
		i := bytes.IndexByte(src[j:], '\n')
		if i < 0 {
			return 0, false
		}
		j += i + 1
	}
	for c := 1; c < n.Column && j < len(src) && src[j] != '\n'; c++ {
		_, size := utf8.DecodeRune(src[j:])
		j += size
	}
	if n.Tag != "" && j < len(src) && src[j] == '!' {
		j = skipToken(src, j)
	}
	if j >= len(src) {
		return j, n.Value == ""
	}
	switch {
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		return j + 1, src[j] == '"' || src[j] == '\''
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		i := bytes.IndexByte(src[j:], '\n')
		return j + i + 1, (src[j] == '|' || src[j] == '>') && i >= 0
	}
	return j, true
}

// skipToken skips a tag and the blanks after it.
func skipToken(src []byte, j int) int {
	for j < len(src) && src[j] != ' ' && src[j] != '\t' && src[j] != '\n' {
		j++
	}
	for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
		j++
	}
	return j
}

// scalarWalk walks a scalar's value and its source text in parallel. A run
// of white space in the value matches a run in the source, whatever their
// lengths (folding, indentation); escapes and doubled single quotes consume
// extra source.
type scalarWalk struct {
	src    []byte
	value  string
	dq, sq bool
}

// find returns the source offset of value offset target, walking from
// source offset j.
func (w scalarWalk) find(j, target int) (int, bool) {
	for v := 0; v < target; {
		r, n := utf8.DecodeRuneInString(w.value[v:])
		if unicode.IsSpace(r) {
			if k, ok := w.spaceUnit(j); ok {
				j, v = k, v+n
				continue
			}
		}
		k, ok := w.matchRune(w.skipSpace(j), r)
		if !ok {
			return 0, false
		}
		j, v = k, v+n
	}
	if r, _ := utf8.DecodeRuneInString(w.value[target:]); target < len(w.value) && !unicode.IsSpace(r) {
		j = w.skipSpace(j)
	}
	return j, true
}

// spaceUnit consumes one white-space byte, or an escape for white space in
// a double-quoted scalar.
func (w scalarWalk) spaceUnit(j int) (int, bool) {
	if j >= len(w.src) {
		return j, false
	}
	switch w.src[j] {
	case ' ', '\t', '\n', '\r':
		return j + 1, true
	case '\\':
		if w.dq && j+1 < len(w.src) && strings.IndexByte("nt rN_LP\t", w.src[j+1]) >= 0 {
			return j + 2, true
		}
	}
	return j, false
}

// skipSpace skips source white space, and escaped line breaks in a
// double-quoted scalar, which are not in the value.
func (w scalarWalk) skipSpace(j int) int {
	for j < len(w.src) {
		switch c := w.src[j]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			j++
		case c == '\\' && w.dq && j+1 < len(w.src) && (w.src[j+1] == '\n' || w.src[j+1] == '\r'):
			j += 2
		default:
			return j
		}
	}
	return j
}

// matchRune consumes the source of value rune r at j.
func (w scalarWalk) matchRune(j int, r rune) (int, bool) {
	if j >= len(w.src) {
		return j, false
	}
	if w.dq && w.src[j] == '\\' && j+1 < len(w.src) {
		return min(j+escapeLen(w.src[j+1]), len(w.src)), true
	}
	if w.sq && r == '\'' && w.src[j] == '\'' && j+1 < len(w.src) && w.src[j+1] == '\'' {
		return j + 2, true
	}
	got, size := utf8.DecodeRune(w.src[j:])
	return j + size, got == r
}

// escapeLen returns the length of the escape \c in a double-quoted scalar.
func escapeLen(c byte) int {
	switch c {
	case 'x':
		return 4
	case 'u':
		return 6
	case 'U':
		return 10
	}
	return 2
}

// posOfByte returns the position of byte offset j of src.
func posOfByte(file string, src []byte, j int) Pos {
	j = min(j, len(src))
	lineStart := bytes.LastIndexByte(src[:j], '\n') + 1
	return Pos{File: file, Line: bytes.Count(src[:j], []byte{'\n'}) + 1,
		Col: utf8.RuneCount(src[lineStart:j]) + 1}
}
