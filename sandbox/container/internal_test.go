package container

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/internal/seccomp"
)

func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	var in []byte
	in = append(in, frame(1, "out1 ")...)
	in = append(in, frame(2, "err")...)
	in = append(in, frame(1, "")...)
	in = append(in, frame(1, "out2")...)
	var o, e bytes.Buffer
	if err := demux(bytes.NewReader(in), &o, &e); err != nil {
		t.Fatal(err)
	}
	if o.String() != "out1 out2" || e.String() != "err" {
		t.Errorf("stdout %q stderr %q", o.String(), e.String())
	}
	for name, bad := range map[string][]byte{
		"short header":    frame(1, "x")[:5],
		"short payload":   frame(1, "hello")[:10],
		"unknown stream":  frame(7, "x"),
		"huge, truncated": append([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, "abc"...),
	} {
		if err := demux(bytes.NewReader(bad), &o, &e); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzDemux: any byte stream demuxes or fails, never panics, and what
// comes out is never more than what went in.
func FuzzDemux(f *testing.F) {
	f.Add(append(frame(1, "a"), frame(2, "b")...))
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		var o, e bytes.Buffer
		demux(bytes.NewReader(in), &o, &e)
		if o.Len()+e.Len() > len(in) {
			t.Fatalf("%d bytes out of %d in", o.Len()+e.Len(), len(in))
		}
	})
}

func TestDefaultSocket(t *testing.T) {
	if got := defaultSocket("unix:///x/y.sock"); got != "/x/y.sock" {
		t.Errorf("DOCKER_HOST unix: got %q", got)
	}
	want := DefaultDockerSocket
	if _, err := os.Stat(DefaultPodmanSocket); err == nil {
		want = DefaultPodmanSocket
	}
	for _, h := range []string{"", "tcp://1.2.3.4:2375", "unix://"} {
		if got := defaultSocket(h); got != want {
			t.Errorf("DOCKER_HOST %q: got %q, want %q", h, got, want)
		}
	}
}

func TestCreateBody(t *testing.T) {
	ws := t.TempDir()
	os.Mkdir(filepath.Join(ws, ".airlock"), 0o755)
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	s := New(&Options{Runtime: "runsc", Socket: "/nonexistent.sock"})
	e := &engine{seccomp: "seccomp=/p.json", emptyDir: "/state/empty"}
	spec := sandbox.Spec{Argv: []string{"ls", "-l"}, Env: []string{"A=1"}, Workspace: ws, Dir: "sub", WorkspaceWritable: true, ReadOnlyPaths: []string{"/usr"}}
	lim := sandbox.Limits{Memory: 64 << 20, Pids: 16, CPU: 1500 * time.Millisecond}.WithDefaults()
	body, err := s.createBody(&spec, lim, e)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(body)
	var got struct {
		Entrypoint, Cmd, Env []string
		User, WorkingDir     string
		NetworkDisabled      bool
		HostConfig           struct {
			NetworkMode    string
			ReadonlyRootfs bool
			CapDrop        []string
			SecurityOpt    []string
			PidsLimit      int
			Memory         int64
			MemorySwap     int64
			Runtime        string
			Init           bool
			Tmpfs          map[string]string
			Mounts         []struct {
				Type, Source, Target string
				ReadOnly             bool
			}
			Ulimits []struct {
				Name       string
				Soft, Hard int64
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	h := got.HostConfig
	wantEntry := []string{DefaultEnvPath, "-i", "A=1", "HOME=/tmp", "PATH=" + sandbox.DefaultPath, "ls", "-l"}
	if !slices.Equal(got.Entrypoint, wantEntry) || len(got.Cmd) != 0 {
		t.Errorf("Entrypoint %q Cmd %q, want %q and none", got.Entrypoint, got.Cmd, wantEntry)
	}
	if got.User != DefaultUser || got.WorkingDir != "/workspace/sub" || !got.NetworkDisabled {
		t.Errorf("User %q WorkingDir %q NetworkDisabled %v", got.User, got.WorkingDir, got.NetworkDisabled)
	}
	if h.NetworkMode != "none" || !h.ReadonlyRootfs || !slices.Equal(h.CapDrop, []string{"ALL"}) || !h.Init {
		t.Errorf("HostConfig %+v", h)
	}
	if !slices.Equal(h.SecurityOpt, []string{"no-new-privileges", "seccomp=/p.json"}) {
		t.Errorf("SecurityOpt %q", h.SecurityOpt)
	}
	if h.PidsLimit != 16 || h.Memory != 64<<20 || h.MemorySwap != h.Memory || h.Runtime != "runsc" {
		t.Errorf("PidsLimit %d Memory %d MemorySwap %d Runtime %q", h.PidsLimit, h.Memory, h.MemorySwap, h.Runtime)
	}
	if _, ok := h.Tmpfs["/tmp"]; !ok {
		t.Errorf("no tmpfs /tmp: %v", h.Tmpfs)
	}
	type m = struct {
		Type, Source, Target string
		ReadOnly             bool
	}
	wantMounts := []m{
		{"bind", "/usr", "/usr", true},
		{"bind", ws, "/workspace", false},
		{"bind", "/state/empty", "/workspace/.airlock", true},
	}
	if len(h.Mounts) != len(wantMounts) {
		t.Fatalf("Mounts %+v, want %+v", h.Mounts, wantMounts)
	}
	for i := range wantMounts {
		if h.Mounts[i] != wantMounts[i] {
			t.Errorf("mount %d: %+v, want %+v", i, h.Mounts[i], wantMounts[i])
		}
	}
	ul := map[string][2]int64{}
	for _, u := range h.Ulimits {
		ul[u.Name] = [2]int64{u.Soft, u.Hard}
	}
	for name, want := range map[string][2]int64{
		"nofile": {sandbox.DefaultOpenFiles, sandbox.DefaultOpenFiles},
		"fsize":  {sandbox.DefaultFileSize, sandbox.DefaultFileSize},
		"cpu":    {2, 3},
		"nproc":  {NprocUlimit, NprocUlimit},
		"core":   {0, 0},
	} {
		if ul[name] != want {
			t.Errorf("ulimit %s = %v, want %v", name, ul[name], want)
		}
	}

	// Read-only and no .airlock: nothing to mask.
	ws2 := t.TempDir()
	body, err = s.createBody(&sandbox.Spec{Argv: []string{"true"}, Workspace: ws2}, lim, e)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(body)
	if strings.Contains(string(b), ".airlock") {
		t.Errorf("masked a .airlock that a read-only workspace does not have: %s", b)
	}
}

func TestCreateBodyInvalid(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "f"), nil, 0o644)
	s := New(&Options{Socket: "/nonexistent.sock"})
	e := &engine{}
	lim := sandbox.Limits{}.WithDefaults()
	for name, spec := range map[string]sandbox.Spec{
		"env without =":         {Argv: []string{"true"}, Env: []string{"X"}},
		"argv0 with =":          {Argv: []string{"X=1"}},
		"dir is a file":         {Argv: []string{"true"}, Workspace: ws, Dir: "f"},
		"dir without workspace": {Argv: []string{"true"}, Dir: "x"},
		"missing workspace":     {Argv: []string{"true"}, Workspace: filepath.Join(ws, "nope")},
		"missing ro path":       {Argv: []string{"true"}, ReadOnlyPaths: []string{filepath.Join(ws, "nope")}},
	} {
		_, err := s.createBody(&spec, lim, e)
		var se *sandbox.Error
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !errors.As(err, &se) || se.Hint == "" {
			t.Errorf("%s: got %v, want an invalid_spec sandbox.Error with a hint", name, err)
		}
	}
}

func TestSeccompProfile(t *testing.T) {
	profile, err := seccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	var p seccompProfile
	if err := json.Unmarshal(profile, &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ALLOW" || len(p.Syscalls) == 0 {
		t.Fatalf("profile %+v", p)
	}
	// Every call the filter looks at has its entries here (that they
	// refuse what the filter refuses is the seccomp package's test).
	for _, r := range seccomp.Rules(profileSockets) {
		if !slices.ContainsFunc(p.Syscalls, func(e seccomp.OCISyscall) bool { return slices.Contains(e.Names, r.Name) }) {
			t.Errorf("the profile has no entry for %s (%s)", r.Name, r.Reason)
		}
	}
	for _, name := range []string{"ptrace", "mount", "unshare", "setns", "bpf", "kexec_load"} {
		if !slices.Contains(p.Syscalls[0].Names, name) {
			t.Errorf("%s is not denied", name)
		}
	}
	dir := t.TempDir()
	path, err := seccompFile(dir, profile)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, profile) {
		t.Errorf("the written profile differs: %v", err)
	}
	if again, err := seccompFile(dir, profile); err != nil || again != path {
		t.Errorf("second write: %q %v, want the same path", again, err)
	}
}

func TestOwnDir(t *testing.T) {
	base := t.TempDir()
	good := filepath.Join(base, "good")
	if err := ownDir(good, 0o755); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(base, "loose")
	os.Mkdir(loose, 0o777)
	os.Chmod(loose, 0o777)
	if err := ownDir(loose, 0o755); err == nil {
		t.Error("accepted a world-writable directory")
	}
	link := filepath.Join(base, "link")
	os.Symlink(good, link)
	if err := ownDir(link, 0o755); err == nil {
		t.Error("accepted a symlink")
	}
}

func TestIsRootUser(t *testing.T) {
	for u, want := range map[string]bool{"0": true, "0:0": true, "root": true, "root:x": true, "": true, "65534:65534": false, "1000": false} {
		if got := isRootUser(u); got != want {
			t.Errorf("isRootUser(%q) = %v", u, got)
		}
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	s := New(nil)
	o := s.opts
	if o.Image != DefaultImage || o.EnvPath != DefaultEnvPath || o.User != DefaultUser || o.CgroupParent != DefaultCgroupParent ||
		o.CgroupRoot != "/sys/fs/cgroup" || o.Socket != defaultSocket("") || !strings.HasPrefix(o.StateDir, os.TempDir()) {
		t.Errorf("New(nil) options %+v", o)
	}
	if isRootUser(DefaultUser) {
		t.Error("the default user is root")
	}
	if WatchInterval <= 0 || CleanupTimeout <= 0 || DialTimeout <= 0 || MaxResponse <= 0 {
		t.Error("a limit is not positive")
	}
}

// TestOverlayRefused: the container backend gives no copy-on-write
// workspace, and says so before it asks the engine anything (the socket
// here answers nothing), with or without AllowDegraded.
func TestOverlayRefused(t *testing.T) {
	ws := t.TempDir()
	s := New(&Options{Socket: filepath.Join(t.TempDir(), "none.sock"), StateDir: t.TempDir()})
	for _, degraded := range []bool{false, true} {
		_, err := s.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, Workspace: ws, WorkspaceWritable: true, AllowDegraded: degraded,
			Overlay: &sandbox.Overlay{Upper: ws + "/.airlock/u", Work: ws + "/.airlock/w"}})
		var e *sandbox.Error
		if !errors.As(err, &e) || e.Code != sandbox.CodeUnavailable || e.Layer != sandbox.LayerOverlay ||
			e.Message != "the container backend has no copy-on-write workspace" || !strings.Contains(e.Hint, "native") {
			t.Errorf("AllowDegraded %v: got %v, want Unavailable for layer overlay with a hint naming native", degraded, err)
		}
	}
}
