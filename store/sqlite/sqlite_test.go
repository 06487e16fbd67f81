package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/storetest"
)

func open(t *testing.T, path string, opts *Options) *DB {
	t.Helper()
	db, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

func TestApprovals(t *testing.T) {
	storetest.TestApprovals(t, func(t *testing.T) store.Approvals {
		return open(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	})
}

var t0 = time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)

func pending(id, tool, args string, created time.Time) store.Approval {
	return store.Approval{
		ID: id, Tool: tool, Args: json.RawMessage(args), ArgsHash: "hash:" + tool + args,
		Status: store.StatusPending, Created: created, Expires: created.Add(store.DefaultApprovalTTL),
	}
}

// TestTwoHandles: two DBs on one file stand for two airlock processes: the
// one that parked the call, and the console where a person decides it.
func TestTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	gate, console := open(t, path, nil), open(t, path, nil)
	ctx := context.Background()
	a := pending("ap-1", "write_file", `{"path":"a.txt"}`, t0)
	if err := gate.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	list, err := console.PendingApprovals(ctx, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != a.ID {
		t.Fatalf("the console lists %+v, want %q", list, a.ID)
	}
	if _, err := console.DecideApproval(ctx, a.ID, true, "alice", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := gate.DecideApproval(ctx, a.ID, false, "bob", t0.Add(time.Minute)); !errors.Is(err, store.ErrNotPending) {
		t.Errorf("deciding again from the other handle: err = %v, want ErrNotPending", err)
	}
	got, ok, err := gate.ConsumeApproval(ctx, a.Tool, a.ArgsHash, t0.Add(2*time.Minute))
	if err != nil || !ok || got.ID != a.ID || got.DecidedBy != "alice" {
		t.Fatalf("ConsumeApproval = %+v, %v, %v; want %q decided by alice", got, ok, err, a.ID)
	}
	if _, ok, err := console.ConsumeApproval(ctx, a.Tool, a.ArgsHash, t0.Add(2*time.Minute)); err != nil || ok {
		t.Errorf("consuming again from the other handle = %v, %v; want false", ok, err)
	}
	if got, err := console.Approval(ctx, a.ID, t0.Add(2*time.Minute)); err != nil || got.Status != store.StatusUsed {
		t.Errorf("the console reads %q, %v; want used", got.Status, err)
	}
}

// helperEnv names the file a re-executed test binary races on; see
// TestHelperConsume.
const helperEnv = "AIRLOCK_SQLITE_CONSUME_HELPER"

// TestProcessesConsumeOnce races real processes, each with its own SQLite
// library state, for one approved approval: exactly one may win.
func TestProcessesConsumeOnce(t *testing.T) {
	const processes = 6
	path := filepath.Join(t.TempDir(), "airlock.db")
	db := open(t, path, nil)
	ctx := context.Background()
	a := pending("ap-race", "run_command", `{"cmd":"make"}`, t0)
	if err := db.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DecideApproval(ctx, a.ID, true, "alice", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	cmds := make([]*exec.Cmd, processes)
	outs := make([]*bytes.Buffer, processes)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestHelperConsume$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), helperEnv+"="+path)
		outs[i] = new(bytes.Buffer)
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	wins := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i])
		}
		switch out := outs[i].String(); {
		case strings.Contains(out, "consumed=true"):
			wins++
		case !strings.Contains(out, "consumed=false"):
			t.Errorf("process %d printed no outcome:\n%s", i, out)
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d processes consumed the approval, want exactly 1", wins, processes)
	}
	if got, err := db.Approval(ctx, a.ID, t0.Add(2*time.Minute)); err != nil || got.Status != store.StatusUsed {
		t.Errorf("after the race: %q, %v; want used", got.Status, err)
	}
}

// TestHelperConsume is the child of TestProcessesConsumeOnce; run directly
// it has nothing to do.
func TestHelperConsume(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		return
	}
	db := open(t, path, nil)
	_, ok, err := db.ConsumeApproval(context.Background(), "run_command", `hash:run_command{"cmd":"make"}`, t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("consumed=%v\n", ok)
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	ctx := context.Background()
	a := pending("ap-1", "write_file", `{"path":"a.txt"}`, t0)
	a.Session, a.Rule, a.Reason = "s1", "writes-ask", "a write"
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	want, err := db.DecideApproval(ctx, a.ID, true, "alice", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for range 2 { // reopening twice migrates nothing again
		db = open(t, path, nil)
		got, err := db.Approval(ctx, a.ID, t0.Add(2*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want.Status || got.DecidedBy != want.DecidedBy || !got.Decided.Equal(want.Decided) ||
			got.Session != a.Session || got.Reason != a.Reason || string(got.Args) != string(a.Args) {
			t.Errorf("after reopening: %+v, want %+v", got, want)
		}
		var versions, max int
		if err := db.sql.QueryRow("SELECT COUNT(*), MAX(version) FROM schema_version").Scan(&versions, &max); err != nil {
			t.Fatal(err)
		}
		if versions != len(migrations) || max != len(migrations) {
			t.Errorf("schema_version holds %d rows up to %d, want %d", versions, max, len(migrations))
		}
		db.Close()
	}
}

func TestOpenRefuses(t *testing.T) {
	sqliteHeader := "SQLite format 3\x00"
	for _, tc := range []struct {
		name    string
		content string // written to the file first; "" leaves it missing
		dir     bool   // make the path a directory instead
		opts    *Options
		want    error // nil: any error
	}{
		{name: "text file", content: strings.Repeat("not a database\n", 300), want: ErrNotDatabase},
		{name: "short file", content: "x", want: ErrNotDatabase},
		{name: "sqlite header, garbage after", content: sqliteHeader + strings.Repeat("\xff", 4096-len(sqliteHeader)), want: ErrNotDatabase},
		{name: "directory", dir: true},
		{name: "negative busy timeout", opts: &Options{BusyTimeout: -time.Second}},
		{name: "negative max open conns", opts: &Options{MaxOpenConns: -1}},
		{name: "negative max pending", opts: &Options{MaxPending: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "airlock.db")
			if tc.dir {
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			db, err := Open(path, tc.opts)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "store/sqlite: opening "+path+": ") {
				t.Errorf("err = %q does not name the file", err)
			}
			if tc.content != "" {
				if got, _ := os.ReadFile(path); string(got) != tc.content {
					t.Error("Open changed a file it refused")
				}
			}
		})
	}
	if _, err := Open("", nil); err == nil {
		t.Error("Open(\"\") succeeded")
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db := open(t, path, nil)
	if _, err := db.sql.Exec("INSERT INTO schema_version (version, applied) VALUES (?, 0)", len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, nil); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("err = %v, want ErrSchemaVersion", err)
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "airlock")
	path := filepath.Join(dir, "airlock.db")
	db := open(t, path, nil)
	// A write brings the -wal file into being while the DB is open.
	if err := db.CreateApproval(context.Background(), pending("ap-1", "write_file", `{}`, t0)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{
		{filepath.Dir(dir), 0o700 | os.ModeDir},
		{dir, 0o700 | os.ModeDir},
		{path, 0o600},
		{path + "-wal", 0o600},
		{path + "-shm", 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != tc.want {
			t.Errorf("%s: mode %v, want %v", tc.path, got, tc.want)
		}
	}
	var mode string
	if err := db.sql.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := db.sql.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
}

func TestPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%20 d", "air?lock.db")
	db := open(t, path, nil)
	if err := db.CreateApproval(context.Background(), pending("ap-1", "write_file", `{}`, t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file is not where it was asked for: %v", err)
	}
}

func TestCreateApprovalRefuses(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	good := pending("ap-ok", "write_file", `{"path":"a"}`, t0)
	for _, tc := range []struct {
		name   string
		change func(a *store.Approval)
	}{
		{"empty id", func(a *store.Approval) { a.ID = "" }},
		{"empty tool", func(a *store.Approval) { a.Tool = "" }},
		{"empty hash", func(a *store.Approval) { a.ArgsHash = "" }},
		{"empty args", func(a *store.Approval) { a.Args = nil }},
		{"invalid args", func(a *store.Approval) { a.Args = json.RawMessage(`{"path":`) }},
		{"zero created", func(a *store.Approval) { a.Created = time.Time{} }},
		{"zero expires", func(a *store.Approval) { a.Expires = time.Time{} }},
		{"expires past 2262", func(a *store.Approval) { a.Expires = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"already approved", func(a *store.Approval) { a.Status = store.StatusApproved }},
		{"already used", func(a *store.Approval) { a.Status = store.StatusUsed }},
	} {
		a := good
		a.ID = "ap-" + strings.ReplaceAll(tc.name, " ", "-")
		tc.change(&a)
		if err := db.CreateApproval(context.Background(), a); err == nil {
			t.Errorf("%s: CreateApproval succeeded", tc.name)
		}
	}
	if err := db.CreateApproval(context.Background(), good); err != nil {
		t.Errorf("the unchanged approval: %v", err)
	}
	if _, err := db.Approval(context.Background(), "ap-1", time.Time{}); err == nil {
		t.Error("Approval at the zero time succeeded")
	}
}

func TestMaxPending(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "airlock.db"), &Options{MaxPending: 2})
	ctx := context.Background()
	for i, tc := range []struct {
		created time.Time
		want    error
	}{
		{t0, nil},
		{t0.Add(time.Second), nil},
		{t0.Add(2 * time.Second), ErrTooManyPending},
		// Once the first two have expired, there is room again.
		{t0.Add(store.DefaultApprovalTTL + time.Second), nil},
		{t0.Add(store.DefaultApprovalTTL + 2*time.Second), nil},
		{t0.Add(store.DefaultApprovalTTL + 3*time.Second), ErrTooManyPending},
	} {
		a := pending(fmt.Sprintf("ap-%d", i), "write_file", fmt.Sprintf(`{"n":%d}`, i), tc.created)
		if err := db.CreateApproval(ctx, a); !errors.Is(err, tc.want) {
			t.Errorf("approval %d: err = %v, want %v", i, err, tc.want)
		}
	}
	// Decided approvals do not count.
	if _, err := db.DecideApproval(ctx, "ap-3", false, "alice", t0.Add(store.DefaultApprovalTTL+4*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateApproval(ctx, pending("ap-after-deny", "write_file", `{}`, t0.Add(store.DefaultApprovalTTL+5*time.Second))); err != nil {
		t.Errorf("after a denial: %v", err)
	}
	list, err := db.PendingApprovals(ctx, t0.Add(store.DefaultApprovalTTL+6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(list), 2; got != want {
		t.Errorf("%d pending, want %d", got, want)
	}
}

func TestBusyTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	holder := open(t, path, nil)
	waiter := open(t, path, &Options{BusyTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	tx, err := holder.sql.BeginTx(ctx, nil) // IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = waiter.CreateApproval(ctx, pending("ap-1", "write_file", `{}`, t0))
	if !errors.Is(err, ErrBusy) {
		t.Errorf("err = %v, want ErrBusy", err)
	}
	// Readers are not blocked by a writer in WAL mode.
	if _, err := waiter.PendingApprovals(ctx, t0); err != nil {
		t.Errorf("reading beside a writer: %v", err)
	}
}

// TestPrune: finished approvals older than KeepFinished go; pending,
// approved and recent ones stay.
func TestPrune(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id string, created time.Time, ttl time.Duration) {
		a := store.Approval{ID: id, Tool: "t", Args: json.RawMessage(`{}`), ArgsHash: "h" + id,
			Status: store.StatusPending, Created: created, Expires: created.Add(ttl)}
		if err := db.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	mk("old-denied", t0, 30*24*time.Hour)
	db.DecideApproval(ctx, "old-denied", false, "x", t0.Add(time.Minute))
	mk("old-expired", t0, time.Hour)
	mk("recent-denied", t0.Add(29*24*time.Hour), 30*24*time.Hour)
	db.DecideApproval(ctx, "recent-denied", false, "x", t0.Add(29*24*time.Hour+time.Minute))
	mk("pending", t0.Add(29*24*time.Hour), 30*24*time.Hour)
	now := t0.Add(30 * 24 * time.Hour)
	n, err := db.Prune(ctx, now)
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2", n, err)
	}
	for id, want := range map[string]bool{"old-denied": false, "old-expired": false, "recent-denied": true, "pending": true} {
		_, err := db.Approval(ctx, id, now)
		if got := err == nil; got != want {
			t.Errorf("%s kept = %v, want %v (%v)", id, got, want, err)
		}
	}
}

func TestSessions(t *testing.T) {
	storetest.TestSessions(t, func(t *testing.T) store.Sessions {
		return open(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	})
}

// TestObserveOrderTwoHandles: two DBs on one file, standing for two
// processes, observe for one session while a reader follows it.
func TestObserveOrderTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	a, b := open(t, path, nil), open(t, path, nil)
	storetest.CheckObserveOrder(t, a, a, b)
}

func BenchmarkObserve(b *testing.B) { storetest.BenchmarkObserve(b, openBench(b)) }

func BenchmarkState(b *testing.B) { storetest.BenchmarkState(b, openBench(b)) }

func BenchmarkChargeSession(b *testing.B) { storetest.BenchmarkChargeSession(b, openBench(b)) }

func TestRuns(t *testing.T) {
	storetest.TestRuns(t, func(t *testing.T) store.Runs {
		return open(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	})
}

// TestRunNanoseconds: the file keeps a run's Updated to the nanosecond,
// as it keeps every other time.
func TestRunNanoseconds(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	ctx := context.Background()
	r := store.Run{Session: "ns", State: store.RunRunning, Updated: t0.Add(123456789 * time.Nanosecond)}
	if err := db.SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := db.Run(ctx, "ns")
	if err != nil || !got.Updated.Equal(r.Updated) {
		t.Errorf("Run = %v, %v; want Updated %v", got.Updated, err, r.Updated)
	}
}

func TestLedger(t *testing.T) {
	storetest.TestLedger(t, func(t *testing.T) store.Ledger {
		return open(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	})
}

func BenchmarkLedger(b *testing.B) { storetest.BenchmarkLedger(b, openBench(b)) }

// openBench opens a fresh file for a benchmark, closed when it ends.
func openBench(b *testing.B) *DB {
	db, err := Open(filepath.Join(b.TempDir(), "airlock.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// FuzzLedger replays operation sequences against SQLite and the shared
// rules (storetest.CheckTransitions).
func FuzzLedger(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0x00, 0, 0, 0x01, 1, 3, 0x00, 2},          // acquire, refused acquire, complete
		{0, 0x00, 0, 0, 0x01, 4, 2, 0x00, 0},          // acquire, takeover at lease, stale renew
		{0, 0x00, 0, 4, 0x00, 0, 0, 0x01, 1, 5, 0, 0}, // acquire, retryable failure, retry, read
		{0, 0x04, 0, 0, 0x00, 5, 5, 0x10, 0},          // other fingerprint past retention, read another key
	} {
		f.Add(seed)
	}
	db, err := Open(filepath.Join(f.TempDir(), "fuzz.db"), &Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, ops []byte) {
		storetest.CheckTransitions(t, db, fmt.Sprintf("fuzz-%d-", n.Add(1)), ops)
	})
}

func TestBackendPrune(t *testing.T) {
	storetest.TestPrune(t, func(t *testing.T) store.Backend {
		return open(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	})
}

// TestUpgradeBeforeRemembered: a file made before remembered approvals
// (schema version 4) migrates with its approvals kept; one pending from
// before carries no scope hash, so it can be approved once but not
// remembered.
func TestUpgradeBeforeRemembered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	ctx := context.Background()
	fileAt(t, path, 4, fmt.Sprintf(`INSERT INTO approvals (id, tool, args, args_hash, status, created, expires)
		VALUES ('ap-old', 'write_file', '{}', 'h', 'pending', %d, %d)`, t0.UnixNano(), t0.Add(time.Hour).UnixNano()))

	db := open(t, path, nil)
	a, err := db.Approval(ctx, "ap-old", t0)
	if err != nil || a.Status != store.StatusPending || a.SessionHash != "" || a.WorkspaceHash != "" {
		t.Fatalf("the old approval after the upgrade = %+v, %v", a, err)
	}
	if _, err := db.RememberApproval(ctx, "ap-old", store.ScopeWorkspace, "alice", t0, t0.Add(store.RememberFor)); !errors.Is(err, store.ErrCannotRemember) {
		t.Errorf("remembering an approval from before the upgrade: %v, want ErrCannotRemember", err)
	}
	if _, err := db.DecideApproval(ctx, "ap-old", true, "alice", t0); err != nil {
		t.Errorf("approving it once: %v", err)
	}
}

// TestUpgradeBeforeObservations: a file made before observations (schema
// version 5) migrates with its sessions kept, unflagged and observing
// nothing; they then observe, and stay killed, as any other.
func TestUpgradeBeforeObservations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	fileAt(t, path, 5, fmt.Sprintf(`INSERT INTO sessions (id, step, tokens, micro_usd, mode, killed, created, updated)
		VALUES ('s-old', 2, 300, 4000, 'plan', 1, %d, %d)`, t0.UnixNano(), t0.Add(time.Minute).UnixNano()))

	db := open(t, path, nil)
	old := store.Session{ID: "s-old", Step: 2, Tokens: 300, MicroUSD: 4000, Mode: "plan", Killed: true, Created: t0, Updated: t0.Add(time.Minute)}
	storetest.CheckUpgradedSession(t, db, old, t0.Add(time.Hour))
}

// fileAt makes the file at path as an airlock that knew schema version
// before left it, holding what inserts add.
func fileAt(t *testing.T, path string, before int, inserts ...string) {
	t.Helper()
	if err := os.WriteFile(path, nil, fileMode); err != nil {
		t.Fatal(err)
	}
	old, err := sql.Open("sqlite", dsn(path, DefaultBusyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	stmts := append([]string{`CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY, applied INTEGER NOT NULL) STRICT`}, migrations[:before]...)
	for v := 1; v <= before; v++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO schema_version (version, applied) VALUES (%d, 0)", v))
	}
	for _, s := range append(stmts, inserts...) {
		if _, err := old.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestPins(t *testing.T) {
	storetest.TestPins(t, func(t *testing.T) store.Pins {
		return open(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	})
}

// TestPinRaceTwoHandles: two DBs on one file, standing for two processes,
// race to add and to update pins.
func TestPinRaceTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	storetest.CheckPinRace(t, open(t, path, nil), open(t, path, nil))
}

// TestUpgradeBeforePins: a file made before pins (schema version 7)
// migrates with its sessions kept, and then holds pins.
func TestUpgradeBeforePins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	fileAt(t, path, 7, fmt.Sprintf(`INSERT INTO sessions (id, step, created, updated) VALUES ('s-old', 2, %d, %d)`,
		t0.UnixNano(), t0.UnixNano()))
	db := open(t, path, nil)
	ctx := context.Background()
	if s, err := db.Session(ctx, "s-old"); err != nil || s.Step != 2 {
		t.Errorf("the old session after the upgrade = %+v, %v", s, err)
	}
	p := store.Pin{PinKey: store.PinKey{Server: "srv", Kind: store.PinTool, Name: "t"}, Hash: "h",
		Definition: json.RawMessage(`{"name":"t"}`), Accepted: true, Created: t0, Updated: t0}
	if got, added, err := db.AddPin(ctx, p); err != nil || !added || got.Version != 1 {
		t.Errorf("AddPin after the upgrade = %+v, %v, %v", got, added, err)
	}
}

// TestSessionsAfterClose: the session calls that run prepared statements
// fail after Close, as every other call does, rather than panic or still
// reach the file.
func TestSessionsAfterClose(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "airlock.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.ChargeSession(ctx, "s", store.Charge{Steps: 1}, t0); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	obs := []store.Observation{{Source: "web", Value: "https://example.com/"}}
	for name, call := range map[string]func() error{
		"State":         func() error { _, err := db.State(ctx, "s", 0); return err },
		"Session":       func() error { _, err := db.Session(ctx, "s"); return err },
		"KillAll":       func() error { _, err := db.KillAll(ctx); return err },
		"ChargeSession": func() error { _, err := db.ChargeSession(ctx, "s", store.Charge{Steps: 1}, t0); return err },
		"Observe":       func() error { return db.Observe(ctx, "s", obs, store.MarkTainted, t0) },
	} {
		if err := call(); err == nil {
			t.Errorf("%s after Close = nil error, want one", name)
		}
	}
}
