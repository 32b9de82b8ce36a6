package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// mcpCallPipeline is the one-node pipeline runner mcp call runs: its tool
// node calls TOOL with the arguments given, through the call path, under
// the project's platform (and tenant) rules.
const mcpCallPipeline = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: %s}
input: {args: {type: object}}
state:
  args: {type: object}
  out: {type: any}
  runs: {type: array, reducer: append, default: []}
start: call
nodes:
  call:
    type: tool
    with: {tool: %s, args: {%s}, output: out, record: runs}
    next: END
`

// mcpCallName is the synthetic pipeline's name.
const mcpCallName = "runner_mcp_call"

// mcpCall calls a server's tool once, as a run of a one-node pipeline on
// a store in memory, and prints its output as JSON. A rule that gates the
// call pauses it: --approve answers the gate as its reviewer.
func mcpCall(cmd *cobra.Command, args []string) error {
	cfg, proj, s, err := mcpServerOf(cmd, args[0])
	if err != nil {
		return err
	}
	name, err := runnerToolName(proj, s, args[1])
	if err != nil {
		return usageErr(err)
	}
	in, err := jsonFlag(cmd, "args")
	callArgs, ok := in.(map[string]any)
	if err != nil || !ok {
		return usageErr(errors.Join(err, errors.New("--args must be a JSON object of the tool's arguments")))
	}
	checker, callProj, err := mcpCallProject(cmd, cfg.Paths, name, callArgs)
	if err != nil {
		return err
	}
	tools := &builtins.Toolbox{}
	defer tools.Close()
	g, err := checker.Compile(callProj, mcpCallName, dsl.CompileOptions{Tool: tools.Tool})
	if err != nil {
		return usageErr(err)
	}
	tenant, _ := cmd.Flags().GetString("tenant")
	e := &runner.Engine{Store: store.NewMemory(), Tenant: tenant}
	thread := uuid.Must(uuid.NewV7()).String()
	res, err := e.Run(cmd.Context(), g, thread, map[string]any{"args": callArgs})
	if err == nil && res.Status == runner.StatusInterrupted {
		res, err = approveCall(cmd, e, g, res)
	}
	if _, ok := errors.AsType[*exitError](err); ok {
		return err
	}
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	return reportCall(cmd, res)
}

// mcpCallProject checks the project with the one-node pipeline that
// calls tool with args.
func mcpCallProject(cmd *cobra.Command, paths []string, tool string, args map[string]any) (*dsl.Checker, *dsl.Project, error) {
	keys := make([]string, 0, len(args))
	for _, k := range slices.Sorted(maps.Keys(args)) {
		quoted, _ := json.Marshal(k)
		keys = append(keys, fmt.Sprintf("%s: 'state.args[%s]'", quoted, quoted))
	}
	src := fmt.Sprintf(mcpCallPipeline, mcpCallName, tool, strings.Join(keys, ", "))
	call, _ := dsl.Parse("<runner mcp call>", []byte(src))
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		return nil, nil, usageErr(err)
	}
	docs, diags := dsl.Load(paths...)
	proj, more := checker.Check(append(docs, call...))
	if diags = append(diags, more...).Sorted(); diags.HasErrors(false) {
		_ = dsl.WriteReport(cmd.ErrOrStderr(), diags, dsl.FormatText, sources(docs))
		return nil, nil, usageErr(errors.New("definitions are invalid; run runner validate"))
	}
	return checker, proj, nil
}

// approveCall shows the gate that paused the call and, with --approve,
// approves it; without, the command ends paused.
func approveCall(cmd *cobra.Command, e *runner.Engine, g *runner.Graph, res *runner.Result) (*runner.Result, error) {
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "rule %s holds the call: %s\n", res.Interrupt.Rule, res.Interrupt.Message)
	if approve, _ := cmd.Flags().GetBool("approve"); !approve {
		return nil, &exitError{code: exitPaused, err: errors.New("the call waits for approval; run the command again with --approve to approve it")}
	}
	fmt.Fprintln(w, "approved (--approve)")
	return e.Resume(cmd.Context(), g, res.Thread, runner.ResumeOptions{Value: map[string]any{"approved": true}})
}

// reportCall prints the call's output, or fails with its error.
func reportCall(cmd *cobra.Command, res *runner.Result) error {
	if res.Status != runner.StatusCompleted {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s", res.Error.Code, res.Error.Message)}
	}
	runs, _ := res.State["runs"].([]any)
	if len(runs) == 1 {
		if rec, _ := runs[0].(map[string]any); rec["status"] != runner.ToolSuccess {
			return &exitError{code: exitFailed, err: fmt.Errorf("%v: %v", rec["status"], rec["error_message"])}
		}
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(res.State["out"])
}
