package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins/testrun"
	"github.com/runner-dev/runner/dsl"
)

func newTest() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "Run the Test documents",
		Long: `Test runs every Test document under PATH (default: the project's paths)
against its agent or pipeline, with the tools it mocks, the resumes it lists,
and checks the expected status, node path, tool calls and assertions.

A Test stays inside the process: a call to an http tool it does not mock,
or a model call past the end of its script:, fails the Test. With --live
they go to the real service and the real model, with real secrets.

With --cover it reports what the Tests took of every pipeline and rule set:
each route (a conditional start's, every when and the default), each
on_error entry, each interrupt node resumed, each rule fired, each decision
a require_hitl rule allows made. --min fails below a share of them taken.

Exit status: 0 all passed, 1 a test failed or coverage is below --min,
2 usage or definition error.`,
		RunE: runTests,
	}
	cmd.Flags().String("run", "", "run only tests whose name contains this")
	cmd.Flags().BoolP("verbose", "v", false, "print every test, not only failures")
	cmd.Flags().Bool("live", false, "call unmocked http tools and unscripted models for real, with real secrets")
	cmd.Flags().Bool("cover", false, "report the routes, on_error entries, interrupts, rules and decisions the Tests take")
	cmd.Flags().Float64("min", 0, "with coverage: fail (exit 1) when less than this percentage is taken (implies --cover)")
	cmd.Flags().String("format", dsl.FormatText, "output format: text, json (one report) or github (annotations on what no Test takes)")
	return cmd
}

func runTests(cmd *cobra.Command, args []string) error {
	setGC(oneShotGC)
	format, _ := cmd.Flags().GetString("format")
	if format != dsl.FormatText && format != dsl.FormatJSON && format != dsl.FormatGitHub {
		return usageErr(fmt.Errorf("unknown --format %q: use text, json or github", format))
	}
	minimum, _ := cmd.Flags().GetFloat64("min")
	if minimum < 0 || minimum > 100 {
		return usageErr(fmt.Errorf("--min %v: give a percentage from 0 to 100", minimum))
	}
	paths, err := pathsOf(cmd, args)
	if err != nil {
		return err
	}
	checker, proj, err := checkedProject(cmd, paths)
	if err != nil {
		return err
	}
	filter, _ := cmd.Flags().GetString("run")
	live, _ := cmd.Flags().GetBool("live")
	cover, _ := cmd.Flags().GetBool("cover")
	cover = cover || cmd.Flags().Changed("min")
	suite := &testrun.Suite{Checker: checker, Project: proj}
	tests := suite.Tests(filter)
	if len(tests) == 0 && filter != "" {
		return usageErr(fmt.Errorf("no Test name contains %q", filter))
	}
	rep := suite.Report(cmd.Context(), tests, live, cover)
	if err := writeTestReport(cmd, rep, format); err != nil {
		return err
	}
	switch {
	case rep.Failed > 0:
		return &exitError{code: 1}
	case rep.Coverage != nil && rep.Coverage.Percent() < minimum:
		fmt.Fprintf(cmd.ErrOrStderr(), "coverage %.1f%% is below --min %v%%\n", rep.Coverage.Percent(), minimum)
		return &exitError{code: 1}
	}
	return nil
}

// writeTestReport writes how the Tests went in format: their failures
// (every Test with -v), then the coverage table and what no Test takes,
// as text lines or GitHub annotations; or the report as one JSON document.
func writeTestReport(cmd *cobra.Command, rep *testrun.Report, format string) error {
	w := cmd.OutOrStdout()
	if format == dsl.FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	verbose, _ := cmd.Flags().GetBool("verbose")
	for _, o := range rep.Tests {
		took := o.Took.Round(time.Millisecond)
		switch {
		case o.Passed && verbose:
			fmt.Fprintf(w, "ok    %s (%s)\n", o.Name, took)
		case !o.Passed:
			fmt.Fprintf(w, "FAIL  %s (%s)\n", o.Name, took)
			for _, p := range o.Problems {
				fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(p, "\n", "\n      "))
			}
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", rep.Passed, rep.Failed)
	if rep.Coverage == nil {
		return nil
	}
	writeCoverage(w, rep.Coverage)
	return dsl.WriteReport(w, untaken(rep.Coverage), format, nil)
}
