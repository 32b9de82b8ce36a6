package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/stores"
)

func newThreads() *cobra.Command {
	cmd := &cobra.Command{Use: "threads", Short: "Inspect the threads in the checkpoint store"}
	cmd.PersistentFlags().String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB or memory:")
	show := &cobra.Command{Use: "show THREAD", Short: "Print a thread's state, where it stands and what it waits on, at its newest checkpoint or --checkpoint ID, as JSON",
		Args: cobra.ExactArgs(1), RunE: threadsShow}
	show.Flags().Int64("checkpoint", 0, "the checkpoint id (default: the newest)")
	show.Flags().Bool("raw", false, "print the stored checkpoint itself: its writes, interrupt and meta (usage, journal)")
	list := &cobra.Command{Use: "list", Short: "List threads, newest first", Args: cobra.NoArgs, RunE: threadsList}
	list.Flags().Int("limit", 100, "list at most this many (0: all)")
	history := &cobra.Command{Use: "history THREAD", Short: "List a thread's checkpoints, newest first", Args: cobra.ExactArgs(1), RunE: threadsHistory}
	history.Flags().Int("limit", 0, "list at most this many (0: all)")
	history.Flags().Int64("before", 0, "list only checkpoints older than this id (the next page)")
	history.Flags().String("status", "", "list only checkpoints of this status: running, interrupted, completed, failed, timed_out, cancelled")
	history.Flags().Bool("oldest-first", false, "list the oldest first")
	prune := &cobra.Command{Use: "prune [THREAD...]", Short: "Drop old checkpoints (default: of every thread, by runner.yaml's retention); a pruned thread still resumes",
		RunE: threadsPrune}
	prune.Flags().Int("keep", 0, "keep each thread's newest N checkpoints")
	prune.Flags().Duration("max-age", 0, "drop checkpoints older than this (720h: thirty days)")
	update := &cobra.Command{Use: "update THREAD", Short: "Write values to a thread's state, as --as-node would have (then resume it), or in place", Args: cobra.ExactArgs(1), RunE: threadsUpdate}
	update.Flags().String("values", "", "the state updates, as JSON or @FILE (they go through the fields' reducers)")
	update.Flags().String("as-node", "", "write them as this node would have: the thread then stands at the node its routes choose")
	fork := &cobra.Command{Use: "fork THREAD [--to NEW] [--checkpoint ID]",
		Short: "Branch THREAD at --checkpoint ID (a replay from there: exec --resume continues it), or start thread NEW as a copy of it",
		Args:  cobra.ExactArgs(1), RunE: threadsFork}
	fork.Flags().Int64("checkpoint", 0, "the checkpoint to branch or copy at (default: the newest)")
	fork.Flags().String("to", "", "the new thread's id (default: a branch of THREAD itself)")
	for _, c := range []*cobra.Command{list, history} {
		c.Flags().String("format", formatText, "output format: text (a table) or json (a list of objects)")
	}
	cmd.AddCommand(
		list,
		show,
		history,
		&cobra.Command{Use: "delete THREAD", Short: "Delete a thread and its child threads with all their checkpoints", Args: cobra.ExactArgs(1), RunE: threadsDelete},
		prune,
		update,
		fork,
	)
	return cmd
}

// errNoStore is openStore's error for an SQLite file that is not there:
// no run has written to it (or its path is mistyped).
var errNoStore = errors.New("no threads yet")

// openStore opens the store the threads commands read. An SQLite file that
// does not exist is not created (a mistyped path would be a new empty
// store): the error, errNoStore, says no run has used it yet.
func openStore(cmd *cobra.Command) (store.Store, error) {
	dsn, _ := cmd.Flags().GetString("store")
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		path, _, _ = strings.Cut(path, "?")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, &exitError{code: 1, err: fmt.Errorf("%w: store %s does not exist (runner exec creates it; if the runs used another, give it with --store)", errNoStore, dsn)}
		}
	}
	st, err := stores.Open(dsn)
	if err != nil {
		return nil, usageErr(err)
	}
	return st, nil
}

// The values of the listings' --format.
const (
	formatText = "text"
	formatJSON = "json"
)

// listFormat is a listing's --format, checked.
func listFormat(cmd *cobra.Command) (string, error) {
	format, _ := cmd.Flags().GetString("format")
	if format != formatText && format != formatJSON {
		return "", usageErr(fmt.Errorf("unknown --format %q: use text or json", format))
	}
	return format, nil
}

// writeTable writes a listing's header and rows as aligned columns.
func writeTable(w io.Writer, header string, rows [][]any) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		for i, v := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func threadsList(cmd *cobra.Command, _ []string) error {
	format, err := listFormat(cmd)
	if err != nil {
		return err
	}
	limit, _ := cmd.Flags().GetInt("limit")
	var threads []store.Thread
	st, err := openStore(cmd)
	if err == nil {
		defer st.Close()
		if threads, err = st.Threads(cmd.Context(), limit); err != nil {
			return &exitError{code: 1, err: err}
		}
	} else if !errors.Is(err, errNoStore) {
		return err
	}
	switch {
	case format == formatJSON:
		writeJSON(cmd.OutOrStdout(), orEmpty(threads))
		return nil
	case err != nil: // no store: no threads
		fmt.Fprintln(cmd.ErrOrStderr(), err)
		return nil
	case len(threads) == 0:
		fmt.Fprintln(cmd.ErrOrStderr(), "no threads yet: runner exec NAME starts one")
		return nil
	}
	rows := make([][]any, len(threads))
	for i, t := range threads {
		rows[i] = []any{t.ID, t.Pipeline, t.Status, t.Steps, t.UpdatedAt.Format("2006-01-02 15:04:05")}
	}
	return writeTable(cmd.OutOrStdout(), "THREAD\tPIPELINE\tSTATUS\tSTEPS\tUPDATED", rows)
}

// orEmpty is list, an empty list for none (JSON [] rather than null).
func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// threadsShow prints a thread's state rebuilt through its pipeline's
// reducers; without the definitions (outside the project) it prints the
// raw checkpoint and says why.
func threadsShow(cmd *cobra.Command, args []string) error {
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	id, _ := cmd.Flags().GetInt64("checkpoint")
	cps, err := st.Load(cmd.Context(), args[0], id)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	if raw, _ := cmd.Flags().GetBool("raw"); raw {
		return enc.Encode(cps[len(cps)-1])
	}
	g, err := graphOf(cmd, st, args[0])
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "runner: the state is not rebuilt (%v); the raw checkpoint follows\n", err)
		return enc.Encode(cps[len(cps)-1])
	}
	ts, err := (&runner.Engine{Store: st}).State(cmd.Context(), g, args[0], id)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	return enc.Encode(ts)
}

// graphOf compiles what a thread runs — its pipeline, for the agent its
// newest snapshot names — so that its checkpoints keep their definitions'
// hash.
func graphOf(cmd *cobra.Command, st store.Store, thread string) (*runner.Graph, error) {
	cps, err := st.Load(cmd.Context(), thread, 0)
	if err != nil {
		return nil, err
	}
	var m struct{ Defs map[string]string }
	_ = json.Unmarshal(cps[0].Meta, &m)
	agent := ""
	for k := range m.Defs {
		if name, ok := strings.CutPrefix(k, dsl.KindAgent+"/"); ok {
			agent = name
		}
	}
	return pipelineFor(cmd, cps[len(cps)-1].Pipeline, agent)
}

// pipelineFor compiles pipeline name run by agent (empty: any agent that
// runs it, so that a pipeline calling its agent's model compiles), for its
// reducers: no tool is called and no model is asked.
func pipelineFor(cmd *cobra.Command, name, agent string) (*runner.Graph, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	checker, proj, _, diags, err := loadProject(cfg.Paths)
	if err != nil || diags.HasErrors(false) {
		return nil, errors.Join(err, errors.New("the definitions here do not load"))
	}
	// tools no run calls: their Toolbox connects to no MCP server
	opt := dsl.CompileOptions{Tool: (&builtins.Toolbox{}).Tool, Provider: builtins.ScriptedProviders(nil), Agent: proj.Agents[agent]}
	g, err := checker.Compile(proj, name, opt)
	if err == nil || opt.Agent != nil {
		return g, err // as the thread ran: what the threads commands write carries its definitions
	}
	for _, n := range slices.Sorted(maps.Keys(proj.Agents)) { // a pipeline that calls its agent's model compiles with one
		if proj.Agents[n].Pipeline == name {
			opt.Agent = proj.Agents[n]
			return checker.Compile(proj, name, opt)
		}
	}
	return g, err
}

// historyEntry is one checkpoint of threads history --format json.
type historyEntry struct {
	ID        int64     `json:"id"`
	Parent    int64     `json:"parent"`
	Step      int       `json:"step"`
	Node      string    `json:"node"`
	Next      string    `json:"next"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}

func threadsHistory(cmd *cobra.Command, args []string) error {
	format, err := listFormat(cmd)
	if err != nil {
		return err
	}
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	hist, err := st.History(cmd.Context(), args[0])
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	f := cmd.Flags()
	limit, _ := f.GetInt("limit")
	before, _ := f.GetInt64("before")
	status, _ := f.GetString("status")
	oldest, _ := f.GetBool("oldest-first")
	if !oldest {
		slices.Reverse(hist)
	}
	entries := []historyEntry{}
	for _, cp := range hist {
		if (before > 0 && cp.ID >= before) || (status != "" && cp.Status != status) {
			continue
		}
		if limit > 0 && len(entries) == limit {
			break
		}
		entries = append(entries, historyEntry{cp.ID, cp.Parent, cp.Step, cp.Node, cp.Next, cp.Status, cp.CreatedAt})
	}
	if format == formatJSON {
		writeJSON(cmd.OutOrStdout(), entries)
		return nil
	}
	rows := make([][]any, len(entries))
	for i, e := range entries {
		rows[i] = []any{e.ID, e.Step, e.Node, e.Next, e.Status, e.CreatedAt.Format("15:04:05.000")}
	}
	return writeTable(cmd.OutOrStdout(), "ID\tSTEP\tNODE\tNEXT\tSTATUS\tTIME", rows)
}

func threadsDelete(cmd *cobra.Command, args []string) error {
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Delete(cmd.Context(), args[0]); err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "deleted thread %s\n", args[0])
	return nil
}

// threadsPrune applies a retention — the flags', else runner.yaml's — to
// the threads named, or to every thread.
func threadsPrune(cmd *cobra.Command, args []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return usageErr(err)
	}
	ret := cfg.Retention
	if f := cmd.Flags(); f.Changed("keep") || f.Changed("max-age") {
		ret.Keep, _ = f.GetInt("keep")
		ret.MaxAge, _ = f.GetDuration("max-age")
	}
	if ret == (runner.Retention{}) {
		return usageErr(errors.New("no retention: give --keep N or --max-age D, or set retention: in runner.yaml"))
	}
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	e := &runner.Engine{Store: st, LeaseTTL: cfg.LeaseTTL}
	if len(args) == 0 {
		return sweep(cmd, e, ret)
	}
	total := 0
	for _, t := range args {
		g, _ := graphOf(cmd, st, t) // without definitions: no compaction
		n, err := e.Prune(cmd.Context(), g, t, ret)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		total += n
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "pruned %d checkpoints of %d threads\n", total, len(args))
	return nil
}

// sweep applies ret to every thread of e's store (Engine.Sweep): a thread
// that is running is left for the next sweep.
func sweep(cmd *cobra.Command, e *runner.Engine, ret runner.Retention) error {
	graphs := map[string]*runner.Graph{}
	lookup := func(pipeline string) *runner.Graph {
		if g, ok := graphs[pipeline]; ok {
			return g
		}
		graphs[pipeline], _ = pipelineFor(cmd, pipeline, "") // without definitions: no compaction
		return graphs[pipeline]
	}
	res, err := e.Sweep(cmd.Context(), ret, runner.SweepOptions{Graph: lookup})
	fmt.Fprintf(cmd.ErrOrStderr(), "pruned %d checkpoints of %d threads", res.Pruned, res.Threads)
	if res.Skipped > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "; %d running, left as they are", res.Skipped)
	}
	fmt.Fprintln(cmd.ErrOrStderr())
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// threadGraph opens the store and compiles the pipeline a thread runs.
func threadGraph(cmd *cobra.Command, thread string) (store.Store, *runner.Graph, error) {
	st, err := openStore(cmd)
	if err != nil {
		return nil, nil, err
	}
	g, err := graphOf(cmd, st, thread)
	if errors.Is(err, store.ErrNotFound) {
		st.Close()
		return nil, nil, &exitError{code: 1, err: err}
	} else if err != nil {
		st.Close()
		return nil, nil, usageErr(err)
	}
	return st, g, nil
}

func threadsUpdate(cmd *cobra.Command, args []string) error {
	v, err := jsonFlag(cmd, "values")
	values, ok := v.(map[string]any)
	if err != nil || !ok {
		return usageErr(errors.Join(err, errors.New(`--values takes a JSON object of state fields, e.g. '{"status": "REVIEWED"}'`)))
	}
	st, g, err := threadGraph(cmd, args[0])
	if err != nil {
		return err
	}
	defer st.Close()
	asNode, _ := cmd.Flags().GetString("as-node")
	ts, err := (&runner.Engine{Store: st}).Update(cmd.Context(), g, args[0], values, asNode)
	return printThread(cmd, ts, err)
}

func threadsFork(cmd *cobra.Command, args []string) error {
	to, _ := cmd.Flags().GetString("to")
	id, _ := cmd.Flags().GetInt64("checkpoint")
	if to == "" && id == 0 {
		return usageErr(errors.New("fork needs --checkpoint ID (a branch of the thread) or --to NEW (a copy)"))
	}
	st, g, err := threadGraph(cmd, args[0])
	if err != nil {
		return err
	}
	defer st.Close()
	e := &runner.Engine{Store: st}
	var ts *runner.ThreadState
	if to == "" {
		ts, err = e.Rewind(cmd.Context(), g, args[0], id)
	} else {
		ts, err = e.Fork(cmd.Context(), g, args[0], id, to)
	}
	return printThread(cmd, ts, err)
}

// printThread prints a thread's state, or the error that refused it.
func printThread(cmd *cobra.Command, ts *runner.ThreadState, err error) error {
	switch {
	case errors.Is(err, runner.ErrInput), errors.Is(err, runner.ErrThreadBusy):
		return usageErr(err)
	case err != nil:
		return &exitError{code: 1, err: err}
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(ts)
}
