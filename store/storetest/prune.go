package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

// TestPrune runs the retention part of the suite on a whole store.Backend:
// Prune deletes the approvals finished (used, denied or expired) more than
// store.KeepFinished ago, the remembered approvals revoked or expired more
// than store.KeepFinished ago, the ledger entries past their Expires, the run
// checkpoints last updated more than store.KeepRuns ago and the sessions
// last updated more than store.KeepSessions ago with their observations
// (a session counts once), counts each, and keeps everything else, the
// global kill flag and every pin included, however old; a Seq is never
// given again. open must return a fresh, empty store.
func TestPrune(t *testing.T, open func(t *testing.T) store.Backend) {
	s := open(t)
	ctx := context.Background()
	mk := func(id string, created time.Time, life time.Duration) {
		t.Helper()
		a := store.Approval{ID: id, Tool: "t", Args: json.RawMessage(`{}`), ArgsHash: "h-" + id,
			Status: store.StatusPending, Created: created, Expires: created.Add(life)}
		if err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	mk("old-denied", t0, 30*24*time.Hour)
	decide(t, s, "old-denied", false, "x", t0.Add(time.Minute))
	mk("old-used", t0, 30*24*time.Hour)
	decide(t, s, "old-used", true, "x", t0.Add(time.Minute))
	if _, ok, err := s.ConsumeApproval(ctx, "t", "h-old-used", t0.Add(2*time.Minute)); err != nil || !ok {
		t.Fatalf("ConsumeApproval = %v, %v", ok, err)
	}
	mk("old-expired", t0, time.Hour)
	mk("recent-denied", t0.Add(29*24*time.Hour), 30*24*time.Hour)
	decide(t, s, "recent-denied", false, "x", t0.Add(29*24*time.Hour+time.Minute))
	mk("pending", t0.Add(29*24*time.Hour), 30*24*time.Hour)

	now := t0.Add(30 * 24 * time.Hour)
	for _, e := range []struct {
		key     string
		expires time.Time
	}{{"gone", now.Add(-time.Second)}, {"at-now", now}, {"kept", now.Add(time.Second)}} {
		a := store.LedgerAcquire{Key: e.key, Fingerprint: "f", Owner: "o", Token: "t",
			Now: e.expires.Add(-2 * time.Minute), Lease: e.expires.Add(-time.Minute), Expires: e.expires}
		if _, ok, err := s.AcquireLedgerKey(ctx, a); err != nil || !ok {
			t.Fatalf("AcquireLedgerKey(%s) = %v, %v", e.key, ok, err)
		}
	}
	// A run goes once its Updated is strictly before now minus KeepRuns.
	runs := map[string]time.Time{
		"old-run":    now.Add(-store.KeepRuns - time.Microsecond),
		"older-run":  t0,
		"edge-run":   now.Add(-store.KeepRuns),
		"recent-run": now,
	}
	for session, updated := range runs {
		r := store.Run{Session: session, State: store.RunWaitingApproval, Approval: "ap-" + session,
			Checkpoint: json.RawMessage(`{"step":3}`), Updated: updated}
		if err := s.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// A session goes once its last write, whichever it was, is strictly
	// before now minus KeepSessions; a killed one too. Each old session is
	// written one way only, so a write that forgets Prune's bookkeeping
	// leaves it behind.
	sessionCut := now.Add(-store.KeepSessions)
	// The three ways a session is written.
	charge := func(id string, at time.Time) (store.Session, error) {
		return s.ChargeSession(ctx, id, store.Charge{Steps: 1, Tokens: 10, MicroUSD: 100}, at)
	}
	kill := func(id string, at time.Time) (store.Session, error) { return s.KillSession(ctx, id, true, at) }
	setMode := func(id string, at time.Time) (store.Session, error) { return s.SetSessionMode(ctx, id, "plan", at) }
	observed := func(id string) []store.Observation {
		return []store.Observation{{Source: "tool:fetch", Value: "https://" + id + ".example"}, {Source: store.SourceUser, Value: id}}
	}
	observe := func(id string, at time.Time) (store.Session, error) {
		return store.Session{}, s.Observe(ctx, id, observed(id), store.MarkFlagged, at)
	}
	sessions := map[string]time.Time{
		"old-session":      sessionCut.Add(-time.Microsecond),
		"older-session":    sessionCut.Add(-time.Hour),
		"observed-session": sessionCut.Add(-time.Microsecond),
		"edge-session":     sessionCut,
		"recent-session":   now,
	}
	for _, w := range []struct {
		id    string
		write func(id string, at time.Time) (store.Session, error)
		at    time.Time
	}{
		{"old-session", kill, sessions["old-session"]},
		{"older-session", charge, sessions["older-session"]},
		{"edge-session", setMode, sessions["edge-session"]},
		{"recent-session", charge, sessionCut.Add(-48 * time.Hour)}, // old at first, then written again
		{"recent-session", observe, sessionCut.Add(-47 * time.Hour)},
		{"recent-session", setMode, sessions["recent-session"]},
		// Observed last, the pruned session holds the highest Seq.
		{"observed-session", observe, sessions["observed-session"]},
	} {
		if _, err := w.write(w.id, w.at); err != nil {
			t.Fatalf("writing session %s at %v: %v", w.id, w.at, err)
		}
	}
	if err := s.SetKillAll(ctx, true); err != nil {
		t.Fatal(err)
	}
	// The highest Seq given out before Prune.
	var seqBefore int64
	for _, id := range []string{"observed-session", "recent-session"} {
		st, err := s.State(ctx, id, 0)
		if err != nil || len(st.Observations) != 2 {
			t.Fatalf("State(%s) before Prune = %+v, %v; want 2 observations", id, st, err)
		}
		seqBefore = max(seqBefore, st.Observations[1].Seq)
	}
	// A remembered approval goes once revoked or expired more than
	// KeepFinished ago; one in force stays, though the approval it was
	// made from (approved at t0, never used, so expired) goes.
	rememberAt := func(id string, life time.Duration) {
		t.Helper()
		a := store.Approval{ID: id, Tool: "t", Args: json.RawMessage(`{}`), ArgsHash: "h-" + id, WorkspaceHash: "w-" + id,
			Status: store.StatusPending, Created: t0, Expires: t0.Add(ttl)}
		if err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RememberApproval(ctx, id, store.ScopeWorkspace, "x", t0, t0.Add(life)); err != nil {
			t.Fatal(err)
		}
	}
	revokeAt := func(id string, at time.Time) {
		t.Helper()
		if _, err := s.RevokeRemembered(ctx, id, "y", at); err != nil {
			t.Fatal(err)
		}
	}
	rememberAt("rm-old-expired", time.Hour)
	rememberAt("rm-old-revoked", 2*store.RememberFor)
	revokeAt("rm-old-revoked", t0.Add(time.Hour))
	rememberAt("rm-recent-revoked", 2*store.RememberFor)
	revokeAt("rm-recent-revoked", now.Add(-time.Hour))
	rememberAt("rm-in-force", 2*store.RememberFor)

	// A pin stays, however long ago it was made or last updated.
	oldPin := addPin(t, s, newPin("old", store.PinTool, "never-pruned", t0.Add(-365*24*time.Hour)))
	updatedPin := addPin(t, s, newPin("old", store.PinPrompt, "updated-long-ago", t0.Add(-365*24*time.Hour)))
	updatedPin.AcceptedBy, updatedPin.Updated = "alice", t0
	updatedPin, err := s.UpdatePin(ctx, updatedPin)
	if err != nil {
		t.Fatal(err)
	}

	n, err := s.Prune(ctx, now)
	if err != nil || n != 16 {
		t.Errorf("Prune = %d, %v; want 16 (7 approvals, 2 remembered, 2 ledger entries, 2 runs, 3 sessions)", n, err)
	}
	if _, ok, err := s.UseRemembered(ctx, store.ScopeWorkspace, "t", "w-rm-in-force", now); err != nil || !ok {
		t.Errorf("UseRemembered after Prune = %v, %v; want the one in force still found", ok, err)
	}
	for id, kept := range map[string]bool{"rm-old-expired": false, "rm-old-revoked": false, "rm-recent-revoked": true, "rm-in-force": true} {
		_, err := s.RevokeRemembered(ctx, id, "z", now)
		if got := !errors.Is(err, store.ErrNotFound); got != kept {
			t.Errorf("remembered approval %s: kept %v (%v), want %v", id, got, err, kept)
		}
	}
	for id, kept := range map[string]bool{"old-denied": false, "old-used": false, "old-expired": false, "recent-denied": true, "pending": true} {
		_, err := s.Approval(ctx, id, now)
		if got := err == nil; got != kept || (!kept && !errors.Is(err, store.ErrNotFound)) {
			t.Errorf("approval %s: kept %v (%v), want %v", id, got, err, kept)
		}
	}
	for key, kept := range map[string]bool{"gone": false, "at-now": false, "kept": true} {
		_, err := s.LedgerEntry(ctx, key)
		if got := err == nil; got != kept {
			t.Errorf("ledger entry %s: kept %v (%v), want %v", key, got, err, kept)
		}
	}
	for session, kept := range map[string]bool{"old-run": false, "older-run": false, "edge-run": true, "recent-run": true} {
		r, err := s.Run(ctx, session)
		if got := err == nil; got != kept || (!kept && !errors.Is(err, store.ErrNotFound)) {
			t.Errorf("run %s: kept %v (%v), want %v", session, got, err, kept)
		}
		if kept && (err != nil || !r.Updated.Equal(runs[session])) {
			t.Errorf("run %s after Prune = %+v, %v; want it as saved", session, r, err)
		}
	}
	for id, kept := range map[string]bool{"old-session": false, "older-session": false, "observed-session": false, "edge-session": true, "recent-session": true} {
		got, err := s.Session(ctx, id)
		if found := err == nil; found != kept || (!kept && !errors.Is(err, store.ErrNotFound)) {
			t.Errorf("session %s: kept %v (%v), want %v", id, found, err, kept)
		}
		if kept && (err != nil || got.ID != id || !got.Updated.Equal(sessions[id])) {
			t.Errorf("session %s after Prune = %+v, %v; want it updated at %v", id, got, err, sessions[id])
		}
	}
	checkPin(t, "a pin made long ago, after Prune", readPin(t, s, oldPin.PinKey), oldPin)
	checkPin(t, "a pin updated long ago, after Prune", readPin(t, s, updatedPin.PinKey), updatedPin)
	if list, err := s.ListPins(ctx, ""); err != nil || len(list) != 2 {
		t.Errorf("ListPins after Prune = %d pins, %v; want both kept", len(list), err)
	}
	if killed, err := s.KillAll(ctx); err != nil || !killed {
		t.Errorf("KillAll after Prune = %v, %v; want the global kill flag still set", killed, err)
	}
	if n, err := s.Prune(ctx, now); err != nil || n != 0 {
		t.Errorf("a second Prune = %d, %v; want 0", n, err)
	}
	checkPrunedObservations(t, s, now, observed, seqBefore)
}

// checkPrunedObservations: a pruned session's observations and Flagged
// went with it, a kept one's stayed, and Seq goes on past every Seq given
// out before, never reusing one.
func checkPrunedObservations(t *testing.T, s store.Backend, now time.Time, observed func(id string) []store.Observation, seqBefore int64) {
	ctx := context.Background()
	st, err := s.State(ctx, "observed-session", 0)
	if err != nil || st.Exists || len(st.Observations) != 0 {
		t.Errorf("State of the pruned session = %+v, %v; want it gone with its observations", st, err)
	}
	st, err = s.State(ctx, "recent-session", 0)
	if err != nil || !st.Session.Flagged || len(st.Observations) != 2 || st.Observations[0].Value != observed("recent-session")[0].Value {
		t.Errorf("State of the kept session = %+v, %v; want it flagged, its 2 observations kept", st, err)
	}
	// The pruned session starts afresh: unflagged, its old values new.
	if err := s.Observe(ctx, "observed-session", observed("observed-session")[:1], 0, now); err != nil {
		t.Fatal(err)
	}
	st, err = s.State(ctx, "observed-session", 0)
	if err != nil || st.Session.Flagged || len(st.Observations) != 1 || st.Observations[0].Seq <= seqBefore {
		t.Errorf("State of the pruned session written again = %+v, %v; want it unflagged, one observation past Seq %d", st, err, seqBefore)
	}
}
