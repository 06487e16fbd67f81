// Package storetest is the conformance suite every backend of the store
// interfaces must pass, so that the embedded SQLite file, Postgres and Redis
// keep exactly the same promises: an approval is bound to one exact call,
// expires by itself, is decided once and is consumed once; a remembered
// approval is made in the same step as its decision, matches only its own
// scope and hash, is counted at each use and ends when it expires or is
// revoked; a session's charges never pass its budget nor a kill; a
// session holds each value it observed once per kind of source, its
// Flagged once set stays set, and its observations are numbered in an
// order that a reader following them by Seq never skips one of
// (CheckObserveOrder, also run by each backend over two handles); a
// ledger key is held by one owner at a time, fenced by its token, taken
// over only after its lease, and its effect runs exactly once however
// many goroutines race on it; a run's checkpoint reads back byte for byte
// and is replaced whole; a pin reads back exactly as added, the first of
// racing adds of one key is the one kept, an update replaces only the
// version it read (CheckPinRace, also run by each backend over two
// handles), and a pin past its bounds is never stored; Prune
// deletes only what outlived its retention, never a pin nor the global
// kill flag (TestApprovals, TestSessions, TestLedger, TestRuns, TestPins,
// TestPrune).
// CheckTransitions is the body of each backend's ledger fuzzer,
// BenchmarkLedger its benchmark; BenchmarkObserve and BenchmarkState
// measure what the gate asks of the store around each call.
//
// A backend's test calls the suite with a function that opens a fresh,
// empty store:
//
//	func TestApprovals(t *testing.T) {
//		storetest.TestApprovals(t, func(t *testing.T) store.Approvals {
//			db, err := sqlite.Open(filepath.Join(t.TempDir(), "airlock.db"), nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { db.Close() })
//			return db
//		})
//	}
//
// The suite never reads the wall clock: every "now" is explicit. Times are
// given with microsecond precision, the finest that every backend keeps
// (Postgres timestamps stop at microseconds).
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

// Contenders is how many goroutines race for one approval in the
// concurrency tests.
const Contenders = 16

// t0 is the suite's fixed clock origin: microsecond precision, UTC.
var t0 = time.Date(2031, time.March, 4, 5, 6, 7, 891011000, time.UTC)

// ttl is the lifetime the suite gives its approvals.
const ttl = store.DefaultApprovalTTL

// TestApprovals runs the conformance suite for store.Approvals. open must
// return a fresh, empty store each time it is called; it is called once per
// subtest and should register its own cleanup with t.Cleanup.
func TestApprovals(t *testing.T, open func(t *testing.T) store.Approvals) {
	t.Run("CreateAndGet", func(t *testing.T) { testCreateAndGet(t, open(t)) })
	t.Run("TimesRoundTripInUTC", func(t *testing.T) { testTimes(t, open(t)) })
	t.Run("CreateIsAlwaysPending", func(t *testing.T) { testCreateIsAlwaysPending(t, open(t)) })
	t.Run("DuplicateID", func(t *testing.T) { testDuplicateID(t, open(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, open(t)) })
	t.Run("PendingApprovals", func(t *testing.T) { testPending(t, open(t)) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, open(t)) })
	t.Run("DecideOnce", func(t *testing.T) { testDecideOnce(t, open) })
	t.Run("NotPendingSaysWhy", func(t *testing.T) { testNotPendingSaysWhy(t, open(t)) })
	t.Run("Consume", func(t *testing.T) { testConsume(t, open(t)) })
	t.Run("ConsumeEachApprovalOnce", func(t *testing.T) { testConsumeEachOnce(t, open(t)) })
	t.Run("ConcurrentConsume", func(t *testing.T) { testConcurrentConsume(t, open(t)) })
	t.Run("ConcurrentDecide", func(t *testing.T) { testConcurrentDecide(t, open(t)) })
	t.Run("IDsNameNoIndex", func(t *testing.T) { testIDsNameNoIndex(t, open(t)) })
	testRemembered(t, open)
}

// testIDsNameNoIndex: ids that look like a backend's own names (Redis's
// index keys, SQL words) are plain ids.
func testIDsNameNoIndex(t *testing.T, s store.Approvals) {
	ids := []string{"pending", "all", "i:pending", "i:all", "r:x", "ap:i:pending", "*", "'; DROP TABLE approvals; --"}
	for i, id := range ids {
		create(t, s, approval(id, "write_file", fmt.Sprintf(`{"n":%d}`, i), t0.Add(time.Duration(i)*time.Second)))
	}
	now := t0.Add(time.Minute)
	list, err := s.PendingApprovals(context.Background(), now)
	if err != nil || len(list) != len(ids) {
		t.Fatalf("PendingApprovals = %d, %v; want %d", len(list), err, len(ids))
	}
	for i, id := range ids {
		if list[i].ID != id {
			t.Errorf("pending[%d] = %q, want %q", i, list[i].ID, id)
		}
		decide(t, s, id, true, "alice", now)
		a, ok, err := s.ConsumeApproval(context.Background(), "write_file", hash("write_file", fmt.Sprintf(`{"n":%d}`, i)), now)
		if err != nil || !ok || a.ID != id {
			t.Errorf("ConsumeApproval for %q = %q, %v, %v", id, a.ID, ok, err)
		}
	}
}

// hash is how the suite derives an argument hash: hex SHA-256 of the tool
// and its arguments, as the gate does. Backends only compare it.
func hash(tool, args string) string {
	sum := sha256.Sum256([]byte(tool + "\x00" + args))
	return hex.EncodeToString(sum[:])
}

// approval returns a pending approval created at created that lives ttl.
func approval(id, tool, args string, created time.Time) store.Approval {
	return store.Approval{
		ID:       id,
		Tool:     tool,
		Args:     json.RawMessage(args),
		ArgsHash: hash(tool, args),
		Status:   store.StatusPending,
		Created:  created,
		Expires:  created.Add(ttl),
	}
}

func create(t *testing.T, s store.Approvals, as ...store.Approval) {
	t.Helper()
	for _, a := range as {
		if err := s.CreateApproval(context.Background(), a); err != nil {
			t.Fatalf("CreateApproval(%q): %v", a.ID, err)
		}
	}
}

func get(t *testing.T, s store.Approvals, id string, now time.Time) store.Approval {
	t.Helper()
	a, err := s.Approval(context.Background(), id, now)
	if err != nil {
		t.Fatalf("Approval(%q): %v", id, err)
	}
	return a
}

func decide(t *testing.T, s store.Approvals, id string, approve bool, by string, now time.Time) store.Approval {
	t.Helper()
	a, err := s.DecideApproval(context.Background(), id, approve, by, now)
	if err != nil {
		t.Fatalf("DecideApproval(%q, %v): %v", id, approve, err)
	}
	return a
}

// checkTime reports a time that is not want, or not in UTC.
func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
	if !got.IsZero() && got.Location() != time.UTC {
		t.Errorf("%s = %v is in %v, want UTC", what, got, got.Location())
	}
}

// checkSame compares every field of got with want; times with Equal.
func checkSame(t *testing.T, got, want store.Approval) {
	t.Helper()
	type fields struct {
		ID, Tool, Args, ArgsHash, SessionHash, WorkspaceHash, Session, Role, Mode, Rule, Reason, DecidedBy string
		Status                                                                                             store.Status
	}
	g := fields{got.ID, got.Tool, string(got.Args), got.ArgsHash, got.SessionHash, got.WorkspaceHash, got.Session, got.Role, got.Mode, got.Rule, got.Reason, got.DecidedBy, got.Status}
	w := fields{want.ID, want.Tool, string(want.Args), want.ArgsHash, want.SessionHash, want.WorkspaceHash, want.Session, want.Role, want.Mode, want.Rule, want.Reason, want.DecidedBy, want.Status}
	if g != w {
		t.Errorf("approval %q:\n got %+v\nwant %+v", want.ID, g, w)
	}
	checkTime(t, want.ID+" Created", got.Created, want.Created)
	checkTime(t, want.ID+" Expires", got.Expires, want.Expires)
	checkTime(t, want.ID+" Decided", got.Decided, want.Decided)
}

func testCreateAndGet(t *testing.T, s store.Approvals) {
	a := store.Approval{
		ID:            "ap-1",
		Tool:          "write_file",
		Args:          json.RawMessage(`{"content":"x","path":"a.txt"}`),
		ArgsHash:      hash("write_file", `{"content":"x","path":"a.txt"}`),
		SessionHash:   hash("write_file", "session"),
		WorkspaceHash: hash("write_file", "workspace"),
		Session:       "sess-1",
		Role:          "developer",
		Mode:          "ask",
		Rule:          "writes-ask",
		Reason:        "writes need a person",
		Status:        store.StatusPending,
		Created:       t0,
		Expires:       t0.Add(ttl),
	}
	create(t, s, a)
	checkSame(t, get(t, s, a.ID, t0), a)
	checkSame(t, get(t, s, a.ID, t0.Add(ttl/2)), a)
}

func testTimes(t *testing.T, s store.Approvals) {
	// Given in another zone, with a monotonic reading stripped or not, the
	// same instants come back, in UTC.
	zone := time.FixedZone("UTC+5:30", 5*3600+30*60)
	created := t0.In(zone)
	a := approval("ap-zone", "fetch", `{"url":"https://example.com/"}`, created)
	a.Expires = created.Add(90 * time.Second)
	create(t, s, a)
	got := get(t, s, a.ID, t0)
	checkTime(t, "Created", got.Created, t0)
	checkTime(t, "Expires", got.Expires, t0.Add(90*time.Second))
	checkTime(t, "Decided before a decision", got.Decided, time.Time{})

	decidedAt := t0.Add(time.Second + 7*time.Microsecond).In(zone)
	d := decide(t, s, a.ID, true, "alice", decidedAt)
	checkTime(t, "Decided (returned)", d.Decided, decidedAt)
	checkTime(t, "Decided (read back)", get(t, s, a.ID, decidedAt).Decided, decidedAt)
}

func testCreateIsAlwaysPending(t *testing.T, s store.Approvals) {
	// A caller cannot park an approval that is already approved: the store
	// either refuses it or stores it as pending.
	a := approval("ap-forged", "run_command", `{"cmd":"rm -rf /"}`, t0)
	a.Status = store.StatusApproved
	a.Decided = t0
	a.DecidedBy = "mallory"
	if err := s.CreateApproval(context.Background(), a); err != nil {
		if _, err := s.Approval(context.Background(), a.ID, t0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused approval was stored: Approval err = %v", err)
		}
		return
	}
	got := get(t, s, a.ID, t0)
	if got.Status != store.StatusPending || !got.Decided.IsZero() || got.DecidedBy != "" {
		t.Errorf("created with status approved: got status %q, decided %v by %q; want pending, undecided", got.Status, got.Decided, got.DecidedBy)
	}
	if c, ok, err := s.ConsumeApproval(context.Background(), a.Tool, a.ArgsHash, t0); err != nil || ok {
		t.Errorf("ConsumeApproval of a forged approval = %q, %v, %v; want ok false", c.ID, ok, err)
	}
}

func testDuplicateID(t *testing.T, s store.Approvals) {
	first := approval("ap-dup", "write_file", `{"path":"a.txt"}`, t0)
	create(t, s, first)
	second := approval("ap-dup", "run_command", `{"cmd":"true"}`, t0.Add(time.Second))
	if err := s.CreateApproval(context.Background(), second); err == nil {
		t.Fatal("CreateApproval with a taken id succeeded")
	}
	checkSame(t, get(t, s, first.ID, t0), first)
}

func testNotFound(t *testing.T, s store.Approvals) {
	create(t, s, approval("ap-known", "write_file", `{}`, t0))
	ctx := context.Background()
	if _, err := s.Approval(ctx, "ap-unknown", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Approval(unknown) err = %v, want ErrNotFound", err)
	}
	if _, err := s.DecideApproval(ctx, "ap-unknown", true, "alice", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DecideApproval(unknown) err = %v, want ErrNotFound", err)
	}
	if _, ok, err := s.ConsumeApproval(ctx, "write_file", hash("write_file", `{"x":1}`), t0); err != nil || ok {
		t.Errorf("ConsumeApproval(no match) = %v, %v; want false, nil", ok, err)
	}
}

func testPending(t *testing.T, s store.Approvals) {
	ctx := context.Background()
	if got, err := s.PendingApprovals(ctx, t0); err != nil || len(got) != 0 {
		t.Fatalf("PendingApprovals of an empty store = %d, %v; want 0, nil", len(got), err)
	}
	now := t0.Add(time.Hour)
	// Created out of order on purpose; created times decide the order.
	c := approval("c", "write_file", `{"n":3}`, now.Add(-3*time.Minute))
	a := approval("a", "write_file", `{"n":1}`, now.Add(-5*time.Minute))
	b := approval("b", "write_file", `{"n":2}`, now.Add(-4*time.Minute))
	expired := approval("expired", "write_file", `{"n":4}`, now.Add(-ttl-time.Minute))
	atEdge := approval("at-edge", "write_file", `{"n":5}`, now.Add(-ttl)) // expires exactly at now
	denied := approval("denied", "write_file", `{"n":6}`, now.Add(-6*time.Minute))
	approved := approval("approved", "write_file", `{"n":7}`, now.Add(-7*time.Minute))
	create(t, s, c, a, expired, atEdge, denied, b, approved)
	decide(t, s, denied.ID, false, "alice", now.Add(-time.Minute))
	decide(t, s, approved.ID, true, "alice", now.Add(-time.Minute))

	list, err := s.PendingApprovals(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list {
		got = append(got, p.ID)
		if p.Status != store.StatusPending {
			t.Errorf("listed %q with status %q, want pending", p.ID, p.Status)
		}
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("PendingApprovals = %q, want %q", got, want)
	}
	for _, p := range list {
		if p.ID == "a" {
			checkSame(t, p, a)
		}
	}
	// Asked two minutes earlier, the two that have expired by now were
	// still pending.
	list, err = s.PendingApprovals(ctx, now.Add(-2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, p := range list {
		got = append(got, p.ID)
	}
	if want := []string{"expired", "at-edge", "a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("PendingApprovals two minutes earlier = %q, want %q", got, want)
	}
}

func testExpiry(t *testing.T, s store.Approvals) {
	ctx := context.Background()
	p := approval("ap-pending", "write_file", `{"path":"p"}`, t0)
	ap := approval("ap-approved", "write_file", `{"path":"q"}`, t0)
	create(t, s, p, ap)
	decide(t, s, ap.ID, true, "alice", t0.Add(time.Minute))

	before, at, after := p.Expires.Add(-time.Microsecond), p.Expires, p.Expires.Add(time.Hour)
	for _, tc := range []struct {
		id   string
		now  time.Time
		want store.Status
	}{
		{p.ID, before, store.StatusPending},
		{p.ID, at, store.StatusExpired},
		{p.ID, after, store.StatusExpired},
		{ap.ID, before, store.StatusApproved},
		{ap.ID, at, store.StatusExpired},
		{ap.ID, after, store.StatusExpired},
	} {
		if got := get(t, s, tc.id, tc.now).Status; got != tc.want {
			t.Errorf("Approval(%q) at expires%+v: status %q, want %q", tc.id, tc.now.Sub(p.Expires), got, tc.want)
		}
	}

	for _, now := range []time.Time{at, after} {
		if _, err := s.DecideApproval(ctx, p.ID, true, "alice", now); !errors.Is(err, store.ErrNotPending) {
			t.Errorf("DecideApproval of an expired approval at expires%+v: err = %v, want ErrNotPending", now.Sub(p.Expires), err)
		}
		if c, ok, err := s.ConsumeApproval(ctx, ap.Tool, ap.ArgsHash, now); err != nil || ok {
			t.Errorf("ConsumeApproval of an expired approval at expires%+v = %q, %v, %v; want false, nil", now.Sub(ap.Expires), c.ID, ok, err)
		}
	}
	// The failed attempts changed nothing: just before expiry, both are as
	// they were.
	if got := get(t, s, p.ID, before); got.Status != store.StatusPending || got.DecidedBy != "" {
		t.Errorf("after a late decision: %q decided by %q, want pending", got.Status, got.DecidedBy)
	}
	if got := get(t, s, ap.ID, before); got.Status != store.StatusApproved {
		t.Errorf("after a late consume: %q, want approved", got.Status)
	}
}

func testDecideOnce(t *testing.T, open func(t *testing.T) store.Approvals) {
	for _, tc := range []struct {
		name    string
		approve bool
		want    store.Status
	}{
		{"approve", true, store.StatusApproved},
		{"deny", false, store.StatusDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			a := approval("ap-"+tc.name, "write_file", `{"path":"a.txt"}`, t0)
			create(t, s, a)
			decidedAt := t0.Add(2 * time.Minute)
			got := decide(t, s, a.ID, tc.approve, "alice", decidedAt)
			want := a
			want.Status, want.Decided, want.DecidedBy = tc.want, decidedAt, "alice"
			checkSame(t, got, want)
			checkSame(t, get(t, s, a.ID, decidedAt), want)

			for _, again := range []bool{true, false} {
				if _, err := s.DecideApproval(ctx, a.ID, again, "bob", decidedAt.Add(time.Second)); !errors.Is(err, store.ErrNotPending) {
					t.Errorf("second DecideApproval(approve=%v) err = %v, want ErrNotPending", again, err)
				}
			}
			checkSame(t, get(t, s, a.ID, decidedAt.Add(time.Second)), want)

			if c, ok, err := s.ConsumeApproval(ctx, a.Tool, a.ArgsHash, decidedAt.Add(time.Second)); err != nil || ok != tc.approve {
				t.Errorf("ConsumeApproval after %s = %q, %v, %v; want ok %v", tc.name, c.ID, ok, err, tc.approve)
			}
		})
	}
}

// testNotPendingSaysWhy: a decision of an approval that is not pending
// fails with ErrNotPending and returns the approval as it stands, so that
// the person is told what became of it.
func testNotPendingSaysWhy(t *testing.T, s store.Approvals) {
	ctx := context.Background()
	approved := approval("ap-approved", "write_file", `{"n":1}`, t0)
	denied := approval("ap-denied", "write_file", `{"n":2}`, t0)
	used := approval("ap-used", "write_file", `{"n":3}`, t0)
	expired := approval("ap-expired", "write_file", `{"n":4}`, t0)
	lapsed := approval("ap-lapsed", "write_file", `{"n":5}`, t0) // approved, never used
	create(t, s, approved, denied, used, expired, lapsed)
	decidedAt := t0.Add(time.Minute)
	decide(t, s, approved.ID, true, "alice", decidedAt)
	decide(t, s, denied.ID, false, "alice", decidedAt)
	decide(t, s, used.ID, true, "alice", decidedAt)
	decide(t, s, lapsed.ID, true, "alice", decidedAt)
	if _, ok, err := s.ConsumeApproval(ctx, used.Tool, used.ArgsHash, decidedAt); err != nil || !ok {
		t.Fatalf("ConsumeApproval = %v, %v", ok, err)
	}
	soon, late := decidedAt.Add(time.Minute), t0.Add(ttl)
	for _, tc := range []struct {
		id   string
		now  time.Time
		want store.Status
	}{
		{approved.ID, soon, store.StatusApproved},
		{denied.ID, soon, store.StatusDenied},
		{used.ID, soon, store.StatusUsed},
		{used.ID, late, store.StatusUsed},
		{expired.ID, late, store.StatusExpired},
		{lapsed.ID, late, store.StatusExpired},
	} {
		for _, approve := range []bool{true, false} {
			got, err := s.DecideApproval(ctx, tc.id, approve, "bob", tc.now)
			if !errors.Is(err, store.ErrNotPending) {
				t.Errorf("DecideApproval(%s, approve=%v) err = %v, want ErrNotPending", tc.id, approve, err)
			}
			if got.ID != tc.id || got.Status != tc.want {
				t.Errorf("DecideApproval(%s, approve=%v) returned %q with status %q, want %q with %q", tc.id, approve, got.ID, got.Status, tc.id, tc.want)
			}
			if tc.want != store.StatusExpired && got.DecidedBy != "alice" {
				t.Errorf("DecideApproval(%s) returned it decided by %q, want alice", tc.id, got.DecidedBy)
			}
		}
	}
}

func testConsume(t *testing.T, s store.Approvals) {
	ctx := context.Background()
	const tool, args = "write_file", `{"content":"x","path":"a.txt"}`
	ap := approval("ap-approved", tool, args, t0)
	pending := approval("ap-pending", tool, `{"path":"pending"}`, t0)
	denied := approval("ap-denied", tool, `{"path":"denied"}`, t0)
	create(t, s, ap, pending, denied)
	decidedAt := t0.Add(time.Minute)
	decide(t, s, ap.ID, true, "alice", decidedAt)
	decide(t, s, denied.ID, false, "alice", decidedAt)
	now := decidedAt.Add(time.Minute)

	for _, tc := range []struct {
		name, tool, hash string
	}{
		{"another tool, same hash", "delete_file", ap.ArgsHash},
		{"same tool, another hash", tool, hash(tool, `{"content":"y","path":"a.txt"}`)},
		{"hash of the tool alone", tool, hash(tool, "")},
		{"empty", "", ""},
		{"pending", pending.Tool, pending.ArgsHash},
		{"denied", denied.Tool, denied.ArgsHash},
	} {
		if c, ok, err := s.ConsumeApproval(ctx, tc.tool, tc.hash, now); err != nil || ok {
			t.Errorf("ConsumeApproval(%s) = %q, %v, %v; want false, nil", tc.name, c.ID, ok, err)
		}
	}

	got, ok, err := s.ConsumeApproval(ctx, tool, ap.ArgsHash, now)
	if err != nil || !ok {
		t.Fatalf("ConsumeApproval(exact) = %v, %v; want true, nil", ok, err)
	}
	want := ap
	want.Status, want.Decided, want.DecidedBy = store.StatusUsed, decidedAt, "alice"
	checkSame(t, got, want)
	checkSame(t, get(t, s, ap.ID, now), want)
	// A used approval never expires into something else, and is used once.
	if st := get(t, s, ap.ID, now.Add(2*ttl)).Status; st != store.StatusUsed {
		t.Errorf("a used approval later reads %q, want used", st)
	}
	if c, ok, err := s.ConsumeApproval(ctx, tool, ap.ArgsHash, now); err != nil || ok {
		t.Errorf("second ConsumeApproval = %q, %v, %v; want false, nil", c.ID, ok, err)
	}
	if _, err := s.DecideApproval(ctx, ap.ID, true, "bob", now); !errors.Is(err, store.ErrNotPending) {
		t.Errorf("DecideApproval of a used approval err = %v, want ErrNotPending", err)
	}
	// The others are untouched.
	if st := get(t, s, pending.ID, now).Status; st != store.StatusPending {
		t.Errorf("pending approval now %q", st)
	}
	if st := get(t, s, denied.ID, now).Status; st != store.StatusDenied {
		t.Errorf("denied approval now %q", st)
	}
}

func testConsumeEachOnce(t *testing.T, s store.Approvals) {
	// Two approvals for the same call allow that call twice, not more.
	ctx := context.Background()
	const tool, args = "run_command", `{"cmd":"make"}`
	first := approval("ap-1", tool, args, t0)
	second := approval("ap-2", tool, args, t0.Add(time.Second))
	create(t, s, first, second)
	decide(t, s, first.ID, true, "alice", t0.Add(time.Minute))
	decide(t, s, second.ID, true, "bob", t0.Add(time.Minute))
	now := t0.Add(2 * time.Minute)
	var got []string
	for range 3 {
		a, ok, err := s.ConsumeApproval(ctx, tool, hash(tool, args), now)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = append(got, a.ID)
		}
	}
	slices.Sort(got)
	if want := []string{"ap-1", "ap-2"}; !slices.Equal(got, want) {
		t.Errorf("consumed %q, want %q", got, want)
	}
}

func testConcurrentConsume(t *testing.T, s store.Approvals) {
	const tool, args = "write_file", `{"path":"race.txt"}`
	a := approval("ap-race", tool, args, t0)
	create(t, s, a)
	decide(t, s, a.ID, true, "alice", t0.Add(time.Minute))
	now := t0.Add(2 * time.Minute)

	type outcome struct {
		id  string
		ok  bool
		err error
	}
	results := race(func(int) outcome {
		c, ok, err := s.ConsumeApproval(context.Background(), tool, a.ArgsHash, now)
		return outcome{c.ID, ok, err}
	})
	wins := 0
	for _, r := range results {
		if r.err != nil {
			t.Errorf("ConsumeApproval: %v", r.err)
		}
		if r.ok {
			wins++
			if r.id != a.ID {
				t.Errorf("the winner consumed %q, want %q", r.id, a.ID)
			}
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d concurrent ConsumeApproval calls won, want exactly 1", wins, Contenders)
	}
	if st := get(t, s, a.ID, now).Status; st != store.StatusUsed {
		t.Errorf("after the race the approval is %q, want used", st)
	}
}

func testConcurrentDecide(t *testing.T, s store.Approvals) {
	a := approval("ap-decide-race", "write_file", `{"path":"race.txt"}`, t0)
	create(t, s, a)
	now := t0.Add(time.Minute)

	type outcome struct {
		a   store.Approval
		err error
	}
	results := race(func(i int) outcome {
		d, err := s.DecideApproval(context.Background(), a.ID, i%2 == 0, fmt.Sprintf("person-%d", i), now)
		return outcome{d, err}
	})
	var winner *store.Approval
	for i, r := range results {
		switch {
		case r.err == nil:
			if winner != nil {
				t.Errorf("person-%d also decided, after %s", i, winner.DecidedBy)
			}
			winner = &results[i].a
		case !errors.Is(r.err, store.ErrNotPending):
			t.Errorf("person-%d: err = %v, want nil or ErrNotPending", i, r.err)
		}
	}
	if winner == nil {
		t.Fatal("no concurrent DecideApproval succeeded")
	}
	got := get(t, s, a.ID, now)
	if got.Status != winner.Status || got.DecidedBy != winner.DecidedBy {
		t.Errorf("stored decision %q by %q, but the winner was told %q by %q", got.Status, got.DecidedBy, winner.Status, winner.DecidedBy)
	}
}

// race runs f in Contenders goroutines released together and returns their
// results, indexed by goroutine.
func race[T any](f func(i int) T) []T {
	results := make([]T, Contenders)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range Contenders {
		done.Go(func() {
			start.Wait()
			results[i] = f(i)
		})
	}
	start.Done()
	done.Wait()
	return results
}
