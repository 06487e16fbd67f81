package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/storetest"
)

// testURL is the server the tests use: $AIRLOCK_TEST_POSTGRES, else the
// development machine's local Postgres.
func testURL() string {
	if u := os.Getenv("AIRLOCK_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// uniqueSchema is a schema no other test, nor another run, uses.
func uniqueSchema() string {
	var b [6]byte
	rand.Read(b[:])
	return "airlock_test_" + hex.EncodeToString(b[:])
}

// openTest opens db in a fresh schema, dropped when the test ends. An
// unreachable server fails the test: it never skips.
func openTest(t testing.TB, schema string) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := Open(ctx, testURL(), &Options{Schema: schema})
	if err != nil {
		t.Fatalf("Postgres at %s is needed: %v\nstart it with scripts/start-services.sh, or set AIRLOCK_TEST_POSTGRES", testURL(), err)
	}
	t.Cleanup(func() {
		if err := db.DropSchema(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return db
}

// openOther opens another pool on schema, as another process would,
// closed when the test ends; openTest's handle removes the data.
func openOther(t *testing.T, schema string) *DB {
	t.Helper()
	db, err := Open(context.Background(), testURL(), &Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestApprovals(t *testing.T) {
	storetest.TestApprovals(t, func(t *testing.T) store.Approvals { return openTest(t, uniqueSchema()) })
}

func TestSessions(t *testing.T) {
	storetest.TestSessions(t, func(t *testing.T) store.Sessions { return openTest(t, uniqueSchema()) })
}

// TestObserveOrderTwoHandles: two pools on one schema, standing for two
// replicas, observe for one session while a reader follows it.
func TestObserveOrderTwoHandles(t *testing.T) {
	schema := uniqueSchema()
	a, b := openTest(t, schema), openOther(t, schema)
	storetest.CheckObserveOrder(t, a, a, b)
}

func BenchmarkObserve(b *testing.B) {
	storetest.BenchmarkObserve(b, openTest(b, uniqueSchema()))
}

func BenchmarkState(b *testing.B) {
	storetest.BenchmarkState(b, openTest(b, uniqueSchema()))
}

func TestRuns(t *testing.T) {
	storetest.TestRuns(t, func(t *testing.T) store.Runs { return openTest(t, uniqueSchema()) })
}

func TestLedger(t *testing.T) {
	storetest.TestLedger(t, func(t *testing.T) store.Ledger { return openTest(t, uniqueSchema()) })
}

func TestPins(t *testing.T) {
	storetest.TestPins(t, func(t *testing.T) store.Pins { return openTest(t, uniqueSchema()) })
}

// TestPinRaceTwoHandles: two pools on one schema, standing for two
// replicas, race to add and to update pins.
func TestPinRaceTwoHandles(t *testing.T) {
	schema := uniqueSchema()
	a, b := openTest(t, schema), openOther(t, schema)
	storetest.CheckPinRace(t, a, b)
}

// TestTwoHandles: two pools on one schema stand for two replicas; the
// second Open migrates nothing again and sees the first one's writes.
func TestTwoHandles(t *testing.T) {
	schema := uniqueSchema()
	a := openTest(t, schema)
	ctx := context.Background()
	b, err := Open(ctx, testURL()+"&schema="+schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.schema != schema {
		t.Errorf("the URL's schema parameter gave schema %q, want %q", b.schema, schema)
	}
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := a.ChargeSession(ctx, "s", store.Charge{Steps: 1}, now); err != nil {
		t.Fatal(err)
	}
	if s, err := b.Session(ctx, "s"); err != nil || s.Step != 1 {
		t.Errorf("the other handle reads %+v, %v", s, err)
	}
	var versions int
	if err := b.pool.QueryRow(ctx, "SELECT COUNT(*) FROM schema_version").Scan(&versions); err != nil || versions != len(migrations) {
		t.Errorf("schema_version has %d rows, %v; want %d", versions, err, len(migrations))
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, url string }{
		{"not a URL scheme", "mysql://localhost/test"},
		{"bad schema", testURL() + "&schema=Robert'); DROP TABLE x;--"},
		{"upper-case schema", testURL() + "&schema=Airlock"},
	} {
		if db, err := Open(ctx, tc.url, nil); err == nil {
			db.Close()
			t.Errorf("%s: Open succeeded", tc.name)
		}
	}
	if _, err := Open(ctx, testURL(), &Options{MaxConns: -1}); err == nil {
		t.Error("negative MaxConns accepted")
	}
	// A password never shows in the error.
	_, err := Open(ctx, "postgres://u:hunter2@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v; want an error without the password", err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	schema := uniqueSchema()
	db := openTest(t, schema)
	ctx := context.Background()
	if _, err := db.pool.Exec(ctx, "INSERT INTO schema_version (version, applied) VALUES ($1, now())", len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, testURL(), &Options{Schema: schema}); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("err = %v, want ErrSchemaVersion", err)
	}
}

func TestMaxPending(t *testing.T) {
	db := openTest(t, uniqueSchema())
	db.maxPending = 2
	ctx := context.Background()
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, want := range []error{nil, nil, ErrTooManyPending} {
		a := store.Approval{ID: string(rune('a' + i)), Tool: "t", Args: []byte(`{}`), ArgsHash: "h",
			Created: now, Expires: now.Add(time.Minute)}
		if err := db.CreateApproval(ctx, a); !errors.Is(err, want) {
			t.Errorf("approval %d: err = %v, want %v", i, err, want)
		}
	}
}

func TestPrune(t *testing.T) {
	db := openTest(t, uniqueSchema())
	ctx := context.Background()
	t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	a := store.Approval{ID: "old", Tool: "t", Args: []byte(`{}`), ArgsHash: "h", Created: t0, Expires: t0.Add(time.Hour)}
	if err := db.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	acq := store.LedgerAcquire{Key: "k", Fingerprint: "f", Owner: "o", Token: "t", Now: t0, Lease: t0.Add(time.Second), Expires: t0.Add(time.Hour)}
	if _, _, err := db.AcquireLedgerKey(ctx, acq); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Prune(ctx, t0.Add(time.Hour)); err != nil || n != 1 {
		t.Errorf("Prune at the ledger entry's expiry = %d, %v; want 1", n, err)
	}
	if n, err := db.Prune(ctx, t0.Add(store.KeepFinished+2*time.Hour)); err != nil || n != 1 {
		t.Errorf("Prune past KeepFinished = %d, %v; want 1", n, err)
	}
}

func BenchmarkLedger(b *testing.B) {
	storetest.BenchmarkLedger(b, openTest(b, uniqueSchema()))
}

// FuzzLedger replays operation sequences against the server and the shared
// rules (storetest.CheckTransitions); the server must be up, as for every
// test here.
func FuzzLedger(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0x00, 0, 0, 0x01, 1, 3, 0x00, 2},
		{0, 0x00, 0, 0, 0x01, 4, 2, 0x00, 0},
		{0, 0x00, 0, 4, 0x00, 0, 0, 0x01, 1, 5, 0, 0},
		{0, 0x04, 0, 0, 0x00, 5, 5, 0x10, 0},
	} {
		f.Add(seed)
	}
	db := openTest(f, uniqueSchema())
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, ops []byte) {
		storetest.CheckTransitions(t, db, fmt.Sprintf("fuzz-%d-%d-", os.Getpid(), n.Add(1)), ops)
	})
}

func TestBackendPrune(t *testing.T) {
	storetest.TestPrune(t, func(t *testing.T) store.Backend { return openTest(t, uniqueSchema()) })
}

// TestUpgradeBeforeObservations: a schema made before observations
// (version 4) migrates with its sessions kept, unflagged and observing
// nothing; they then observe, and stay killed, as any other.
func TestUpgradeBeforeObservations(t *testing.T) {
	schema := uniqueSchema()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	old, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after openTest's own, if the test got that far
		old.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		old.Close()
	})
	const before = 4
	t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	stmts := append([]string{
		"CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize(),
		"CREATE TABLE schema_version (version integer NOT NULL PRIMARY KEY, applied timestamptz NOT NULL)",
	}, migrations[:before]...)
	for v := 1; v <= before; v++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO schema_version (version, applied) VALUES (%d, now())", v))
	}
	for _, s := range stmts {
		if _, err := old.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := old.Exec(ctx, `INSERT INTO sessions (id, step, tokens, micro_usd, mode, killed, created, updated)
		VALUES ('s-old', 2, 300, 4000, 'plan', true, $1, $2)`, t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	db := openTest(t, schema)
	was := store.Session{ID: "s-old", Step: 2, Tokens: 300, MicroUSD: 4000, Mode: "plan", Killed: true, Created: t0, Updated: t0.Add(time.Minute)}
	storetest.CheckUpgradedSession(t, db, was, t0.Add(time.Hour))
}

// TestPinKeyCollation: the pins' key sorts by bytes whatever collation the
// database has (the test database's may already be C, which would hide a
// key column that lost it).
func TestPinKeyCollation(t *testing.T) {
	schema := uniqueSchema()
	db := openTest(t, schema)
	rows, err := db.pool.Query(context.Background(), `SELECT column_name, COALESCE(collation_name, '') FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'pins' AND column_name IN ('server', 'kind', 'name')`, schema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Column, Collation string }])
	if err != nil || len(got) != 3 {
		t.Fatalf("the key columns = %+v, %v; want 3", got, err)
	}
	for _, c := range got {
		if c.Collation != "C" {
			t.Errorf("column %s is collated %q, want C", c.Column, c.Collation)
		}
	}
}
