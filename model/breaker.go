package model

import (
	"sync"
	"time"
)

// Defaults of BreakerOptions.
const (
	// DefaultBreakerFailures is how many failed attempts in a row open a
	// model's breaker. Five is past what one unlucky call's retries see
	// against a healthy provider, so an open breaker means a real outage.
	DefaultBreakerFailures = 5
	// DefaultBreakerCooldown is how long a breaker stays open before it
	// lets one probe through (half-open).
	DefaultBreakerCooldown = 30 * time.Second
)

// BreakerOptions configures each model's breaker. A nil pointer, or a
// zero field, means the default.
type BreakerOptions struct {
	Failures int
	Cooldown time.Duration
}

// BreakerState is a breaker's state.
type BreakerState int

const (
	BreakerClosed   BreakerState = iota // calls flow
	BreakerOpen                         // calls are refused until the cool-down ends
	BreakerHalfOpen                     // one probe is in flight; others are refused
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "unknown"
}

// breaker is a consecutive-failure circuit breaker: closed → open after
// Failures failed attempts in a row → half-open after Cooldown, where one
// probe decides: success closes it, failure opens it again.
type breaker struct {
	failures int
	cooldown time.Duration
	now      func() time.Time

	mu       sync.Mutex
	state    BreakerState
	streak   int
	openedAt time.Time
}

func newBreaker(o *BreakerOptions, now func() time.Time) *breaker {
	b := &breaker{failures: DefaultBreakerFailures, cooldown: DefaultBreakerCooldown, now: now}
	if o != nil {
		if o.Failures > 0 {
			b.failures = o.Failures
		}
		if o.Cooldown > 0 {
			b.cooldown = o.Cooldown
		}
	}
	return b
}

// allow reports whether an attempt may be sent now. In half-open it
// admits one probe; the caller must report the probe's outcome.
func (b *breaker) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case BreakerClosed:
		return true
	case BreakerOpen:
		if b.now().Sub(b.openedAt) >= b.cooldown {
			b.state = BreakerHalfOpen
			return true
		}
	}
	return false
}

// record reports an attempt's outcome. Failures that say nothing about the
// model's health (a bad request, a wrong key) are recorded as neither,
// but still end a half-open probe, so that the breaker is not stuck.
func (b *breaker) record(ok, health bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case ok:
		b.state, b.streak = BreakerClosed, 0
	case !health:
		if b.state == BreakerHalfOpen {
			b.state = BreakerClosed
		}
	default:
		b.streak++
		if b.state == BreakerHalfOpen || b.streak >= b.failures {
			b.state, b.openedAt = BreakerOpen, b.now()
		}
	}
}

// abandon releases a half-open probe whose outcome is unknown (the
// caller gave up), so that the next attempt may probe again.
func (b *breaker) abandon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerHalfOpen {
		b.state = BreakerOpen
	}
}

// State returns the breaker's state as of now.
func (b *breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && b.now().Sub(b.openedAt) >= b.cooldown {
		return BreakerHalfOpen
	}
	return b.state
}
