package dsl

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
)

// mcpServer checks an MCPServer: its templates over secrets, its url, its
// tool entries and pins; and adds a ToolDef for each tool it selects that
// is known without asking the server — one named by an entry, one pinned —
// so the other documents refer to them as to any tool.
func (k *check) mcpServer(d *Document) {
	s := &MCPServerDef{Doc: d, Name: d.Name, Command: scalarValue(d.Get("command")), Dir: scalarValue(d.Get("dir")),
		URL: scalarValue(d.Get("url")), Prefix: scalarValue(d.Get("prefix")), Env: map[string]*Template{},
		Headers: map[string]*Template{}, Secrets: map[string]string{}, Pins: map[string]*MCPPin{}}
	k.decode(d, d.Get("args"), &s.Args, "args")
	k.decode(d, d.Get("timeout"), &s.Timeout, "timeout")
	secrets := ObjectOf(map[string]*Type{})
	pairs(d.Get("secrets"), func(key, v *yaml.Node) {
		secrets.Fields[key.Value] = StringType
		s.Secrets[key.Value] = v.Value
	})
	env := k.env(map[string]*Type{"secrets": secrets})
	lang := docLang(d, Expr)
	pairs(d.Get("env"), func(key, v *yaml.Node) { s.Env[key.Value] = k.template(d, v, lang, env) })
	pairs(d.Get("headers"), func(key, v *yaml.Node) { s.Headers[key.Value] = k.template(d, v, lang, env) })
	k.mcpURL(d, d.Get("url"))
	k.apart(d, d.Root, "url", "args", "env", "dir")
	k.apart(d, d.Root, "command", "headers")
	for i, n := range items(d.Get("tools")) {
		sel := &MCPSelector{Pos: d.Pos(n)}
		if k.decode(d, n, sel, fmt.Sprintf("tools[%d]", i)) {
			k.apart(d, n, "include", "as")
			k.apart(d, n, "tool", "exclude")
			k.mcpPatterns(d, n)
			s.Tools = append(s.Tools, sel)
		}
	}
	pairs(d.Get("pins"), func(key, v *yaml.Node) { s.Pins[key.Value] = k.mcpPin(d, key.Value, v) })
	k.proj.MCPServers[s.Name] = s
	k.mcpTools(s)
}

// apart reports the keys of mapping m that do not go with key, when m
// has key: a stdio server's args with a url, a pattern's exclude with a
// tool's name.
func (k *check) apart(d *Document, m *yaml.Node, key string, others ...string) {
	if mapGet(m, key) == nil || k.bad(m) {
		return
	}
	for _, o := range others {
		if n := mapKey(m, o); n != nil {
			k.diags.Errorf(d.Pos(n), CodeSchemaType, "%s does not go with %s", o, key)
		}
	}
}

// mcpURL checks that a server's url is an absolute http or https URL.
func (k *check) mcpURL(d *Document, n *yaml.Node) {
	if n == nil || k.bad(n) {
		return
	}
	u, err := url.Parse(n.Value)
	if err == nil {
		err = checkScheme(u.Scheme)
	}
	if err == nil && u.Host == "" {
		err = fmt.Errorf("%q has no host", n.Value)
	}
	if err != nil {
		k.diags.Errorf(d.Pos(n), CodeURL, "url: %v", err).Hint = "give the server's streamable HTTP endpoint, like https://mcp.example.com/mcp"
	}
}

// mcpPatterns reports the include and exclude patterns of an entry that
// are not well formed.
func (k *check) mcpPatterns(d *Document, entry *yaml.Node) {
	for _, key := range []string{"include", "exclude"} {
		for _, p := range items(mapGet(entry, key)) {
			if _, err := path.Match(p.Value, ""); err != nil {
				k.diags.Errorf(d.Pos(p), CodeSchemaFormat, "%s pattern %q is not well formed: %v", key, p.Value, err).Hint =
					"* matches any run of characters, ? one character, [a-z] one of a range"
			}
		}
	}
}

// mcpPin reads a pin and checks that its description and parameters still
// hash to its digest: a pin edited by hand no longer says what the server
// offered.
func (k *check) mcpPin(d *Document, tool string, n *yaml.Node) *MCPPin {
	p := &MCPPin{Description: scalarValue(mapGet(n, "description")), SHA256: scalarValue(mapGet(n, "schema_sha256")), Pos: d.Pos(n)}
	p.Parameters = k.jsonSchema(d, mapGet(n, "parameters"))
	if k.bad(n) || p.Parameters == nil {
		return p
	}
	if got := PinDigest(p.Description, p.Parameters); got != p.SHA256 {
		k.diags.Errorf(d.Pos(mapGet(n, "schema_sha256")), CodeMCPPin,
			"pins.%s was edited after it was pinned: its description and parameters hash to %s", tool, got).Hint =
			"pin the server's tool again: runner mcp pin " + d.Name
	}
	return p
}

// mcpTools adds the server's known tools to the project: each entry that
// names a tool, and each pinned tool a pattern selects.
func (k *check) mcpTools(s *MCPServerDef) {
	d := s.Doc
	for _, sel := range s.Tools {
		if sel.Tool == "" {
			continue
		}
		pin := s.Pins[sel.Tool]
		if pin == nil {
			k.diags.Warnf(sel.Pos, CodeMCPPin, "tool %s of MCP server %s is not pinned: models see no schema of its arguments, and a change of the tool goes unnoticed", sel.Tool, s.Name).Hint =
				"pin it: runner mcp pin " + s.Name
		}
		k.addMCPTool(s, sel, sel.Tool, pin)
	}
	matched := map[*MCPSelector]bool{}
	pairs(d.Get("pins"), func(key, _ *yaml.Node) {
		name := key.Value
		sel := s.Selector(name)
		switch {
		case sel == nil:
			k.diags.Warnf(d.Pos(key), CodeMCPPin, "pins.%s: no entry of tools selects %s", name, name).Hint =
				"pin the server again to drop it: runner mcp pin " + s.Name
		case sel.Tool == "":
			matched[sel] = true
			k.addMCPTool(s, sel, name, s.Pins[name])
		}
	})
	for _, sel := range s.Tools {
		if sel.Tool == "" && !matched[sel] {
			k.diags.Warnf(sel.Pos, CodeMCPPin, "include [%s] selects no pinned tool of MCP server %s: it offers no tool until pinned",
				strings.Join(sel.Include, ", "), s.Name).Hint = "pin the tools it selects: runner mcp pin " + s.Name
		}
	}
}

// addMCPTool adds the server's tool, selected by sel, as a ToolDef.
func (k *check) addMCPTool(s *MCPServerDef, sel *MCPSelector, tool string, pin *MCPPin) {
	t := &ToolDef{Doc: s.Doc, Name: s.ToolName(sel, tool), Capability: sel.Capability, Mutating: sel.Mutating == nil || *sel.Mutating,
		Tags: append(slices.Clone(sel.Tags), "mcp", "mcp:"+s.Name), Timeout: sel.Timeout, Parameters: map[string]any{"type": "object"},
		MCP: &MCPTool{Server: s, Tool: tool, Pin: pin}}
	if t.Timeout == 0 {
		t.Timeout = s.Timeout
	}
	if pin != nil {
		t.Description, t.Parameters = pin.Description, pin.Parameters
	}
	if prev := k.byKind[KindTool][t.Name]; prev != nil {
		k.diags.Errorf(sel.Pos, CodeRefDuplicate, "tool %s of MCP server %s is named %s, as is the tool defined at %s", tool, s.Name, t.Name,
			prev.Pos(mapGet(prev.Get("metadata"), "name"))).Hint = "rename it with as: (one tool) or prefix: (every tool of the server)"
		return
	}
	if k.byKind[KindTool] == nil {
		k.byKind[KindTool] = map[string]*Document{}
	}
	k.byKind[KindTool][t.Name] = s.Doc
	k.proj.Tools[t.Name] = t
}

// mcpRuleArgs reads the tools a rule's CEL condition pins by name (see
// guardOf). A name the project does not define, which an MCP server's
// prefix or entries claim, is reported at the condition. When the
// condition pins one tool, of an MCP server, pinned, the type of its
// arguments is returned: the rule's expressions are checked against its
// schema. Otherwise nil: the arguments are untyped.
func (k *check) mcpRuleArgs(d *Document, when *yaml.Node, lang Lang) *Type {
	if when == nil || k.bad(when) {
		return nil
	}
	src := source(d, when, lang)
	var g *runner.Guard
	if src.Lang == CEL {
		g = celGuard(src.Text)
	}
	if g == nil || g.Field != "name" {
		return nil
	}
	for _, name := range g.Values {
		if k.byKind[KindTool][name] == nil {
			k.unknownMCPTool(d, when, name)
		}
	}
	if len(g.Values) != 1 || len(g.Prefixes) > 0 {
		return nil
	}
	if t := k.proj.Tools[g.Values[0]]; t != nil && t.MCP != nil && t.MCP.Pin != nil {
		return schemaType(t.Parameters)
	}
	return nil
}

// unknownMCPTool reports a rule's tool name that no document defines,
// when an MCP server would give it: its prefix starts it, or an entry of
// its tools: selects it (a tool that is not pinned yet).
func (k *check) unknownMCPTool(d *Document, at *yaml.Node, name string) {
	for _, sname := range slices.Sorted(maps.Keys(k.proj.MCPServers)) {
		s := k.proj.MCPServers[sname]
		tool, prefixed := strings.CutPrefix(name, s.Prefix)
		sel := s.Selector(tool)
		if !prefixed || (s.Prefix == "" && sel == nil) {
			continue
		}
		var offered []string
		for n, t := range k.proj.Tools {
			if t.MCP != nil && t.MCP.Server == s {
				offered = append(offered, n)
			}
		}
		slices.Sort(offered)
		dg := k.diags.Errorf(d.Pos(at), CodeRefUnknown, "the rule names tool %q, which MCP server %s does not give the project (it gives: %s)",
			name, s.Name, strings.Join(offered, ", "))
		dg.Hint = didYouMean(name, offered)
		if sel != nil {
			dg.Hint = "an entry of its tools: selects it, but it is not pinned: runner mcp pin " + s.Name
		}
		return
	}
}
