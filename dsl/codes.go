package dsl

// Diagnostic codes: a stable, machine-readable name for each class of
// problem, grouped by the phase that finds it (the part before the dot);
// Codes says what each means. A code is never reused for another class,
// and every diagnostic carries one.
const (
	// load: files and YAML
	CodeFileRead     = "file.read"
	CodeFileEncoding = "file.encoding"
	CodeFileEmpty    = "file.empty"
	CodeYAMLSyntax   = "yaml.syntax"
	CodeYAMLDupKey   = "yaml.duplicate-key"
	CodeYAMLAlias    = "yaml.alias"
	CodeYAMLTag      = "yaml.tag"
	CodeYAMLDocument = "yaml.not-mapping"

	// schema: the document schemas (schemas/*.json) and decoding
	CodeSchemaUnknownField = "schema.unknown-field"
	CodeSchemaMissingField = "schema.missing-field"
	CodeSchemaType         = "schema.type"
	CodeSchemaEnum         = "schema.enum"
	CodeSchemaFormat       = "schema.format"
	CodeSchemaSecret       = "schema.secret"
	CodeSchemaValue        = "schema.value"
	CodeSchemaJSONSchema   = "schema.json-schema"
	CodeSchemaRefOutside   = "schema.ref-outside"

	// ref: references between documents and to names inside them
	CodeRefUnknown      = "ref.unknown"
	CodeRefDuplicate    = "ref.duplicate"
	CodeRefUndeclared   = "ref.undeclared"
	CodeRefStateBinding = "ref.state-binding"
	CodeRefSubgraph     = "ref.subgraph-cycle"
	CodeRefCycle        = "ref.expression-cycle"
	CodeRefUnused       = "ref.unused"

	// state and input declarations
	CodeStateDefault = "state.default"
	CodeStateReducer = "state.reducer"
	CodeInputField   = "input.field"
	CodeInputType    = "input.type"

	// expr: expressions and templates
	CodeExprSyntax      = "expr.syntax"
	CodeExprUnknownName = "expr.unknown-name"
	CodeExprNoField     = "expr.unknown-field"
	CodeExprType        = "expr.type"
	CodeExprCost        = "expr.cost"
	CodeExprUnbounded   = "expr.unbounded"
	CodeExprLanguage    = "expr.language"

	// graph: a pipeline's topology
	CodeGraphUnreachable    = "graph.unreachable"
	CodeGraphNoEnd          = "graph.no-end"
	CodeGraphNoNext         = "graph.no-next"
	CodeGraphUnboundedCycle = "graph.unbounded-cycle"
	CodeGraphDeadRoute      = "graph.dead-route"
	CodeGraphNoDefault      = "graph.no-default-route"
	CodeGraphShadowedCatch  = "graph.shadowed-catch"

	// what a definition means beyond references
	CodeNodeConfig  = "node.config"
	CodeRuleAction  = "rule.action"
	CodeRuleLocked  = "rule.locked"
	CodeModelAgent  = "model.agent"
	CodeBudgetLimit = "budget.repeats-limit"
	CodeURL         = "url.invalid"
	CodeMCPPin      = "mcp.pin"
	CodeTestArgs    = "test.args"

	// the gate proof: runner validate --require-gate
	CodeGateMissing     = "gate.missing"
	CodeGateConditional = "gate.conditional"

	// compile: what Checker.Compile refuses
	CodeCompileBuild = "compile.build"
	CodeCompileModel = "compile.model"
)

// Codes lists every diagnostic code with what it means, in the order above.
var Codes = []struct{ Code, Meaning string }{
	{CodeFileRead, "a file or path that cannot be read, or is too large"},
	{CodeFileEncoding, "a file that is not UTF-8"},
	{CodeFileEmpty, "a file with no document (warning)"},
	{CodeYAMLSyntax, "invalid YAML, tabs in indentation"},
	{CodeYAMLDupKey, "a key given twice in one mapping"},
	{CodeYAMLAlias, "an alias or merge key that cannot be expanded: a cycle, a merge of a value that is not a mapping, an expansion past the bound"},
	{CodeYAMLTag, "a YAML tag such as !include"},
	{CodeYAMLDocument, "a document that is not a mapping"},
	{CodeSchemaUnknownField, "a field the kind does not have"},
	{CodeSchemaMissingField, "a required field that is missing"},
	{CodeSchemaType, "a value of the wrong type or shape"},
	{CodeSchemaEnum, "a value not among the allowed ones: kind, node type, trigger, action, ..."},
	{CodeSchemaFormat, "a name, duration or other string of the wrong form; apiVersion"},
	{CodeSchemaSecret, "what should name a secret's environment variable looks like the secret itself; it is not echoed, not even in the source line"},
	{CodeSchemaValue, "a value out of range, or otherwise refused"},
	{CodeSchemaJSONSchema, "a JSON Schema in a definition that is not valid"},
	{CodeSchemaRefOutside, "a $ref that leaves its JSON Schema"},
	{CodeRefUnknown, "an unknown document, node, builtin, start, route or on_error target"},
	{CodeRefDuplicate, "a name or rule key defined twice"},
	{CodeRefUndeclared, "a write to an undeclared state field"},
	{CodeRefStateBinding, "a rule set's state field its pipeline lacks or types differently"},
	{CodeRefSubgraph, "a pipeline containing itself through subgraphs"},
	{CodeRefCycle, "a named expression that reads itself"},
	{CodeRefUnused, "a tool or skill nothing uses (warning)"},
	{CodeStateDefault, "a default that does not fit its type or enum"},
	{CodeStateReducer, "a reducer that does not fit its field"},
	{CodeInputField, "an input field with no state field of its name or type, a required one with a default, a default that does not fit"},
	{CodeInputType, "a Test's or a schedule's input that does not fit the pipeline's input, or that lacks a required field"},
	{CodeExprSyntax, "a parse error, an unterminated or empty ${}"},
	{CodeExprUnknownName, "an identifier that is not a variable"},
	{CodeExprNoField, "a field a closed object does not declare"},
	{CodeExprType, "a type error, or a result of the wrong type"},
	{CodeExprCost, "too long, too deeply nested or too expensive"},
	{CodeExprUnbounded, "a loop, comprehension or range whose cost the run-time limits may cut short (warning)"},
	{CodeExprLanguage, "an unknown expression language"},
	{CodeGraphUnreachable, "a node start cannot reach"},
	{CodeGraphNoEnd, "a node with no path to END"},
	{CodeGraphNoNext, "a node without next"},
	{CodeGraphUnboundedCycle, "a cycle no limit bounds"},
	{CodeGraphDeadRoute, "a route after a route without when"},
	{CodeGraphNoDefault, "every route of a node has a condition (warning)"},
	{CodeGraphShadowedCatch, "an error kind an earlier on_error entry already catches (warning)"},
	{CodeNodeConfig, "a node type's own check of its with:"},
	{CodeRuleAction, "an action its trigger does not allow"},
	{CodeRuleLocked, "a rule that weakens the locked rule of its key"},
	{CodeGateMissing, "with --require-gate: a tool a path can call with no rule that requires a human or stops the call"},
	{CodeGateConditional, "with --require-gate: a tool gated only when a condition on the call or the state holds (warning)"},
	{CodeModelAgent, "the agent's model called where no agent gives one"},
	{CodeBudgetLimit, "an agent's budget max_steps or timeout that repeats its pipeline's limit (warning)"},
	{CodeURL, "an http tool's url or a model's base_url refused"},
	{CodeMCPPin, "an MCP server's tool not pinned, a pin edited by hand or no longer selected (warnings, but for an edited pin)"},
	{CodeTestArgs, "a Test's expected tool arguments that do not fit the tool's parameters"},
	{CodeCompileBuild, "a node, tool or rule that cannot be built for this run"},
	{CodeCompileModel, "a model that cannot be reached for this run: no API key, no script"},
}

// KnownCode reports whether code is one of Codes.
func KnownCode(code string) bool {
	for _, c := range Codes {
		if c.Code == code {
			return true
		}
	}
	return false
}
