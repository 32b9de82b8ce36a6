package builtins

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runner-dev/runner/runner"
)

// builtinTools returns the Go tool functions a Tool document can name with
// builtin:.
func builtinTools() map[string]runner.ToolFunc {
	return map[string]runner.ToolFunc{
		"sample_transaction_context": sampleTransactionContext,
		"xml_validate":               xmlValidate,
	}
}

// BuiltinTools returns the names a Tool document's builtin: can take,
// sorted.
func BuiltinTools() []string {
	return slices.Sorted(maps.Keys(builtinTools()))
}

// builtinTool returns the builtin called name.
func builtinTool(name string) (runner.Tool, error) {
	f, ok := builtinTools()[name]
	if !ok {
		return nil, fmt.Errorf("unknown builtin %q (known: %s)", name, strings.Join(BuiltinTools(), ", "))
	}
	return f, nil
}
