package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

// testRemembered runs the remembered-approval part of TestApprovals.
func testRemembered(t *testing.T, open func(t *testing.T) store.Approvals) {
	t.Run("RememberAndUse", func(t *testing.T) { testRememberAndUse(t, open(t)) })
	t.Run("RememberRefusals", func(t *testing.T) { testRememberRefusals(t, open(t)) })
	t.Run("RememberedExpiry", func(t *testing.T) { testRememberedExpiry(t, open(t)) })
	t.Run("Revoke", func(t *testing.T) { testRevoke(t, open(t)) })
	t.Run("MaxRemembered", func(t *testing.T) { testMaxRemembered(t, open(t)) })
	t.Run("ConcurrentRemember", func(t *testing.T) { testConcurrentRemember(t, open(t)) })
	t.Run("ConcurrentUse", func(t *testing.T) { testConcurrentUse(t, open(t)) })
}

// rememberable is a pending approval that carries both scope hashes.
func rememberable(id, tool, args string, created time.Time) store.Approval {
	a := approval(id, tool, args, created)
	a.Session, a.Role, a.Mode, a.Rule, a.Reason = "sess-1", "developer", "ask", "writes-ask", "writes need a person"
	a.SessionHash = hash(tool, "session\x00"+args)
	a.WorkspaceHash = hash(tool, "workspace\x00"+args)
	return a
}

func remember(t *testing.T, s store.Approvals, id string, scope store.Scope, by string, now, expires time.Time) store.Approval {
	t.Helper()
	a, err := s.RememberApproval(context.Background(), id, scope, by, now, expires)
	if err != nil {
		t.Fatalf("RememberApproval(%q, %s): %v", id, scope, err)
	}
	return a
}

func remembered(t *testing.T, s store.Approvals, now time.Time) map[string]store.Remembered {
	t.Helper()
	list, err := s.RememberedApprovals(context.Background(), now)
	if err != nil {
		t.Fatalf("RememberedApprovals: %v", err)
	}
	m := map[string]store.Remembered{}
	for i, r := range list {
		if i > 0 && r.Created.Before(list[i-1].Created) {
			t.Errorf("RememberedApprovals lists %q (created %v) after %q (created %v)", r.ID, r.Created, list[i-1].ID, list[i-1].Created)
		}
		m[r.ID] = r
	}
	return m
}

// checkRemembered compares every field of got with want; times with Equal.
func checkRemembered(t *testing.T, what string, got, want store.Remembered) {
	t.Helper()
	type fields struct {
		ID, Tool, Args, Hash, Session, Role, Mode, Rule, Reason, ApprovedBy, RevokedBy string
		Scope                                                                          store.Scope
		Uses                                                                           int64
	}
	g := fields{got.ID, got.Tool, string(got.Args), got.Hash, got.Session, got.Role, got.Mode, got.Rule, got.Reason, got.ApprovedBy, got.RevokedBy, got.Scope, got.Uses}
	w := fields{want.ID, want.Tool, string(want.Args), want.Hash, want.Session, want.Role, want.Mode, want.Rule, want.Reason, want.ApprovedBy, want.RevokedBy, want.Scope, want.Uses}
	if g != w {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
	checkTime(t, what+" Created", got.Created, want.Created)
	checkTime(t, what+" Expires", got.Expires, want.Expires)
	checkTime(t, what+" LastUsed", got.LastUsed, want.LastUsed)
	checkTime(t, what+" Revoked", got.Revoked, want.Revoked)
}

// rememberedOf is the remembered approval RememberApproval makes of a.
func rememberedOf(a store.Approval, scope store.Scope, by string, now, expires time.Time) store.Remembered {
	return store.Remembered{ID: a.ID, Scope: scope, Tool: a.Tool, Args: a.Args, Hash: a.ScopeHash(scope),
		Session: a.Session, Role: a.Role, Mode: a.Mode, Rule: a.Rule, Reason: a.Reason,
		ApprovedBy: by, Created: now, Expires: expires}
}

func use(t *testing.T, s store.Approvals, scope store.Scope, tool, h string, now time.Time) (store.Remembered, bool) {
	t.Helper()
	r, ok, err := s.UseRemembered(context.Background(), scope, tool, h, now)
	if err != nil {
		t.Fatalf("UseRemembered(%s, %s): %v", scope, tool, err)
	}
	return r, ok
}

func testRememberAndUse(t *testing.T, s store.Approvals) {
	ctx := context.Background()
	const tool, args = "write_file", `{"content":"x","path":"a.txt"}`
	ws := rememberable("ap-ws", tool, args, t0)
	// An id that looks like a backend's own index is a plain id.
	sess := rememberable("all", tool, `{"path":"b.txt"}`, t0.Add(time.Second))
	create(t, s, ws, sess)
	now := t0.Add(time.Minute)
	until := now.Add(store.RememberFor)

	got := remember(t, s, ws.ID, store.ScopeWorkspace, "alice", now, until)
	want := ws
	want.Status, want.Decided, want.DecidedBy = store.StatusApproved, now, "alice"
	checkSame(t, got, want)
	checkSame(t, get(t, s, ws.ID, now), want)
	remember(t, s, sess.ID, store.ScopeSession, "bob", now.Add(time.Second), until)

	// The approval itself is approved as any other: its call runs once
	// through it, and the remembered approval stays.
	if c, ok, err := s.ConsumeApproval(ctx, tool, ws.ArgsHash, now); err != nil || !ok || c.ID != ws.ID {
		t.Errorf("ConsumeApproval of a remembered approval's own = %q, %v, %v", c.ID, ok, err)
	}

	list := remembered(t, s, now.Add(time.Second))
	if len(list) != 2 {
		t.Fatalf("RememberedApprovals = %d, want 2", len(list))
	}
	wantWS := rememberedOf(ws, store.ScopeWorkspace, "alice", now, until)
	checkRemembered(t, "listed "+ws.ID, list[ws.ID], wantWS)
	checkRemembered(t, "listed "+sess.ID, list[sess.ID], rememberedOf(sess, store.ScopeSession, "bob", now.Add(time.Second), until))

	// Used again and again, each use counted; the same hash in another
	// scope, another tool or another hash matches nothing.
	for i := range 3 {
		at := now.Add(time.Duration(i+1) * time.Hour)
		r, ok := use(t, s, store.ScopeWorkspace, tool, ws.WorkspaceHash, at)
		if !ok {
			t.Fatalf("use %d of the remembered approval found none", i+1)
		}
		wantWS.Uses, wantWS.LastUsed = int64(i+1), at
		checkRemembered(t, fmt.Sprintf("use %d", i+1), r, wantWS)
	}
	later := now.Add(4 * time.Hour)
	for _, tc := range []struct {
		name       string
		scope      store.Scope
		tool, hash string
	}{
		{"another scope", store.ScopeSession, tool, ws.WorkspaceHash},
		{"the once hash", store.ScopeWorkspace, tool, ws.ArgsHash},
		{"the session hash", store.ScopeWorkspace, tool, ws.SessionHash},
		{"another tool", store.ScopeWorkspace, "delete_file", ws.WorkspaceHash},
		{"another hash", store.ScopeWorkspace, tool, hash(tool, `{}`)},
		{"empty hash", store.ScopeWorkspace, tool, ""},
		{"once scope", store.ScopeOnce, tool, ws.WorkspaceHash},
	} {
		if r, ok := use(t, s, tc.scope, tc.tool, tc.hash, later); ok {
			t.Errorf("UseRemembered(%s) found %q", tc.name, r.ID)
		}
	}
	if _, ok := use(t, s, store.ScopeSession, tool, sess.SessionHash, later); !ok {
		t.Error("the session-scoped approval was not found by its hash")
	}
	if got := remembered(t, s, later)[ws.ID]; got.Uses != 3 {
		t.Errorf("listed with %d uses, want 3", got.Uses)
	}
}

func testRememberRefusals(t *testing.T, s store.Approvals) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	until := now.Add(store.RememberFor)
	bare := approval("ap-bare", "write_file", `{"n":1}`, t0) // no scope hashes
	decided := rememberable("ap-decided", "write_file", `{"n":2}`, t0)
	ok := rememberable("ap-ok", "write_file", `{"n":3}`, t0)
	create(t, s, bare, decided, ok)
	decide(t, s, decided.ID, false, "alice", now)

	if _, err := s.RememberApproval(ctx, "ap-unknown", store.ScopeWorkspace, "bob", now, until); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RememberApproval(unknown) err = %v, want ErrNotFound", err)
	}
	a, err := s.RememberApproval(ctx, decided.ID, store.ScopeWorkspace, "bob", now, until)
	if !errors.Is(err, store.ErrNotPending) || a.ID != decided.ID || a.Status != store.StatusDenied {
		t.Errorf("RememberApproval(denied) = %q %q, %v; want it as it stands (denied), ErrNotPending", a.ID, a.Status, err)
	}
	for _, scope := range []store.Scope{store.ScopeSession, store.ScopeWorkspace} {
		if _, err := s.RememberApproval(ctx, bare.ID, scope, "bob", now, until); !errors.Is(err, store.ErrCannotRemember) {
			t.Errorf("RememberApproval(no %s hash) err = %v, want ErrCannotRemember", scope, err)
		}
	}
	for _, tc := range []struct {
		name       string
		scope      store.Scope
		now, until time.Time
	}{
		{"scope once", store.ScopeOnce, now, until},
		{"empty scope", "", now, until},
		{"unknown scope", "forever", now, until},
		{"expires at now", store.ScopeWorkspace, now, now},
		{"expires before now", store.ScopeWorkspace, now, now.Add(-time.Hour)},
		{"zero now", store.ScopeWorkspace, time.Time{}, until},
	} {
		if _, err := s.RememberApproval(ctx, ok.ID, tc.scope, "bob", tc.now, tc.until); err == nil {
			t.Errorf("RememberApproval(%s) succeeded", tc.name)
		}
	}
	// Every refusal decided nothing and remembered nothing.
	for _, id := range []string{bare.ID, ok.ID} {
		if st := get(t, s, id, now).Status; st != store.StatusPending {
			t.Errorf("after refused RememberApproval calls, %s is %q, want pending", id, st)
		}
	}
	if list := remembered(t, s, now); len(list) != 0 {
		t.Errorf("refusals remembered %d approvals", len(list))
	}
	// An expired approval cannot be remembered.
	late := ok.Expires
	if a, err := s.RememberApproval(ctx, ok.ID, store.ScopeWorkspace, "bob", late, late.Add(store.RememberFor)); !errors.Is(err, store.ErrNotPending) || a.Status != store.StatusExpired {
		t.Errorf("RememberApproval(expired) = %q, %v; want expired, ErrNotPending", a.Status, err)
	}
}

func testRememberedExpiry(t *testing.T, s store.Approvals) {
	const tool, args = "run_command", `{"command":"make"}`
	a := rememberable("ap-exp", tool, args, t0)
	create(t, s, a)
	now := t0.Add(time.Minute)
	until := now.Add(time.Hour)
	remember(t, s, a.ID, store.ScopeWorkspace, "alice", now, until)
	before := until.Add(-time.Microsecond)
	if _, ok := use(t, s, store.ScopeWorkspace, tool, a.WorkspaceHash, before); !ok {
		t.Error("not found just before its expiry")
	}
	for _, at := range []time.Time{until, until.Add(time.Hour)} {
		if r, ok := use(t, s, store.ScopeWorkspace, tool, a.WorkspaceHash, at); ok {
			t.Errorf("found %q at expires%+v", r.ID, at.Sub(until))
		}
		if list := remembered(t, s, at); len(list) != 0 {
			t.Errorf("listed at expires%+v: %d", at.Sub(until), len(list))
		}
	}
	// Asked at an earlier instant, it was in force.
	if list := remembered(t, s, before); len(list) != 1 {
		t.Errorf("listed just before expiry: %d, want 1", len(list))
	}
}

func testRevoke(t *testing.T, s store.Approvals) {
	ctx := context.Background()
	const tool, args = "write_file", `{"path":"r.txt"}`
	a := rememberable("ap-rev", tool, args, t0)
	other := rememberable("ap-other", tool, `{"path":"o.txt"}`, t0)
	short := rememberable("ap-short", tool, `{"path":"s.txt"}`, t0)
	create(t, s, a, other, short)
	now := t0.Add(time.Minute)
	until := now.Add(store.RememberFor)
	remember(t, s, a.ID, store.ScopeWorkspace, "alice", now, until)
	remember(t, s, other.ID, store.ScopeWorkspace, "alice", now, until)
	remember(t, s, short.ID, store.ScopeWorkspace, "alice", now, now.Add(time.Hour))
	use(t, s, store.ScopeWorkspace, tool, a.WorkspaceHash, now)

	revokedAt := now.Add(2 * time.Minute)
	got, err := s.RevokeRemembered(ctx, a.ID, "bob", revokedAt)
	if err != nil {
		t.Fatalf("RevokeRemembered: %v", err)
	}
	want := rememberedOf(a, store.ScopeWorkspace, "alice", now, until)
	want.Uses, want.LastUsed, want.Revoked, want.RevokedBy = 1, now, revokedAt, "bob"
	checkRemembered(t, "revoked", got, want)
	if r, ok := use(t, s, store.ScopeWorkspace, tool, a.WorkspaceHash, revokedAt); ok {
		t.Errorf("a revoked approval was used: %q", r.ID)
	}
	list := remembered(t, s, revokedAt)
	if _, listed := list[a.ID]; listed || len(list) != 2 {
		t.Errorf("after revoking %s, listed %d: %v", a.ID, len(list), list)
	}
	if _, ok := use(t, s, store.ScopeWorkspace, tool, other.WorkspaceHash, revokedAt); !ok {
		t.Error("revoking one approval ended another")
	}
	again, err := s.RevokeRemembered(ctx, a.ID, "carol", revokedAt.Add(time.Second))
	if !errors.Is(err, store.ErrNotInForce) {
		t.Errorf("second RevokeRemembered err = %v, want ErrNotInForce", err)
	}
	checkRemembered(t, "revoked twice", again, want)
	if _, err := s.RevokeRemembered(ctx, "ap-unknown", "bob", revokedAt); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeRemembered(unknown) err = %v, want ErrNotFound", err)
	}
	if r, err := s.RevokeRemembered(ctx, short.ID, "bob", now.Add(time.Hour)); !errors.Is(err, store.ErrNotInForce) || !r.Revoked.IsZero() {
		t.Errorf("RevokeRemembered(expired) = revoked %v, %v; want not revoked, ErrNotInForce", r.Revoked, err)
	}
	// A revoked one is not in force even asked at an instant before it was
	// revoked: revoking is for good.
	if r, ok := use(t, s, store.ScopeWorkspace, tool, a.WorkspaceHash, now); ok {
		t.Errorf("a revoked approval was used at an earlier instant: %q", r.ID)
	}
}

func testMaxRemembered(t *testing.T, s store.Approvals) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	until := now.Add(store.RememberFor)
	for i := range store.MaxRemembered {
		a := rememberable(fmt.Sprintf("ap-%04d", i), "write_file", fmt.Sprintf(`{"n":%d}`, i), t0)
		create(t, s, a)
		remember(t, s, a.ID, store.ScopeWorkspace, "alice", now, until)
	}
	one := rememberable("ap-one-more", "write_file", `{"n":-1}`, t0)
	create(t, s, one)
	if _, err := s.RememberApproval(ctx, one.ID, store.ScopeWorkspace, "alice", now, until); !errors.Is(err, store.ErrTooManyRemembered) {
		t.Fatalf("RememberApproval beyond MaxRemembered err = %v, want ErrTooManyRemembered", err)
	}
	if st := get(t, s, one.ID, now).Status; st != store.StatusPending {
		t.Errorf("the refused approval is %q, want pending", st)
	}
	// A revoked one makes room.
	if _, err := s.RevokeRemembered(ctx, "ap-0000", "bob", now); err != nil {
		t.Fatal(err)
	}
	remember(t, s, one.ID, store.ScopeWorkspace, "alice", now, until)
	if list := remembered(t, s, now); len(list) != store.MaxRemembered {
		t.Errorf("listed %d, want %d", len(list), store.MaxRemembered)
	}
}

// testConcurrentRemember: of concurrent decisions of one approval, some
// remembering it, exactly one wins, and a remembered approval exists only
// if a remembering one won.
func testConcurrentRemember(t *testing.T, s store.Approvals) {
	a := rememberable("ap-race", "write_file", `{"path":"race.txt"}`, t0)
	create(t, s, a)
	now := t0.Add(time.Minute)
	type outcome struct {
		remember bool
		err      error
	}
	results := race(func(i int) outcome {
		var err error
		switch i % 3 {
		case 0:
			_, err = s.DecideApproval(context.Background(), a.ID, true, "decider", now)
		case 1:
			_, err = s.RememberApproval(context.Background(), a.ID, store.ScopeSession, "session", now, now.Add(store.RememberFor))
		case 2:
			_, err = s.RememberApproval(context.Background(), a.ID, store.ScopeWorkspace, "workspace", now, now.Add(store.RememberFor))
		}
		return outcome{i%3 != 0, err}
	})
	wins, rememberWins := 0, 0
	for i, r := range results {
		switch {
		case r.err == nil:
			wins++
			if r.remember {
				rememberWins++
			}
		case !errors.Is(r.err, store.ErrNotPending):
			t.Errorf("contender %d: %v, want nil or ErrNotPending", i, r.err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d concurrent decisions won, want 1", wins)
	}
	if n := len(remembered(t, s, now)); n != rememberWins {
		t.Errorf("%d remembered approvals, want %d", n, rememberWins)
	}
}

// testConcurrentUse: a remembered approval is not used up: every one of
// concurrent uses finds it, and each is counted.
func testConcurrentUse(t *testing.T, s store.Approvals) {
	const tool = "write_file"
	a := rememberable("ap-use-race", tool, `{"path":"race.txt"}`, t0)
	create(t, s, a)
	now := t0.Add(time.Minute)
	remember(t, s, a.ID, store.ScopeWorkspace, "alice", now, now.Add(store.RememberFor))
	type outcome struct {
		ok  bool
		err error
	}
	results := race(func(int) outcome {
		_, ok, err := s.UseRemembered(context.Background(), store.ScopeWorkspace, tool, a.WorkspaceHash, now)
		return outcome{ok, err}
	})
	for i, r := range results {
		if r.err != nil || !r.ok {
			t.Errorf("contender %d: UseRemembered = %v, %v; want true, nil", i, r.ok, r.err)
		}
	}
	if got := remembered(t, s, now)[a.ID].Uses; got != Contenders {
		t.Errorf("%d uses counted, want %d", got, Contenders)
	}
}
