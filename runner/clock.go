package runner

import (
	"context"
	"errors"
	"time"
)

// Clock is the time runs see: the readings they record, the waits of
// retries, tools and models, and the deadlines of timeouts. The engine's
// default is RealClock; the Test harness runs on a virtual clock, on
// which waits and timeouts take no real time.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends and returns its error.
	Sleep(ctx context.Context, d time.Duration) error
	// WithTimeout returns a copy of ctx that ends d from now, with cause
	// (nil: context.DeadlineExceeded); TimedOut reports such an end on
	// any clock.
	WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d on a timer, or until ctx ends.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WithTimeout is context.WithTimeoutCause.
func (RealClock) WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, cause)
}

// clockKey is the context key of the clock of the run a context belongs to.
type clockKey struct{}

// clockOf returns the clock of the run ctx belongs to.
func clockOf(ctx context.Context) Clock {
	if c, ok := ctx.Value(clockKey{}).(Clock); ok {
		return c
	}
	return RealClock{}
}

// Sleep waits d on the clock of the run ctx belongs to, or until ctx ends
// (returning its error): retries, mocked tools and scripted models wait
// with it, so a Test's waits take no real time.
func Sleep(ctx context.Context, d time.Duration) error {
	return clockOf(ctx).Sleep(ctx, d)
}

// WithTimeout returns a copy of ctx that ends d from now on the clock of
// the run ctx belongs to.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return clockOf(ctx).WithTimeout(ctx, d, nil)
}

// TimedOut reports whether ctx ended at a deadline (of WithTimeout, a
// node's or tool's timeout, the run's limits) rather than by a
// cancellation, on any clock.
func TimedOut(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}
