package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins/testrun"
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

Exit status: 0 all passed, 1 a test failed, 2 usage or definition error.`,
		RunE: runTests,
	}
	cmd.Flags().String("run", "", "run only tests whose name contains this")
	cmd.Flags().BoolP("verbose", "v", false, "print every test, not only failures")
	cmd.Flags().Bool("live", false, "call unmocked http tools and unscripted models for real, with real secrets")
	return cmd
}

func runTests(cmd *cobra.Command, args []string) error {
	setGC(oneShotGC)
	paths, err := pathsOf(cmd, args)
	if err != nil {
		return err
	}
	checker, proj, err := checkedProject(cmd, paths)
	if err != nil {
		return err
	}
	filter, _ := cmd.Flags().GetString("run")
	verbose, _ := cmd.Flags().GetBool("verbose")
	live, _ := cmd.Flags().GetBool("live")
	w := cmd.OutOrStdout()
	suite := &testrun.Suite{Checker: checker, Project: proj}
	passed, failed := 0, 0
	for _, o := range suite.Run(cmd.Context(), suite.Tests(filter), live) {
		took := o.Took.Round(time.Millisecond)
		if o.Passed {
			passed++
			if verbose {
				fmt.Fprintf(w, "ok    %s (%s)\n", o.Name, took)
			}
			continue
		}
		failed++
		fmt.Fprintf(w, "FAIL  %s (%s)\n", o.Name, took)
		for _, p := range o.Problems {
			fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(p, "\n", "\n      "))
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	switch {
	case failed > 0:
		return &exitError{code: 1}
	case passed == 0 && filter != "":
		return usageErr(fmt.Errorf("no Test name contains %q", filter))
	}
	return nil
}
