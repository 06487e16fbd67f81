package runtime

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// keyHelperEnv, when set to a directory, makes the test binary a helper
// process (see TestMain): it waits for its standard input to close, loads
// the approval key with that directory as XDG_CONFIG_HOME and prints it in
// hex.
const keyHelperEnv = "AIRLOCK_TEST_KEY_HELPER"

// keyHelper is the helper process's body; it returns the exit status.
func keyHelper(dir string) int {
	os.Setenv("XDG_CONFIG_HOME", dir)
	io.Copy(io.Discard, os.Stdin) // the start signal: the parent closes every pipe at once
	key, err := LoadApprovalKey("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(hex.EncodeToString(key))
	return 0
}

// checkKeyFile reads the key file under config from the filesystem and
// checks that it is the only file there (no temporary file left behind),
// 32 bytes, mode 0600; it returns the key in hex.
func checkKeyFile(t *testing.T, config string) string {
	t.Helper()
	path := filepath.Join(config, ApprovalKeyFile)
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != filepath.Base(path) {
		t.Errorf("the key's directory holds %q, want only %s", names, filepath.Base(path))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the key file's mode is %v, want 0600", fi.Mode().Perm())
	}
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) != 32 {
		t.Fatalf("the key file holds %d bytes, want 32", len(body))
	}
	return hex.EncodeToString(body)
}

// TestApprovalKeyConcurrentProcesses: many airlock processes that start
// together with no key yet all get one, the same one, which is the file's.
// A loser of the race once read the winner's file before it was written
// (0 bytes) and refused.
func TestApprovalKeyConcurrentProcesses(t *testing.T) {
	const rounds, processes = 3, 16
	for round := range rounds {
		config := t.TempDir()
		var (
			cmds  []*exec.Cmd
			outs  []*bytes.Buffer
			errs  []*bytes.Buffer
			gates []io.WriteCloser
		)
		for range processes {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), keyHelperEnv+"="+config)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds, outs, errs, gates = append(cmds, cmd), append(outs, &out), append(errs, &errOut), append(gates, in)
		}
		for _, g := range gates {
			g.Close()
		}
		keys := map[string]int{}
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Errorf("round %d, process %d: %v: %s", round, i, err, errs[i])
				continue
			}
			keys[strings.TrimSpace(outs[i].String())]++
		}
		onDisk := checkKeyFile(t, config)
		if len(keys) != 1 || keys[onDisk] != processes {
			t.Errorf("round %d: the processes got keys %v, want all %d of them the file's %s", round, keys, processes, onDisk)
		}
	}
}

// TestApprovalKeyConcurrentCalls: the same race between goroutines of one
// process.
func TestApprovalKeyConcurrentCalls(t *testing.T) {
	const rounds, callers = 20, 32
	for round := range rounds {
		config := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", config)
		keys := make([]string, callers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-start
				key, err := LoadApprovalKey("")
				if err != nil {
					t.Errorf("round %d, caller %d: %v", round, i, err)
					return
				}
				keys[i] = hex.EncodeToString(key)
			})
		}
		close(start)
		wg.Wait()
		onDisk := checkKeyFile(t, config)
		for i, k := range keys {
			if k != onDisk {
				t.Errorf("round %d, caller %d got key %q, want the file's %s", round, i, k, onDisk)
			}
		}
	}
}

// TestApprovalKeyRefusesAShortFile: a key file of the wrong size (an older
// airlock that crashed while making it) is named, not used or replaced.
func TestApprovalKeyRefusesAShortFile(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	path := filepath.Join(config, ApprovalKeyFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadApprovalKey(""); err == nil || !strings.Contains(err.Error(), "0 bytes") || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("approvalKey with an empty key file: %v", err)
	}
	if body, _ := os.ReadFile(path); len(body) != 0 {
		t.Fatal("the empty key file was replaced")
	}
}
