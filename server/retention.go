package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runner-dev/runner/runner"
)

// A thread is pruned to Config.Retention after each run that completes
// here; a thread that never runs again is pruned by the retention sweep,
// which applies it to every thread of the store every
// Config.RetentionEvery. Several replicas may sweep one store at once:
// each prunes a thread under its lease (runner.Engine.Sweep), so two
// sweeps, or a sweep and a run, never work on one thread together.

// DefaultRetentionEvery is the interval of the retention sweep the CLI
// configures when runner.yaml's retention sets a policy but no interval.
const DefaultRetentionEvery = 10 * time.Minute

// retentionMetrics count the retention sweeps and what they pruned.
type retentionMetrics struct {
	pruned prometheus.Counter
	sweeps *prometheus.CounterVec
}

// newRetentionMetrics registers the retention sweep's series in reg.
func newRetentionMetrics(reg *prometheus.Registry) *retentionMetrics {
	m := &retentionMetrics{
		pruned: prometheus.NewCounter(prometheus.CounterOpts{Name: "runner_retention_pruned_checkpoints_total",
			Help: "Checkpoints removed by the retention sweep."}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runner_retention_sweeps_total",
			Help: "Retention sweeps, by result (ok, error: a thread failed to prune or the store failed)."}, []string{"result"}),
	}
	reg.MustRegister(m.pruned, m.sweeps)
	return m
}

// retainAll sweeps the store with the configured retention every
// Config.RetentionEvery until the server shuts down; it does nothing
// without a retention or an interval.
func (s *Server) retainAll() {
	defer close(s.retained)
	if s.cfg.RetentionEvery <= 0 || s.cfg.Retention == (runner.Retention{}) {
		return
	}
	s.every(s.cfg.RetentionEvery, func() { s.sweepRetention(s.ctx) })
}

// sweepRetention runs one retention sweep, counts it and logs it.
func (s *Server) sweepRetention(ctx context.Context) {
	start := time.Now()
	e := &runner.Engine{Store: s.cfg.Store, LeaseTTL: s.cfg.LeaseTTL}
	res, err := e.Sweep(ctx, s.cfg.Retention, runner.SweepOptions{Graph: s.pipelineGraph})
	if ctx.Err() != nil { // the server is stopping
		return
	}
	s.retention.pruned.Add(float64(res.Pruned))
	args := []any{"threads", res.Threads, "pruned", res.Pruned, "skipped", res.Skipped, "failed", res.Failed,
		"duration_ms", time.Since(start).Milliseconds()}
	if err != nil {
		s.retention.sweeps.WithLabelValues("error").Inc()
		s.cfg.Log.Warn("retention sweep", append(args, "err", err)...)
		return
	}
	s.retention.sweeps.WithLabelValues("ok").Inc()
	s.cfg.Log.Info("retention sweep", args...)
}

// pipelineGraph returns a served graph of pipeline name (its agents share
// its state fields and reducers), nil if none.
func (s *Server) pipelineGraph(name string) *runner.Graph {
	for _, g := range s.cfg.Graphs {
		if g.Name == name {
			return g
		}
	}
	return nil
}
