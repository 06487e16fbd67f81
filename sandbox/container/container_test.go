package container_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/container"
)

func TestName(t *testing.T) {
	if got := container.New(nil).Name(); got != "container" {
		t.Errorf("Name() = %q", got)
	}
}

func TestNoEngine(t *testing.T) {
	sb := container.New(&container.Options{Socket: t.TempDir() + "/none.sock"})
	_, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "setup-sandbox.sh") {
		t.Errorf("got %v, want ErrUnavailable pointing at scripts/setup-sandbox.sh", err)
	}
}

func TestNoImage(t *testing.T) {
	requireEngine(t)
	sb := container.New(&container.Options{Image: "localhost/airlock-no-such-image:none"})
	err := sb.Available(context.Background())
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "no image") {
		t.Errorf("got %v, want ErrUnavailable saying the image is missing", err)
	}
}

func TestSocketFromDockerHost(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///some/where.sock")
	if got := container.New(nil).Socket(); got != "/some/where.sock" {
		t.Errorf("Socket() = %q", got)
	}
}

// engineGet asks the engine directly, as a second opinion on what the
// backend left behind.
func engineGet(t *testing.T, socket, path string, out any) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	resp, err := c.Get("http://engine/v" + container.APIVersion + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", path, err, b)
	}
}

func TestContainersRemoved(t *testing.T) {
	sb := requireEngine(t)
	ctx := context.Background()
	// Only containers this test's runs made count: one left by another
	// process (a run killed mid-way) is not this test's leak.
	before := airlockContainers(t, sb)
	r, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"echo", "hi"}})
	if err != nil || string(r.Stdout) != "hi\n" {
		t.Fatalf("Run: %v %q %q", err, r.Stdout, r.Stderr)
	}
	spec := sandbox.Spec{Argv: []string{"sleep", "600"}, Limits: sandbox.Limits{Wall: 2 * time.Second}}
	r, err = sb.Run(ctx, spec)
	if err != nil || r.Killed != sandbox.KilledWall || !r.TimedOut {
		t.Fatalf("sleep 600 under Wall 2s: %v %+v", err, r)
	}
	for n := range airlockContainers(t, sb) {
		if !before[n] {
			t.Errorf("container %s is still there after Run", n)
		}
	}
}

// airlockContainers names the engine's containers, running or not, that
// the backend made.
func airlockContainers(t *testing.T, sb *container.Sandbox) map[string]bool {
	t.Helper()
	var list []struct {
		Names []string
	}
	engineGet(t, sb.Socket(), `/containers/json?all=1`, &list)
	names := map[string]bool{}
	for _, c := range list {
		for _, n := range c.Names {
			if strings.Contains(n, "airlock-") {
				names[n] = true
			}
		}
	}
	return names
}

// Options.Runtime is checked, not trusted: Podman's compatible API takes
// HostConfig.Runtime and ignores it.
func TestRuntime(t *testing.T) {
	requireEngine(t)
	sb := container.New(&container.Options{Runtime: "airlock-no-such-runtime"})
	_, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "airlock-no-such-runtime") {
		t.Fatalf("a missing OCI runtime: got %v, want ErrUnavailable naming it", err)
	}
	// The runtime the engine does use passes the check (runc, which
	// scripts/setup-sandbox.sh configures).
	sb = container.New(&container.Options{Runtime: "runc"})
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"echo", "ok"}})
	if err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("Runtime runc: %v %q", err, r.Stdout)
	}
}

func TestUsage(t *testing.T) {
	sb := requireEngine(t)
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Usage.UserCPU+r.Usage.SystemCPU == 0 || r.Usage.MemPeak == 0 {
		t.Errorf("no CPU or memory reading from the container's cgroups: %+v", r.Usage)
	}
}

// Enforced lists the cgroup namespace only when the container has one of
// its own, checked against the host's.
func TestCgroupNamespaceHonest(t *testing.T) {
	sb := requireEngine(t)
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"readlink", "/proc/self/ns/cgroup"}})
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Readlink("/proc/self/ns/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := strings.TrimSpace(string(r.Stdout)) != host
	if r.Has(sandbox.LayerCgroupNS) != own {
		t.Errorf("Enforced has cgroupns: %v; the container's own cgroup namespace: %v (%q vs host %q)", r.Has(sandbox.LayerCgroupNS), own, r.Stdout, host)
	}
}

// BenchmarkRunTrue is one Run of `true` in a fresh container; the side by
// side figures are sandboxbench's.
func BenchmarkRunTrue(b *testing.B) {
	sb := container.New(nil)
	if err := sb.Available(context.Background()); err != nil {
		b.Fatalf("run scripts/setup-sandbox.sh as root: %v", err)
	}
	for b.Loop() {
		r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}})
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%v %+v", err, r)
		}
	}
}

// TestCallerDeadlineDuringStart: a loaded engine can take longer to start
// a container than the caller's deadline allows. That run ended at the
// caller's wall, like any other: a timed-out result, not an engine error,
// and the container is still removed. A fake engine that never answers
// the start stands in for the slow one.
func TestCallerDeadlineDuringStart(t *testing.T) {
	dir := t.TempDir()
	sock := dir + "/engine.sock"
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	removed := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1.41/version", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"Components":[{"Name":"Engine"}]}`)
	})
	mux.HandleFunc("GET /v1.41/images/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{}`)
	})
	mux.HandleFunc("POST /v1.41/containers/create", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"Id":"c1"}`)
	})
	mux.HandleFunc("POST /v1.41/containers/c1/attach", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		io.WriteString(conn, "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		<-r.Context().Done()
		conn.Close()
	})
	mux.HandleFunc("POST /v1.41/containers/c1/start", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // the engine is too busy to answer in time
	})
	mux.HandleFunc("DELETE /v1.41/containers/c1", func(w http.ResponseWriter, r *http.Request) {
		removed <- r.URL.Query().Get("force")
		w.WriteHeader(http.StatusNoContent)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	sb := container.New(&container.Options{Socket: sock, StateDir: dir + "/state", CgroupParent: "-", User: "65534:65534"})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"sleep", "600"}, Workspace: dir})
	if err != nil {
		t.Fatalf("a deadline that ends during the start is the wall limit, not an error: %v", err)
	}
	if !r.TimedOut || r.Killed != sandbox.KilledWall {
		t.Errorf("want TimedOut and Killed wall, got %+v", r)
	}
	select {
	case force := <-removed:
		if force != "1" {
			t.Errorf("the container was removed without force=1: %q", force)
		}
	case <-time.After(5 * time.Second):
		t.Error("the container that may have started was never removed")
	}
}

// TestCallerDeadlineDuringEngineCheck: an engine too loaded to answer its
// first question (/version) before the caller's deadline gives a run that
// timed out, as during create or start, not sandbox_unavailable (the
// suite's WallAndOrphans case failed so on a loaded machine).
func TestCallerDeadlineDuringEngineCheck(t *testing.T) {
	dir := t.TempDir()
	sock := dir + "/engine.sock"
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1.41/version", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	sb := container.New(&container.Options{Socket: sock, StateDir: dir + "/state", CgroupParent: "-", User: "65534:65534"})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"true"}, Workspace: dir})
	if err != nil || !r.TimedOut || r.Killed != sandbox.KilledWall {
		t.Errorf("Run = %+v, %v; want a timed-out result", r, err)
	}
}
