package e2e_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"airlock.dev/airlock/store/storeurl/storeurltest"
)

// callOut is what airlock call --json prints.
type callOut struct {
	OK       bool   `json:"ok"`
	Content  string `json:"content"`
	Replayed bool   `json:"replayed"`
	Retry    bool   `json:"retry"`
	Error    *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func parseCall(t *testing.T, out []byte, err error) callOut {
	t.Helper()
	var c callOut
	if jerr := json.Unmarshal(bytes.TrimSpace(out), &c); jerr != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("airlock call printed %q (stderr %q): %v", out, stderr, jerr)
	}
	return c
}

func randomID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stores are the backends two airlock processes share: the embedded
// default (URL "", .airlock/state.db in the workspace), and Postgres and
// Redis in namespaces of their own, removed when the test ends.
func stores(t *testing.T, tag string) []storeurltest.Backend {
	out := []storeurltest.Backend{{Name: "sqlite"}}
	for _, b := range storeurltest.Backends(t, tag) {
		if b.Name != "sqlite" {
			out = append(out, b)
		}
	}
	return out
}

// useStore makes the test own st's namespace: opened (and migrated) once
// here, removed at the end.
func useStore(t *testing.T, st storeurltest.Backend) {
	if st.URL != "" {
		storeurltest.Open(t, st)
	}
}

func airlockCall(bin, ws, storeURL string, extraEnv []string, key, command string) *exec.Cmd {
	args, _ := json.Marshal(map[string]string{"command": command})
	cmd := exec.Command(bin, "call", "--json", "--workspace", ws, "--mode", "auto", "--idempotency-key", key, "run_command", string(args))
	cmd.Env = append(cleanEnv(), extraEnv...)
	if storeURL != "" {
		cmd.Env = append(cmd.Env, "AIRLOCK_STORE="+storeURL)
	}
	cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+filepath.Join(ws, "..", "config"))
	return cmd
}

// TestCallRaceExactlyOnce: two airlock processes sharing a store race on
// the same idempotency keys; every effect (a line appended to a sink in
// the workspace) happens once, and each process prints the stored result
// or in_progress. On Postgres and Redis the two run in workspaces of
// their own, as two gateway replicas would, and race in the ledger alone;
// on the embedded store they share one workspace, and its audit log.
func TestCallRaceExactlyOnce(t *testing.T) {
	bin := buildAirlock(t, ".")
	for _, st := range stores(t, "e2e_race") {
		t.Run(st.Name, func(t *testing.T) {
			useStore(t, st)
			wss := []string{workspace(t, "ws1"), workspace(t, "ws2")}
			if st.URL == "" {
				wss[1] = wss[0]
			}
			for k := range 3 {
				key := "race-" + randomID()
				line := "effect " + key
				command := "echo '" + line + "' >> sink.txt; sleep 0.3; echo done"
				var wg sync.WaitGroup
				outs := make([][]byte, 2)
				errs := make([]error, 2)
				for p := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						outs[p], errs[p] = airlockCall(bin, wss[p], st.URL, nil, key, command).Output()
					}()
				}
				wg.Wait()
				var ran, inProgress, replayed int
				var content string
				for p := range 2 {
					c := parseCall(t, outs[p], errs[p])
					switch {
					case c.OK && !c.Replayed:
						ran++
						content = c.Content
					case c.OK && c.Replayed:
						replayed++
					case c.Error != nil && c.Error.Code == "in_progress":
						inProgress++
					default:
						t.Fatalf("round %d process %d: %s (%v)", k, p, outs[p], errs[p])
					}
				}
				var sink []byte
				for _, ws := range slices.Compact(slices.Clone(wss)) {
					b, _ := os.ReadFile(filepath.Join(ws, "sink.txt"))
					sink = append(sink, b...)
				}
				if n := strings.Count(string(sink), line+"\n"); n != 1 || ran != 1 {
					t.Fatalf("round %d: the effect ran %d times (sink) and %d processes say they ran it; want 1 and 1\n%s", k, n, ran, sink)
				}
				// After both, a third process gets the stored result.
				out, err := airlockCall(bin, wss[1], st.URL, nil, key, command).Output()
				c := parseCall(t, out, err)
				if !c.OK || !c.Replayed || c.Content != content {
					t.Fatalf("round %d: a repeat after the race: %s (%v), want the stored result %q", k, out, err, content)
				}
				t.Logf("round %d: 1 ran, %d in_progress, %d replayed", k, inProgress, replayed)
			}
		})
	}
}

// TestCallCrash kills an airlock process with SIGKILL in the middle of a
// sandboxed command: the command dies with it, so its effect never
// completes; a retry after the lease runs it once, flagged as a retry; a
// repeat after that gets the stored result and runs nothing.
func TestCallCrash(t *testing.T) {
	bin := buildAirlock(t, ".")
	const lease = 2 * time.Second
	leaseEnv := []string{"AIRLOCK_LEDGER_LEASE=" + lease.String()}
	for _, st := range stores(t, "e2e_crash") {
		t.Run(st.Name, func(t *testing.T) {
			useStore(t, st)
			ws := workspace(t, "ws")
			key := "crash-" + randomID()
			marker := "airlock-crash-" + randomID()
			// The effect completes only after 3 s; the marker names the
			// sleep so that the test can look for it among the host's
			// processes.
			command := "sh -c 'sleep 3; : " + marker + "'; echo done >> sink.txt; echo finished"

			victim := airlockCall(bin, ws, st.URL, leaseEnv, key, command)
			if err := victim.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the command runs (its marker is on the host's
			// process list), then kill airlock itself.
			if !waitFor(10*time.Second, func() bool { return sandboxedWith(bin, marker) }) {
				victim.Process.Kill()
				victim.Wait()
				t.Fatal("the sandboxed command never started")
			}
			victim.Process.Signal(syscall.SIGKILL)
			victim.Wait()
			if !waitFor(5*time.Second, func() bool { return !sandboxedWith(bin, marker) }) {
				t.Fatal("the sandboxed command outlived its airlock process")
			}
			time.Sleep(3500 * time.Millisecond) // past when the effect would have completed
			if sink, _ := os.ReadFile(filepath.Join(ws, "sink.txt")); len(sink) != 0 {
				t.Fatalf("the effect completed after its owner was killed: %q", sink)
			}

			// Within the lease the key is still held; past it, the retry runs.
			var c callOut
			if !waitFor(3*lease, func() bool {
				out, err := airlockCall(bin, ws, st.URL, leaseEnv, key, command).Output()
				c = parseCall(t, out, err)
				if c.Error != nil && c.Error.Code == "in_progress" {
					time.Sleep(200 * time.Millisecond)
					return false
				}
				return true
			}) {
				t.Fatal("the key stayed in progress long past its lease")
			}
			if !c.OK || !c.Retry || c.Replayed {
				t.Fatalf("the retry after the crash: %+v, want it to run, flagged as a retry", c)
			}
			out, err := airlockCall(bin, ws, st.URL, leaseEnv, key, command).Output()
			if r := parseCall(t, out, err); !r.OK || !r.Replayed || r.Content != c.Content {
				t.Fatalf("a repeat after the retry: %s, want the stored result", out)
			}
			if sink, _ := os.ReadFile(filepath.Join(ws, "sink.txt")); string(sink) != "done\n" {
				t.Fatalf("the sink holds %q, want one effect", sink)
			}
		})
	}
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

// sandboxedWith reports whether a process on the host has marker in its
// command line and is not airlock itself (bin, whose arguments hold the
// command too): one of the sandboxed command's processes.
func sandboxedWith(bin, marker string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && bytes.Contains(b, []byte(marker)) && !bytes.HasPrefix(b, []byte(bin+"\x00")) {
			return true
		}
	}
	return false
}
