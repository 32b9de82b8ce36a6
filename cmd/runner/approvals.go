package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

func newApprovals() *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Short: "List, show and decide the approvals in the checkpoint store"}
	pf := cmd.PersistentFlags()
	pf.String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB or memory:")
	pf.String("tenant", "", "the tenant whose approvals")
	pf.String("as", "", "the principal who lists or decides (default: the OS user)")
	pf.StringSlice("role", nil, "the principal's roles")
	list := &cobra.Command{Use: "list", Short: "List the approvals the principal may decide, pending ones by default, newest first", Args: cobra.NoArgs, RunE: approvalsList}
	lf := list.Flags()
	lf.String("status", store.ApprovalPending, "pending, decided, expired or cancelled")
	lf.String("agent", "", "only the approvals of this agent")
	lf.String("rule", "", "only the approvals of this rule")
	lf.Bool("oldest-first", false, "list the oldest first")
	lf.Int("limit", 100, "list at most this many (0: all)")
	lf.String("format", formatText, "output format: text (a table) or json (a list of objects)")
	show := &cobra.Command{Use: "show ID", Short: "Print an approval's record as JSON", Args: cobra.ExactArgs(1), RunE: approvalsShow}
	decide := &cobra.Command{Use: "decide ID [TARGET...] --value JSON",
		Short: "Decide an approval as --as and resume its thread, as exec --resume does (TARGET: the definitions; default: its agent)",
		Args:  cobra.MinimumNArgs(1), RunE: approvalsDecide}
	decide.Flags().String("value", `{"approved": true}`, "the verdict, as JSON or @FILE")
	decide.Flags().String("script", "", "answer the resumed run's LLM calls from this file of scripted replies")
	sweep := &cobra.Command{Use: "sweep [TARGET...]",
		Short: "Escalate every tenant's pending approvals due to escalate, and apply on_expire to those past their expiry, resuming each thread without a verdict (TARGET: the definitions; default: each approval's agent)",
		Args:  cobra.ArbitraryArgs, RunE: approvalsSweep}
	sweep.Flags().String("script", "", "answer the resumed runs' LLM calls from this file of scripted replies")
	cmd.AddCommand(list, show, decide, sweep)
	return cmd
}

// approvalStore opens the store and the approval records it keeps.
func approvalStore(cmd *cobra.Command) (store.Store, store.ApprovalStore, error) {
	st, err := openStore(cmd)
	if err != nil {
		return nil, nil, err
	}
	as, ok := st.(store.ApprovalStore)
	if !ok {
		st.Close()
		return nil, nil, usageErr(errors.New("this store keeps no approval records"))
	}
	return st, as, nil
}

// approvalOf reads approval id of the principal's tenant: another
// tenant's is not found.
func approvalOf(cmd *cobra.Command, as store.ApprovalStore, id string) (*store.Approval, access.Principal, error) {
	tenant, _ := cmd.Flags().GetString("tenant")
	p, err := localPrincipal(cmd, tenant)
	if err != nil {
		return nil, p, err
	}
	a, err := as.Approval(cmd.Context(), id)
	if err == nil && a.Tenant != p.Tenant {
		err = store.ApprovalNotFound(id)
	}
	if err != nil {
		return nil, p, &exitError{code: 1, err: err}
	}
	return a, p, nil
}

func approvalsList(cmd *cobra.Command, _ []string) error {
	format, err := listFormat(cmd)
	if err != nil {
		return err
	}
	f := cmd.Flags()
	tenant, _ := f.GetString("tenant")
	p, err := localPrincipal(cmd, tenant)
	if err != nil {
		return err
	}
	st, as, err := approvalStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	q := store.ApprovalQuery{Tenant: p.Tenant, Reviewers: p.ReviewerKeys()}
	q.Status, _ = f.GetString("status")
	q.Agent, _ = f.GetString("agent")
	q.Rule, _ = f.GetString("rule")
	q.Oldest, _ = f.GetBool("oldest-first")
	q.Limit, _ = f.GetInt("limit")
	list, err := as.Approvals(cmd.Context(), q)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if format == formatJSON {
		return writeJSONList(cmd, list)
	}
	rows := make([][]any, len(list))
	for i, a := range list {
		rows[i] = []any{a.ID, access.ThreadID(access.Root(a.Thread)), a.Agent, a.Rule, a.Status, a.CreatedAt.Format("2006-01-02 15:04:05")}
	}
	return writeTable(cmd.OutOrStdout(), "ID\tTHREAD\tAGENT\tRULE\tSTATUS\tCREATED", rows)
}

// writeJSONList writes v as indented JSON.
func writeJSONList(cmd *cobra.Command, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
	return err
}

func approvalsShow(cmd *cobra.Command, args []string) error {
	st, as, err := approvalStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	a, _, err := approvalOf(cmd, as, args[0])
	if err != nil {
		return err
	}
	return writeJSONList(cmd, a)
}

// approvalsDecide resumes the approval's thread with the verdict as the
// principal: exec --resume's own path, so its checks (exit 2 for a
// principal who may not decide) and its report are the same.
func approvalsDecide(cmd *cobra.Command, args []string) error {
	st, as, err := approvalStore(cmd)
	if err != nil {
		return err
	}
	a, p, err := approvalOf(cmd, as, args[0])
	st.Close()
	if err != nil {
		return err
	}
	if a.Status != store.ApprovalPending {
		return &exitError{code: 1, err: fmt.Errorf("approval %s is %s: there is nothing to decide", a.ID, a.Status)}
	}
	target := args[1:]
	if len(target) == 0 {
		target = []string{a.Agent}
	}
	f := cmd.Flags()
	dsn, _ := f.GetString("store")
	value, _ := f.GetString("value")
	argv := append([]string{"exec"}, target...)
	argv = append(argv, "--store", dsn, "--resume", access.Root(a.Thread), "--value", value, "--as", p.Name)
	for _, r := range p.Roles {
		argv = append(argv, "--role", r)
	}
	if script, _ := f.GetString("script"); script != "" {
		argv = append(argv, "--script", script)
	}
	if code := run(argv, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// approvalsSweep resumes, without a verdict (exec --resume --expire), the
// thread of each pending approval past its expiry, of every tenant: what
// runner serve's approval sweep does, for deployments without a server.
// A thread a run holds is left to it (exec is refused as busy, exit 2).
// It prints a line for each approval, and fails with the first exit code
// of a resume that neither completed nor paused again.
func approvalsSweep(cmd *cobra.Command, args []string) error {
	st, as, err := approvalStore(cmd)
	if err != nil {
		return err
	}
	escalated, err := escalateDue(cmd, st, as)
	if err != nil {
		st.Close()
		return err
	}
	due, err := as.Approvals(cmd.Context(), store.ApprovalQuery{AllTenants: true, Status: store.ApprovalPending,
		ExpiresBefore: time.Now(), Oldest: true})
	st.Close()
	if err != nil {
		return err
	}
	f := cmd.Flags()
	dsn, _ := f.GetString("store")
	script, _ := f.GetString("script")
	failed, seen := escalated, map[string]bool{}
	for _, a := range due {
		root := access.Root(a.Thread) // a child's gate expires with its root's resume
		if seen[root] {
			continue // one resume a thread
		}
		seen[root] = true
		target := args
		if len(target) == 0 {
			target = []string{a.Agent}
		}
		argv := append(append([]string{"exec"}, target...), "--store", dsn, "--resume", root, "--expire")
		if script != "" {
			argv = append(argv, "--script", script)
		}
		code := run(argv, io.Discard, cmd.ErrOrStderr())
		fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\texit %d\n", a.ID, access.ThreadID(root), a.Rule, code)
		if code != 0 && code != exitPaused && failed == 0 {
			failed = code
		}
	}
	if failed != 0 {
		return &exitError{code: failed}
	}
	return nil
}

// escalateDue escalates every tenant's pending approvals due to escalate,
// as the server's sweep does (a claim in the store, then the engine's
// escalation under the thread's lease, no run), printing a line for
// each; it returns the exit code of the first that failed (0: none).
func escalateDue(cmd *cobra.Command, st store.Store, as store.ApprovalStore) (int, error) {
	now := time.Now()
	due, err := as.Approvals(cmd.Context(), store.ApprovalQuery{AllTenants: true, Status: store.ApprovalPending,
		EscalateBefore: now, Oldest: true})
	if err != nil {
		return 0, err
	}
	e := &runner.Engine{Store: st}
	failed := 0
	for _, a := range due {
		won, err := as.ClaimEscalation(cmd.Context(), a.ID, a.EscalateAt, now.Add(time.Minute))
		var esc *runner.Escalation
		if err == nil && won {
			esc, err = e.Escalate(cmd.Context(), a)
		}
		switch {
		case err != nil:
			fmt.Fprintf(cmd.ErrOrStderr(), "%s\t%s\t%s\tnot escalated: %v\n", a.ID, access.ThreadID(a.Thread), a.Rule, err)
			failed = cmp.Or(failed, 1)
		case esc != nil:
			fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\tescalated to %s\n", a.ID, access.ThreadID(a.Thread), a.Rule, strings.Join(esc.Approval.Reviewers, ", "))
		}
	}
	return failed, nil
}
