package store

import (
	"context"
	"math"
	"time"
)

// Killed reads the kill switch of a session: whether it is killed, and
// whether that is because every session is (SetKillAll).
func Killed(ctx context.Context, s Sessions, session string) (killed, all bool, err error) {
	// One read: State past every observation carries both kill flags.
	st, err := s.State(ctx, session, math.MaxInt64)
	if err != nil {
		return false, false, err
	}
	return st.KillAll || st.Session.Killed, st.KillAll, nil
}

// WatchKill reads the kill switch of session every poll until ctx ends or
// stop is called, and calls onKill once if it finds the session killed
// (all: because every session is). A store that fails to answer kills
// nothing: the caller's next write to the store fails instead.
func WatchKill(ctx context.Context, s Sessions, session string, poll time.Duration, onKill func(all bool)) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if killed, all, err := Killed(ctx, s, session); err == nil && killed {
					onKill(all)
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
