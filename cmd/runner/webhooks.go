package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/runner/store"
)

func newWebhooks() *cobra.Command {
	cmd := &cobra.Command{Use: "webhooks", Short: "Read the webhook outbox runner serve delivers from"}
	deliveries := &cobra.Command{
		Use:   "deliveries",
		Short: "List webhook deliveries, newest first, as JSON Lines",
		Long: `Deliveries writes the outbox's deliveries to stdout, newest first, one
JSON object a line: the webhook-id, event, URL, status (pending,
delivered, failed), attempts made, when the next is due, and how the
last one ended.`,
		Args: cobra.NoArgs,
		RunE: webhookDeliveries,
	}
	f := deliveries.Flags()
	f.String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB or memory:")
	f.String("tenant", "", "list this tenant's deliveries alone (default: every tenant's; \"\" is the default tenant)")
	f.String("status", "", "list only deliveries of this status: pending, delivered or failed")
	f.Int("limit", 100, "list at most this many (0: all)")
	cmd.AddCommand(deliveries)
	return cmd
}

func webhookDeliveries(cmd *cobra.Command, _ []string) error {
	var q store.DeliveryQuery
	q.Tenant, _ = cmd.Flags().GetString("tenant")
	q.AllTenants = !cmd.Flags().Changed("tenant")
	q.Status, _ = cmd.Flags().GetString("status")
	q.Limit, _ = cmd.Flags().GetInt("limit")
	switch q.Status {
	case "", store.DeliveryPending, store.DeliveryDelivered, store.DeliveryFailed:
	default:
		return usageErr(fmt.Errorf("--status %q: want pending, delivered or failed", q.Status))
	}
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	w, ok := st.(store.WebhookStore)
	if !ok {
		return usageErr(fmt.Errorf("store %T keeps no webhook outbox", st))
	}
	ds, err := w.Deliveries(cmd.Context(), q)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	for _, d := range ds {
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	return nil
}
