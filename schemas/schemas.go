// Package schemas holds the JSON Schema of every runner document kind.
//
// The files are embedded so that `runner validate` enforces exactly what
// editors see. nodes.json is generated from the built-in node types' specs
// (go test ./builtins -update rewrites it); the others are written by hand.
// runner.json dispatches on kind and is the one editors point at.
package schemas

import "embed"

// FS holds the schema files.
//
//go:embed *.json
var FS embed.FS

// Root is the schema every document is validated against.
const Root = "runner.json"
