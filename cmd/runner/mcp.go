package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
)

func newMCP() *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "Use MCP servers' tools (tools, call, pin) and serve the agents over MCP (serve)"}
	tools := &cobra.Command{Use: "tools SERVER", Short: "List the tools an MCP server offers now, with their schemas and hints, and what the project selects and pinned",
		Args: cobra.ExactArgs(1), RunE: mcpTools}
	tools.Flags().String("format", "text", "output format: text or json")
	call := &cobra.Command{Use: "call SERVER TOOL", Short: "Call a tool of an MCP server through the call path: budgets, the platform's rules and approval gates apply",
		Args: cobra.ExactArgs(2), RunE: mcpCall}
	call.Flags().String("args", "{}", "the call's arguments, as a JSON object or @FILE")
	call.Flags().Bool("approve", false, "approve the call, as its reviewer, when a rule gates it")
	call.Flags().String("tenant", "", "the tenant the call runs for: its rule sets apply")
	pin := &cobra.Command{Use: "pin [SERVER...]", Short: "Record the description and input schema of each tool the servers' tools: select, in their pins: (default: every server)",
		RunE: mcpPin}
	cmd.AddCommand(tools, call, pin, newMCPServe())
	return cmd
}

// mcpServerOf loads the project and returns it with the MCP server called
// name.
func mcpServerOf(cmd *cobra.Command, name string) (*Config, *dsl.Project, *dsl.MCPServerDef, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, nil, nil, usageErr(err)
	}
	_, proj, _, _, err := loadProject(cfg.Paths)
	if err != nil {
		return nil, nil, nil, usageErr(err)
	}
	s := proj.MCPServers[name]
	if s == nil {
		known := "it has none"
		if len(proj.MCPServers) > 0 {
			known = "it has " + strings.Join(slices.Sorted(maps.Keys(proj.MCPServers)), ", ")
		}
		return nil, nil, nil, usageErr(fmt.Errorf("the project (%s) has no MCP server %q: %s", strings.Join(cfg.Paths, ", "), name, known))
	}
	return cfg, proj, s, nil
}

// mcpTools lists a server's tools: each with its input schema, the hints
// its annotations give (never trusted: shown), and how the project uses
// it — selected under a name, pinned, changed since pinned.
func mcpTools(cmd *cobra.Command, args []string) error {
	_, _, s, err := mcpServerOf(cmd, args[0])
	if err != nil {
		return err
	}
	box := &builtins.Toolbox{}
	defer box.Close()
	tools, err := box.MCPTools(cmd.Context(), s)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	rows := make([]mcpToolRow, len(tools))
	for i, t := range tools {
		rows[i] = toolRow(s, t)
	}
	if format, _ := cmd.Flags().GetString("format"); format == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOOL\tIN RUNNER\tPIN\tHINTS\tDESCRIPTION")
	for _, r := range rows {
		name := r.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Tool, name, r.Pin, strings.Join(r.Hints, ","), firstLineOf(r.Description))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		schema, _ := json.Marshal(r.InputSchema)
		fmt.Fprintf(cmd.OutOrStdout(), "\n%s: %s\n", r.Tool, schema)
	}
	return nil
}

// mcpToolRow is a tool as runner mcp tools shows it.
type mcpToolRow struct {
	Tool        string   `json:"tool"`
	Name        string   `json:"name,omitempty"` // its name in runner, when selected
	Pin         string   `json:"pin"`            // pinned, changed, not pinned or -
	Hints       []string `json:"hints,omitempty"`
	Description string   `json:"description"`
	InputSchema any      `json:"input_schema"`
}

func toolRow(s *dsl.MCPServerDef, t *mcp.Tool) mcpToolRow {
	r := mcpToolRow{Tool: t.Name, Pin: "-", Description: t.Description, InputSchema: t.InputSchema, Hints: hints(t.Annotations)}
	if sel := s.Selector(t.Name); sel != nil {
		r.Name, r.Pin = s.ToolName(sel, t.Name), "not pinned"
	}
	if p := s.Pins[t.Name]; p != nil {
		r.Pin = "pinned"
		if builtins.PinOf(t).SHA256 != p.SHA256 {
			r.Pin = "CHANGED"
		}
	}
	return r
}

// hints are a tool's annotations, as hints: runner acts on what the
// project declares, not on them.
func hints(a *mcp.ToolAnnotations) []string {
	if a == nil {
		return nil
	}
	var out []string
	add := func(on bool, name string) {
		if on {
			out = append(out, name)
		}
	}
	add(a.ReadOnlyHint, "read-only")
	add(a.DestructiveHint != nil && *a.DestructiveHint, "destructive")
	add(a.IdempotentHint, "idempotent")
	add(a.OpenWorldHint != nil && *a.OpenWorldHint, "open-world")
	return out
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return clipText(line, 70)
}

func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// errNotSelected is a tool the project has not been told about.
var errNotSelected = errors.New("not selected")

// runnerToolName is the name in runner of a server's tool that the
// project knows: selected by name, or pinned and selected by a pattern.
func runnerToolName(proj *dsl.Project, s *dsl.MCPServerDef, tool string) (string, error) {
	for name, def := range proj.Tools {
		if def.MCP != nil && def.MCP.Server == s && def.MCP.Tool == tool {
			return name, nil
		}
	}
	return "", fmt.Errorf("tool %s of MCP server %s is %w by its tools: in the project; add {tool: %s} there (with mutating: false if it changes nothing), "+
		"or pin the tools a pattern selects: runner mcp pin %s", tool, s.Name, errNotSelected, tool, s.Name)
}
