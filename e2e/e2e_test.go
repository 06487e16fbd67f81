// Package e2e_test drives airlock's MCP server with real MCP clients: the
// official TypeScript SDK (client.mjs), the MCP Inspector's CLI
// (inspector.sh) and the official conformance suite (conformance.sh), over
// stdio (`airlock mcp`) and Streamable HTTP (`airlock serve`).
//
// The clients are Node packages pinned in package-lock.json; e2e/setup.sh
// installs them. The test runs setup.sh itself (a no-op once node_modules
// matches the lock file) and fails, naming setup.sh, when that cannot be
// done: a missing client is a failure, never a skip.
//
// By hand: go test -v ./e2e/ shows each client's report. Each script also
// runs on its own against a server started by hand, for instance
// `airlock serve --workspace DIR` and then e2e/conformance.sh
// http://127.0.0.1:8080/mcp; see the comment at the top of each.
package e2e_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"airlock.dev/airlock/gateway/gatewaytest"
)

// Bounds of each step, generous on a loaded two-core machine; the whole
// test takes well under these added up.
const (
	setupTimeout       = 5 * time.Minute // npm ci on a fresh clone; a no-op otherwise
	buildTimeout       = 3 * time.Minute
	healthTimeout      = 20 * time.Second
	clientTimeout      = 3 * time.Minute
	inspectorTimeout   = 2 * time.Minute
	conformanceTimeout = 2 * time.Minute
	// killGrace is how long a process group has after SIGTERM before
	// SIGKILL.
	killGrace = 5 * time.Second
)

func TestMCPClients(t *testing.T) {
	e2eDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	noteInputs(t, filepath.Dir(e2eDir))
	node := setup(t, e2eDir)
	bin := buildAirlock(t, e2eDir)

	// The servers keep their approval key in a config directory of the
	// test's own.
	env := append(cleanEnv(), "XDG_CONFIG_HOME="+t.TempDir())
	stdioWS := workspace(t, "stdio")
	inspectorWS := workspace(t, "inspector")
	httpWS := workspace(t, "http")
	url := serve(t, bin, httpWS, env)

	steps := []struct {
		name    string
		timeout time.Duration
		args    []string
		env     []string
	}{
		{"client.mjs stdio", clientTimeout, []string{node, "client.mjs", "stdio", bin, stdioWS}, nil},
		{"client.mjs http", clientTimeout, []string{node, "client.mjs", "http", url, httpWS}, nil},
		{"inspector.sh", inspectorTimeout, []string{"bash", "inspector.sh", bin, inspectorWS, url}, []string{"HTTP_WORKSPACE=" + httpWS}},
		{"conformance.sh", conformanceTimeout, []string{"bash", "conformance.sh", url}, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			out, err := run(e2eDir, slices.Concat(env, s.env), s.timeout, s.args...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(s.args, " "), err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// noteInputs stats the files that the build and the clients read: the
// module's Go sources and this directory's scripts. go test caches a
// passing result against the files its test process touched, and it does
// not see what subprocesses read; without this, a change to the server
// would be answered with a cached pass.
func noteInputs(t testing.TB, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case path == root:
			case name == "node_modules" || name == "testdata" || name == "bench" || strings.HasPrefix(name, "."):
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".mod", ".sum", ".mjs", ".sh", ".json", ".txt":
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("listing the test's inputs: %v", err)
	}
}

// setup runs setup.sh and returns the Node 22 binary it installed.
func setup(t *testing.T, e2eDir string) string {
	t.Helper()
	out, err := run(e2eDir, os.Environ(), setupTimeout, "bash", "setup.sh")
	if err != nil {
		t.Fatalf("e2e/setup.sh failed (%v): the end-to-end tests need its Node packages; run e2e/setup.sh (it needs npm and the npm registry) and see its message:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	node := lines[len(lines)-1]
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("e2e/setup.sh printed %q as the Node 22 binary: %v", node, err)
	}
	return node
}

// buildAirlock builds cmd/airlock into the test's temporary directory.
func buildAirlock(t testing.TB, e2eDir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "airlock")
	out, err := run(e2eDir, os.Environ(), buildTimeout, "go", "build", "-o", bin, "../cmd/airlock")
	if err != nil {
		t.Fatalf("go build ../cmd/airlock: %v\n%s", err, out)
	}
	return bin
}

// cleanEnv is the environment less airlock's own settings, so that a
// developer's AIRLOCK_MODE or AIRLOCK_CONFIG does not change what the
// servers do.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIRLOCK_") {
			env = append(env, kv)
		}
	}
	return env
}

func workspace(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serve starts airlock serve on a free loopback port, with the extra
// flags given, and returns the /mcp URL (see startHTTP).
func serve(t *testing.T, bin, ws string, env []string, extra ...string) string {
	t.Helper()
	url, _ := startHTTP(t, bin, env, "serve", append([]string{"--workspace", ws}, extra...)...)
	return url
}

// startHTTP starts `bin sub --addr ADDR args...` (airlock serve, or
// airlock gateway --http) on a free loopback port, in its own process
// group, waits for /healthz, and returns the /mcp URL and the process's
// id. The server and anything it started are killed when the test ends.
func startHTTP(t testing.TB, bin string, env []string, sub string, args ...string) (url string, pid int) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{sub, "--addr", addr}, args...)...)
	// Its own directory, so that no airlock.yaml around the test is read.
	cmd.Dir = t.TempDir()
	cmd.Env = env
	var logs gatewaytest.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		t.Fatalf("airlock %s: %v", sub, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stopGroup(cmd.Process.Pid, exited)
		if t.Failed() {
			t.Logf("airlock %s's output:\n%s", sub, logs.String())
		}
	})

	health := "http://" + addr + "/healthz"
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(healthTimeout)
	for {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("airlock %s --addr %s exited before it was healthy (%v):\n%s", sub, addr, err, logs.String())
		default:
		}
		resp, err := client.Get(health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return "http://" + addr + "/mcp", cmd.Process.Pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("airlock %s: %s not healthy within %v (last: %v):\n%s", sub, health, healthTimeout, describe(resp, err), logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func describe(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// run runs args in dir, in a process group of its own that is killed
// whole at the timeout, and returns stdout and stderr together.
func run(dir string, env []string, timeout time.Duration, args ...string) ([]byte, error) {
	var out gatewaytest.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child left behind that holds the output open does not hold up
	// Wait past this; the group is killed below.
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		// The group may still hold a child the command left behind.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, exec.ErrWaitDelay) {
			err = nil
		}
		return []byte(out.String()), err
	case <-time.After(timeout):
		stopGroup(cmd.Process.Pid, exited)
		return []byte(out.String()), fmt.Errorf("timed out after %v", timeout)
	}
}

// stopGroup ends the process group led by pid: SIGTERM, then SIGKILL after
// killGrace, and waits for the leader through exited.
func stopGroup(pid int, exited <-chan error) {
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	select {
	case <-exited:
	case <-time.After(killGrace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
