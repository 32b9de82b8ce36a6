package server

import (
	"context"
	"sync"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// probeEvery is the least time between two write probes of the store;
// probeTimeout the longest one may take.
const probeEvery, probeTimeout = time.Second, 2 * time.Second

// probeCache is the store's last write probe, and when it was taken.
type probeCache struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// storeWritable reports whether the store can be written: its write
// probe (store.Prober), taken at most once every probeEvery, the callers
// in between answered with the last.
// A change between writable and not is logged, with the store's error.
func (s *Server) storeWritable(ctx context.Context) error {
	p := &s.probe
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.at) < probeEvery {
		return p.err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	err := s.cfg.Store.(store.Prober).Probe(ctx)
	switch {
	case err != nil && p.err == nil:
		s.cfg.Log.Error("the store cannot be written: not ready", "error", err)
	case err == nil && p.err != nil:
		s.cfg.Log.Info("the store can be written again: ready")
	}
	p.at, p.err = time.Now(), err
	return err
}
