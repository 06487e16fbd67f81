package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

// TestRuns runs the conformance suite for store.Runs: a run's checkpoint
// reads back exactly as saved, bytes and all, replaces the session's
// earlier one whole, even when saves race, and a run that fails
// store.Run.Validate is never written. open must return a fresh, empty
// store each time it is called. Pruning is in TestPrune.
func TestRuns(t *testing.T, open func(t *testing.T) store.Runs) {
	t.Run("NotFound", func(t *testing.T) { testRunNotFound(t, open(t)) })
	t.Run("RoundTrip", func(t *testing.T) { testRunRoundTrip(t, open(t)) })
	t.Run("Overwrite", func(t *testing.T) { testRunOverwrite(t, open(t)) })
	t.Run("Refusals", func(t *testing.T) { testRunRefusals(t, open(t)) })
	t.Run("MaxCheckpoint", func(t *testing.T) { testRunMaxCheckpoint(t, open(t)) })
	t.Run("SessionsApart", func(t *testing.T) { testRunSessionsApart(t, open(t)) })
	t.Run("ConcurrentSaves", func(t *testing.T) { testConcurrentSaves(t, open(t)) })
}

// oddCheckpoint is JSON no encoder would write: spaces, a duplicate key,
// keys out of order, escapes, a number with trailing zeros and a byte that
// is not UTF-8 inside a string (which json.Valid takes). A backend that
// re-encodes it, or stores it as text that must be UTF-8, changes it.
var oddCheckpoint = json.RawMessage("{ \"z\" : 1.50,\n\t\"a\":[true,null, 2E3],\"a\":\"dup\",\"s\":\"\\u00e9 \xff\\\"\" }")

func saveRun(t *testing.T, s store.Runs, r store.Run) {
	t.Helper()
	if err := s.SaveRun(context.Background(), r); err != nil {
		t.Fatalf("SaveRun(%q): %v", r.Session, err)
	}
}

func readRun(t *testing.T, s store.Runs, session string) store.Run {
	t.Helper()
	r, err := s.Run(context.Background(), session)
	if err != nil {
		t.Fatalf("Run(%q): %v", session, err)
	}
	return r
}

// sameRun reports whether got is want: every field, the checkpoint byte
// for byte (an empty one as nil), Updated as the same instant in UTC.
func sameRun(got, want store.Run) bool {
	return got.Session == want.Session && got.State == want.State && got.Approval == want.Approval &&
		bytes.Equal(got.Checkpoint, want.Checkpoint) && (got.Checkpoint == nil) == (len(want.Checkpoint) == 0) &&
		got.Updated.Equal(want.Updated) && got.Updated.Location() == time.UTC
}

func checkRun(t *testing.T, what string, got, want store.Run) {
	t.Helper()
	if !sameRun(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, showRun(got), showRun(want))
	}
}

// showRun prints a run with its checkpoint quoted, or only its length and
// ends when it is long.
func showRun(r store.Run) string {
	c := fmt.Sprintf("%q", r.Checkpoint)
	if len(r.Checkpoint) > 200 {
		c = fmt.Sprintf("%d bytes %q...%q", len(r.Checkpoint), r.Checkpoint[:40], r.Checkpoint[len(r.Checkpoint)-40:])
	}
	if r.Checkpoint == nil {
		c = "nil"
	}
	return fmt.Sprintf("{Session:%q State:%q Approval:%q Checkpoint:%s Updated:%v}", r.Session, r.State, r.Approval, c, r.Updated)
}

func testRunNotFound(t *testing.T, s store.Runs) {
	if _, err := s.Run(context.Background(), "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run of a session never saved: err = %v, want ErrNotFound", err)
	}
}

func testRunRoundTrip(t *testing.T, s store.Runs) {
	// Updated given in another zone comes back as the same instant in UTC.
	zone := time.FixedZone("UTC-3", -3*3600)
	r := store.Run{
		Session:    "sess-1",
		State:      store.RunWaitingApproval,
		Approval:   "ap-7",
		Checkpoint: oddCheckpoint,
		Updated:    t0.Add(7 * time.Microsecond).In(zone),
	}
	saveRun(t, s, r)
	want := r
	want.Updated = r.Updated.UTC()
	checkRun(t, "read back", readRun(t, s, r.Session), want)

	// A run without a checkpoint or approval reads back with neither.
	bare := store.Run{Session: "sess-2", State: store.RunRunning, Updated: t0}
	saveRun(t, s, bare)
	checkRun(t, "a run with no checkpoint", readRun(t, s, bare.Session), bare)
	empty := store.Run{Session: "sess-3", State: store.RunEnded, Checkpoint: json.RawMessage{}, Updated: t0}
	saveRun(t, s, empty)
	checkRun(t, "a run with an empty checkpoint", readRun(t, s, empty.Session), empty)
}

func testRunOverwrite(t *testing.T, s store.Runs) {
	first := store.Run{Session: "o", State: store.RunWaitingApproval, Approval: "ap-1",
		Checkpoint: json.RawMessage(`{"messages":["a long first checkpoint"],"step":1}`), Updated: t0}
	saveRun(t, s, first)
	// A shorter checkpoint and no approval: nothing of the first stays.
	second := store.Run{Session: "o", State: store.RunRunning, Checkpoint: json.RawMessage(`[2]`), Updated: t0.Add(time.Second)}
	saveRun(t, s, second)
	checkRun(t, "after the second save", readRun(t, s, "o"), second)
	third := store.Run{Session: "o", State: store.RunEnded, Updated: t0.Add(2 * time.Second)}
	saveRun(t, s, third)
	checkRun(t, "after a save without a checkpoint", readRun(t, s, "o"), third)
	// An earlier Updated is written too: the store keeps the last save,
	// not the latest time.
	fourth := store.Run{Session: "o", State: store.RunRunning, Checkpoint: json.RawMessage(`{}`), Updated: t0}
	saveRun(t, s, fourth)
	checkRun(t, "after a save dated earlier", readRun(t, s, "o"), fourth)
}

func testRunRefusals(t *testing.T, s store.Runs) {
	ctx := context.Background()
	kept := store.Run{Session: "kept", State: store.RunWaitingApproval, Approval: "ap-1", Checkpoint: json.RawMessage(`{"ok":true}`), Updated: t0}
	saveRun(t, s, kept)
	over := append(append([]byte(`"`), bytes.Repeat([]byte("x"), store.MaxCheckpoint-1)...), '"')
	for _, tc := range []struct {
		name string
		r    store.Run
	}{
		{"empty session", store.Run{State: store.RunRunning, Updated: t0}},
		{"long session", store.Run{Session: strings.Repeat("s", store.MaxSessionID+1), State: store.RunRunning, Updated: t0}},
		{"no state", store.Run{Session: "r", Updated: t0}},
		{"unknown state", store.Run{Session: "r", State: "paused", Updated: t0}},
		{"upper-case state", store.Run{Session: "r", State: "RUNNING", Updated: t0}},
		{"waiting with no approval", store.Run{Session: "r", State: store.RunWaitingApproval, Updated: t0}},
		{"long approval", store.Run{Session: "r", State: store.RunWaitingApproval, Approval: strings.Repeat("a", store.MaxSessionID+1), Updated: t0}},
		{"checkpoint over MaxCheckpoint", store.Run{Session: "r", State: store.RunRunning, Checkpoint: over, Updated: t0}},
		{"checkpoint not JSON", store.Run{Session: "r", State: store.RunRunning, Checkpoint: json.RawMessage(`{"a":`), Updated: t0}},
		{"checkpoint of two values", store.Run{Session: "r", State: store.RunRunning, Checkpoint: json.RawMessage(`{} {}`), Updated: t0}},
	} {
		if tc.r.Validate() == nil {
			t.Fatalf("%s: store.Run.Validate accepts it; the case tests nothing", tc.name)
		}
		sessions := []string{tc.r.Session}
		if store.ValidSessionID(tc.r.Session) == nil {
			sessions = append(sessions, kept.Session) // also refused over a run that exists
		}
		for _, session := range sessions {
			r := tc.r
			r.Session = session
			err := s.SaveRun(ctx, r)
			if err == nil {
				t.Errorf("%s: SaveRun(%.20q) succeeded", tc.name, r.Session)
				continue
			}
			if want := r.Validate().Error(); !strings.Contains(err.Error(), want) {
				t.Errorf("%s: SaveRun: err = %v; want it to wrap Validate's %q", tc.name, err, want)
			}
		}
	}
	// The zero time is no instant to prune by.
	if err := s.SaveRun(ctx, store.Run{Session: "r", State: store.RunRunning}); err == nil {
		t.Error("SaveRun with a zero Updated succeeded")
	}
	if err := s.SaveRun(ctx, store.Run{Session: kept.Session, State: store.RunEnded}); err == nil {
		t.Error("SaveRun with a zero Updated over a run that exists succeeded")
	}
	if _, err := s.Run(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused save wrote session r: err = %v, want ErrNotFound", err)
	}
	checkRun(t, "a run after refused saves over it", readRun(t, s, kept.Session), kept)
}

// jsonOfLen is a JSON string of exactly n bytes (n >= 2), its content
// marked by fill.
func jsonOfLen(n int, fill byte) json.RawMessage {
	b := bytes.Repeat([]byte{fill}, n)
	b[0], b[n-1] = '"', '"'
	return b
}

func testRunMaxCheckpoint(t *testing.T, s store.Runs) {
	ctx := context.Background()
	at := store.Run{Session: "big", State: store.RunRunning, Checkpoint: jsonOfLen(store.MaxCheckpoint, 'a'), Updated: t0}
	saveRun(t, s, at)
	checkRun(t, "a checkpoint of exactly MaxCheckpoint bytes", readRun(t, s, at.Session), at)
	past := at
	past.Checkpoint = jsonOfLen(store.MaxCheckpoint+1, 'b')
	past.Updated = t0.Add(time.Second)
	if err := s.SaveRun(ctx, past); err == nil {
		t.Error("a checkpoint of MaxCheckpoint+1 bytes was saved")
	}
	checkRun(t, "after a refused checkpoint one byte over", readRun(t, s, at.Session), at)
}

func testRunSessionsApart(t *testing.T, s store.Runs) {
	// Ids that look like a backend's own names are plain sessions too.
	ids := []string{"a", "b", "run:i:updated", "i:updated", "r:a", "*", "'; DROP TABLE runs; --"}
	want := map[string]store.Run{}
	for i, id := range ids {
		r := store.Run{Session: id, State: store.RunWaitingApproval, Approval: fmt.Sprintf("ap-%d", i),
			Checkpoint: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Updated: t0.Add(time.Duration(i) * time.Second)}
		saveRun(t, s, r)
		want[id] = r
	}
	a := store.Run{Session: "a", State: store.RunEnded, Checkpoint: json.RawMessage(`"changed"`), Updated: t0.Add(time.Hour)}
	saveRun(t, s, a)
	want["a"] = a
	for _, id := range ids {
		checkRun(t, "session "+id, readRun(t, s, id), want[id])
	}
	if _, err := s.Run(context.Background(), "c"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run of another session: err = %v, want ErrNotFound", err)
	}
}

// contenderCheckpointSize is the size of one racing save's checkpoint:
// large enough that a backend writing it in pieces could interleave two.
const contenderCheckpointSize = 64 << 10

func testConcurrentSaves(t *testing.T, s store.Runs) {
	// Contenders goroutines save the same session, each its own run of its
	// own size and content, while readers read it: every read, and the run
	// left at the end, is one whole of the runs written, never a mix.
	const saves = 5
	runs := make([]store.Run, Contenders)
	for i := range runs {
		state, approval := store.RunRunning, ""
		if i%2 == 1 {
			state, approval = store.RunWaitingApproval, fmt.Sprintf("ap-%d", i)
		}
		runs[i] = store.Run{Session: "race", State: state, Approval: approval,
			Checkpoint: jsonOfLen(contenderCheckpointSize+i, byte('a'+i)), Updated: t0.Add(time.Duration(i) * time.Microsecond)}
	}
	whole := func(r store.Run) bool {
		for _, w := range runs {
			if sameRun(r, w) {
				return true
			}
		}
		return false
	}
	ctx := context.Background()
	var wg, readers sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				r, err := s.Run(ctx, "race")
				switch {
				case errors.Is(err, store.ErrNotFound):
				case err != nil:
					t.Error(err)
					return
				case !whole(r):
					t.Errorf("a read during the race is none of the runs written: %s", showRun(r))
					return
				}
			}
		})
	}
	for i := range runs {
		wg.Go(func() {
			for range saves {
				if err := s.SaveRun(ctx, runs[i]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if got := readRun(t, s, "race"); !whole(got) {
		t.Errorf("after the race the run is none of the runs written: %s", showRun(got))
	}
}
