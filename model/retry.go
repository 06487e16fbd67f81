package model

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Defaults of Policy.
const (
	// DefaultMaxAttempts is how many times one model is asked in one call,
	// the first attempt included.
	DefaultMaxAttempts = 4
	// DefaultAttemptTimeout bounds one HTTP attempt, answer included.
	DefaultAttemptTimeout = 60 * time.Second
	// DefaultDeadline bounds one Chain.Complete call: every attempt, every
	// wait and every fallback.
	DefaultDeadline = 10 * time.Minute
	// DefaultBaseDelay is the backoff envelope after the first failure; it
	// doubles with each further one. Half a second is long enough for a
	// provider's momentary overload to clear and short enough that three
	// retries stay under a minute in the worst case.
	DefaultBaseDelay = 500 * time.Millisecond
	// DefaultMaxDelay caps the backoff envelope (not a Retry-After).
	DefaultMaxDelay = 20 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After honoured; a server
	// asking for more is not retried, and the chain falls back instead,
	// since asking again sooner than it said would only be refused again.
	DefaultMaxRetryAfter = 60 * time.Second
)

// Policy is the one retry policy: which failures are retried (see
// Error.Retryable: 408, 409, 429, 5xx, 529, connection errors and attempt
// timeouts), how often, and how long to wait. The wait after the n-th
// failed attempt (n from 0) is the server's Retry-After when it sent one
// (up to MaxRetryAfter), else a full-jitter backoff: a uniformly random
// duration in [0, min(MaxDelay, BaseDelay·2^n)).
//
// A nil *Policy, or a zero field, means the default.
type Policy struct {
	MaxAttempts    int
	AttemptTimeout time.Duration
	Deadline       time.Duration
	BaseDelay      time.Duration
	MaxDelay       time.Duration
	MaxRetryAfter  time.Duration

	// Sleep waits d or until ctx is done (then it returns ctx.Err()).
	// Tests inject one that records and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a uniformly random duration in [0, max); max > 0. It
	// must be safe for concurrent use. Tests inject a seeded source.
	Jitter func(max time.Duration) time.Duration
}

// withDefaults returns a copy with every zero field filled in.
func (p *Policy) withDefaults() Policy {
	var q Policy
	if p != nil {
		q = *p
	}
	if q.MaxAttempts <= 0 {
		q.MaxAttempts = DefaultMaxAttempts
	}
	if q.AttemptTimeout <= 0 {
		q.AttemptTimeout = DefaultAttemptTimeout
	}
	if q.Deadline <= 0 {
		q.Deadline = DefaultDeadline
	}
	if q.BaseDelay <= 0 {
		q.BaseDelay = DefaultBaseDelay
	}
	if q.MaxDelay <= 0 {
		q.MaxDelay = DefaultMaxDelay
	}
	if q.MaxRetryAfter <= 0 {
		q.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if q.Sleep == nil {
		q.Sleep = sleepContext
	}
	if q.Jitter == nil {
		q.Jitter = func(max time.Duration) time.Duration { return rand.N(max) }
	}
	return q
}

// Envelope is the upper bound of the backoff after the n-th failed
// attempt (n from 0): min(MaxDelay, BaseDelay·2^n).
func (p *Policy) Envelope(n int) time.Duration {
	q := p.withDefaults()
	return envelope(q.BaseDelay, q.MaxDelay, n)
}

func envelope(base, cap time.Duration, n int) time.Duration {
	if n < 0 {
		n = 0
	}
	d := base
	for range n {
		if d >= cap/2 {
			return cap
		}
		d *= 2
	}
	return min(d, cap)
}

// backoff draws the full-jitter wait after the n-th failed attempt.
func (p *Policy) backoff(n int) time.Duration {
	env := envelope(p.BaseDelay, p.MaxDelay, n)
	if env <= 0 {
		return 0
	}
	d := p.Jitter(env)
	// A broken injected source must not turn into an unbounded wait.
	return max(0, min(d, env))
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MaxRetryAfterHeader is the longest Retry-After value parsed, in bytes:
// an HTTP date is 29 bytes; anything far longer is not a valid value.
const MaxRetryAfterHeader = 64

// ParseRetryAfter reads the wait a response asks for: retry-after-ms (a
// non-negative number of milliseconds, as OpenAI and Anthropic send), else
// Retry-After in seconds or as an HTTP date (relative to now). ok is false
// when neither is present and valid. A date in the past is a zero wait.
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" && len(v) <= MaxRetryAfterHeader {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < float64(maxWait/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" || len(v) > MaxRetryAfterHeader {
		return 0, false
	}
	if isDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(maxWait/time.Second) {
			return maxWait, true // a huge but valid number: "not for a very long time"
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now)
	if d < 0 {
		d = 0
	}
	return min(d, maxWait), true
}

// maxWait bounds a parsed Retry-After so that it never overflows a
// Duration; it is far above any MaxRetryAfter.
const maxWait = 24 * time.Hour

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
