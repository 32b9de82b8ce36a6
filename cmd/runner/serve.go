package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/builtins/testrun"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store/stores"
	"github.com/runner-dev/runner/server"
)

func newServe() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve every agent and pipeline over HTTP with the LangGraph Agent Server API",
		Long: `Serve compiles every agent and pipeline of the project and serves each as an
assistant of the LangGraph Agent Server API: clients written against
@langchain/langgraph-sdk (JS or Python) create threads, stream runs and
resume interrupts against it unchanged.

Requests need an API key (x-api-key or Authorization: Bearer); keys are
configured as their SHA-256 hex hash mapped to a tenant, or to a principal
with roles, in runner.yaml (serve: {api_keys: {<sha256>: acme}}) or in the
--api-keys file (the same mapping, one key a line):

  <sha256>: acme
  <sha256>: {tenant: acme, principal: alice, roles: [ops-lead]}

runner keys new makes a key and prints its line. With runner.yaml's oidc
section (oidc: {issuer: URL, audience: ID}), a bearer JWT of that issuer
identifies a principal too, its tenant, name and roles read from its
claims. Each tenant's thread ids are its own: an id another tenant uses
looks unknown.`,
		Args: cobra.NoArgs,
		RunE: runServe,
	}
	f := cmd.Flags()
	f.String("addr", "127.0.0.1:2024", "address to listen on")
	f.String("store", defaultStore, "checkpoint store: sqlite:PATH, postgres://HOST/DB (shared by replicas) or memory:")
	f.String("script", "", "answer every LLM call from this file of scripted replies (no API key needed)")
	f.String("api-keys", "", "YAML file mapping API key SHA-256 hashes to tenants or principals (runner keys new prints a line)")
	f.Bool("no-auth", false, "serve without API keys, for the default tenant (local development only)")
	f.StringSlice("cors-origin", nil, "allow browsers from this origin (repeatable; * for any)")
	f.Duration("grace", 10*time.Second, "on shutdown, how long running runs may go on before they are cancelled")
	f.Duration("max-stream", time.Hour, "the longest a stream stays open; it then ends with an error event, and the client rejoins with Last-Event-ID")
	f.String("log-format", "json", "log format: json (one JSON object a line) or text")
	f.String("metrics-addr", "", "serve GET /metrics on this address only, not on --addr (keep it off public networks either way)")
	f.Duration("heartbeat", 5*time.Second, "keep-alive interval: a quiet stream's comment, a newline before a long runs/wait or join answer")
	f.String("cron-missed", server.MissedOnce, "the ticks of a cron missed while no replica ran: once (fire one run for them at start) or skip")
	f.Bool("explain", false, "say which agents and pipelines would be served, and why the others would not, then exit")
	d := server.DefaultLimits
	f.Duration("read-header-timeout", d.ReadHeaderTimeout, "the longest a client may take to send a request's headers")
	f.Duration("read-timeout", d.ReadTimeout, "the longest a client may take to send a whole request, body included (then 408)")
	f.Duration("write-timeout", d.WriteTimeout, "the longest one write of an answer or stream may wait for the client to read (then it is dropped; its run goes on)")
	f.Duration("idle-timeout", d.IdleTimeout, "how long a keep-alive connection may wait for its next request")
	f.Int("max-connections", d.MaxConnections, "the most connections open at once (past it: 429)")
	f.Int("max-streams", d.MaxStreams, "the most event streams open at once, of all tenants (past it: 429)")
	f.Int("max-tenant-streams", d.MaxTenantStreams, "the most event streams one tenant may have open at once (past it: 429)")
	return cmd
}

func runServe(cmd *cobra.Command, _ []string) error {
	setGC(serveGC)
	cfg, err := loadConfig(cmd)
	if err != nil {
		return usageErr(err)
	}
	keys, err := apiKeys(cmd, cfg)
	if err != nil {
		return usageErr(err)
	}
	var tokens *access.Tokens
	if cfg.OIDC != (access.OIDC{}) {
		if tokens, err = access.NewTokens(cfg.OIDC); err != nil {
			return usageErr(err)
		}
	}
	checker, proj, err := checkedProject(cmd, cfg.Paths)
	if err != nil {
		return err
	}
	if diags := proj.CheckHooks(hookNames(cfg.Webhooks)); len(diags) > 0 {
		_ = dsl.WriteReport(cmd.ErrOrStderr(), diags, dsl.FormatText, sources(proj.Docs))
		return usageErr(errors.New("notify: names a webhook runner.yaml's webhooks do not define"))
	}
	tools := &builtins.Toolbox{} // its MCP servers stop with the server
	defer tools.Close()
	graphs, unserved, err := compileAll(cmd, cfg, checker, proj, tools)
	if err != nil {
		return err
	}
	if explain, _ := cmd.Flags().GetBool("explain"); explain {
		explainServed(cmd.OutOrStdout(), graphs, unserved)
		return nil
	}
	if len(graphs) == 0 {
		explainServed(cmd.ErrOrStderr(), graphs, unserved)
		return usageErr(errors.New("no agent or pipeline can be served"))
	}
	reportUnserved(cmd, "serve", graphs, unserved)
	storeDSN, _ := cmd.Flags().GetString("store")
	st, err := stores.Open(storeDSN)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	format, _ := cmd.Flags().GetString("log-format")
	log, logs, err := newLogger(cmd.ErrOrStderr(), format)
	if err != nil {
		return usageErr(err)
	}
	defer logs.Flush()
	noAuth, _ := cmd.Flags().GetBool("no-auth")
	if noAuth {
		log.Warn("serving WITHOUT authentication (--no-auth): anyone who reaches the address can run every agent; for local development only")
	}
	origins, _ := cmd.Flags().GetStringSlice("cors-origin")
	beat, _ := cmd.Flags().GetDuration("heartbeat")
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tp, err := tracerProvider(ctx)
	if err != nil {
		return usageErr(err)
	}
	scfg := server.Config{Graphs: graphs, Store: st, Keys: keys, Tokens: tokens, NoAuth: noAuth, CORSOrigins: origins, Version: version(), Log: log,
		LeaseTTL: cfg.LeaseTTL, Retention: cfg.Retention, RetentionEvery: cfg.RetentionEvery, Tests: &testrun.Suite{Checker: checker, Project: proj},
		MCP: cfg.MCP.Enabled}
	scfg.MaxStream, _ = cmd.Flags().GetDuration("max-stream")
	scfg.CronMissed, _ = cmd.Flags().GetString("cron-missed")
	scfg.Heartbeat = beat
	scfg.Limits = serveLimits(cmd, cfg.Serve.Limits)
	if scfg.Webhooks, err = webhooks(cfg.File, cfg.Webhooks); err != nil {
		return usageErr(err)
	}
	scfg.Webhooks.Allow, scfg.PublicURL = cfg.WebhooksAllow, cfg.PublicURL
	metricsAddr, _ := cmd.Flags().GetString("metrics-addr")
	scfg.OwnMetricsListener = metricsAddr != ""
	if tp != nil {
		scfg.TracerProvider = tp
		defer shutdownTracing(cmd, tp)
	}
	srv, err := server.New(ctx, scfg)
	if err != nil {
		return usageErr(err)
	}
	if metricsAddr != "" {
		stopMetrics, err := serveMetrics(cmd, metricsAddr, srv.MetricsHandler())
		if err != nil {
			return usageErr(err)
		}
		defer stopMetrics()
	}
	return listen(ctx, cmd, srv, len(graphs))
}

// serveLimits are runner.yaml's serve limits l, each overridden by its
// flag when given.
func serveLimits(cmd *cobra.Command, l server.Limits) server.Limits {
	f := cmd.Flags()
	for name, v := range map[string]*time.Duration{"read-header-timeout": &l.ReadHeaderTimeout,
		"read-timeout": &l.ReadTimeout, "write-timeout": &l.WriteTimeout, "idle-timeout": &l.IdleTimeout} {
		if f.Changed(name) {
			*v, _ = f.GetDuration(name)
		}
	}
	for name, v := range map[string]*int{"max-connections": &l.MaxConnections,
		"max-streams": &l.MaxStreams, "max-tenant-streams": &l.MaxTenantStreams} {
		if f.Changed(name) {
			*v, _ = f.GetInt(name)
		}
	}
	return l
}

// shutdownTracing flushes the spans the provider holds, for at most 5 s.
func shutdownTracing(cmd *cobra.Command, tp interface{ Shutdown(context.Context) error }) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "runner: flushing traces: %v\n", err)
	}
}

// serveMetrics serves GET /metrics on a listener of its own; the returned
// function closes it.
func serveMetrics(cmd *cobra.Command, addr string, h http.Handler) (func(), error) {
	ln, err := listenOn(addr, "--metrics-addr")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	d := server.DefaultLimits
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: d.ReadHeaderTimeout, ReadTimeout: d.ReadTimeout,
		WriteTimeout: d.WriteTimeout, IdleTimeout: d.IdleTimeout}
	go func() { _ = hs.Serve(ln) }()
	fmt.Fprintf(cmd.ErrOrStderr(), "runner: metrics at http://%s/metrics\n", ln.Addr())
	return func() { _ = hs.Close() }, nil
}

// listenOn listens on addr, the value of flag; an address in use is
// refused with the flag that picks another.
func listenOn(addr, flag string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s %s: the address is already in use (another runner serve?): stop what listens there, or pick another address with %s 127.0.0.1:0 (any free port)", flag, addr, flag)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return ln, nil
}

// listen serves srv until ctx ends, then shuts down: no new connections
// or runs, running runs get the grace period to end before they are
// cancelled (each stops at its node, resumable).
func listen(ctx context.Context, cmd *cobra.Command, srv *server.Server, n int) error {
	addr, _ := cmd.Flags().GetString("addr")
	ln, err := listenOn(addr, "--addr")
	if err != nil {
		return usageErr(err)
	}
	hs := srv.HTTPServer()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(srv.Listener(ln)) }()
	fmt.Fprintf(cmd.ErrOrStderr(), "runner: serving %d assistants on http://%s\n", n, ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "runner: shutting down")
	grace, _ := cmd.Flags().GetDuration("grace")
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- hs.Shutdown(gctx) }() // stops accepting; open streams end with their runs
	srv.Shutdown(gctx)
	select {
	case err = <-closed:
	case <-time.After(2 * time.Second):
		err = hs.Close()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	return err
}

// compileAll compiles every agent and pipeline of proj, their tools built
// by tools; one that cannot compile (a model without its API key, say) is
// left out, with the reason in unserved.
func compileAll(cmd *cobra.Command, cfg *Config, checker *dsl.Checker, proj *dsl.Project, tools *builtins.Toolbox) (graphs map[string]*runner.Graph, unserved map[string]error, err error) {
	opt, err := compileOptions(cmd, cfg, tools)
	if err != nil {
		return nil, nil, err
	}
	graphs, unserved = map[string]*runner.Graph{}, map[string]error{}
	names := slices.Concat(slices.Collect(maps.Keys(proj.Agents)), slices.Collect(maps.Keys(proj.Pipelines)))
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		g, err := compileNamed(checker, proj, opt, name)
		if err != nil {
			unserved[name] = err
			continue
		}
		graphs[name] = g
	}
	return graphs, unserved, nil
}

// explainServed says which agents and pipelines are served, and why each
// of the others is not.
func explainServed(w io.Writer, graphs map[string]*runner.Graph, unserved map[string]error) {
	for _, name := range slices.Sorted(maps.Keys(graphs)) {
		fmt.Fprintf(w, "%s: served\n", name)
	}
	for _, name := range slices.Sorted(maps.Keys(unserved)) {
		fmt.Fprintf(w, "%s: not served:\n  %s\n", name, strings.ReplaceAll(strings.TrimSpace(unserved[name].Error()), "\n", "\n  "))
	}
}

// reportUnserved says on one line which agents and pipelines a command
// serving them cannot serve, and how to learn why.
func reportUnserved(cmd *cobra.Command, command string, graphs map[string]*runner.Graph, unserved map[string]error) {
	if len(unserved) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "runner: %s: %d of %d agents and pipelines are not served (%s); why: %s\n", command,
			len(unserved), len(unserved)+len(graphs), strings.Join(slices.Sorted(maps.Keys(unserved)), ", "), explainCommand(cmd))
	}
}

// explainCommand is the serve --explain command of this invocation, with
// the flags that change what compiles (settings, script).
func explainCommand(cmd *cobra.Command) string {
	parts := []string{"runner", "serve", "--explain"}
	for _, name := range []string{"config", "script"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			parts = append(parts, "--"+name, shellQuote(f.Value.String()))
		}
	}
	return strings.Join(parts, " ")
}

// apiKeys are the keys of runner.yaml's serve.api_keys and of the
// --api-keys file, whose entries win, each read by access.KeysOf.
func apiKeys(cmd *cobra.Command, cfg *Config) (access.Keys, error) {
	keys := access.Keys{}
	if cfg.File != "" {
		more, err := settingsKeys(cfg.File)
		if err != nil {
			return nil, err
		}
		maps.Copy(keys, more)
	}
	if file, _ := cmd.Flags().GetString("api-keys"); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--api-keys: %w", err)
		}
		more, err := access.ParseKeys(file, data)
		if err != nil {
			return nil, err
		}
		maps.Copy(keys, more)
	}
	return keys, nil
}

// settingsKeys reads the keys of the settings file's serve.api_keys.
func settingsKeys(file string) (access.Keys, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return access.Keys{}, err
	}
	keys := field(field(doc.Content[0], "serve"), "api_keys")
	if keys == nil {
		return access.Keys{}, nil
	}
	return access.KeysOf(file, keys)
}

// field is the value of a mapping node's key (nil: none, or n is nil or
// not a mapping).
func field(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
