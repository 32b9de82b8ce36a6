package dsl

import "go.yaml.in/yaml/v3"

// QuickDisagrees compares the quick validator's verdicts on d with the
// schema library's, on each schema validation.run applies: the root's
// checks, the kind's schema and each node type's with: schema. It returns
// the first disagreement, or "".
func (c *Checker) QuickDisagrees(d *Document) string {
	s := c.schemas
	kind := quickValueOf(mapGet(d.Root, "kind"))
	if s.kinds[kind.str] == nil || kind.kind != jString {
		return ""
	}
	if why := disagreement("the document", s.quick.base.validate(quickValueOf(d.Root), 0), s.base.Validate(toJSON(d.Root))); why != "" {
		return why
	}
	if why := disagreement("kind "+kind.str, s.quick.kinds[kind.str].validate(quickValueOf(d.Root), 0), s.kinds[kind.str].Validate(toJSON(d.Root))); why != "" {
		return why
	}
	why := ""
	pairs(mapGet(d.Root, "nodes"), func(key, node *yaml.Node) {
		typ, with := quickValueOf(mapGet(node, "type")), mapGet(node, "with")
		if why == "" && typ.kind == jString && s.with[typ.str] != nil && with != nil {
			why = disagreement("nodes."+key.Value+".with", s.quick.with[typ.str].validate(quickValueOf(with), 0), s.with[typ.str].Validate(toJSON(with)))
		}
	})
	return why
}

// disagreement describes a quick verdict the library's error contradicts.
func disagreement(what string, v verdict, err error) string {
	switch {
	case v == valid && err != nil:
		return what + ": quick says valid, the library: " + err.Error()
	case v == invalid && err == nil:
		return what + ": quick says invalid, the library valid"
	}
	return ""
}
