package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/storetest"
)

// testURL is the server the tests use: $AIRLOCK_TEST_REDIS, else the
// development machine's local Redis.
func testURL() string {
	if u := os.Getenv("AIRLOCK_TEST_REDIS"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// uniquePrefix is a prefix no other test, nor another run, uses.
func uniquePrefix() string {
	var b [6]byte
	rand.Read(b[:])
	return "airlock-test-" + hex.EncodeToString(b[:]) + ":"
}

// openTest opens db under a fresh prefix whose keys are deleted when the
// test ends. An unreachable server fails the test: it never skips.
func openTest(t testing.TB, prefix string) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := Open(ctx, testURL(), &Options{Prefix: prefix})
	if err != nil {
		t.Fatalf("Redis at %s is needed: %v\nstart it with scripts/start-services.sh, or set AIRLOCK_TEST_REDIS", testURL(), err)
	}
	t.Cleanup(func() {
		if err := db.DeleteAll(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return db
}

// openOther opens another client on prefix, as another process would,
// closed when the test ends; openTest's handle removes the data.
func openOther(t *testing.T, prefix string) *DB {
	t.Helper()
	db, err := Open(context.Background(), testURL(), &Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestApprovals(t *testing.T) {
	storetest.TestApprovals(t, func(t *testing.T) store.Approvals { return openTest(t, uniquePrefix()) })
}

func TestSessions(t *testing.T) {
	storetest.TestSessions(t, func(t *testing.T) store.Sessions { return openTest(t, uniquePrefix()) })
}

// TestObserveOrderTwoHandles: two clients on one prefix, standing for two
// processes, observe for one session while a reader follows it.
func TestObserveOrderTwoHandles(t *testing.T) {
	prefix := uniquePrefix()
	a, b := openTest(t, prefix), openOther(t, prefix)
	storetest.CheckObserveOrder(t, a, a, b)
}

func BenchmarkObserve(b *testing.B) {
	storetest.BenchmarkObserve(b, openTest(b, uniquePrefix()))
}

func BenchmarkState(b *testing.B) {
	storetest.BenchmarkState(b, openTest(b, uniquePrefix()))
}

func TestRuns(t *testing.T) {
	storetest.TestRuns(t, func(t *testing.T) store.Runs { return openTest(t, uniquePrefix()) })
}

func TestLedger(t *testing.T) {
	storetest.TestLedger(t, func(t *testing.T) store.Ledger { return openTest(t, uniquePrefix()) })
}

func TestPins(t *testing.T) {
	storetest.TestPins(t, func(t *testing.T) store.Pins { return openTest(t, uniquePrefix()) })
}

// TestPinRaceTwoHandles: two clients on one prefix, standing for two
// processes, race to add and to update pins.
func TestPinRaceTwoHandles(t *testing.T) {
	prefix := uniquePrefix()
	a, b := openTest(t, prefix), openOther(t, prefix)
	storetest.CheckPinRace(t, a, b)
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, url string }{
		{"not redis", "http://127.0.0.1:6379/"},
		{"glob in prefix", testURL() + "?prefix=a*"},
		{"bad query", testURL() + "?prefix=a;b"},
	} {
		if db, err := Open(ctx, tc.url, nil); err == nil {
			db.Close()
			t.Errorf("%s: Open succeeded", tc.name)
		}
	}
	_, err := Open(ctx, "redis://:hunter2@127.0.0.1:1/0?dial_timeout=2s", nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v; want an error without the password", err)
	}
}

func TestURLPrefix(t *testing.T) {
	p := uniquePrefix()
	db, err := Open(context.Background(), testURL()+"?prefix="+p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.DeleteAll(context.Background())
	if db.prefix != p {
		t.Errorf("prefix %q, want %q", db.prefix, p)
	}
}

// TestTimeRange: times Lua cannot hold exactly are refused, not rounded.
func TestTimeRange(t *testing.T) {
	db := openTest(t, uniquePrefix())
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := db.ChargeSession(context.Background(), "s", store.Charge{Steps: 1}, far); err == nil {
		t.Error("a charge in 2300 was accepted")
	}
	if err := db.SaveRun(context.Background(), store.Run{Session: "s", State: store.RunRunning, Updated: far}); err == nil {
		t.Error("a run updated in 2300 was saved")
	}
}

func TestPrune(t *testing.T) {
	db := openTest(t, uniquePrefix())
	ctx := context.Background()
	t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	a := store.Approval{ID: "old", Tool: "t", Args: []byte(`{}`), ArgsHash: "h", Created: t0, Expires: t0.Add(time.Hour)}
	if err := db.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	for i := range PruneBatch + 10 { // more than one script's batch
		acq := store.LedgerAcquire{Key: "k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String(),
			Fingerprint: "f", Owner: "o", Token: "t", Now: t0, Lease: t0.Add(time.Second), Expires: t0.Add(time.Hour)}
		if _, _, err := db.AcquireLedgerKey(ctx, acq); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.Prune(ctx, t0.Add(time.Hour)); err != nil || n != PruneBatch+10 {
		t.Errorf("Prune at the ledger entries' expiry = %d, %v; want %d", n, err, PruneBatch+10)
	}
	if n, err := db.Prune(ctx, t0.Add(store.KeepFinished+2*time.Hour)); err != nil || n != 1 {
		t.Errorf("Prune past KeepFinished = %d, %v; want 1", n, err)
	}
	if n, _ := db.c.Exists(ctx, db.prefix+"ap:all", db.prefix+"ap:i:pending", db.prefix+"l:expires").Result(); n != 0 {
		t.Errorf("%d index keys remain after pruning everything", n)
	}
}

// TestPruneSessions: sessions go in PruneBatch steps until none is left
// before the cut, taking their index entries with them; a session whose
// record is newer than its index entry (written by an airlock that kept no
// index) stays, its entry moved up to its record.
func TestPruneSessions(t *testing.T) {
	db := openTest(t, uniquePrefix())
	ctx := context.Background()
	t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range PruneBatch + 10 { // more than one script's batch
		if _, err := db.ChargeSession(ctx, fmt.Sprintf("s-%d", i), store.Charge{Steps: 1}, t0); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			obs := []store.Observation{{Source: "web", Value: fmt.Sprint("v-", i)}}
			if err := db.Observe(ctx, fmt.Sprintf("s-%d", i), obs, store.MarkFlagged, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.KillSession(ctx, "behind", true, t0); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(store.KeepSessions)
	if err := db.c.HSet(ctx, db.sessionKey("behind"), "updated", later.UnixMicro()).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Prune(ctx, t0.Add(store.KeepSessions)); err != nil || n != 0 {
		t.Errorf("Prune at the cut = %d, %v; want 0", n, err)
	}
	if n, err := db.Prune(ctx, t0.Add(store.KeepSessions+time.Microsecond)); err != nil || n != PruneBatch+10 {
		t.Errorf("Prune past the cut = %d, %v; want %d", n, err, PruneBatch+10)
	}
	if s, err := db.Session(ctx, "behind"); err != nil || !s.Killed || !s.Updated.Equal(later) {
		t.Errorf(`Session("behind") = %+v, %v; want it kept, killed, updated at %v`, s, err, later)
	}
	ids, err := db.c.ZRangeWithScores(ctx, db.sessionIndex(), 0, -1).Result()
	if err != nil || len(ids) != 1 || ids[0].Member != "behind" || int64(ids[0].Score) != later.UnixMicro() {
		t.Errorf("the session index after Prune = %v, %v; want only behind at %d", ids, err, later.UnixMicro())
	}
	// The observations went with their sessions; the seq counter stays.
	left, err := db.c.Keys(ctx, db.prefix+"s:*").Result()
	if err != nil || len(left) != 3 {
		t.Errorf("keys after Prune = %q, %v; want the one session, the index and the seq counter", left, err)
	}
	if seq, err := db.c.Get(ctx, db.seqKey()).Int64(); err != nil || seq != (PruneBatch+10)/2 {
		t.Errorf("the seq counter after Prune = %d, %v; want %d", seq, err, (PruneBatch+10)/2)
	}
}

func BenchmarkLedger(b *testing.B) {
	storetest.BenchmarkLedger(b, openTest(b, uniquePrefix()))
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
	db := openTest(f, uniquePrefix())
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, ops []byte) {
		storetest.CheckTransitions(t, db, fmt.Sprintf("fuzz-%d-%d-", os.Getpid(), n.Add(1)), ops)
	})
}

func TestBackendPrune(t *testing.T) {
	storetest.TestPrune(t, func(t *testing.T) store.Backend { return openTest(t, uniquePrefix()) })
}
