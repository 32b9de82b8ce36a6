package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/runner/store"
)

func newAudit() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Read the audit ledger of approval gates"}
	export := &cobra.Command{
		Use:   "export",
		Short: "Write the audit ledger as JSON Lines; --verify checks its hash chains",
		Long: `Export writes the ledger's records to stdout, one JSON object a line: a
tenant's chain of gate events (opened, decided, expired, escalated), each
record holding the hash of the one before it. --verify checks every chain
it exports from its first record, whatever --since says, and exits 1
naming the first record changed or deleted.`,
		Args: cobra.NoArgs,
		RunE: auditExport,
	}
	f := export.Flags()
	f.String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB or memory:")
	f.String("since", "", "write only the records from this time on (RFC 3339, e.g. 2026-01-31T00:00:00Z)")
	f.String("tenant", "", "export this tenant's ledger alone (default: every tenant's; \"\" is the default tenant)")
	f.Bool("verify", false, "check the hash chains; exit 1 at the first record changed or deleted")
	cmd.AddCommand(export)
	return cmd
}

func auditExport(cmd *cobra.Command, _ []string) error {
	var q store.AuditQuery
	q.Tenant, _ = cmd.Flags().GetString("tenant")
	q.AllTenants = !cmd.Flags().Changed("tenant")
	if since, _ := cmd.Flags().GetString("since"); since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			return usageErr(fmt.Errorf("--since %q: want a time in RFC 3339, like 2026-01-31T00:00:00Z", since))
		}
		q.Since = t
	}
	verify, _ := cmd.Flags().GetBool("verify")
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	a, ok := st.(store.AuditStore)
	if !ok {
		return usageErr(fmt.Errorf("store %T keeps no audit ledger", st))
	}
	n, err := store.ExportAudit(cmd.Context(), a, q, verify, cmd.OutOrStdout())
	if b, ok := errors.AsType[*store.AuditBreak](err); ok {
		return &exitError{code: 1, err: fmt.Errorf("the ledger does not verify: %w", b)}
	} else if err != nil {
		return &exitError{code: 1, err: err}
	}
	if verify {
		fmt.Fprintf(cmd.ErrOrStderr(), "runner: the ledger verifies: %d records written, every chain checked from its first record\n", n)
	}
	return nil
}
