// Command runner validates, draws and runs declarative agent pipelines.
//
// Exit codes: 0 success, 1 invalid definitions (or a failed run), 2 usage or
// I/O error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// Unwrap returns the error that set the exit code.
func (e *exitError) Unwrap() error { return e.err }

// usageErr wraps an error as a usage/IO failure (exit 2).
func usageErr(err error) error { return &exitError{code: 2, err: err} }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	stopProfile, err := startProfiles()
	if err == nil {
		err = root.Execute()
		stopProfile()
	}
	ee, exit := errors.AsType[*exitError](err)
	switch {
	case err == nil:
		return 0
	case exit:
		if ee.err != nil {
			fmt.Fprintln(stderr, "runner:", ee.err)
		}
		return ee.code
	default: // cobra's own usage errors
		fmt.Fprintln(stderr, "runner:", err)
		return 2
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "runner",
		Short:         "Declarative agent pipelines: validate, graph and run YAML-defined agents",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.Flags().Bool("version", false, "print the version") // no -v: -v is --verbose wherever a command has it
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "'v' in -v") {
			err = fmt.Errorf("%w: -v is --verbose (runner exec -v, runner test -v); the version is runner --version", err)
		}
		return usageErr(err)
	})
	root.PersistentFlags().String("config", "", "project settings file (default: runner.yaml if present)")
	root.AddCommand(newInit(), newValidate(), newGraph(), newExec(), newThreads(), newApprovals(), newCrons(), newTest(), newServe(), newMCP(), newKeys(), newAudit(), newWebhooks())
	return root
}

// version is the module version the binary was built from, with the VCS
// revision when the build recorded one.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v
}
