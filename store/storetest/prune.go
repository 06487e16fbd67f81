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
// store.KeepFinished ago, the ledger entries past their Expires and the run
// checkpoints last updated more than store.KeepRuns ago, counts each, and
// keeps everything else. open must return a fresh, empty store.
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
	n, err := s.Prune(ctx, now)
	if err != nil || n != 7 {
		t.Errorf("Prune = %d, %v; want 7 (3 approvals, 2 ledger entries, 2 runs)", n, err)
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
	if n, err := s.Prune(ctx, now); err != nil || n != 0 {
		t.Errorf("a second Prune = %d, %v; want 0", n, err)
	}
}
