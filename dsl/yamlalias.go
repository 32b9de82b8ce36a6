package dsl

import (
	"go.yaml.in/yaml/v3"
)

// MaxAliasExpansion bounds the values the aliases of one document may
// add when they are expanded: a document of a few lines whose aliases
// nest ten deep ("billion laughs") is refused, not expanded.
const MaxAliasExpansion = 100_000

// expandAliases replaces, under root, every alias (*name) by a copy of
// the value its anchor (&name) marks and every merge key (<<: *name,
// <<: [*a, *b]) by the fields of the mappings it names that the mapping
// does not set itself. A copy keeps the positions of the value it copies,
// so a problem in it is reported where it is written. It reports a cycle,
// a merge key of another shape and an expansion past MaxAliasExpansion,
// and returns whether the document could be expanded.
func expandAliases(file string, root *yaml.Node, diags *Diagnostics) bool {
	x := &aliasExpander{file: file, diags: diags, left: MaxAliasExpansion, open: map[*yaml.Node]bool{}}
	x.walk(root)
	return !x.failed
}

type aliasExpander struct {
	file   string
	diags  *Diagnostics
	left   int                 // how many more values copies may add
	open   map[*yaml.Node]bool // the anchored values being copied
	failed bool
}

// walk expands the aliases and merge keys under n, in place.
func (x *aliasExpander) walk(n *yaml.Node) {
	n.Anchor = ""
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode {
			n.Content[i] = x.copyOf(c)
		} else {
			x.walk(c)
		}
		if x.failed {
			return
		}
	}
	if n.Kind == yaml.MappingNode {
		x.merge(n)
	}
}

// copyOf returns a copy of the value alias a names, its own aliases
// expanded.
func (x *aliasExpander) copyOf(a *yaml.Node) *yaml.Node {
	target := a.Alias
	if x.open[target] {
		x.fail(a, "alias *%s is inside the value it names: the value would never end; write it out", a.Value)
		return a
	}
	x.open[target] = true
	defer delete(x.open, target)
	return x.copy(target, a)
}

// copy copies n deeply, expanding aliases; at is the alias that asked
// for it, where an expansion past the bound is reported.
func (x *aliasExpander) copy(n, at *yaml.Node) *yaml.Node {
	if x.left--; x.left < 0 {
		x.fail(at, "aliases expand this document past %d values; an alias may repeat a value, not multiply the document (write the values out, or move shared parts into a Skill, Tool or RuleSet)", MaxAliasExpansion)
	}
	if x.failed {
		return at
	}
	if n.Kind == yaml.AliasNode {
		return x.copyOf(n)
	}
	c := *n
	c.Anchor, c.Content = "", make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = x.copy(child, at)
	}
	if c.Kind == yaml.MappingNode {
		x.merge(&c)
	}
	return &c
}

// merge replaces the merge keys of mapping m, whose values are expanded,
// by the fields of the mappings they name that m does not set itself (an
// earlier mapping of a list wins over a later one).
func (x *aliasExpander) merge(m *yaml.Node) {
	if !hasMergeKey(m) {
		return
	}
	set := map[string]bool{}
	pairs(m, func(k, _ *yaml.Node) {
		if !isMergeKey(k) {
			set[k.Value] = true
		}
	})
	var out []*yaml.Node
	pairs(m, func(k, v *yaml.Node) {
		if !isMergeKey(k) {
			out = append(out, k, v)
			return
		}
		sources := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		}
		for _, s := range sources {
			if s.Kind != yaml.MappingNode {
				x.fail(s, "a merge key (<<) takes a mapping or a list of mappings, not a %s", describe(s))
				return
			}
			pairs(s, func(sk, sv *yaml.Node) {
				if !set[sk.Value] {
					set[sk.Value] = true
					out = append(out, sk, sv)
				}
			})
		}
	})
	m.Content = out
}

func hasMergeKey(m *yaml.Node) bool {
	for i := 0; i < len(m.Content); i += 2 {
		if isMergeKey(m.Content[i]) {
			return true
		}
	}
	return false
}

func isMergeKey(k *yaml.Node) bool { return k.Kind == yaml.ScalarNode && k.Tag == "!!merge" }

func (x *aliasExpander) fail(at *yaml.Node, format string, args ...any) {
	if !x.failed {
		x.diags.Errorf(posOf(x.file, at), CodeYAMLAlias, format, args...)
	}
	x.failed = true
}
