package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
)

// mcpPin pins the tools each server's tools: select: their description
// and input schema as the server offers them now, and their digest, are
// written to the server's pins:, in its own file, replacing what was
// there; the rest of the file is left as it is.
func mcpPin(cmd *cobra.Command, args []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return usageErr(err)
	}
	_, proj, _, _, err := loadProject(cfg.Paths)
	if err != nil {
		return usageErr(err)
	}
	names := args
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(proj.MCPServers))
	}
	box := &builtins.Toolbox{}
	defer box.Close()
	var edits []pinEdit
	var failed []error
	for _, name := range names {
		s := proj.MCPServers[name]
		if s == nil {
			return usageErr(fmt.Errorf("the project has no MCP server %q", name))
		}
		pins, err := livePins(cmd, box, s)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		edits = append(edits, pinEdit{server: s, pins: pins})
	}
	if err := writePins(edits); err != nil {
		return usageErr(err)
	}
	if err := checkPins(cfg.Paths, edits); err != nil {
		return &exitError{code: 1, err: err}
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: errors.Join(failed...)}
	}
	return nil
}

// pinEdit is the pins a server's document gets.
type pinEdit struct {
	server *dsl.MCPServerDef
	pins   map[string]*dsl.MCPPin
}

// livePins lists a server's tools and pins those its entries select; it
// says what changed, and fails when an entry names a tool the server does
// not offer.
func livePins(cmd *cobra.Command, box *builtins.Toolbox, s *dsl.MCPServerDef) (map[string]*dsl.MCPPin, error) {
	tools, err := box.MCPTools(cmd.Context(), s)
	if err != nil {
		return nil, err
	}
	pins := map[string]*dsl.MCPPin{}
	var notes []string
	for _, t := range tools {
		if s.Selector(t.Name) == nil {
			continue
		}
		pins[t.Name] = builtins.PinOf(t)
		switch old := s.Pins[t.Name]; {
		case old == nil:
			notes = append(notes, t.Name+" pinned")
		case old.SHA256 != pins[t.Name].SHA256:
			notes = append(notes, t.Name+" changed: "+builtins.PinDifference(old, t))
		}
	}
	for name := range s.Pins {
		if pins[name] == nil {
			notes = append(notes, name+" dropped (not offered or not selected)")
		}
	}
	var missing []string
	for _, sel := range s.Tools {
		if sel.Tool != "" && pins[sel.Tool] == nil {
			missing = append(missing, sel.Tool)
		}
	}
	sort.Strings(notes)
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d tools pinned%s\n", s.Name, len(pins), bullets(notes))
	if len(missing) > 0 {
		return pins, fmt.Errorf("MCP server %s offers no tool %s, which its tools: name", s.Name, strings.Join(missing, ", "))
	}
	return pins, nil
}

func bullets(lines []string) string {
	if len(lines) == 0 {
		return ", none changed"
	}
	return ":\n  " + strings.Join(lines, "\n  ")
}

// writePins writes each edit's pins into its server's document, the
// documents of a file from its last up, so earlier lines stay put.
func writePins(edits []pinEdit) error {
	byFile := map[string][]pinEdit{}
	for _, e := range edits {
		byFile[e.server.Doc.File] = append(byFile[e.server.Doc.File], e)
	}
	for file, es := range byFile {
		sort.Slice(es, func(i, j int) bool { return es[i].server.Doc.Root.Line > es[j].server.Doc.Root.Line })
		src := es[0].server.Doc.Src
		for _, e := range es {
			var err error
			if src, err = splicePins(src, e.server.Doc, e.pins); err != nil {
				return fmt.Errorf("%s: MCP server %s: %w", file, e.server.Name, err)
			}
		}
		info, err := os.Stat(file)
		if err != nil {
			return err
		}
		if err := os.WriteFile(file, src, info.Mode()); err != nil {
			return err
		}
	}
	return nil
}

// splicePins replaces the lines of d's pins: in src with pins, or adds
// them at the end of d when it has none.
func splicePins(src []byte, d *dsl.Document, pins map[string]*dsl.MCPPin) ([]byte, error) {
	if d.Root.Style&yaml.FlowStyle != 0 {
		return nil, errors.New("the document is written in flow style ({...}); write it in block style to pin it")
	}
	block, err := renderPins(pins)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(src), "\n")
	end := docEnd(lines, d.Root.Line)
	from, to := end+1, end // insert after the document's last line
	for i := 0; i+1 < len(d.Root.Content); i += 2 {
		if d.Root.Content[i].Value != "pins" {
			continue
		}
		from, to = d.Root.Content[i].Line, end
		if i+2 < len(d.Root.Content) {
			to = d.Root.Content[i+2].Line - 1
		}
		to = lastContent(lines, from, to)
	}
	if from == end+1 && end > 0 && !strings.HasSuffix(lines[end-1], "\n") {
		lines[end-1] += "\n"
	}
	out := slices.Concat(lines[:from-1], []string{block}, lines[to:])
	return []byte(strings.Join(out, "")), nil
}

// docEnd is the last line of the document starting at line start: the
// line before the next document separator, else the file's last line,
// without trailing blank lines and comments.
func docEnd(lines []string, start int) int {
	end := len(lines)
	for i := start; i < len(lines); i++ { // lines[i] is line i+1
		if strings.HasPrefix(lines[i], "---") || strings.HasPrefix(lines[i], "...") {
			end = i
			break
		}
	}
	return lastContent(lines, start, end)
}

// lastContent is the last line in from..to that is neither blank nor a
// comment at the start of a line (those belong to what follows).
func lastContent(lines []string, from, to int) int {
	for to > from {
		l := strings.TrimSpace(lines[to-1])
		if l != "" && !strings.HasPrefix(lines[to-1], "#") {
			break
		}
		to--
	}
	return to
}

// renderPins renders pins: as block YAML, its tools sorted by name.
func renderPins(pins map[string]*dsl.MCPPin) (string, error) {
	type pin struct {
		Description string         `yaml:"description,omitempty"`
		Parameters  map[string]any `yaml:"parameters"`
		SHA256      string         `yaml:"schema_sha256"`
	}
	m := make(map[string]pin, len(pins))
	for name, p := range pins {
		m[name] = pin{p.Description, p.Parameters, p.SHA256}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]any{"pins": m}); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return strings.Replace(buf.String(), "pins:", "pins: # written by runner mcp pin", 1), nil
}

// checkPins loads the project again and fails if a pin written does not
// read back as written.
func checkPins(paths []string, edits []pinEdit) error {
	_, _, docs, diags, err := loadProject(paths)
	if err != nil {
		return err
	}
	var bad dsl.Diagnostics
	for _, d := range diags {
		if d.Code == dsl.CodeMCPPin && d.Severity == dsl.Error {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 && len(edits) > 0 {
		var b strings.Builder
		_ = dsl.WriteReport(&b, bad, dsl.FormatText, sources(docs))
		return fmt.Errorf("the pins written do not read back as written:\n%s", b.String())
	}
	return nil
}
