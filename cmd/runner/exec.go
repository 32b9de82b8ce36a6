package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
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
defines), checkpointing every step. Its input is checked first: a missing
or misfit field is refused before any thread exists.

Stdout carries one JSON document. By default it is the pipeline's declared
output (else its final state), printed only when the run completes; on a
pause or a failure stdout stays empty and stderr says why and what to run
next. With --output json it is {status, thread, output, interrupt, error,
usage, next} on every exit.

Exit status: 0 completed, 1 failed or cancelled, 2 refused (usage,
definitions or input: nothing ran), 3 paused waiting for input (resume
with --resume THREAD --value JSON), 4 timed out (resumable with --resume
THREAD). See "Exit codes" in docs/cli.md.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 { // refused here, so that --output json reports it
				return finishExec(cmd, nil, usageErr(fmt.Errorf("exec runs one agent or pipeline: give its NAME or PATH (got %d arguments)", len(args))))
			}
			res, err := execTarget(cmd, args[0])
			return finishExec(cmd, res, err)
		},
	}
	f := cmd.Flags()
	f.String("input", "", "run input as JSON, or @FILE")
	f.String("thread", "", "thread id, of --tenant's threads, or /TENANT/ID (default: a new one, printed on stderr)")
	f.String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB or memory:")
	f.String("resume", "", "resume THREAD (of --tenant's threads, or /TENANT/ID) from its newest checkpoint")
	f.String("value", "", "with --resume: the value for the interrupted node, as JSON or @FILE")
	f.Bool("force", false, "with --resume: continue under changed definitions")
	f.Bool("expire", false, "with --resume: resume without a verdict, only to apply on_expire to expired approval gates")
	f.String("output", outputValue, `what stdout carries: "value" (the declared output, on success only) or "json" ({status, thread, output, interrupt, error, usage, next} on every exit)`)
	f.Bool("events", false, "print every event as a JSON line on stdout (instead of --output)")
	f.BoolP("verbose", "v", false, "print each node's progress on stderr even when it is not a terminal")
	f.String("script", "", "answer every LLM call from this file of scripted replies (no API key needed)")
	f.String("tenant", "", "the tenant whose thread runs: its rule sets apply, and --thread and --resume name its threads")
	f.String("as", "", "the principal who starts the run or, with --resume, decides its approval (default: the OS user)")
	f.StringSlice("role", nil, "with --as: the principal's roles (a rule's reviewers may name them)")
	f.String("durability", "", "when a step's checkpoint reaches the store: sync, async or exit (default: the pipeline's durability, else sync)")
	f.StringSlice("interrupt-before", nil, "pause before these nodes (replaces the pipeline's interrupt_before for this run)")
	f.StringSlice("interrupt-after", nil, "pause after these nodes (replaces the pipeline's interrupt_after for this run)")
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return finishExec(cmd, nil, usageErr(err)) })
	return cmd
}

// execTarget compiles and runs (or resumes) the target; an error that
// refuses the run is an *exitError of code 2.
func execTarget(cmd *cobra.Command, arg string) (*runner.Result, error) {
	if out, _ := cmd.Flags().GetString("output"); out != outputValue && out != outputJSON {
		return nil, usageErr(fmt.Errorf("unknown --output %q: use value or json", out))
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, usageErr(err)
	}
	tools := &builtins.Toolbox{} // its MCP servers stop with the run
	defer tools.Close()
	target, err := compileTarget(cmd, cfg, arg, tools)
	if err != nil {
		return nil, err
	}
	durability, _ := cmd.Flags().GetString("durability")
	if err := runner.CheckDurability(durability); err != nil {
		return nil, usageErr(err)
	}
	tenant, _ := cmd.Flags().GetString("tenant")
	if err := access.CheckTenant(tenant); err != nil {
		return nil, usageErr(fmt.Errorf("--tenant: %w", err))
	}
	input, err := runInput(cmd, target)
	if err != nil {
		return nil, err
	}
	storeDSN, _ := cmd.Flags().GetString("store")
	st, err := stores.Open(storeDSN)
	if err != nil {
		return nil, usageErr(err)
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &runner.Engine{Store: st, Sink: progress(cmd), Tenant: tenant, LeaseTTL: cfg.LeaseTTL, Durability: durability}
	res, err := execute(ctx, cmd, e, target, input)
	if err == nil && res.Status == runner.StatusCompleted && cfg.Retention != (runner.Retention{}) {
		if _, perr := e.Prune(context.WithoutCancel(ctx), target.graph, res.Thread, cfg.Retention); perr != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "runner: retention: %v\n", perr)
		}
	}
	return res, err
}

// runInput is the input of a new run (nil with --resume), checked before
// anything is opened or named: a refused run leaves nothing behind.
func runInput(cmd *cobra.Command, t *target) (map[string]any, error) {
	f := cmd.Flags()
	if f.Changed("resume") {
		return nil, nil
	}
	if f.Changed("value") || f.Changed("force") || f.Changed("expire") {
		return nil, usageErr(errors.New("--value, --force and --expire go with --resume THREAD"))
	}
	in, err := jsonFlag(cmd, "input")
	if err != nil {
		return nil, usageErr(err)
	}
	input, ok := in.(map[string]any)
	if in != nil && !ok {
		return nil, usageErr(errors.New("--input must be a JSON object"))
	}
	_, err = t.graph.Admit(input)
	return input, err
}

// execute resumes the thread of --resume, or starts a run with input.
func execute(ctx context.Context, cmd *cobra.Command, e *runner.Engine, t *target, input map[string]any) (*runner.Result, error) {
	f := cmd.Flags()
	if thread, _ := f.GetString("resume"); thread != "" {
		thread, tenant, err := access.ParseThread(e.Tenant, thread)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--resume: %w", err))
		}
		value, err := jsonFlag(cmd, "value")
		if err != nil {
			return nil, usageErr(err)
		}
		force, _ := f.GetBool("force")
		expire, _ := f.GetBool("expire")
		opt, err := runOptions(cmd, tenant)
		if err != nil {
			return nil, err
		}
		return e.Resume(ctx, t.graph, thread, runner.ResumeOptions{Value: value, Force: force, Expire: expire, RunOptions: opt})
	}
	thread, _ := f.GetString("thread")
	if thread == "" {
		thread = uuid.Must(uuid.NewV7()).String()
	}
	thread, tenant, err := access.ParseThread(e.Tenant, thread)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--thread: %w", err))
	}
	e.Tenant = tenant // a /TENANT/ID thread runs for its tenant
	opt, err := runOptions(cmd, tenant)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "thread %s\n", thread)
	return e.RunWith(ctx, t.graph, thread, input, opt)
}

// runOptions are the per-run options of the flags: the principal the run
// acts as, of tenant (localPrincipal), and the static interrupts, which
// replace the pipeline's.
func runOptions(cmd *cobra.Command, tenant string) (runner.RunOptions, error) {
	var opt runner.RunOptions
	var err error
	if opt.As, err = localPrincipal(cmd, tenant); err != nil {
		return opt, err
	}
	f := cmd.Flags()
	if f.Changed("interrupt-before") {
		opt.InterruptBefore, _ = f.GetStringSlice("interrupt-before")
		opt.InterruptBefore = append([]string{}, opt.InterruptBefore...) // given: never nil
	}
	if f.Changed("interrupt-after") {
		opt.InterruptAfter, _ = f.GetStringSlice("interrupt-after")
		opt.InterruptAfter = append([]string{}, opt.InterruptAfter...)
	}
	return opt, nil
}

// localPrincipal is who a command of tenant acts as: the local user is
// trusted to say (--as, --role); by default the OS user, with no roles.
func localPrincipal(cmd *cobra.Command, tenant string) (access.Principal, error) {
	f := cmd.Flags()
	name, _ := f.GetString("as")
	if name == "" {
		name = osUser()
	}
	roles, _ := f.GetStringSlice("role")
	p := access.Principal{Tenant: tenant, Name: name, Roles: roles}
	if err := p.Check(); err != nil {
		return p, usageErr(fmt.Errorf("--as, --role: %w", err))
	}
	return p, nil
}

// osUser is the name of the OS user, or "local" when it is not a
// principal's name.
func osUser() string {
	u, err := user.Current()
	if err != nil || (access.Principal{Name: u.Username}).Check() != nil {
		return access.Local().Name
	}
	return u.Username
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

// progress returns the event sink: JSON lines with --events; else, on a
// terminal's stderr, each node as it starts, completed with its duration
// and route when it ends; with --verbose, the completed lines anywhere;
// else nothing.
func progress(cmd *cobra.Command) runner.Sink {
	if events, _ := cmd.Flags().GetBool("events"); events {
		enc := json.NewEncoder(cmd.OutOrStdout())
		return func(ev runner.Event) { _ = enc.Encode(ev) }
	}
	w := cmd.ErrOrStderr()
	tty := isTerminal(w)
	if verbose, _ := cmd.Flags().GetBool("verbose"); !tty && !verbose {
		return nil
	}
	started := "" // the node whose start line waits for its end
	return func(ev runner.Event) {
		if access.Root(ev.Thread) != ev.Thread { // a child thread's
			return
		}
		switch ev.Type {
		case runner.EventNodeStart:
			if tty {
				fmt.Fprintf(w, "  %-20s …", ev.Node)
				started = ev.Node
			}
		case runner.EventNodeEnd:
			if started != "" {
				fmt.Fprint(w, "\r")
			}
			d, _ := ev.Data.(map[string]any)
			fmt.Fprintf(w, "  %-20s %5dms → %v\n", ev.Node, d["duration_ms"], d["next"])
			started = ""
		case runner.EventInterrupt, runner.EventError, runner.EventDone:
			if started != "" {
				fmt.Fprintf(w, " %s\n", map[string]string{runner.EventInterrupt: "paused", runner.EventError: "failed"}[ev.Type])
				started = ""
			}
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
// with the budget overrides of cfg and the replies of --script, its tools
// built by tools.
func compileTarget(cmd *cobra.Command, cfg *Config, arg string, tools *builtins.Toolbox) (*target, error) {
	paths, name, err := resolveTarget(cfg.Paths, arg)
	if err != nil {
		return nil, usageErr(err)
	}
	checker, proj, err := checkedProject(cmd, paths)
	if err != nil {
		return nil, err
	}
	opt, err := compileOptions(cmd, cfg, tools)
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

// compileOptions are the options exec and serve compile with: tools built
// by tools, the budget overrides of cfg, and the replies of --script for
// every LLM call.
func compileOptions(cmd *cobra.Command, cfg *Config, tools *builtins.Toolbox) (dsl.CompileOptions, error) {
	opt := dsl.CompileOptions{Tool: tools.Tool, Budget: cfg.Budget, Provider: builtins.Providers()}
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
		return nil, unknownTarget(proj, name)
	}
	return checker.Compile(proj, pipeline, opt)
}
