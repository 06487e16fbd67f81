package storeurl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/postgres"
	"airlock.dev/airlock/store/redis"
)

// The shape of the cross-process race: Processes children of the test
// binary, each with Goroutines goroutines, go Rounds times through Keys
// keys of one shared store.
const (
	raceProcesses  = 2
	raceGoroutines = 8
	raceKeys       = 40
	raceRounds     = 2
)

// Environment of a racer child.
const (
	envRaceURL   = "AIRLOCK_RACE_URL"   // the store
	envRaceSink  = "AIRLOCK_RACE_SINK"  // the file every effect appends one line to
	envRaceStart = "AIRLOCK_RACE_START" // Unix nanoseconds at which all children begin
	envRaceRun   = "AIRLOCK_RACE_RUN"   // the session the keys belong to
)

// raceReport is what a child prints, one JSON line.
type raceReport struct {
	Wins, Completed, InProgress int
}

// TestProcessesRace: for each backend, two OS processes of eight
// goroutines each race on the same keys through package ledger; every
// effect appends one line to a shared O_APPEND file. Every key's effect
// must have run exactly once, and every loser must have got the stored
// result or in_progress.
func TestProcessesRace(t *testing.T) {
	ctx := context.Background()
	id := random()
	for _, tc := range []struct {
		name, url string
		cleanup   func(store.Backend) error
	}{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "airlock.db"), func(b store.Backend) error { return b.Close() }},
		{"postgres", env("AIRLOCK_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable") + "&schema=airlock_test_race_" + id,
			func(b store.Backend) error { return b.(*postgres.DB).DropSchema(ctx) }},
		{"redis", env("AIRLOCK_TEST_REDIS", "redis://127.0.0.1:6379/0") + "?prefix=airlock-test-race-" + id + ":",
			func(b store.Backend) error { return b.(*redis.DB).DeleteAll(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The parent opens (and migrates) the store first, and
			// removes it at the end.
			b, err := Open(ctx, tc.url)
			if err != nil {
				t.Fatalf("Open(%s): %v\nstart the servers with scripts/start-services.sh", tc.name, err)
			}
			defer func() {
				if err := tc.cleanup(b); err != nil {
					t.Error(err)
				}
			}()
			sink := filepath.Join(t.TempDir(), "effects.log")
			start := time.Now().Add(time.Second).UnixNano()
			cmds := make([]*exec.Cmd, raceProcesses)
			outs := make([]*bytes.Buffer, raceProcesses)
			for i := range cmds {
				cmds[i] = exec.Command(os.Args[0], "-test.run=^TestRacer$", "-test.count=1")
				cmds[i].Env = append(os.Environ(),
					envRaceURL+"="+tc.url, envRaceSink+"="+sink,
					envRaceStart+"="+strconv.FormatInt(start, 10), envRaceRun+"="+id)
				outs[i] = new(bytes.Buffer)
				cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
				if err := cmds[i].Start(); err != nil {
					t.Fatal(err)
				}
			}
			var total raceReport
			for i, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("racer %d: %v\n%s", i, err, outs[i])
				}
				r, err := readReport(outs[i].String())
				if err != nil {
					t.Fatalf("racer %d: %v\n%s", i, err, outs[i])
				}
				t.Logf("racer %d: %+v", i, r)
				total.Wins += r.Wins
				total.Completed += r.Completed
				total.InProgress += r.InProgress
			}
			// Every effect ran exactly once.
			f, err := os.Open(sink)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			seen := map[string]int{}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				key, _, _ := strings.Cut(sc.Text(), " ")
				seen[key]++
			}
			for i := range raceKeys {
				if n := seen[strconv.Itoa(i)]; n != 1 {
					t.Errorf("key %d: its effect ran %d times, want exactly once", i, n)
				}
			}
			if len(seen) != raceKeys {
				t.Errorf("the sink names %d keys, want %d", len(seen), raceKeys)
			}
			if total.Wins != raceKeys {
				t.Errorf("%d acquisitions won, want %d", total.Wins, raceKeys)
			}
			if want := raceProcesses * raceGoroutines * raceKeys * raceRounds; total.Wins+total.Completed+total.InProgress != want {
				t.Errorf("%d outcomes, want %d", total.Wins+total.Completed+total.InProgress, want)
			}
		})
	}
}

func readReport(out string) (raceReport, error) {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "racer: "); ok {
			var r raceReport
			return r, json.Unmarshal([]byte(rest), &r)
		}
	}
	return raceReport{}, errors.New("the racer printed no report")
}

// TestRacer is the child of TestProcessesRace; run directly it has nothing
// to do.
func TestRacer(t *testing.T) {
	url := os.Getenv(envRaceURL)
	if url == "" {
		return
	}
	ctx := context.Background()
	b, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	l, err := ledger.New(b, &ledger.Options{Lease: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := os.OpenFile(os.Getenv(envRaceSink), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	start, _ := strconv.ParseInt(os.Getenv(envRaceStart), 10, 64)
	time.Sleep(time.Until(time.Unix(0, start)))

	keys := make([]ledger.Key, raceKeys)
	for i := range keys {
		keys[i], err = ledger.KeyFor(ledger.Call{Session: os.Getenv(envRaceRun), Step: int64(i), Tool: "run_command", Args: []byte(`{"cmd":"make"}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu     sync.Mutex
		report raceReport
		wg     sync.WaitGroup
	)
	owner := fmt.Sprintf("pid-%d", os.Getpid())
	for g := range raceGoroutines {
		wg.Go(func() {
			for r := range raceRounds {
				for j := range raceKeys {
					i := (j*7 + g*5 + os.Getpid()) % raceKeys // each goroutine its own order
					want := "result-" + strconv.Itoa(i)
					won := false
					got, err := l.Do(ctx, keys[i], owner, func(context.Context, *ledger.Ticket) ([]byte, error) {
						won = true
						if _, err := fmt.Fprintf(sink, "%d %s/%d/%d\n", i, owner, g, r); err != nil {
							return nil, err
						}
						time.Sleep(time.Millisecond) // hold the key a moment, so others meet it in progress
						return []byte(want), nil
					})
					mu.Lock()
					switch {
					case errors.Is(err, ledger.ErrInProgress):
						report.InProgress++
					case err != nil:
						t.Errorf("key %d: %v", i, err)
					case string(got) != want:
						t.Errorf("key %d: got %q, want %q", i, got, want)
					case won:
						report.Wins++
					default:
						report.Completed++
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	line, _ := json.Marshal(report)
	fmt.Printf("racer: %s\n", line)
}
