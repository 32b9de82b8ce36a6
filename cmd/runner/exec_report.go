package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
)

// The values of exec's --output.
const (
	outputValue = "value" // the declared output alone, on success only
	outputJSON  = "json"  // an execReport on every exit
)

// statusRefused is an execReport's status when nothing ran (exit 2).
const statusRefused = "refused"

// execReport is what exec prints under --output json, on every exit: its
// keys do not depend on how the run ended (a value that does not apply is
// null).
type execReport struct {
	// Status is the thread's status (completed, interrupted, failed,
	// cancelled, timed_out), or refused when nothing ran.
	Status    string            `json:"status"`
	Thread    *string           `json:"thread"`
	Output    any               `json:"output"`
	Interrupt *runner.Interrupt `json:"interrupt"`
	Error     *runner.RunError  `json:"error"`
	Usage     *runner.RunUsage  `json:"usage"`
	// Next is the command to run next: the resume of a paused or stopped
	// thread, a refused run with its input completed.
	Next *string `json:"next"`
}

// finishExec reports how exec ended — the message and the command to
// run next on stderr, the output or the report on stdout — and returns
// the error that carries its exit code.
func finishExec(cmd *cobra.Command, res *runner.Result, err error) error {
	code, rep := outcome(cmd, res, err)
	w := cmd.ErrOrStderr()
	if rep.Error != nil && code != exitPaused {
		fmt.Fprintln(w, "runner:", errorText(rep.Error))
	}
	if rep.Next != nil {
		fmt.Fprintf(w, "%s: %s\n", nextLabel(*rep.Next), *rep.Next)
	}
	events, _ := cmd.Flags().GetBool("events")
	format, _ := cmd.Flags().GetString("output")
	switch {
	case events:
	case format == outputJSON:
		writeJSON(cmd.OutOrStdout(), rep)
	case code == exitCompleted:
		writeJSON(cmd.OutOrStdout(), rep.Output)
	}
	if code == exitCompleted {
		return nil
	}
	return &exitError{code: code} // the message is out already
}

// outcome is the exit code and the report of a run's result, or of the
// error that refused or broke it. A pause's own lines go to stderr here.
func outcome(cmd *cobra.Command, res *runner.Result, err error) (int, *execReport) {
	if err != nil {
		return errorOutcome(cmd, err)
	}
	rep := &execReport{Status: res.Status, Thread: &res.Thread, Output: res.Output, Interrupt: res.Interrupt, Error: res.Error, Usage: &res.Usage}
	if rep.Output == nil {
		rep.Output = res.State
	}
	reportUsage(cmd.ErrOrStderr(), res.Usage)
	code := exitFailed
	switch res.Status {
	case runner.StatusCompleted:
		return exitCompleted, rep
	case runner.StatusInterrupted:
		code = exitPaused
	case runner.StatusTimedOut:
		code = exitTimedOut
	case runner.StatusCancelled:
		rep.Error = &runner.RunError{Code: "cancelled", Message: "the run was cancelled"}
	}
	resume := resumeCommand(cmd, res.Thread)
	if code == exitPaused {
		resume = reportPause(cmd, res, resume)
	}
	if store, _ := cmd.Flags().GetString("store"); strings.HasPrefix(store, "memory:") {
		fmt.Fprintln(cmd.ErrOrStderr(), "runner: the memory: store keeps nothing after exec, so this thread cannot be resumed; run with --store sqlite:PATH to keep it")
		return code, rep
	}
	rep.Next = &resume
	return code, rep
}

// errorOutcome is the outcome of a run refused (exit 2: nothing ran) or
// broken by err.
func errorOutcome(cmd *cobra.Command, err error) (int, *execReport) {
	rep := &execReport{Status: statusRefused, Error: &runner.RunError{Code: "usage", Message: err.Error()}}
	code := exitUsage
	ee, isExit := errors.AsType[*exitError](err)
	ie, isInput := errors.AsType[*dsl.InputError](err)
	switch {
	case isExit:
		code = ee.code
	case isInput:
		rep.Error.Code = "invalid_input"
		if missing := ie.Missing(); len(missing) > 0 {
			rep.Next = new(inputCommand(cmd, missing))
		}
	case errors.Is(err, access.ErrForbidden):
		rep.Error.Code = "forbidden"
	case errors.Is(err, runner.ErrInput):
		rep.Error.Code = "invalid_input"
	case errors.Is(err, runner.ErrThreadBusy):
		rep.Error.Code = "thread_busy"
		if thread, _ := cmd.Flags().GetString("thread"); errors.Is(err, runner.ErrUnfinished) {
			rep.Next = new(resumeCommand(cmd, thread))
		}
	default:
		code, rep.Status, rep.Error.Code = exitFailed, runner.StatusFailed, "error"
	}
	if isExit && ee.err == nil { // the command reported it already
		rep.Error.Message = ""
	}
	if code == exitFailed {
		rep.Status = runner.StatusFailed
	}
	return code, rep
}

// errorText is how stderr says what went wrong.
func errorText(e *runner.RunError) string {
	switch e.Code {
	case "usage", "invalid_input", "thread_busy", "error", "cancelled":
		return e.Message
	}
	return e.Code + ": " + e.Message
}

// nextLabel introduces the command to run next.
func nextLabel(next string) string {
	if strings.Contains(next, " --resume ") {
		return "resume with"
	}
	return "run it with"
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// reportUsage prints what the thread spent, when it called a model.
func reportUsage(w io.Writer, u runner.RunUsage) {
	if u.LLMCalls == 0 {
		return
	}
	retries := ""
	if u.StructuredRetries > 0 {
		retries = fmt.Sprintf(" (%d structured retries)", u.StructuredRetries)
	}
	fmt.Fprintf(w, "usage: %d LLM calls%s, %d tokens (%d in, %d cached, %d out), $%.4f; %d tool calls\n",
		u.LLMCalls, retries, u.Tokens(), u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.CostUSD, u.ToolCalls)
}

// reportPause says on stderr where the run paused and what it waits for,
// and returns the command that resumes it.
func reportPause(cmd *cobra.Command, res *runner.Result, resume string) string {
	w, intr := cmd.ErrOrStderr(), res.Interrupt
	if len(intr.Pending) > 0 {
		fmt.Fprintf(w, "paused at %s: %d interrupts wait for input\n", intr.Node, len(intr.Pending))
		for _, it := range intr.Pending {
			fmt.Fprintf(w, "  %s  %s (%s): %s\n", it.ID, it.Node, it.Kind, it.Message)
		}
		fmt.Fprintln(w, "  (a value that is not keyed by interrupt IDs answers them all)")
		return resume + " --value " + jsonArg(map[string]any{intr.Pending[0].ID: example(intr.Pending[0].ResumeSchema)})
	}
	fmt.Fprintf(w, "paused at %s (%s): %s\n", intr.Node, intr.Kind, intr.Message)
	switch {
	case intr.Kind == runner.KindBefore || intr.Kind == runner.KindAfter:
		return resume // a static pause takes no value
	case intr.Rule != "": // an approval gate
		fmt.Fprintf(w, "rule %s holds %s\n", intr.Rule, gatedCalls(intr))
		fmt.Fprintln(w, `  (to reject: --value '{"approved": false, "message": "why"}')`)
		return resume + ` --value '{"approved": true}'`
	}
	if intr.ResumeSchema != nil {
		schema, _ := json.Marshal(intr.ResumeSchema)
		fmt.Fprintf(w, "  the value must satisfy: %s\n", schema)
	}
	return resume + " --value " + jsonArg(example(intr.ResumeSchema))
}

// example is a value for a hint to carry where the user's value goes: one
// that satisfies the JSON Schema's types, enums and required properties,
// with text to replace in its strings.
func example(schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	switch schema["type"] {
	case "object":
		props, _ := schema["properties"].(map[string]any)
		required, _ := schema["required"].([]any)
		out := map[string]any{}
		for _, name := range required {
			if n, ok := name.(string); ok {
				prop, _ := props[n].(map[string]any)
				out[n] = example(prop)
			}
		}
		return out
	case "array":
		return []any{}
	case "boolean":
		return true
	case "integer", "number":
		return 0
	}
	return "your answer"
}

// jsonArg is v as a shell argument of JSON.
func jsonArg(v any) string {
	b, _ := json.Marshal(v)
	return shellQuote(string(b))
}

// resumeCommand is the command that resumes thread, with the flags that
// must stay the same (settings, store, script).
func resumeCommand(cmd *cobra.Command, thread string) string {
	return execCommand(cmd, "--resume", thread)
}

// inputCommand is the command that runs the target again with the
// required fields its input lacks added, each with a placeholder.
func inputCommand(cmd *cobra.Command, missing map[string]any) string {
	in, _ := jsonFlag(cmd, "input")
	input, _ := in.(map[string]any)
	if input == nil {
		input = map[string]any{}
	}
	for k, v := range missing {
		input[k] = v
	}
	b, _ := json.Marshal(input)
	return execCommand(cmd, "--input", string(b))
}

// execCommand is the exec command line of this invocation's target with
// extra flags, keeping the flags that choose what runs where (--config,
// --store, --script).
func execCommand(cmd *cobra.Command, extra ...string) string {
	parts := []string{"runner", "exec", shellQuote(cmd.Flags().Arg(0))}
	for _, e := range extra {
		parts = append(parts, shellQuote(e))
	}
	for _, name := range []string{"config", "store", "script"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			parts = append(parts, "--"+name, shellQuote(f.Value.String()))
		}
	}
	return strings.Join(parts, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// gatedCalls lists the calls an approval gate holds: name(args).
func gatedCalls(intr *runner.Interrupt) string {
	acts, _ := intr.Payload["action_requests"].([]any)
	var out []string
	for _, a := range acts {
		act, _ := a.(map[string]any)
		args, _ := json.Marshal(act["args"])
		out = append(out, fmt.Sprintf("%v(%s)", act["name"], args))
	}
	return strings.Join(out, ", ")
}
