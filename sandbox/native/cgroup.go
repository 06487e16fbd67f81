package native

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupSystem is where the memory and pids controllers live on this host,
// found once at New: each on cgroup v1 (its own hierarchy) or on v2, and
// the v2 hierarchy, if any, for cgroup.kill.
type cgroupSystem struct {
	mem, pids   hierarchy
	unified     hierarchy // v2, for cgroup.kill; may carry no controllers
	unifiedKill bool
}

// hierarchy is one mounted cgroup hierarchy and this process's place in it.
type hierarchy struct {
	mount string // "" when absent
	self  string // this process's cgroup, relative to mount
	v2    bool
}

func (h hierarchy) ok() bool { return h.mount != "" }

// parent is the directory under which a run's cgroups are made: airlock's
// own subtree of this process's cgroup, so that the limits of the cgroup
// airlock itself runs in still bound every sandbox.
func (h hierarchy) parent() string { return path.Join(h.mount, h.self, cgroupDirName) }

// cgroupDirName names airlock's subtree in each hierarchy.
const cgroupDirName = "airlock"

// runNonce is this process's part of its run cgroups' names.
var runNonce = func() string {
	// getrandom(2) is crypto/rand's own source on Linux; package
	// crypto/rand is not used for it, because its imports (math/big)
	// initialize too late for `airlock exec`'s fast start. The nonce need
	// only tell apart processes that reuse a PID, so should the call fail
	// the clock stands in.
	var b [4]byte
	for {
		n, err := unix.Getrandom(b[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != len(b) {
			binary.LittleEndian.PutUint32(b[:], uint32(time.Now().UnixNano()))
		}
		return hex.EncodeToString(b[:])
	}
}()

// sweepStale removes the run cgroups in airlock's subtrees whose owner
// process is gone: an airlock killed with SIGKILL cannot remove its own.
// Only empty ones go (the kernel refuses the rest), and only airlock's:
// every name under its subtree is PID-N-NONCE, made by a Run, and the
// command's pids cgroup inside it goes first.
func (cs *cgroupSystem) sweepStale() {
	for _, h := range []hierarchy{cs.mem, cs.pids, cs.unified} {
		if !h.ok() {
			continue
		}
		entries, err := os.ReadDir(h.parent())
		if err != nil {
			continue
		}
		for _, e := range entries {
			pid, _, ok := strings.Cut(e.Name(), "-")
			n, err := strconv.Atoi(pid)
			if !e.IsDir() || !ok || err != nil || n <= 0 || n == os.Getpid() {
				continue
			}
			if syscall.Kill(n, 0) == syscall.ESRCH {
				os.Remove(path.Join(h.parent(), e.Name(), commandCgroupName))
				os.Remove(path.Join(h.parent(), e.Name()))
			}
		}
	}
}

// detectCgroups reads /proc/self/mountinfo and /proc/self/cgroup, keeping
// only hierarchies mounted under root.
func detectCgroups(root string) cgroupSystem {
	b, _ := os.ReadFile("/proc/self/cgroup")
	self := parseProcCgroup(b)
	b, _ = os.ReadFile("/proc/self/mountinfo")
	var cs cgroupSystem
	for _, m := range parseMountinfo(b, root) {
		switch m.fstype {
		case "cgroup2":
			h := hierarchy{mount: m.point, self: self[""], v2: true}
			cs.unified = h
			cs.unifiedKill = exists(path.Join(m.point, self[""], "cgroup.kill"))
			ctrl, _ := os.ReadFile(path.Join(m.point, self[""], "cgroup.controllers"))
			for _, c := range strings.Fields(string(ctrl)) {
				switch {
				case c == "memory" && !cs.mem.ok():
					cs.mem = h
				case c == "pids" && !cs.pids.ok():
					cs.pids = h
				}
			}
		case "cgroup":
			// A v1 hierarchy wins over v2 for its controller: on a hybrid
			// host the controllers are bound to v1.
			for _, o := range strings.Split(m.superOpts, ",") {
				switch o {
				case "memory":
					cs.mem = hierarchy{mount: m.point, self: self["memory"]}
				case "pids":
					cs.pids = hierarchy{mount: m.point, self: self["pids"]}
				}
			}
		}
	}
	return cs
}

// cgroupMount is one cgroup filesystem of mountinfo.
type cgroupMount struct {
	point, fstype, superOpts string
}

// parseMountinfo lists the cgroup and cgroup2 mounts at or under root.
// Lines it cannot read are skipped.
func parseMountinfo(b []byte, root string) []cgroupMount {
	root = path.Clean(root)
	var out []cgroupMount
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+3 >= len(fields) {
			continue
		}
		m := cgroupMount{point: fields[4], fstype: fields[sep+1], superOpts: fields[sep+3]}
		if m.fstype != "cgroup" && m.fstype != "cgroup2" {
			continue
		}
		if root != "/" && m.point != root && !strings.HasPrefix(m.point, root+"/") {
			continue
		}
		out = append(out, m)
	}
	return out
}

// parseProcCgroup maps each controller of /proc/self/cgroup to this
// process's cgroup; "" is the v2 hierarchy.
func parseProcCgroup(b []byte) map[string]string {
	self := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			self[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			self[c] = parts[2]
		}
	}
	return self
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// runCgroup is the cgroups of one run.
type runCgroup struct {
	mem, pids, kill string // directories; "" when not made
	// cmdPids is the command's pids cgroup, below pids (see
	// nsinit.Config.CommandPids); "" when not made.
	cmdPids       string
	memV2, pidsV2 bool
	made          []string // to remove, deepest last
}

// commandCgroupName names the command's pids cgroup inside the run's.
const commandCgroupName = "command"

// newRunCgroup makes the run's cgroups and sets the limits: memory for
// the whole tree, and pids both for the whole tree (the init's allowance
// included) and, in a cgroup below it, for the command's. A controller
// that cannot be set up is reported in the error's order: memory, pids.
// The v2 directory for cgroup.kill is best effort: the PID namespace kills
// the tree anyway.
func (cs *cgroupSystem) newRunCgroup(id string, memory int64, pids int, wantMem, wantPids bool) (rc *runCgroup, memErr, pidsErr error) {
	rc = &runCgroup{}
	if wantMem {
		memErr = rc.makeMem(cs.mem, id, memory)
	}
	if wantPids {
		pidsErr = rc.makePids(cs.pids, id, pids)
	}
	if cs.unified.ok() && cs.unifiedKill {
		dir := path.Join(cs.unified.parent(), id)
		if rc.mkdir(cs.unified.parent(), dir) == nil {
			rc.kill = dir
		}
	}
	return rc, memErr, pidsErr
}

func (rc *runCgroup) mkdir(parent, dir string) error {
	// On cgroup v2 the controllers and cgroup.kill share one directory.
	if slices.Contains(rc.made, dir) {
		return nil
	}
	var err error
	// Twice: another run may remove the shared parent between the two
	// mkdirs, when it leaves last.
	for range 2 {
		if err = os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err = os.Mkdir(dir, 0o755); err == nil {
			rc.made = append(rc.made, dir)
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return err
}

// enable turns the controller on for airlock's v2 subtree; it works where
// this process's own cgroup delegates it (cgroup.subtree_control), and the
// write of the limit then says whether it did.
func enable(h hierarchy, controller string) {
	if h.v2 {
		write(h.parent(), "cgroup.subtree_control", "+"+controller)
	}
}

func (rc *runCgroup) makeMem(h hierarchy, id string, memory int64) error {
	if !h.ok() {
		return errors.New("no memory cgroup controller is mounted")
	}
	dir := path.Join(h.parent(), id)
	if err := rc.mkdir(h.parent(), dir); err != nil {
		return err
	}
	enable(h, "memory")
	rc.mem, rc.memV2 = dir, h.v2
	v := strconv.FormatInt(memory, 10)
	if h.v2 {
		if err := write(dir, "memory.max", v); err != nil {
			return err
		}
		// No swap: the limit is the memory the tree may hold.
		write(dir, "memory.swap.max", "0")
		return nil
	}
	if err := write(dir, "memory.limit_in_bytes", v); err != nil {
		return err
	}
	if exists(path.Join(dir, "memory.memsw.limit_in_bytes")) {
		write(dir, "memory.memsw.limit_in_bytes", v)
	}
	return nil
}

// makePids makes the run's pids cgroup, for the init and the command,
// with room for InitTasks besides the command's pids; and below it the
// command's, one higher than pids until the init has forked the command
// into it (see nsinit's pids.go).
func (rc *runCgroup) makePids(h hierarchy, id string, pids int) error {
	if !h.ok() {
		return errors.New("no pids cgroup controller is mounted")
	}
	dir := path.Join(h.parent(), id)
	if err := rc.mkdir(h.parent(), dir); err != nil {
		return err
	}
	enable(h, "pids")
	rc.pids, rc.pidsV2 = dir, h.v2
	if err := write(dir, "pids.max", strconv.Itoa(pids+InitTasks)); err != nil {
		return err
	}
	cmd := path.Join(dir, commandCgroupName)
	if err := rc.mkdir(dir, cmd); err != nil {
		return err
	}
	if h.v2 {
		// Threads move alone only inside a threaded subtree; pids is a
		// threaded controller.
		if err := write(cmd, "cgroup.type", "threaded"); err != nil {
			return fmt.Errorf("making the command's pids cgroup threaded: %w", err)
		}
		if err := write(dir, "cgroup.subtree_control", "+pids"); err != nil {
			return fmt.Errorf("enabling pids below the run's cgroup: %w", err)
		}
	}
	rc.cmdPids = cmd
	return write(cmd, "pids.max", strconv.Itoa(pids+1))
}

// threadsFile is the file of a cgroup that moves single threads.
func (rc *runCgroup) threadsFile() string {
	if rc.pidsV2 {
		return "cgroup.threads"
	}
	return "tasks"
}

// openPidsHop opens, for the init, the files through which its forking
// thread steps into the command's pids cgroup and back (nsinit.PidsEnterFD,
// PidsMaxFD, PidsLeaveFD, in that order).
func (rc *runCgroup) openPidsHop() ([]*os.File, error) {
	var files []*os.File
	for _, p := range []string{
		path.Join(rc.cmdPids, rc.threadsFile()),
		path.Join(rc.cmdPids, "pids.max"),
		path.Join(rc.pids, rc.threadsFile()),
	} {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func write(dir, file, v string) error {
	return os.WriteFile(path.Join(dir, file), []byte(v), 0)
}

// add moves pid (the init, before it runs anything) into every cgroup.
func (rc *runCgroup) add(pid int) error {
	var done []string
	for _, d := range []string{rc.mem, rc.pids, rc.kill} {
		if d == "" || slices.Contains(done, d) {
			continue
		}
		done = append(done, d)
		if err := write(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("moving the init into %s: %w", d, err)
		}
	}
	return nil
}

// killAll kills every process in the run's cgroups: cgroup.kill where the
// kernel has it, else SIGKILL to each pid listed (the PID namespace's end
// catches any that fork meanwhile).
func (rc *runCgroup) killAll() {
	if rc.kill != "" && write(rc.kill, "cgroup.kill", "1") == nil {
		return
	}
	for _, d := range []string{rc.cmdPids, rc.pids, rc.mem} {
		if d == "" {
			continue
		}
		b, _ := os.ReadFile(path.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// stats reads what the kernel counted: an OOM kill, a fork refused at the
// pids limit, and the memory peak.
func (rc *runCgroup) stats() (oom, pidsMax bool, peak int64) {
	if rc.mem != "" {
		if rc.memV2 {
			oom = keyed(rc.mem, "memory.events", "oom_kill") > 0
			peak = number(rc.mem, "memory.peak")
		} else {
			oom = keyed(rc.mem, "memory.oom_control", "oom_kill") > 0
			peak = number(rc.mem, "memory.max_usage_in_bytes")
		}
	}
	for _, d := range []string{rc.cmdPids, rc.pids} {
		if d != "" {
			pidsMax = pidsMax || keyed(d, "pids.events", "max") > 0
		}
	}
	return oom, pidsMax, peak
}

func keyed(dir, file, key string) int64 {
	b, _ := os.ReadFile(path.Join(dir, file))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func number(dir, file string) int64 {
	b, _ := os.ReadFile(path.Join(dir, file))
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// CgroupRemoveWait bounds how long remove waits for the last processes to
// leave a cgroup after the kill.
const CgroupRemoveWait = 5 * time.Second

// remove deletes the run's cgroups, once they are empty.
func (rc *runCgroup) remove() error {
	deadline := time.Now().Add(CgroupRemoveWait)
	var errs []error
	for i := len(rc.made) - 1; i >= 0; i-- {
		for {
			err := os.Remove(rc.made[i])
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, err)
				break
			}
			rc.killAll()
			time.Sleep(10 * time.Millisecond)
		}
		// The shared parent goes with the last run; while others use it
		// the kernel refuses, which is fine.
		os.Remove(path.Dir(rc.made[i]))
	}
	return errors.Join(errs...)
}
