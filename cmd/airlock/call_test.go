package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"airlock.dev/airlock/store/sqlite"
)

// TestNextStepDistinct checks that calls in one session, made at once from
// separate store handles as separate airlock processes would, each take a
// step of their own: two calls that shared a step would share a ledger key,
// and the second would replay the first instead of running.
func TestNextStepDistinct(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	const callers, each = 4, 10
	steps := make(chan int64, callers*each)
	var wg sync.WaitGroup
	for range callers {
		db, err := sqlite.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				s, err := nextStep(context.Background(), db, "s1")
				if err != nil {
					t.Error(err)
					return
				}
				steps <- s
			}
		}()
	}
	wg.Wait()
	close(steps)
	seen := map[int64]bool{}
	for s := range steps {
		if seen[s] || s < 1 || s > callers*each {
			t.Fatalf("step %d given twice or out of 1..%d", s, callers*each)
		}
		seen[s] = true
	}
	if len(seen) != callers*each {
		t.Fatalf("%d steps, want %d", len(seen), callers*each)
	}
}
