package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

// testObservations runs the part of the Sessions suite about a session's
// observations, its marks (Flagged, Tainted, Truncated) and State.
func testObservations(t *testing.T, open func(t *testing.T) store.Sessions) {
	t.Run("ObserveAndState", func(t *testing.T) { testObserve(t, open(t)) })
	t.Run("ObserveEachValueOnce", func(t *testing.T) { testObserveOnce(t, open(t)) })
	t.Run("SeqAcrossSessions", func(t *testing.T) { testSeqAcrossSessions(t, open(t)) })
	t.Run("ObserveKeepsBytes", func(t *testing.T) { testObserveBytes(t, open(t)) })
	t.Run("Marks", func(t *testing.T) { testMarks(t, open(t)) })
	t.Run("ObserveKilled", func(t *testing.T) { testObserveKilled(t, open(t)) })
	t.Run("StateOfNewSession", func(t *testing.T) { testStateNew(t, open(t)) })
	t.Run("ObserveRefusals", func(t *testing.T) { testObserveRefusals(t, open(t)) })
	t.Run("MaxObservations", func(t *testing.T) { testMaxObservations(t, open(t)) })
	t.Run("ConcurrentObserve", func(t *testing.T) {
		s := open(t)
		CheckObserveOrder(t, s, s)
	})
}

// readState is State, failing the test on an error.
func readState(t *testing.T, s store.Sessions, id string, after int64) store.SessionState {
	t.Helper()
	st, err := s.State(context.Background(), id, after)
	if err != nil {
		t.Fatalf("State(%q, %d): %v", id, after, err)
	}
	return st
}

// observe is Observe, failing the test on an error.
func observe(t *testing.T, s store.Sessions, id string, marks store.Marks, at time.Time, obs ...store.Observation) {
	t.Helper()
	if err := s.Observe(context.Background(), id, obs, marks, at); err != nil {
		t.Fatalf("Observe(%q, %d observations): %v", id, len(obs), err)
	}
}

// checkObservations compares got with want by source and value, in order,
// and checks that the Seqs strictly increase, each past after. It returns
// the last Seq (after when got is empty).
func checkObservations(t *testing.T, what string, got, want []store.Observation, after int64) int64 {
	t.Helper()
	show := func(list []store.Observation) string {
		var b strings.Builder
		for _, o := range list {
			fmt.Fprintf(&b, "\n\t%d %q %q", o.Seq, o.Source, o.Value)
		}
		return b.String()
	}
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].Source == want[i].Source && got[i].Value == want[i].Value
	}
	if !same {
		t.Errorf("%s: got%s\nwant%s", what, show(got), show(want))
	}
	last := after
	for _, o := range got {
		if o.Seq <= last {
			t.Errorf("%s: Seq %d follows %d; Seqs must increase, each past %d:%s", what, o.Seq, last, after, show(got))
			break
		}
		last = o.Seq
	}
	return last
}

func obsOf(source string, values ...string) []store.Observation {
	list := make([]store.Observation, len(values))
	for i, v := range values {
		list[i] = store.Observation{Source: source, Value: v}
	}
	return list
}

func testObserve(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	first := []store.Observation{
		{Source: "tool:fetch", Value: "https://evil.example/x"},
		{Source: "tool:fetch", Value: "evil.example"},
		{Source: store.SourceUser, Value: "/home/u/notes.txt"},
		{Source: "web", Value: "AKIA1234567890EXAMPLE"},
	}
	first[0].Seq = 999_999 // the store sets Seq, whatever the caller says
	observe(t, s, "o", 0, t0, first...)
	st := readState(t, s, "o", 0)
	if !st.Exists || st.KillAll {
		t.Errorf("State after Observe: Exists %v, KillAll %v; want true, false", st.Exists, st.KillAll)
	}
	checkSession(t, "the observed session", st.Session, store.Session{ID: "o", Created: t0, Updated: t0})
	last := checkObservations(t, "State after 0", st.Observations, first, 0)
	if len(st.Observations) > 0 && st.Observations[0].Seq == 999_999 {
		t.Error("Observe kept the caller's Seq")
	}
	// Reading again after the last Seq: nothing new, the session as it was.
	st = readState(t, s, "o", last)
	checkObservations(t, "State after the last Seq", st.Observations, nil, last)
	checkSession(t, "read again", st.Session, store.Session{ID: "o", Created: t0, Updated: t0})

	// A later Observe adds only its new values, and is a write.
	at := t0.Add(time.Second)
	more := obsOf("file:/tmp/readme", "https://evil.example/x", "/etc/shadow")
	observe(t, s, "o", 0, at, more...)
	st = readState(t, s, "o", last)
	last = checkObservations(t, "State after the first batch", st.Observations, more[1:], last)
	checkSession(t, "after a second Observe", st.Session, store.Session{ID: "o", Created: t0, Updated: at})
	if got, err := s.Session(ctx, "o"); err != nil {
		t.Fatal(err)
	} else {
		checkSession(t, "Session after Observe", got, st.Session)
	}
	// Every observation, oldest first, from the start.
	checkObservations(t, "State after 0 again", readState(t, s, "o", 0).Observations, append(first, more[1]), 0)

	// A charge leaves the observations as they were.
	if _, err := s.ChargeSession(ctx, "o", store.Charge{Steps: 1}, at); err != nil {
		t.Fatal(err)
	}
	st = readState(t, s, "o", 0)
	checkObservations(t, "after a charge", st.Observations, append(first, more[1]), 0)
	if st.Session.Step != 1 {
		t.Errorf("State's session after a charge = %+v, want step 1", st.Session)
	}
	if got := readState(t, s, "o", last); len(got.Observations) != 0 {
		t.Errorf("a charge added observations: %+v", got.Observations)
	}
	// A cursor from before the first reads all; one past everything, none.
	checkObservations(t, "State after -1", readState(t, s, "o", -1).Observations, append(first, more[1]), -1)
	checkObservations(t, "State past every Seq", readState(t, s, "o", last+1_000_000).Observations, nil, last+1_000_000)
}

// testObserveOnce: a value is held once from the user and once from
// untrusted content, whichever untrusted source; the first keeps its
// source and Seq.
func testObserveOnce(t *testing.T, s store.Sessions) {
	observe(t, s, "once", 0, t0, obsOf("tool:a", "x", "y")...)
	before := readState(t, s, "once", 0).Observations
	observe(t, s, "once", 0, t0.Add(time.Second),
		store.Observation{Source: "web", Value: "x"},            // held from untrusted content
		store.Observation{Source: store.SourceUser, Value: "x"}, // new from the user
		store.Observation{Source: "tool:b", Value: "z"},         // new
		store.Observation{Source: "tool:c", Value: "z"},         // repeated in the batch
		store.Observation{Source: store.SourceUser, Value: "x"}, // repeated in the batch
		store.Observation{Source: "tool:a", Value: "X"},         // another value: case counts
		store.Observation{Source: "tool:a", Value: "y "},        // and spaces
		store.Observation{Source: store.SourceUser, Value: "y"}, // new from the user
		store.Observation{Source: store.SourceUser, Value: "y"}, // repeated
		store.Observation{Source: "tool:d", Value: "y"},         // held from untrusted content
	)
	want := []store.Observation{
		{Source: "tool:a", Value: "x"}, {Source: "tool:a", Value: "y"},
		{Source: store.SourceUser, Value: "x"}, {Source: "tool:b", Value: "z"},
		{Source: "tool:a", Value: "X"}, {Source: "tool:a", Value: "y "}, {Source: store.SourceUser, Value: "y"},
	}
	got := readState(t, s, "once", 0).Observations
	checkObservations(t, "after repeats", got, want, 0)
	if len(got) == len(want) && (got[0].Seq != before[0].Seq || got[1].Seq != before[1].Seq) {
		t.Errorf("the held values' Seqs moved: %d, %d, want %d, %d", got[0].Seq, got[1].Seq, before[0].Seq, before[1].Seq)
	}
	// A batch of nothing but held values adds nothing.
	observe(t, s, "once", 0, t0.Add(2*time.Second), append(obsOf("web", "x", "z"), obsOf(store.SourceUser, "x", "y")...)...)
	checkObservations(t, "after a batch of held values", readState(t, s, "once", 0).Observations, want, 0)
	// Another session holds its own.
	observe(t, s, "once-other", 0, t0, obsOf("web", "x")...)
	checkObservations(t, "another session", readState(t, s, "once-other", 0).Observations, obsOf("web", "x"), 0)
}

// testSeqAcrossSessions: Seq increases across sessions, so one session's
// cursor never hides another's observations behind an equal Seq.
func testSeqAcrossSessions(t *testing.T, s store.Sessions) {
	observe(t, s, "a", 0, t0, obsOf("web", "a1")...)
	observe(t, s, "b", 0, t0, obsOf("web", "b1")...)
	observe(t, s, "a", 0, t0, obsOf("web", "a2", "a1")...)
	a := readState(t, s, "a", 0).Observations
	b := readState(t, s, "b", 0).Observations
	checkObservations(t, "session a", a, obsOf("web", "a1", "a2"), 0)
	checkObservations(t, "session b", b, obsOf("web", "b1"), 0)
	if len(a) == 2 && len(b) == 1 && !(a[0].Seq < b[0].Seq && b[0].Seq < a[1].Seq) {
		t.Errorf("Seqs a1 %d, b1 %d, a2 %d; want them in the order observed", a[0].Seq, b[0].Seq, a[1].Seq)
	}
}

// testObserveBytes: values and sources are bytes, kept exactly: a value
// cut at MaxObservationValue may end inside a UTF-8 sequence.
func testObserveBytes(t *testing.T, s store.Sessions) {
	want := []store.Observation{
		{Source: "file:/tmp/\xff\x00", Value: "\x00"},
		{Source: "web", Value: "\xff\xfe"},
		{Source: "web", Value: "a\x00b"},
		{Source: "web", Value: "ü\xc3"},
		{Source: "web", Value: strings.Repeat("é", store.MaxObservationValue/2)},
		{Source: strings.Repeat("s", store.MaxObservationSource), Value: strings.Repeat("v", store.MaxObservationValue-1) + "\xc3"},
		{Source: store.SourceUser, Value: "'; DROP TABLE observations; --"},
	}
	observe(t, s, "bytes", 0, t0, want...)
	checkObservations(t, "bytes", readState(t, s, "bytes", 0).Observations, want, 0)
	// Another byte is another value.
	observe(t, s, "bytes", 0, t0, obsOf("web", "\x00", "\x00\x00", "ü")...)
	checkObservations(t, "bytes", readState(t, s, "bytes", 0).Observations, append(want, obsOf("web", "\x00\x00", "ü")...), 0)
}

// testMarks: Observe sets Flagged and Tainted, each on its own; nothing
// clears them.
func testMarks(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	for _, m := range []struct {
		name string
		mark store.Marks
		get  func(store.Session) bool
	}{
		{"flagged", store.MarkFlagged, func(s store.Session) bool { return s.Flagged }},
		{"tainted", store.MarkTainted, func(s store.Session) bool { return s.Tainted }},
	} {
		id := func(x string) string { return m.name + "-" + x }
		other := (store.MarkFlagged | store.MarkTainted) &^ m.mark
		observe(t, s, id("f"), m.mark, t0) // no values, only the mark
		st := readState(t, s, id("f"), 0)
		if !st.Exists || !m.get(st.Session) || len(st.Observations) != 0 {
			t.Fatalf("after marking a new session %s: %+v", m.name, st)
		}
		checkTime(t, "Created", st.Session.Created, t0)
		observe(t, s, id("f"), 0, t0.Add(time.Second), obsOf("web", "v")...)
		writes := []struct {
			what  string
			write func() (store.Session, error)
		}{
			{"a charge", func() (store.Session, error) { return s.ChargeSession(ctx, id("f"), store.Charge{Steps: 1}, t0) }},
			{"a mode change", func() (store.Session, error) { return s.SetSessionMode(ctx, id("f"), "plan", t0) }},
			{"a kill", func() (store.Session, error) { return s.KillSession(ctx, id("f"), true, t0) }},
			{"an unkill", func() (store.Session, error) { return s.KillSession(ctx, id("f"), false, t0) }},
		}
		for _, w := range writes {
			got, err := w.write()
			if err != nil || !m.get(got) {
				t.Errorf("after %s: %+v, %v; want it still %s", w.what, got, err, m.name)
			}
		}
		if got, err := s.Session(ctx, id("f")); err != nil || !m.get(got) || got.Step != 1 || got.Mode != "plan" {
			t.Errorf("Session(%s) = %+v, %v; want %s, step 1, mode plan", id("f"), got, err, m.name)
		}
		if st := readState(t, s, id("f"), 0); !m.get(st.Session) {
			t.Errorf("State(%s) = %+v; want %s", id("f"), st, m.name)
		}
		// Marking one session marks no other, an unmarked write keeps a
		// session unmarked, and the other mark is not this one.
		observe(t, s, id("g"), 0, t0, obsOf("web", "v")...)
		observe(t, s, id("o"), other, t0, obsOf("web", "v")...)
		if _, err := s.ChargeSession(ctx, id("h"), store.Charge{Steps: 1}, t0); err != nil {
			t.Fatal(err)
		}
		for _, x := range []string{"g", "h", "o"} {
			if got, err := s.Session(ctx, id(x)); err != nil || m.get(got) {
				t.Errorf("Session(%s) = %+v, %v; want it not %s", id(x), got, err, m.name)
			}
		}
		// Marking an existing session.
		observe(t, s, id("h"), m.mark, t0.Add(time.Second))
		if got, err := s.Session(ctx, id("h")); err != nil || !m.get(got) || got.Step != 1 {
			t.Errorf("Session(%s) after marking = %+v, %v; want %s with step 1 kept", id("h"), got, err, m.name)
		}
	}
}

// testObserveKilled: what a killed session reads is still recorded, under
// its own kill and under the global one; the kills hold as before.
func testObserveKilled(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	if _, err := s.KillSession(ctx, "k", true, t0); err != nil {
		t.Fatal(err)
	}
	observe(t, s, "k", store.MarkFlagged, t0.Add(time.Second), obsOf("tool:fetch", "https://x.example")...)
	st := readState(t, s, "k", 0)
	if !st.Session.Killed || !st.Session.Flagged || st.KillAll {
		t.Errorf("State(k) = %+v; want killed and flagged, no global kill", st)
	}
	checkObservations(t, "a killed session", st.Observations, obsOf("tool:fetch", "https://x.example"), 0)
	if _, err := s.ChargeSession(ctx, "k", store.Charge{Steps: 1}, t0); !errors.Is(err, store.ErrKilled) {
		t.Errorf("charging the killed session after Observe: err = %v, want ErrKilled", err)
	}

	if err := s.SetKillAll(ctx, true); err != nil {
		t.Fatal(err)
	}
	observe(t, s, "k2", 0, t0, obsOf("web", "w")...)
	for _, id := range []string{"k2", "never"} {
		if st := readState(t, s, id, 0); !st.KillAll {
			t.Errorf("State(%s) under the global kill: %+v; want KillAll", id, st)
		}
	}
	checkObservations(t, "under the global kill", readState(t, s, "k2", 0).Observations, obsOf("web", "w"), 0)
	if _, err := s.ChargeSession(ctx, "k2", store.Charge{Steps: 1}, t0); !errors.Is(err, store.ErrKilled) {
		t.Errorf("charging under the global kill after Observe: err = %v, want ErrKilled", err)
	}
	if err := s.SetKillAll(ctx, false); err != nil {
		t.Fatal(err)
	}
	if st := readState(t, s, "k2", 0); st.KillAll || st.Session.Killed {
		t.Errorf("State(k2) after clearing the global kill = %+v", st)
	}
}

// testStateNew: a session never written reads as not existing, with the
// global kill flag as it stands, and State writes nothing.
func testStateNew(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	for _, all := range []bool{false, true} {
		if err := s.SetKillAll(ctx, all); err != nil {
			t.Fatal(err)
		}
		st, err := s.State(ctx, "nobody", 0)
		if err != nil || st.Exists || st.KillAll != all || len(st.Observations) != 0 ||
			st.Session != (store.Session{ID: "nobody"}) {
			t.Errorf("State of a session never written, global kill %v = %+v, %v; want Session{ID: nobody} only, KillAll %v", all, st, err, all)
		}
	}
	if _, err := s.Session(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("State created the session: Session err = %v", err)
	}
	// Another session's observations are not this one's.
	observe(t, s, "somebody", 0, t0, obsOf("web", "v")...)
	if st := readState(t, s, "nobody", 0); st.Exists || len(st.Observations) != 0 {
		t.Errorf("State(nobody) = %+v after another session's Observe", st)
	}
}

func testObserveRefusals(t *testing.T, s store.Sessions) {
	ctx := context.Background()
	good := obsOf("web", "v")
	for _, id := range []string{"", strings.Repeat("s", store.MaxSessionID+1)} {
		if err := s.Observe(ctx, id, good, 0, t0); err == nil {
			t.Errorf("Observe with a %d-byte id succeeded", len(id))
		}
		if _, err := s.State(ctx, id, 0); err == nil {
			t.Errorf("State with a %d-byte id succeeded", len(id))
		}
	}
	if err := s.Observe(ctx, "r", good, 0, time.Time{}); err == nil {
		t.Error("Observe at the zero time succeeded")
	}
	full := make([]store.Observation, store.MaxObserveBatch+1)
	for i := range full {
		full[i] = store.Observation{Source: "web", Value: fmt.Sprint("v-", i)}
	}
	for _, tc := range []struct {
		name  string
		obs   []store.Observation
		limit string
	}{
		{"an empty value", append(obsOf("web", "ok"), store.Observation{Source: "web"}), "store.MaxObservationValue"},
		{"a long value", append(obsOf("web", "ok"), store.Observation{Source: "web", Value: strings.Repeat("v", store.MaxObservationValue+1)}), "store.MaxObservationValue"},
		{"an empty source", append(obsOf("web", "ok"), store.Observation{Value: "v"}), "store.MaxObservationSource"},
		{"a long source", append(obsOf("web", "ok"), store.Observation{Source: strings.Repeat("s", store.MaxObservationSource+1), Value: "v"}), "store.MaxObservationSource"},
		{"a batch too many", full, "store.MaxObserveBatch"},
	} {
		// Refused, for a new session and for an existing one, changing
		// nothing: not the session, not its observations, not its flag.
		err := s.Observe(ctx, "r", tc.obs, store.MarkFlagged, t0)
		if err == nil || !strings.Contains(err.Error(), tc.limit) {
			t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.limit)
		}
		if st := readState(t, s, "r", 0); st.Exists {
			t.Errorf("%s: a refused Observe created the session: %+v", tc.name, st)
		}
		observe(t, s, "r-held", 0, t0, good...)
		if err := s.Observe(ctx, "r-held", tc.obs, store.MarkFlagged, t0.Add(time.Second)); err == nil {
			t.Errorf("%s: Observe on an existing session succeeded", tc.name)
		}
		st := readState(t, s, "r-held", 0)
		checkObservations(t, tc.name+": after a refused Observe", st.Observations, good, 0)
		if st.Session.Flagged || !st.Session.Updated.Equal(t0) {
			t.Errorf("%s: a refused Observe changed the session: %+v", tc.name, st.Session)
		}
	}
}

// testMaxObservations: past MaxObservations the oldest go, of either kind;
// a value that went may come again, as new.
func testMaxObservations(t *testing.T, s store.Sessions) {
	values := func(prefix string, from, to int) []string {
		var list []string
		for i := from; i < to; i++ {
			list = append(list, fmt.Sprintf("%s-%d", prefix, i))
		}
		return list
	}
	// 5 from the user, then a full batch: the 5 go, the batch stays.
	observe(t, s, "max", 0, t0, obsOf(store.SourceUser, values("u", 0, 5)...)...)
	observe(t, s, "max", 0, t0, obsOf("web", values("v", 0, store.MaxObserveBatch)...)...)
	want := obsOf("web", values("v", 0, store.MaxObserveBatch)...)
	st := readState(t, s, "max", 0)
	checkObservations(t, "a full batch after 5", st.Observations, want, 0)
	if !st.Session.Truncated {
		t.Errorf("a session that lost observations past store.MaxObservations: %+v, want Truncated", st.Session)
	}
	observe(t, s, "max-less", 0, t0, obsOf("web", values("v", 0, store.MaxObservations)...)...)
	if st := readState(t, s, "max-less", 0); st.Session.Truncated || len(st.Observations) != store.MaxObservations {
		t.Errorf("a session holding store.MaxObservations, none lost: %d kept, %+v; want all, not Truncated", len(st.Observations), st.Session)
	}
	// 10 more from the user: v-0 to v-9 go.
	observe(t, s, "max", 0, t0, obsOf(store.SourceUser, values("w", 0, 10)...)...)
	want = append(want[10:], obsOf(store.SourceUser, values("w", 0, 10)...)...)
	got := readState(t, s, "max", 0).Observations
	last := checkObservations(t, "10 more", got, want, 0)
	if len(got) != store.MaxObservations {
		t.Errorf("%d observations kept, want store.MaxObservations = %d", len(got), store.MaxObservations)
	}
	if _, err := s.ChargeSession(context.Background(), "max", store.Charge{Steps: 1}, t0); err != nil {
		t.Fatal(err)
	}
	if st := readState(t, s, "max", 0); !st.Session.Truncated {
		t.Errorf("after a charge: %+v, want it still Truncated", st.Session)
	}
	// v-0 went, so it comes again as new, pushing out v-10; v-20 is still
	// held and is not added.
	observe(t, s, "max", 0, t0, obsOf("web", "v-0", "v-20")...)
	checkObservations(t, "a value that went, again", readState(t, s, "max", last).Observations, obsOf("web", "v-0"), last)
	want = append(want[1:], obsOf("web", "v-0")...)
	checkObservations(t, "after one more", readState(t, s, "max", 0).Observations, want, 0)
}

// CheckObserveOrder races Contenders goroutines, spread over the writers
// (handles on one store, such as two processes' connections), each adding
// its own values to one session, while a reader follows the session's
// observations by their Seq as the gate does. The reader must end with
// every value: a value that became visible after one with a higher Seq
// would have been skipped for good.
func CheckObserveOrder(t *testing.T, reader store.Sessions, writers ...store.Sessions) {
	const (
		id      = "order"
		batches = 40 // per goroutine
		batch   = 5  // values per Observe
	)
	if Contenders*batches*batch > store.MaxObservations {
		t.Fatal("the race adds more values than a session keeps")
	}
	ctx := context.Background()
	stop := make(chan struct{})
	seen := map[string]int64{}
	var cursor int64
	var reads int
	follow := func() (news int) {
		st, err := reader.State(ctx, id, cursor)
		if err != nil {
			t.Error(err)
			return 0
		}
		reads++
		for _, o := range st.Observations {
			if o.Seq <= cursor {
				t.Errorf("State after %d returned Seq %d", cursor, o.Seq)
				continue
			}
			if _, dup := seen[o.Value]; dup {
				t.Errorf("value %q read twice (Seq %d and %d)", o.Value, seen[o.Value], o.Seq)
			}
			seen[o.Value] = o.Seq
			cursor = o.Seq
		}
		return len(st.Observations)
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
				follow()
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range Contenders {
		w := writers[g%len(writers)]
		wg.Go(func() {
			for i := range batches {
				obs := make([]store.Observation, batch)
				for j := range obs {
					obs[j] = store.Observation{Source: fmt.Sprint("tool:", g), Value: fmt.Sprintf("g%d-b%d-v%d", g, i, j)}
				}
				if err := w.Observe(ctx, id, obs, 0, t0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-readerDone
	for follow() > 0 { // what the last writes added
	}
	all := readState(t, reader, id, 0).Observations
	if len(all) != Contenders*batches*batch {
		t.Errorf("the session holds %d observations, want %d", len(all), Contenders*batches*batch)
	}
	missed := 0
	for _, o := range all {
		if seq, ok := seen[o.Value]; !ok || seq != o.Seq {
			missed++
			if missed <= 5 {
				t.Errorf("the reader following the cursor skipped %q (Seq %d)", o.Value, o.Seq)
			}
		}
	}
	if missed > 0 {
		t.Errorf("the reader skipped %d of %d values in %d reads", missed, len(all), reads)
	}
	t.Logf("%d values, %d reads", len(all), reads)
}

// CheckUpgradedSession checks a session written before the store kept
// observations, as old (Flagged false), once the store is migrated: it
// reads as it was, observing nothing; it then observes at now, becomes
// flagged, and stays killed if it was.
func CheckUpgradedSession(t *testing.T, s store.Sessions, old store.Session, now time.Time) {
	t.Helper()
	ctx := context.Background()
	st, err := s.State(ctx, old.ID, 0)
	if err != nil || !st.Exists || len(st.Observations) != 0 {
		t.Fatalf("State of the old session = %+v, %v; want it, with no observations", st, err)
	}
	checkSession(t, "the old session", st.Session, old)
	obs := obsOf("web", "https://x.example")
	observe(t, s, old.ID, store.MarkFlagged, now, obs...)
	want := old
	want.Flagged, want.Updated = true, now
	st = readState(t, s, old.ID, 0)
	checkSession(t, "the old session after Observe", st.Session, want)
	checkObservations(t, "the old session's observations", st.Observations, obs, 0)
	if _, err := s.ChargeSession(ctx, old.ID, store.Charge{Steps: 1}, now); old.Killed && !errors.Is(err, store.ErrKilled) {
		t.Errorf("charging the old killed session: %v, want ErrKilled", err)
	}
}
