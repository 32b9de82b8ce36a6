package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/stores"
)

func newCrons() *cobra.Command {
	cmd := &cobra.Command{Use: "crons", Short: "List, create and delete the crons (scheduled runs) runner serve fires"}
	cmd.PersistentFlags().String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB or memory:")
	cmd.PersistentFlags().String("tenant", "", "the tenant whose crons these are (default: the default tenant)")
	list := &cobra.Command{Use: "list", Short: "List the tenant's crons, oldest first", Args: cobra.NoArgs, RunE: cronsList}
	list.Flags().String("format", formatText, "output format: text (a table) or json (a list of objects)")
	create := &cobra.Command{Use: "create AGENT --schedule CRON", Short: "Schedule runs of an agent or pipeline; print the cron's id",
		Args: cobra.ExactArgs(1), RunE: cronsCreate}
	create.Flags().String("schedule", "", "a cron expression (minute hour day-of-month month day-of-week, or @hourly, @every 1h)")
	create.Flags().String("timezone", "", "the IANA time zone the schedule is read in (default UTC)")
	create.Flags().String("input", "", "the input of each run, a JSON object")
	create.Flags().String("thread", "", "run on this thread at each tick (default: a thread of its own each tick)")
	create.Flags().Bool("keep", false, "keep each tick's own thread after its run (default: deleted)")
	_ = create.MarkFlagRequired("schedule")
	cmd.AddCommand(list, create,
		&cobra.Command{Use: "delete ID", Short: "Delete a cron", Args: cobra.ExactArgs(1), RunE: cronsDelete})
	return cmd
}

// openCrons opens the store's crons, creating the store with the first
// cron.
func openCrons(cmd *cobra.Command) (store.CronStore, func() error, error) {
	dsn, _ := cmd.Flags().GetString("store")
	st, err := stores.Open(dsn)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	cs, ok := st.(store.CronStore)
	if !ok {
		st.Close()
		return nil, nil, usageErr(fmt.Errorf("store %s keeps no crons", dsn))
	}
	return cs, st.Close, nil
}

func cronsList(cmd *cobra.Command, _ []string) error {
	format, err := listFormat(cmd)
	if err != nil {
		return err
	}
	cs, closeStore, err := openCrons(cmd)
	if err != nil {
		return err
	}
	defer closeStore()
	tenant, _ := cmd.Flags().GetString("tenant")
	list, err := cs.Crons(cmd.Context(), tenant)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if format == formatJSON {
		writeJSON(cmd.OutOrStdout(), orEmpty(list))
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "no crons yet: runner crons create AGENT --schedule CRON makes one")
		return nil
	}
	rows := make([][]any, len(list))
	for i, c := range list {
		next := "-"
		if !c.NextRun.IsZero() && c.Enabled {
			next = c.NextRun.Format(time.RFC3339)
		}
		rows[i] = []any{c.ID, c.Assistant, orDash(c.Thread), c.Schedule, orDash(c.Timezone), next}
	}
	return writeTable(cmd.OutOrStdout(), "CRON\tASSISTANT\tTHREAD\tSCHEDULE\tTIMEZONE\tNEXT RUN", rows)
}

// orDash is s, or "-" for none.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cronsCreate(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	spec, _ := f.GetString("schedule")
	tz, _ := f.GetString("timezone")
	sched, err := runner.ParseSchedule(spec, tz)
	if err != nil {
		return usageErr(err)
	}
	payload := map[string]any{"assistant_id": args[0]}
	if in, _ := f.GetString("input"); in != "" {
		var input map[string]any
		if err := json.Unmarshal([]byte(in), &input); err != nil || input == nil {
			return usageErr(errors.New("--input must be a JSON object, such as '{\"topic\": \"tickets\"}'"))
		}
		payload["input"] = input
	}
	if err := knownAgent(cmd, args[0]); err != nil {
		return err
	}
	cs, closeStore, err := openCrons(cmd)
	if err != nil {
		return err
	}
	defer closeStore()
	now := time.Now().UTC()
	c := &store.Cron{ID: uuid.Must(uuid.NewV7()).String(), Assistant: args[0], Schedule: spec, Timezone: tz,
		Enabled: true, NextRun: sched.Next(now), CreatedAt: now, UpdatedAt: now}
	c.Tenant, _ = f.GetString("tenant")
	c.Thread, _ = f.GetString("thread")
	if keep, _ := f.GetBool("keep"); c.Thread == "" && keep {
		c.OnRunCompleted = "keep"
	} else if c.Thread == "" {
		c.OnRunCompleted = "delete"
	}
	c.Payload, _ = json.Marshal(payload)
	if err := cs.PutCron(cmd.Context(), c); err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintln(cmd.OutOrStdout(), c.ID)
	fmt.Fprintf(cmd.ErrOrStderr(), "cron %s: %s runs first at %s, then on schedule %q\n", c.ID, c.Assistant, c.NextRun.Format(time.RFC3339), spec)
	return nil
}

// knownAgent checks that name is an agent or a pipeline of the project.
func knownAgent(cmd *cobra.Command, name string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return usageErr(err)
	}
	_, proj, err := checkedProject(cmd, cfg.Paths)
	if err != nil {
		return err
	}
	if proj.Agents[name] == nil && proj.Pipelines[name] == nil {
		return usageErr(unknownTarget(proj, name))
	}
	return nil
}

func cronsDelete(cmd *cobra.Command, args []string) error {
	cs, closeStore, err := openCrons(cmd)
	if err != nil {
		return err
	}
	defer closeStore()
	tenant, _ := cmd.Flags().GetString("tenant")
	if err := cs.DeleteCron(cmd.Context(), tenant, args[0]); err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "deleted cron %s\n", args[0])
	return nil
}
