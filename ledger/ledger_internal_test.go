package ledger

import (
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

// nopStore satisfies store.Ledger for tests of New alone.
type nopStore struct{ store.Ledger }

func TestDefaults(t *testing.T) {
	l, err := New(nopStore{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := l.o
	if got.Lease != 30*time.Second || got.RenewEvery != 10*time.Second || got.Retention != 7*24*time.Hour ||
		got.Wait != 0 || got.Poll != 100*time.Millisecond || got.MaxResult != 1<<20 || got.Now == nil {
		t.Errorf("defaults = %+v", got)
	}
	if got.Lease != DefaultLease || got.RenewEvery != DefaultRenewEvery || got.Retention != DefaultRetention ||
		got.Poll != DefaultPoll || got.MaxResult != DefaultMaxResult {
		t.Errorf("defaults differ from the named constants: %+v", got)
	}
	// A lease alone sets renewals to a third of it.
	l, err = New(nopStore{}, &Options{Lease: 3 * time.Second})
	if err != nil || l.o.RenewEvery != time.Second {
		t.Errorf("Lease 3s: RenewEvery = %v, %v; want 1s", l.o.RenewEvery, err)
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 2, "ab"},
		{"aé", 2, "a"}, // é is two bytes; half of it is dropped
		{"éé", 3, "é"},
		{"", 0, ""},
	} {
		if got := cut(tc.s, tc.n); got != tc.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
