package dsl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"time"
)

// MCPServerDef is a checked MCPServer document: how to reach a Model
// Context Protocol server, and which of its tools the project uses.
type MCPServerDef struct {
	Doc  *Document
	Name string
	// Command, Args, Env and Dir start a stdio server; URL and Headers
	// reach a streamable HTTP one. Env values and headers are templates
	// over secrets.
	Command string
	Args    []string
	Env     map[string]*Template
	Dir     string
	URL     string
	Headers map[string]*Template
	// Secrets maps names usable as ${secrets.NAME} to environment variables.
	Secrets map[string]string
	// Timeout bounds each call, unless the tool's entry sets its own.
	Timeout time.Duration
	// Prefix is put before a tool's name to make its name in runner.
	Prefix string
	Tools  []*MCPSelector
	// Pins are what `runner mcp pin` recorded, by the tool's name on the
	// server.
	Pins map[string]*MCPPin
}

// MCPSelector is one entry of an MCPServer's tools: one tool by its name,
// or those an include pattern matches and no exclude pattern does, with
// what runner is told about them (the server's own annotations are never
// trusted).
type MCPSelector struct {
	Tool    string   `yaml:"tool"`
	As      string   `yaml:"as"`
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	// Mutating is nil when the entry does not declare it: the tool is
	// then treated as mutating.
	Mutating   *bool         `yaml:"mutating"`
	Capability string        `yaml:"capability"`
	Tags       []string      `yaml:"tags"`
	Timeout    time.Duration `yaml:"timeout"`
	Pos        Pos           `yaml:"-"`
}

// MCPPin is a tool as `runner mcp pin` recorded it: its description and
// input schema as the server gave them, and their digest (PinDigest).
type MCPPin struct {
	Description string
	Parameters  map[string]any
	SHA256      string
	Pos         Pos
}

// MCPTool is the implementation of a tool an MCP server offers.
type MCPTool struct {
	Server *MCPServerDef
	// Tool is the tool's name on the server; Pin is nil when it is not
	// pinned.
	Tool string
	Pin  *MCPPin
}

// Selects reports whether the entry selects the server's tool name. A
// pattern that is not well formed selects nothing (validate reports it).
func (s *MCPSelector) Selects(name string) bool {
	if s.Tool != "" {
		return s.Tool == name
	}
	return matchAny(s.Include, name) && !matchAny(s.Exclude, name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Selector returns the first entry that selects the server's tool name,
// or nil.
func (s *MCPServerDef) Selector(name string) *MCPSelector {
	for _, sel := range s.Tools {
		if sel.Selects(name) {
			return sel
		}
	}
	return nil
}

// ToolName is the name in runner of the server's tool name, which sel
// selects.
func (s *MCPServerDef) ToolName(sel *MCPSelector, name string) string {
	if sel.As != "" {
		return sel.As
	}
	return s.Prefix + name
}

// PinDigest is the hex SHA-256 of a tool's description and input schema
// as JSON ({"description": ..., "inputSchema": ...}, keys sorted): what
// schema_sha256 records, and what a live tool must still hash to.
func PinDigest(description string, inputSchema any) string {
	data, _ := json.Marshal(map[string]any{"description": description, "inputSchema": inputSchema})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
