package dsl

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Pos is a position in a definition file: 1-based line and column.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// String renders the position as file:line:col.
func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Before reports whether p sorts before q (by file, line, column).
func (p Pos) Before(q Pos) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	if p.Line != q.Line {
		return p.Line < q.Line
	}
	return p.Col < q.Col
}

// endOf returns where a plain scalar written on one line ends: the column
// just past it. It returns the zero Pos for other nodes, whose end the node
// does not tell.
func endOf(file string, n *yaml.Node) Pos {
	if n == nil || n.Kind != yaml.ScalarNode || n.Style != 0 || n.Line < 1 || strings.Contains(n.Value, "\n") {
		return Pos{}
	}
	return Pos{File: file, Line: n.Line, Col: n.Column + utf8.RuneCountInString(n.Value)}
}

// posOf returns the position of a YAML node in file.
func posOf(file string, n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: file}
	}
	return Pos{File: file, Line: n.Line, Col: n.Column}
}
