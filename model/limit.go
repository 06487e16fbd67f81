package model

import (
	"context"
	"math"

	"golang.org/x/time/rate"
)

// Defaults of Limits.
const (
	// DefaultMaxConcurrent is how many attempts may be in flight at once
	// against one provider: enough for a few agents side by side, few
	// enough that a burst of tasks queues here rather than being refused
	// with 429s there.
	DefaultMaxConcurrent = 8
	// DefaultRatePerSecond is how many attempts per second may start
	// against one provider, in the long run.
	DefaultRatePerSecond = 10
	// DefaultBurst is how many attempts may start at once after a quiet
	// spell.
	DefaultBurst = 10
)

// Limits bounds the load put on one provider. A nil pointer, or a zero
// field, means the default; Unlimited turns the rate limit off (for a
// local server).
type Limits struct {
	MaxConcurrent int
	RatePerSecond float64
	Burst         int
	Unlimited     bool // no rate limit; MaxConcurrent still holds
}

// limiter enforces one provider's Limits. Waiting for either honours the
// caller's context, so a queued call still ends at its deadline.
type limiter struct {
	slots chan struct{}
	rate  *rate.Limiter
}

func newLimiter(l *Limits) *limiter {
	var q Limits
	if l != nil {
		q = *l
	}
	if q.MaxConcurrent <= 0 {
		q.MaxConcurrent = DefaultMaxConcurrent
	}
	if q.RatePerSecond <= 0 {
		q.RatePerSecond = DefaultRatePerSecond
	}
	if q.Burst <= 0 {
		q.Burst = DefaultBurst
	}
	r := rate.NewLimiter(rate.Limit(q.RatePerSecond), q.Burst)
	if q.Unlimited {
		r = rate.NewLimiter(rate.Inf, math.MaxInt)
	}
	return &limiter{slots: make(chan struct{}, q.MaxConcurrent), rate: r}
}

// acquire waits for a rate token and a concurrency slot; release must be
// called once the attempt is over.
func (l *limiter) acquire(ctx context.Context) (release func(), err error) {
	if err := l.rate.Wait(ctx); err != nil {
		// rate.Wait also fails at once when the wait would pass ctx's
		// deadline: that is the deadline's doing, so say so.
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, context.DeadlineExceeded
	}
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
