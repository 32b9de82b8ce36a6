package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store/stores"
)

// Exit codes of exec (docs/cli.md's table lists them with the other
// commands').
const (
	exitCompleted = 0
	exitFailed    = 1
	exitUsage     = 2
	exitPaused    = 3
	exitTimedOut  = 4
)

const defaultStore = "sqlite:.runner/state.db"

func newExec() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec NAME|PATH",
		Short: "Run an agent or a pipeline once",
		Long: `Exec runs the agent or pipeline NAME (or the one a file or directory
defines), checkpointing every step, and prints the final state (or the
pipeline's output) as JSON on stdout.

Exit status: 0 completed, 1 failed or cancelled, 2 usage or definition
error, 3 paused waiting for input (resume with --resume THREAD --value
JSON), 4 timed out (resumable with --resume THREAD). See "Exit codes" in
docs/cli.md.`,
		Args: cobra.ExactArgs(1),
		RunE: runExec,
	}
	f := cmd.Flags()
	f.String("input", "", "run input as JSON, or @FILE")
	f.String("thread", "", "thread id (default: a new one, printed on stderr)")
	f.String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB or memory:")
	f.String("resume", "", "resume THREAD from its newest checkpoint")
	f.String("value", "", "with --resume: the value for the interrupted node, as JSON or @FILE")
	f.Bool("force", false, "with --resume: continue under changed definitions")
	f.Bool("events", false, "print every event as a JSON line on stdout")
	f.String("script", "", "answer every LLM call from this file of scripted replies (no API key needed)")
	f.String("tenant", "", "the tenant a new thread runs for: its rule sets apply")
	f.String("durability", "", "when a step's checkpoint reaches the store: sync, async or exit (default: the pipeline's durability, else sync)")
	f.StringSlice("interrupt-before", nil, "pause before these nodes (replaces the pipeline's interrupt_before for this run)")
	f.StringSlice("interrupt-after", nil, "pause after these nodes (replaces the pipeline's interrupt_after for this run)")
	return cmd
}

func runExec(cmd *cobra.Command, args []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return usageErr(err)
	}
	target, err := compileTarget(cmd, cfg, args[0])
	if err != nil {
		return err
	}
	storeDSN, _ := cmd.Flags().GetString("store")
	st, err := stores.Open(storeDSN)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tenant, _ := cmd.Flags().GetString("tenant")
	durability, _ := cmd.Flags().GetString("durability")
	if err := runner.CheckDurability(durability); err != nil {
		return usageErr(err)
	}
	e := &runner.Engine{Store: st, Sink: progress(cmd), Tenant: tenant, LeaseTTL: cfg.LeaseTTL, Durability: durability}
	res, err := execute(ctx, cmd, e, target)
	if err == nil && res.Status == runner.StatusCompleted && cfg.Retention != (runner.Retention{}) {
		if _, perr := e.Prune(context.WithoutCancel(ctx), target.graph, res.Thread, cfg.Retention); perr != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "runner: retention: %v\n", perr)
		}
	}
	_, exit := errors.AsType[*exitError](err)
	switch {
	case exit:
		return err
	case errors.Is(err, runner.ErrInput), errors.Is(err, runner.ErrThreadBusy):
		return usageErr(err)
	case err != nil:
		return &exitError{code: exitFailed, err: err}
	}
	return report(cmd, res)
}

// execute starts or resumes the thread.
func execute(ctx context.Context, cmd *cobra.Command, e *runner.Engine, t *target) (*runner.Result, error) {
	f := cmd.Flags()
	if thread, _ := f.GetString("resume"); thread != "" {
		value, err := jsonFlag(cmd, "value")
		if err != nil {
			return nil, usageErr(err)
		}
		force, _ := f.GetBool("force")
		return e.Resume(ctx, t.graph, thread, runner.ResumeOptions{Value: value, Force: force, RunOptions: runOptions(cmd)})
	}
	if f.Changed("value") || f.Changed("force") {
		return nil, usageErr(errors.New("--value and --force go with --resume THREAD"))
	}
	in, err := jsonFlag(cmd, "input")
	if err != nil {
		return nil, usageErr(err)
	}
	input, ok := in.(map[string]any)
	if in != nil && !ok {
		return nil, usageErr(errors.New("--input must be a JSON object"))
	}
	thread, _ := f.GetString("thread")
	if thread == "" {
		thread = uuid.Must(uuid.NewV7()).String()
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "thread %s\n", thread)
	return e.RunWith(ctx, t.graph, thread, input, runOptions(cmd))
}

// runOptions are the per-run options of the flags: the static interrupts
// given replace the pipeline's.
func runOptions(cmd *cobra.Command) runner.RunOptions {
	var opt runner.RunOptions
	f := cmd.Flags()
	if f.Changed("interrupt-before") {
		opt.InterruptBefore, _ = f.GetStringSlice("interrupt-before")
		opt.InterruptBefore = append([]string{}, opt.InterruptBefore...) // given: never nil
	}
	if f.Changed("interrupt-after") {
		opt.InterruptAfter, _ = f.GetStringSlice("interrupt-after")
		opt.InterruptAfter = append([]string{}, opt.InterruptAfter...)
	}
	return opt
}

// retries describes the structured retries among a run's LLM calls.
func retries(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d structured retries)", n)
}

// report prints the result and turns its status into the exit code.
func report(cmd *cobra.Command, res *runner.Result) error {
	out := any(res.State)
	if res.Output != nil {
		out = res.Output
	}
	if events, _ := cmd.Flags().GetBool("events"); !events {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(out)
	}
	w := cmd.ErrOrStderr()
	if u := res.Usage; u.LLMCalls > 0 {
		fmt.Fprintf(w, "usage: %d LLM calls%s, %d tokens (%d in, %d cached, %d out), $%.4f; %d tool calls\n",
			u.LLMCalls, retries(u.StructuredRetries), u.Tokens(), u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.CostUSD, u.ToolCalls)
	}
	switch res.Status {
	case runner.StatusCompleted:
		return nil
	case runner.StatusInterrupted:
		if len(res.Interrupt.Pending) > 0 {
			reportSeveral(cmd, res)
			return &exitError{code: exitPaused}
		}
		fmt.Fprintf(w, "paused at %s (%s): %s\n", res.Interrupt.Node, res.Interrupt.Kind, res.Interrupt.Message)
		value := "<json>"
		if res.Interrupt.Rule != "" { // an approval gate
			fmt.Fprintf(w, "rule %s holds %s\n", res.Interrupt.Rule, gatedCalls(res.Interrupt))
			value = `{"approved": true}` // or false with a message, or LangChain's decisions
		}
		fmt.Fprintf(w, "resume with: %s --value '%s'\n", resumeCommand(cmd, res.Thread), value)
		if res.Interrupt.ResumeSchema != nil {
			schema, _ := json.Marshal(res.Interrupt.ResumeSchema)
			fmt.Fprintf(w, "  the value must satisfy: %s\n", schema)
		}
		if res.Interrupt.Rule != "" {
			fmt.Fprintln(w, `  (to reject: --value '{"approved": false, "message": "why"}')`)
		}
		return &exitError{code: exitPaused}
	case runner.StatusCancelled:
		fmt.Fprintf(w, "cancelled; resume with: %s\n", resumeCommand(cmd, res.Thread))
		return &exitError{code: exitFailed}
	case runner.StatusTimedOut:
		fmt.Fprintf(w, "timed out; resume with: %s\n", resumeCommand(cmd, res.Thread))
		return &exitError{code: exitTimedOut, err: fmt.Errorf("%s: %s", res.Error.Code, res.Error.Message)}
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s", res.Error.Code, res.Error.Message)}
}

// reportSeveral prints the interrupts a run waits on at once, each with
// its ID, and how to answer one of them or all.
func reportSeveral(cmd *cobra.Command, res *runner.Result) {
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "paused at %s: %d interrupts wait for input\n", res.Interrupt.Node, len(res.Interrupt.Pending))
	for _, it := range res.Interrupt.Pending {
		fmt.Fprintf(w, "  %s  %s (%s): %s\n", it.ID, it.Node, it.Kind, it.Message)
	}
	fmt.Fprintf(w, "resume one with: %s --value '{\"%s\": <json>}'\n", resumeCommand(cmd, res.Thread), res.Interrupt.Pending[0].ID)
	fmt.Fprintln(w, "  (a value that is not keyed by interrupt IDs answers them all)")
}

// jsonFlag reads a flag holding JSON or @FILE; empty is nil.
func jsonFlag(cmd *cobra.Command, name string) (any, error) {
	s, _ := cmd.Flags().GetString(name)
	if s == "" {
		return nil, nil
	}
	data := []byte(s)
	if file, ok := strings.CutPrefix(s, "@"); ok {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
	}
	v, err := runner.DecodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("--%s is not valid JSON: %w", name, err)
	}
	return v, nil
}

// progress returns the event sink: JSON lines with --events, per-node
// lines on a terminal's stderr, else nothing.
func progress(cmd *cobra.Command) runner.Sink {
	if events, _ := cmd.Flags().GetBool("events"); events {
		enc := json.NewEncoder(cmd.OutOrStdout())
		return func(ev runner.Event) { _ = enc.Encode(ev) }
	}
	if !isTerminal(cmd.ErrOrStderr()) {
		return nil
	}
	w := cmd.ErrOrStderr()
	return func(ev runner.Event) {
		if ev.Type == runner.EventNodeEnd && !strings.Contains(ev.Thread, "/") {
			d, _ := ev.Data.(map[string]any)
			fmt.Fprintf(w, "  %-20s %5dms → %v\n", ev.Node, d["duration_ms"], d["next"])
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// target is what exec runs: a compiled graph.
type target struct {
	graph *runner.Graph
}

// compileTarget checks the definitions and compiles the agent or pipeline,
// with the budget overrides of cfg and the replies of --script.
func compileTarget(cmd *cobra.Command, cfg *Config, arg string) (*target, error) {
	paths, name, err := resolveTarget(cfg.Paths, arg)
	if err != nil {
		return nil, usageErr(err)
	}
	checker, proj, err := checkedProject(cmd, paths)
	if err != nil {
		return nil, err
	}
	opt, err := compileOptions(cmd, cfg)
	if err != nil {
		return nil, err
	}
	g, err := compileNamed(checker, proj, opt, name)
	if ds, ok := errors.AsType[dsl.Diagnostics](err); ok { // rendered as validate renders its diagnostics
		_ = dsl.WriteReport(cmd.ErrOrStderr(), ds, dsl.FormatText, sources(proj.Docs))
		return nil, usageErr(fmt.Errorf("%s cannot run like this", name))
	}
	if err != nil {
		return nil, usageErr(err)
	}
	return &target{graph: g}, nil
}

// compileOptions are the options exec and serve compile with: the budget
// overrides of cfg, and the replies of --script for every LLM call.
func compileOptions(cmd *cobra.Command, cfg *Config) (dsl.CompileOptions, error) {
	opt := dsl.CompileOptions{Tool: builtins.Tool, Budget: cfg.Budget, Provider: builtins.Providers()}
	if file, _ := cmd.Flags().GetString("script"); file != "" {
		script, err := dsl.LoadScript(file)
		if err != nil {
			return opt, usageErr(err)
		}
		opt.Provider = builtins.ScriptedProviders(script)
	}
	return opt, nil
}

// compileNamed compiles the agent or pipeline name of proj.
func compileNamed(checker *dsl.Checker, proj *dsl.Project, opt dsl.CompileOptions, name string) (*runner.Graph, error) {
	opt.Agent = proj.Agents[name]
	pipeline := name
	if opt.Agent != nil {
		pipeline = opt.Agent.Pipeline
	} else if proj.Pipelines[name] == nil {
		return nil, fmt.Errorf("no agent or pipeline named %q", name)
	}
	return checker.Compile(proj, pipeline, opt)
}

// resumeCommand is the command that resumes thread, with the flags that
// must stay the same (store, script).
func resumeCommand(cmd *cobra.Command, thread string) string {
	c := "runner exec " + cmd.Flags().Arg(0) + " --resume " + thread
	for _, name := range []string{"store", "script"} {
		if f := cmd.Flags().Lookup(name); f.Changed {
			c += " --" + name + " " + f.Value.String()
		}
	}
	return c
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
