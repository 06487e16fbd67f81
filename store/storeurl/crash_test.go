package storeurl

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/postgres"
	"airlock.dev/airlock/store/redis"
)

// crashLease is the lease the crashing child holds: short, so the test
// waits it out quickly, with renewals often enough to keep it while alive.
const crashLease = 1500 * time.Millisecond

const envCrashURL = "AIRLOCK_CRASH_URL"

func crashKey(t *testing.T) ledger.Key {
	t.Helper()
	k, err := ledger.KeyFor(ledger.Call{Tool: "send_email", Args: []byte(`{"to":"ops@example.com"}`), IdempotencyKey: "crash-1"})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestCrashedOwnerIsTakenOver: a child process acquires a key, starts its
// effect and is killed (SIGKILL: no deferred code runs). While its lease
// lasts the key is refused as in_progress; once it has run out, the next
// owner takes the key over, told Retry and TakenOver, with the same
// upstream key the dead owner had.
func TestCrashedOwnerIsTakenOver(t *testing.T) {
	ctx := context.Background()
	id := random()
	for _, tc := range []struct {
		name, url string
		cleanup   func(store.Backend) error
	}{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "airlock.db"), func(b store.Backend) error { return b.Close() }},
		{"postgres", env("AIRLOCK_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable") + "&schema=airlock_test_crash_" + id,
			func(b store.Backend) error { return b.(*postgres.DB).DropSchema(ctx) }},
		{"redis", env("AIRLOCK_TEST_REDIS", "redis://127.0.0.1:6379/0") + "?prefix=airlock-test-crash-" + id + ":",
			func(b store.Backend) error { return b.(*redis.DB).DeleteAll(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Open(ctx, tc.url)
			if err != nil {
				t.Fatalf("Open(%s): %v\nstart the servers with scripts/start-services.sh", tc.name, err)
			}
			defer func() {
				if err := tc.cleanup(b); err != nil {
					t.Error(err)
				}
			}()
			child := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			child.Env = append(os.Environ(), envCrashURL+"="+tc.url)
			out, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			child.Stderr = os.Stderr
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			reaped := false
			defer func() { // a test that stops early leaves no child behind
				if !reaped {
					child.Process.Kill()
					child.Wait()
				}
			}()
			started := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if rest, ok := strings.CutPrefix(sc.Text(), "started "); ok {
						started <- rest
						return
					}
				}
				close(started)
			}()
			var upstream string
			select {
			case u, ok := <-started:
				if !ok {
					t.Fatal("the child ended without starting its effect")
				}
				upstream = u
			case <-time.After(30 * time.Second):
				t.Fatal("the child did not start its effect within 30s")
			}
			// Let it renew a few times, to show a living owner keeps the key.
			time.Sleep(2 * crashLease)
			k := crashKey(t)
			l, err := ledger.New(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Acquire(ctx, k, "parent"); !errors.Is(err, ledger.ErrInProgress) {
				t.Fatalf("while the child lives: err = %v, want in_progress", err)
			}
			if err := child.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			child.Wait()
			reaped = true
			killed := time.Now()
			waiter, err := ledger.New(b, &ledger.Options{Wait: 30 * time.Second, Poll: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			tk, err := waiter.Acquire(ctx, k, "parent")
			if err != nil {
				t.Fatalf("after the child died: %v", err)
			}
			t.Logf("taken over %v after the kill", time.Since(killed).Round(time.Millisecond))
			if tk.Outcome != ledger.Acquired || !tk.Retry || !tk.TakenOver || tk.Entry.Attempt != 2 || tk.UpstreamKey != upstream {
				t.Errorf("takeover ticket %+v; want acquired, retry, taken over, attempt 2, upstream key %s", tk, upstream)
			}
			if err := tk.Complete(ctx, []byte("sent once upstream")); err != nil {
				t.Fatal(err)
			}
			again, err := l.Acquire(ctx, k, "parent")
			if err != nil || again.Outcome != ledger.Completed || string(again.Result) != "sent once upstream" {
				t.Errorf("a repeat = %+v, %v; want the stored result", again, err)
			}
		})
	}
}

// TestCrashChild is the child of TestCrashedOwnerIsTakenOver; run
// directly it has nothing to do. It acquires the key, reports, and hangs
// in its effect until it is killed.
func TestCrashChild(t *testing.T) {
	url := os.Getenv(envCrashURL)
	if url == "" {
		return
	}
	b, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(b, &ledger.Options{Lease: crashLease, RenewEvery: crashLease / 6})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := l.Acquire(context.Background(), crashKey(t), "child")
	if err != nil || tk.Outcome != ledger.Acquired {
		t.Fatalf("Acquire = %+v, %v", tk, err)
	}
	os.Stdout.WriteString("started " + tk.UpstreamKey + "\n")
	select {
	case <-tk.Lost():
		t.Fatalf("the child lost its lease while alive: %v", tk.Err())
	case <-time.After(time.Minute):
		t.Fatal("the child was not killed within a minute")
	}
}
