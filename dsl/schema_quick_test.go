package dsl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/dsl"
)

// TestQuickSchemaAgrees checks that the quick schema validator, which
// spares valid documents the schema library, decides as the library does:
// on every document of the invalid corpus, the shipped definitions and
// the benchmark's corpus, and on variants of each with one value
// replaced by a value of another shape or one pair of a mapping left out
// (of the shipped definitions, only of the first of each kind, and not
// with -short).
func TestQuickSchemaAgrees(t *testing.T) {
	c := newChecker(t)
	shipped, _ := dsl.Load("../pipelines", "../agents", "../rules")
	varied := map[string]bool{}
	for _, d := range append(shipped, quickCorpus(t)...) {
		if why := c.QuickDisagrees(d); why != "" {
			t.Errorf("%s: %s", d.Pos(d.Root), why)
		}
		if isShipped := strings.HasPrefix(d.File, ".."); isShipped && (testing.Short() || varied[d.Kind]) {
			continue
		} else if isShipped {
			varied[d.Kind] = true
		}
		variants(d.Root, func(at *yaml.Node) {
			if why := c.QuickDisagrees(d); why != "" {
				t.Errorf("%s, with the value at line %d:%d changed: %s", d.Pos(d.Root), at.Line, at.Column, why)
			}
		})
	}
}

// quickCorpus is every document of the invalid corpus and a small
// benchmark corpus.
func quickCorpus(t *testing.T) []*dsl.Document {
	var docs []*dsl.Document
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		more, _ := dsl.Parse(f, src)
		docs = append(docs, more...)
	}
	gen, _ := dsl.Parse("corpus.yaml", corpus(5))
	return append(docs, gen...)
}

// replacements are the values variants puts in place of each value.
var replacements = []*yaml.Node{
	{Kind: yaml.ScalarNode, Tag: "!!str", Value: "x"},
	{Kind: yaml.ScalarNode, Tag: "!!str", Value: "not a name!"},
	{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0"},
	{Kind: yaml.ScalarNode, Tag: "!!float", Value: "2.5"},
	{Kind: yaml.ScalarNode, Tag: "!!float", Value: ".inf"},
	{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"},
	{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"},
	{Kind: yaml.SequenceNode, Tag: "!!seq"},
	{Kind: yaml.MappingNode, Tag: "!!map"},
}

// variants calls f once for each variant of the tree under n: a value
// replaced by each of replacements, or a pair of a mapping left out; it
// restores n afterwards. at is the value changed.
func variants(n *yaml.Node, f func(at *yaml.Node)) {
	step := 1
	if n.Kind == yaml.MappingNode {
		step = 2
	}
	for i := step - 1; i < len(n.Content); i += step {
		orig := n.Content[i]
		for _, r := range replacements {
			n.Content[i] = r
			f(orig)
		}
		n.Content[i] = orig
		if n.Kind == yaml.MappingNode {
			content := n.Content
			n.Content = append(append([]*yaml.Node(nil), content[:i-1]...), content[i+1:]...)
			f(orig)
			n.Content = content
		}
		variants(orig, f)
	}
}
