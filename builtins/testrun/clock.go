package testrun

import (
	"context"
	"sync"
	"time"

	"github.com/runner-dev/runner/runner"
)

// clock is a Test's virtual clock. Its time moves only when the run waits
// (a mock's or a script's delay:, a retry's backoff) or a resume step says
// after:, and a wait returns at once. A wait that would pass a deadline of
// its context (a tool's, node's or planner's timeout, the run's limits)
// moves the time to that deadline and ends the context there, as the wall
// clock would, without the wait: a Test of a one-hour timeout takes no
// time. Waits of parallel branches add up, as if the branches ran one
// after the other.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

var _ runner.Clock = (*clock)(nil)

// deadline is the end of a context made by clock.WithTimeout; parent is
// the deadline of the context it was made from, if any.
type deadline struct {
	at     time.Time
	cause  error
	end    context.CancelCauseFunc
	parent *deadline
}

type deadlineKey struct{}

func newClock() *clock { return &clock{now: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// WithTimeout returns a context that ends when a wait on it reaches d
// from now.
func (c *clock) WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	parent, _ := ctx.Value(deadlineKey{}).(*deadline)
	inner, end := context.WithCancelCause(ctx)
	dl := &deadline{at: c.Now().Add(d), cause: timeout{cause}, end: end, parent: parent}
	if d <= 0 {
		end(dl.cause)
	}
	return context.WithValue(inner, deadlineKey{}, dl), func() { end(context.Canceled) }
}

// Sleep moves the time d on, or to the first deadline of ctx before that,
// which it ends.
func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 || ctx.Err() != nil {
		return ctxErr(ctx)
	}
	c.mu.Lock()
	wake := c.now.Add(d)
	var first *deadline
	for dl, _ := ctx.Value(deadlineKey{}).(*deadline); dl != nil; dl = dl.parent {
		if !dl.at.After(wake) && (first == nil || dl.at.Before(first.at)) {
			first = dl
		}
	}
	if first != nil {
		wake = first.at
	}
	if wake.After(c.now) {
		c.now = wake
	}
	c.mu.Unlock()
	if first != nil {
		first.end(first.cause)
	}
	return ctxErr(ctx)
}

// ctxErr is ctx's error as the wall clock's contexts give it:
// context.DeadlineExceeded for one that reached a deadline.
func ctxErr(ctx context.Context) error {
	if runner.TimedOut(ctx) {
		return context.DeadlineExceeded
	}
	return ctx.Err()
}

// timeout is the cause a virtual deadline ends its context with: a
// deadline (it is context.DeadlineExceeded) that keeps the cause it was
// given, such as a budget's.
type timeout struct{ cause error }

func (t timeout) Error() string {
	if t.cause != nil {
		return t.cause.Error()
	}
	return context.DeadlineExceeded.Error()
}

func (t timeout) Is(target error) bool { return target == context.DeadlineExceeded }

func (t timeout) Unwrap() error { return t.cause }
