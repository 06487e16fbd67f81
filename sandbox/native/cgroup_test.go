package native

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
)

// A hybrid host like the test machines: memory and pids on v1, v2 for
// cgroup.kill only.
const hybridMountinfo = `24 29 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
30 24 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
35 30 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,memory
37 30 0:33 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,pids
38 30 0:34 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:18 - cgroup cgroup rw,cpu,cpuacct
40 29 0:35 / /elsewhere/memory rw - cgroup cgroup rw,memory
bad line
41 29 0:36 / /x rw - -
`

func TestParseMountinfo(t *testing.T) {
	got := parseMountinfo([]byte(hybridMountinfo), "/sys/fs/cgroup/")
	var points []string
	for _, m := range got {
		points = append(points, m.fstype+" "+m.point+" "+m.superOpts)
	}
	want := []string{
		"cgroup2 /sys/fs/cgroup/unified rw,nsdelegate",
		"cgroup /sys/fs/cgroup/memory rw,memory",
		"cgroup /sys/fs/cgroup/pids rw,pids",
		"cgroup /sys/fs/cgroup/cpu,cpuacct rw,cpu,cpuacct",
	}
	if !slices.Equal(points, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(points, "\n"), strings.Join(want, "\n"))
	}
	if got := parseMountinfo([]byte(hybridMountinfo), "/nonexistent"); len(got) != 0 {
		t.Errorf("under /nonexistent: got %v, want none", got)
	}
}

func TestParseProcCgroup(t *testing.T) {
	got := parseProcCgroup([]byte("9:name=systemd:/\n8:pids:/a\n4:memory:/process_api/x\n2:cpu,cpuacct:/c\n0::/u\nnonsense\n"))
	for k, want := range map[string]string{"pids": "/a", "memory": "/process_api/x", "cpu": "/c", "cpuacct": "/c", "": "/u", "name=systemd": "/"} {
		if got[k] != want {
			t.Errorf("%q: got %q, want %q", k, got[k], want)
		}
	}
}

func TestDetectCgroupsUnderMissingRoot(t *testing.T) {
	cs := detectCgroups("/nonexistent")
	if cs.mem.ok() || cs.pids.ok() || cs.unified.ok() {
		t.Errorf("found hierarchies under /nonexistent: %+v", cs)
	}
	rc, memErr, pidsErr := cs.newRunCgroup("x", 1<<20, 10, true, true)
	if memErr == nil || pidsErr == nil || len(rc.made) != 0 {
		t.Errorf("made cgroups without hierarchies: %v %v %v", memErr, pidsErr, rc.made)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte(hybridMountinfo), "/sys/fs/cgroup")
	f.Add([]byte("1 2 3 4 5 - cgroup x y\n"), "/")
	f.Fuzz(func(t *testing.T, b []byte, root string) {
		for _, m := range parseMountinfo(b, root) {
			if m.fstype != "cgroup" && m.fstype != "cgroup2" {
				t.Fatalf("non-cgroup mount %+v", m)
			}
		}
		parseProcCgroup(b)
	})
}

// TestRunCgroupV2Layout checks, on a stand-in directory tree, that on
// cgroup v2 the memory and pids limits and cgroup.kill share one cgroup.
func TestRunCgroupV2Layout(t *testing.T) {
	mount := t.TempDir()
	h := hierarchy{mount: mount, self: "/", v2: true}
	cs := cgroupSystem{mem: h, pids: h, unified: h, unifiedKill: true}
	rc, memErr, pidsErr := cs.newRunCgroup("r1", 1<<20, 7, true, true)
	if memErr != nil || pidsErr != nil {
		t.Fatal(memErr, pidsErr)
	}
	dir := filepath.Join(mount, cgroupDirName, "r1")
	cmd := filepath.Join(dir, commandCgroupName)
	if rc.mem != dir || rc.pids != dir || rc.kill != dir || rc.cmdPids != cmd || !slices.Equal(rc.made, []string{dir, cmd}) {
		t.Errorf("mem %q pids %q kill %q command %q made %q: want all in %s, made once, the command's below", rc.mem, rc.pids, rc.kill, rc.cmdPids, rc.made, dir)
	}
	for file, want := range map[string]string{
		"memory.max": "1048576", "memory.swap.max": "0", "pids.max": strconv.Itoa(7 + InitTasks), "cgroup.subtree_control": "+pids",
		// One above the limit until the init has forked the command.
		"command/pids.max": "8", "command/cgroup.type": "threaded",
	} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", file, b, err, want)
		}
	}
	if rc.threadsFile() != "cgroup.threads" {
		t.Errorf("threads move through %s on v2, want cgroup.threads", rc.threadsFile())
	}
}

// TestSweepStaleCgroups: a run cgroup whose airlock process is gone (it
// was killed before it could remove it) goes at the next New; one whose
// owner lives stays.
func TestSweepStaleCgroups(t *testing.T) {
	cs := detectCgroups("/sys/fs/cgroup")
	if !cs.mem.ok() {
		t.Fatal("no memory controller found: the native backend's cgroup tests need cgroup v1 or v2 with memory")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := cs.mem.parent()
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, strconv.Itoa(dead.Process.Pid)+"-1-deadbeef")
	live := filepath.Join(parent, strconv.Itoa(os.Getppid())+"-1-cafef00d")
	for _, d := range []string{stale, live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer os.Remove(live)
	defer os.Remove(stale)
	cs.sweepStale()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cgroup of a process that is gone is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the cgroup of a live process was removed: %v", err)
	}
}

// TestPidsLimitIsTheCommands: Limits.Pids is the command's own, counting
// the command itself, whatever threads the init holds: a shell and four
// children run under a limit of 5, a fifth child cannot be forked. The
// shell's own words (its fork failure) say so, not the Result.
func TestPidsLimitIsTheCommands(t *testing.T) {
	sb := newNative(t, nil)
	for _, c := range []struct {
		children int
		forks    bool
	}{{4, true}, {5, false}} {
		script := strings.Repeat("sleep 2 & ", c.children) + "wait; echo done"
		r, err := sb.Run(t.Context(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, Limits: sandbox.Limits{Pids: 5, Wall: 20 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		failed := strings.Contains(strings.ToLower(string(r.Stderr)), "fork")
		if failed == c.forks || c.forks && string(r.Stdout) != "done\n" {
			t.Errorf("a shell and %d children under a limit of 5: fork failed %v, want %v: exit %d, stdout %q, stderr %q",
				c.children, failed, !c.forks, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
}
