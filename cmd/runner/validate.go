package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
)

func newValidate() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check definitions: schema, references, expressions and graphs",
		Long: `Validate checks every document under PATH (default: the project's paths)
and prints every problem as file:line:col: severity: message.

With --require-gate EXPR (a CEL condition over tool, e.g. 'tool.mutating'),
valid definitions are also proven gated: for every agent, and every tenant
whose rule sets override its rules, each tool matching EXPR that a node can
call must be covered by a before_tool_call rule that requires a human or
stops the call (require_hitl, deny, abort). An uncovered tool is an error at
its definition, naming the nodes that call it; one gated only when a
condition on the call or the state holds is a warning.

Exit status: 0 valid, 1 invalid, 2 usage or I/O error.`,
		RunE: runValidate,
	}
	cmd.Flags().String("format", dsl.FormatText, "output format: text, json or github")
	cmd.Flags().Bool("strict", false, "fail on warnings too")
	cmd.Flags().String("require-gate", "", "prove every tool matching this CEL condition over tool gated, for every agent and tenant")
	return cmd
}

func runValidate(cmd *cobra.Command, args []string) error {
	setGC(oneShotGC)
	format, _ := cmd.Flags().GetString("format")
	strict, _ := cmd.Flags().GetBool("strict")
	if format != dsl.FormatText && format != dsl.FormatJSON && format != dsl.FormatGitHub {
		return usageErr(fmt.Errorf("unknown --format %q: use text, json or github", format))
	}
	paths, err := pathsOf(cmd, args)
	if err != nil {
		return err
	}
	checker, proj, docs, diags, err := loadProject(paths)
	if err != nil {
		return usageErr(err)
	}
	if expr, _ := cmd.Flags().GetString("require-gate"); expr != "" && !diags.HasErrors(false) {
		gaps, err := checker.RequireGate(proj, expr, dsl.CompileOptions{Provider: builtins.ScriptedProviders(nil)})
		if err != nil {
			return usageErr(err)
		}
		diags = append(diags, gaps...).Sorted()
	}
	if cfg, err := loadConfig(cmd); err == nil && cfg.File != "" { // the webhooks are known
		diags = append(diags, proj.CheckHooks(hookNames(cfg.Webhooks))...).Sorted()
	}
	if err := dsl.WriteReport(cmd.OutOrStdout(), diags, format, sources(docs)); err != nil {
		return usageErr(err)
	}
	if diags.HasErrors(strict) {
		return &exitError{code: 1}
	}
	if format == dsl.FormatText {
		fmt.Fprintf(cmd.ErrOrStderr(), "ok: %d documents valid\n", len(docs))
	}
	return nil
}

// pathsOf returns the definition paths a command works on: its arguments,
// else the project's paths. It fails when there are none or one is missing.
func pathsOf(cmd *cobra.Command, args []string) ([]string, error) {
	paths := args
	if len(paths) == 0 {
		cfg, err := loadConfig(cmd)
		if err != nil {
			return nil, usageErr(err)
		}
		paths = cfg.Paths
	}
	if len(paths) == 0 {
		return nil, usageErr(errors.New("no definitions: no pipelines/, agents/ or rules/ here; name files or directories, or set paths in runner.yaml"))
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return nil, usageErr(err)
		}
	}
	return paths, nil
}

// sources returns a lookup of file contents for carets, reading files that
// produced no document on demand.
func sources(docs []*dsl.Document) func(string) []byte {
	m := map[string][]byte{}
	for _, d := range docs {
		m[d.File] = d.Src
	}
	return func(file string) []byte {
		if src, ok := m[file]; ok {
			return src
		}
		src, _ := os.ReadFile(file)
		m[file] = src
		return src
	}
}
