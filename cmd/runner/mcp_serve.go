package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/runner/store/stores"
	"github.com/runner-dev/runner/server"
)

func newMCPServe() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve every agent and pipeline as an MCP tool over stdio (for desktop MCP clients)",
		Long: `Serve speaks the Model Context Protocol on stdin and stdout: each agent
and pipeline of the project is one tool, whose input is the pipeline's
input and whose result is its declared output. A call may pass thread_id
to continue a conversation; a run that pauses for approval asks the
client to fill a form, and the answer resumes the thread. Runs are kept
in --store as runner exec and runner serve keep them; logs go to stderr.`,
		Args: cobra.NoArgs,
		RunE: mcpServe,
	}
	cmd.Flags().String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB or memory:")
	cmd.Flags().String("script", "", "answer every LLM call from this file of scripted replies (no API key needed)")
	return cmd
}

// mcpServe serves the project's assistants as MCP tools on stdio until
// the client hangs up or the process is told to stop.
func mcpServe(cmd *cobra.Command, _ []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return usageErr(err)
	}
	checker, proj, err := checkedProject(cmd, cfg.Paths)
	if err != nil {
		return err
	}
	tools := &builtins.Toolbox{} // its MCP servers stop with this one
	defer tools.Close()
	graphs, unserved, err := compileAll(cmd, cfg, checker, proj, tools)
	if err != nil {
		return err
	}
	if len(graphs) == 0 {
		explainServed(cmd.ErrOrStderr(), graphs, unserved)
		return usageErr(errors.New("no agent or pipeline can be served"))
	}
	reportUnserved(cmd, "mcp serve", graphs, unserved)
	storeDSN, _ := cmd.Flags().GetString("store")
	st, err := stores.Open(storeDSN)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	log, logs, err := newLogger(cmd.ErrOrStderr(), "text")
	if err != nil {
		return usageErr(err)
	}
	defer logs.Flush()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := server.New(ctx, server.Config{Graphs: graphs, Store: st, NoAuth: true, Version: version(), Log: log, LeaseTTL: cfg.LeaseTTL})
	if err != nil {
		return usageErr(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.ServeMCP(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		return &exitError{code: exitFailed, err: err}
	}
	return nil
}
