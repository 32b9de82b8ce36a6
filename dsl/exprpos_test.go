package dsl

import (
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// findScalar returns the first scalar under n whose value contains marker.
func findScalar(n *yaml.Node, marker string) *yaml.Node {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, marker) {
		return n
	}
	for _, c := range n.Content {
		if s := findScalar(c, marker); s != nil {
			return s
		}
	}
	return nil
}

// markerPos returns the position of the only marker in src.
func markerPos(t *testing.T, src, marker string) Pos {
	t.Helper()
	i := strings.Index(src, marker)
	if i < 0 || strings.Count(src, marker) != 1 {
		t.Fatalf("marker %q must occur once in %q", marker, src)
	}
	lineStart := strings.LastIndexByte(src[:i], '\n') + 1
	return Pos{File: "f.yaml", Line: strings.Count(src[:i], "\n") + 1,
		Col: utf8.RuneCountInString(src[lineStart:i]) + 1}
}

func TestPosAt(t *testing.T) {
	tests := []struct{ name, src string }{
		{"plain", "when: state.x == XYZ\n"},
		{"plain after tabs", "when: a\t==\tXYZ\n"},
		{"plain multi-line", "when: a ==\n  b &&\n    XYZ\n"},
		{"single-quoted", "when: 'it''s a ''q'' XYZ'\n"},
		{"single-quoted multi-line", "when: 'a ''b''\n\n  c XYZ'\n"},
		{"double-quoted escapes", `when: "a \"q\" \n\t\\ \u00e9 XYZ"` + "\n"},
		{"double-quoted multi-line", "when: \"a \\\"b\\\"\n   c\n\n   d XYZ\"\n"},
		{"double-quoted line continuation", "when: \"abc\\\n     defXYZ\"\n"},
		{"literal block", "when: |\n  line1\n    indented \"q\"\n\n  XYZ\n"},
		{"literal block keep", "when: |+\n  a\n  XYZ\n\nnext: 1\n"},
		{"literal block with comment", "when: |- # comment\n    a\n    b XYZ\n"},
		{"folded block", "when: >\n  a b\n  c\n\n    more\n  d XYZ\n"},
		{"unicode", "when: \"é ü 日本 XYZ\"\n"},
		{"flow mapping", "when: {cel: \"a && XYZ\"}\n"},
		{"nested", "a:\n  - b:\n      c: >-\n        x\n        y XYZ\n"},
		{"tagged", "when: !!str a XYZ\n"},
		{"crlf", "when: |\r\n  a\r\n  b XYZ\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tt.src), &doc); err != nil {
				t.Fatalf("yaml: %v", err)
			}
			n := findScalar(&doc, "XYZ")
			if n == nil {
				t.Fatalf("no scalar with XYZ in %q", tt.src)
			}
			s := Source{Text: n.Value, File: "f.yaml", Node: n, Src: []byte(tt.src)}
			got := s.PosAt(strings.Index(n.Value, "XYZ"))
			if want := markerPos(t, tt.src, "XYZ"); got != want {
				t.Errorf("PosAt in %q (value %q) = %v, want %v", tt.src, n.Value, got, want)
			}
		})
	}
}

func TestPosAtFallback(t *testing.T) {
	src := "when: \"a && b\"\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	n := doc.Content[0].Content[1]
	node := Pos{File: "f.yaml", Line: 1, Col: 7}
	tests := []struct {
		name string
		s    Source
		off  int
		want Pos
	}{
		{"no source", Source{Text: "a && b", File: "f.yaml", Node: n}, 5, node},
		{"no node", Source{Text: "a && b", File: "f.yaml", Src: []byte(src)}, 5, Pos{File: "f.yaml"}},
		{"text not in value", Source{Text: "zzz", File: "f.yaml", Node: n, Src: []byte(src)}, 1, node},
		{"source not matching", Source{Text: "a && b", File: "f.yaml", Node: n, Src: []byte("x: 'q q q'")}, 5, node},
		{"negative offset", Source{Text: "a && b", File: "f.yaml", Node: n, Src: []byte(src)}, -3,
			Pos{File: "f.yaml", Line: 1, Col: 8}},
		{"offset past end", Source{Text: "a && b", File: "f.yaml", Node: n, Src: []byte(src)}, 99,
			Pos{File: "f.yaml", Line: 1, Col: 14}},
		{"part of the value", Source{Text: "b", File: "f.yaml", Node: n, Src: []byte(src)}, 0,
			Pos{File: "f.yaml", Line: 1, Col: 13}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.PosAt(tt.off); got != tt.want {
				t.Errorf("PosAt(%d) = %v, want %v", tt.off, got, tt.want)
			}
		})
	}
}
