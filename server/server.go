// Package server serves runner's graphs over HTTP with the LangGraph Agent
// Server API: assistants (one per graph, and those clients create, with
// config and versions), threads, runs streamed over server-sent events,
// human-in-the-loop resume, API keys per principal, each tenant's threads
// in an id space of its own (runner/access), each assistant over A2A, and
// the API's OpenAPI description. It
// calls only what runner.Engine and the store expose, and runs the
// project's Test documents with the Test harness (builtins/testrun); the
// caller compiles the graphs.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runner-dev/runner/builtins/testrun"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/suggest"
)

// Config is what a Server serves and how.
type Config struct {
	// Graphs are the assistants, by name (an agent's or a pipeline's).
	Graphs map[string]*runner.Graph
	// Store keeps checkpoints; it must be a store.RunStore too, which
	// keeps thread records, runs and their events, and a store.Prober,
	// whose write probe says whether the server is ready. Several
	// servers may share a store (PostgreSQL): each runs the runs it
	// admitted, and takes over those a stopped one left (reclaim.go).
	Store store.Store
	// LeaseTTL is how long a run holds its thread without renewing its
	// lease (default runner.DefaultLeaseTTL): a run a stopped server left
	// is taken over by a server that long after.
	LeaseTTL time.Duration
	// Retention is the history a thread keeps after each completed run
	// (runner.yaml's retention; zero: all of it).
	Retention runner.Retention
	// RetentionEvery is the interval of the retention sweep, which
	// applies Retention to every thread of the store, those that never
	// run again too (0: no sweep; see retention.go).
	RetentionEvery time.Duration
	// ApprovalsEvery is the interval of the approval sweep, which applies
	// on_expire to pending approvals past their expiry (default
	// DefaultApprovalsEvery; see expiry.go).
	ApprovalsEvery time.Duration
	// Keys maps the hex SHA-256 hash of each API key to the principal it
	// identifies (access.ParseKeys reads a keys file).
	Keys access.Keys
	// Tokens, when set, verifies bearer JWTs of an OIDC issuer: each
	// names a principal as a key does (access.NewTokens); keys work
	// beside them.
	Tokens *access.Tokens
	// NoAuth serves every request without a key, as the local principal
	// of the default tenant (local development only).
	NoAuth bool
	// CORSOrigins are the origins browsers may call from ("*": any);
	// empty: no CORS headers.
	CORSOrigins []string
	// Heartbeat is the interval of a stream's keep-alive comment
	// (default 5s); MaxBody limits request bodies (default 1 MiB).
	Heartbeat time.Duration
	MaxBody   int64
	// MaxStream is the longest a stream stays open (default 1h): it then
	// ends with an error event, and the client rejoins with Last-Event-ID.
	MaxStream time.Duration
	// Limits bound connections, requests and streams (bounds.go); a zero
	// field takes its DefaultLimits value.
	Limits Limits
	// Tests are the project's Test documents, run by POST /tests/run
	// (nil: not served).
	Tests *testrun.Suite
	// Version is reported by GET /info.
	Version string
	// Log receives the server's own messages, its request log and its
	// runs' starts and ends (default slog.Default()).
	Log *slog.Logger
	// TracerProvider, when set, receives a span per run, node, tool call,
	// model call and approval gate.
	TracerProvider trace.TracerProvider
	// OwnMetricsListener leaves GET /metrics off the API's handler: the
	// caller serves MetricsHandler on a listener of its own.
	OwnMetricsListener bool
	// MCP serves the assistants as MCP tools at /mcp (see mcp.go).
	MCP bool
	// Clock is the cron scheduler's (default runner.RealClock);
	// CronEvery how often it looks for ticks due (default
	// DefaultCronEvery); CronMissed what becomes of the ticks missed
	// while no server ran: MissedOnce (the default) or MissedSkip (see
	// scheduler.go).
	Clock      runner.Clock
	CronEvery  time.Duration
	CronMissed string
	// Webhooks is where notifications go (webhooks.go).
	Webhooks Webhooks
	// PublicURL is where clients reach the server (https://runner.example.com),
	// for the console links of notifications; "": none.
	PublicURL string
}

// Server is the HTTP API. Runs execute in goroutines it owns; Shutdown
// stops them.
type Server struct {
	cfg  Config
	runs store.RunStore
	// assistants keeps the assistants clients create (nil: the store
	// keeps none)
	assistants store.AssistantStore
	items      store.ItemStore   // nil when the store keeps no items
	crons      store.CronStore   // nil when the store keeps no crons
	names      map[string]string // assistant id → graph name
	started    time.Time
	mux        *http.ServeMux
	table      []endpoint // the API's routes (endpoints)

	ctx    context.Context // runs' context, cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup
	owner  string        // the server as the owner of the leases it reclaims runs under
	swept  chan struct{} // closed when the sweep of ghost runs (reclaim.go) has stopped
	// retained is closed when the retention sweep has stopped
	retained chan struct{}
	// expired is closed when the approval sweep has stopped
	expired   chan struct{}
	retention *retentionMetrics
	scheduled chan struct{} // closed when the cron scheduler has stopped
	// hooks is the webhook outbox (nil when the store keeps none);
	// delivered is closed when its dispatcher has stopped
	hooks     store.WebhookStore
	delivered chan struct{}
	// guard keeps a run's own webhook from private addresses; its
	// deliveries go through runHookClient, the others' through hookClient.
	guard         *hookGuard
	hookClient    *http.Client
	runHookClient *http.Client

	mu      sync.Mutex
	closing bool
	live    map[string]*liveRun   // run id → a run pending or running here
	active  map[string]*liveRun   // thread id → its running run
	queued  map[string][]*liveRun // thread id → its pending runs, in order
	// admitted: thread id → closed when a run of the thread is admitted
	// (thread streams wait on it)
	admitted map[string]chan struct{}
	stateMu  sync.Mutex // serializes state edits with run starts
	testing  sync.Mutex // held while POST /tests/run runs Tests

	metrics *metrics
	streams streamCount // the event streams open (bounds.go)
	probe   probeCache  // the store's last write probe (ready.go)
	tracing *tracing
	convs   *convHub
	mcpKey  []byte // what /mcp signs its sessions and request states with
	changes changeHub
}

// assistantNS is the namespace of assistant ids: uuid5(assistantNS, name).
var assistantNS = uuid.MustParse("6ba7b821-9dad-11d1-80b4-00c04fd430c8")

// AssistantID is the assistant id of the graph name.
func AssistantID(name string) string { return uuid.NewSHA1(assistantNS, []byte(name)).String() }

// New returns a server of cfg, or the store's error if it cannot be
// written. Runs a stopped server left pending or running are taken over
// once their thread's lease has expired (reclaim.go).
func New(ctx context.Context, cfg Config) (*Server, error) {
	rs, ok := cfg.Store.(store.RunStore)
	if !ok {
		return nil, errors.New("server: the store does not keep runs (store.RunStore)")
	}
	prober, ok := cfg.Store.(store.Prober)
	if !ok {
		return nil, errors.New("server: the store cannot tell whether it can be written (store.Prober)")
	}
	if err := prober.Probe(ctx); err != nil { // a server that cannot write does not start
		return nil, err
	}
	if len(cfg.Keys) == 0 && cfg.Tokens == nil && !cfg.NoAuth {
		return nil, errors.New("server: no API keys nor token issuer; configure some, or serve without auth for local use")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 5 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.MaxStream <= 0 {
		cfg.MaxStream = time.Hour
	}
	cfg.Limits = cfg.Limits.orDefaults()
	if cfg.Clock == nil {
		cfg.Clock = runner.RealClock{}
	}
	if cfg.CronEvery <= 0 {
		cfg.CronEvery = DefaultCronEvery
	}
	switch cfg.CronMissed {
	case "":
		cfg.CronMissed = MissedOnce
	case MissedOnce, MissedSkip:
	default:
		return nil, fmt.Errorf("server: missed cron ticks %q: want %s or %s", cfg.CronMissed, MissedOnce, MissedSkip)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if err := cfg.Webhooks.check(); err != nil {
		return nil, err
	}
	guard, err := newHookGuard(cfg.Webhooks.Allow)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, runs: rs, names: map[string]string{}, started: time.Now().UTC(),
		live: map[string]*liveRun{}, active: map[string]*liveRun{}, queued: map[string][]*liveRun{},
		owner: reclaimerOwner(), swept: make(chan struct{}), admitted: map[string]chan struct{}{},
		metrics: newMetrics(cfg.Store), tracing: newTracing(cfg.TracerProvider), convs: newConvHub(),
		retained: make(chan struct{}), expired: make(chan struct{}), scheduled: make(chan struct{}), delivered: make(chan struct{}),
		guard: guard}
	s.hookClient, s.runHookClient = guard.clients()
	s.hooks, _ = cfg.Store.(store.WebhookStore)
	s.assistants, _ = cfg.Store.(store.AssistantStore)
	s.items, _ = cfg.Store.(store.ItemStore)
	s.crons, _ = cfg.Store.(store.CronStore)
	s.retention = newRetentionMetrics(s.metrics.reg)
	if s.mcpKey, err = mcpSecret(ctx, cfg.Store); err != nil { // /mcp and ServeMCP sign with it
		return nil, err
	}
	for name := range cfg.Graphs {
		s.names[AssistantID(name)] = name
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := s.reclaimAll(ctx); err != nil {
		s.cancel()
		return nil, err
	}
	if err := s.syncSchedules(ctx); err != nil {
		s.cancel()
		return nil, err
	}
	go s.sweep()
	go s.retainAll()
	go s.expireAll()
	go s.schedule()
	go s.deliverAll()
	s.table = s.endpoints()
	s.mux = s.routes()
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// MetricsHandler serves the server's metrics in the Prometheus text
// format (GET /metrics on the API's handler too, unless
// Config.OwnMetricsListener).
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// Shutdown refuses new runs, waits for running ones to end until ctx is
// done, then cancels them (each stops at its node, resumable) and waits
// for them to checkpoint.
func (s *Server) Shutdown(ctx context.Context) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel()
		<-done
	}
	s.cancel()
	<-s.swept
	<-s.retained
	<-s.expired
	<-s.scheduled
	<-s.delivered
	s.dropQueued()
}

// dropQueued ends the runs still queued when the server stops: they never
// ran, so they end interrupted.
func (s *Server) dropQueued() {
	s.mu.Lock()
	var left []*liveRun
	for _, q := range s.queued {
		left = append(left, q...)
	}
	clear(s.queued)
	s.mu.Unlock()
	for _, l := range left {
		l.final = map[string]any{}
		s.finish(l, store.RunInterrupted)
	}
}

// graph returns the graph an assistant id or graph name names.
func (s *Server) graph(id string) (string, *runner.Graph, error) {
	name := id
	if n, ok := s.names[id]; ok {
		name = n
	}
	g := s.cfg.Graphs[name]
	if g == nil {
		names := slices.Sorted(maps.Keys(s.cfg.Graphs))
		hint := suggest.DidYouMean(id, names)
		if hint != "" {
			hint += " "
		}
		return "", nil, problemf(http.StatusNotFound, "no assistant %q; %sthe assistants are: %s", id, hint, strings.Join(names, ", "))
	}
	return name, g, nil
}
