package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/runner/access"
)

func newKeys() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Make API keys for runner serve",
	}
	mk := &cobra.Command{
		Use:   "new",
		Short: "Print a new API key, then its line for the keys file",
		Long: `New prints a fresh random API key on the first line of stdout and, on the
second, the line that configures it: paste it into the --api-keys file of
runner serve, or under serve.api_keys in runner.yaml. Only the key's
SHA-256 is configured; the key itself is shown once, here.

Without --tenant the key is the default tenant's (the one of runner exec
without --tenant). --principal names who holds the key within its tenant,
--role gives it roles (rules that name reviewers and auditors check them).`,
		Args: cobra.NoArgs,
		RunE: runKeysNew,
	}
	f := mk.Flags()
	f.String("tenant", "", "the tenant the key is for (default: the default tenant)")
	f.String("principal", "", "the principal the key identifies within its tenant, e.g. alice")
	f.StringSlice("role", nil, "a role of the principal (repeatable)")
	cmd.AddCommand(mk)
	return cmd
}

func runKeysNew(cmd *cobra.Command, _ []string) error {
	var p access.Principal
	p.Tenant, _ = cmd.Flags().GetString("tenant")
	p.Name, _ = cmd.Flags().GetString("principal")
	p.Roles, _ = cmd.Flags().GetStringSlice("role")
	if err := p.Check(); err != nil {
		return usageErr(err)
	}
	key := access.NewKey()
	fmt.Fprintln(cmd.OutOrStdout(), key)
	fmt.Fprintln(cmd.OutOrStdout(), access.Line(access.HashKey(key), p))
	fmt.Fprintln(cmd.ErrOrStderr(), "runner: line 1 is the key: give it to its holder, it is not stored anywhere; line 2 goes in the keys file (runner serve --api-keys FILE)")
	return nil
}
