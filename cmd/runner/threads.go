package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/runner/store"
)

func newThreads() *cobra.Command {
	cmd := &cobra.Command{Use: "threads", Short: "Inspect the threads in the checkpoint store"}
	cmd.PersistentFlags().String("store", defaultStore, "checkpoint store: sqlite:PATH or memory:")
	show := &cobra.Command{Use: "show THREAD", Short: "Print a thread's newest checkpoint, or --checkpoint ID, as JSON",
		Args: cobra.ExactArgs(1), RunE: threadsShow}
	show.Flags().Int64("checkpoint", 0, "the checkpoint id (default: the newest)")
	cmd.AddCommand(
		&cobra.Command{Use: "list", Short: "List threads, newest first", Args: cobra.NoArgs, RunE: threadsList},
		show,
		&cobra.Command{Use: "history THREAD", Short: "List a thread's checkpoints", Args: cobra.ExactArgs(1), RunE: threadsHistory},
	)
	return cmd
}

// openStore opens the store the threads commands read: an SQLite file
// must exist (a mistyped path is an error, not a new empty store).
func openStore(cmd *cobra.Command) (store.Store, error) {
	dsn, _ := cmd.Flags().GetString("store")
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		path, _, _ = strings.Cut(path, "?")
		if _, err := os.Stat(path); err != nil {
			return nil, usageErr(fmt.Errorf("store %s: %w; give the --store the runs used", dsn, err))
		}
	}
	st, err := store.Open(dsn)
	if err != nil {
		return nil, usageErr(err)
	}
	return st, nil
}

func threadsList(cmd *cobra.Command, _ []string) error {
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	threads, err := st.Threads(cmd.Context(), 100)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "THREAD\tPIPELINE\tSTATUS\tSTEPS\tUPDATED")
	for _, t := range threads {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", t.ID, t.Pipeline, t.Status, t.Steps, t.UpdatedAt.Format("2006-01-02 15:04:05"))
	}
	return w.Flush()
}

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
	return enc.Encode(cps[len(cps)-1])
}

func threadsHistory(cmd *cobra.Command, args []string) error {
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	hist, err := st.History(cmd.Context(), args[0])
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTEP\tNODE\tNEXT\tSTATUS\tTIME")
	for _, cp := range hist {
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\n", cp.ID, cp.Step, cp.Node, cp.Next, cp.Status, cp.CreatedAt.Format("15:04:05.000"))
	}
	return w.Flush()
}
