package bwrap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The cgroup of one run: a memory and a pids cgroup (cgroup v1, which is
// where those controllers are on the hybrid hosts airlock runs on), made
// under the caller's own cgroup in each hierarchy, so airlock never
// touches a cgroup it did not create. bwrap and its child are moved in
// while the child waits on --block-fd, before the command exists, so every
// process of the command is born inside. Limits.Pids is the cgroup's
// pids.max, and bwrap and its PID 1 count against it: the command's tree
// gets two fewer, never more.

// DefaultCgroupRoot is where the cgroup v1 hierarchies are mounted.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// cgroupRemoveWait bounds how long removing a run's cgroup waits for its
// last processes to be reaped by the kernel (rmdir fails with EBUSY until
// then).
const cgroupRemoveWait = 2 * time.Second

var cgroupSeq atomic.Uint64

type cgroup struct {
	mem, pids string // directories; "" if not made
	// cpu is the cpuacct cgroup, for Usage only, "" where there is none:
	// bwrap's own rusage does not include the command's, since the
	// sandbox's PID 1 reaps it and is reaped in turn without passing it on.
	cpu string
}

// ownCgroup returns the caller's cgroup path in the v1 hierarchy that has
// controller, from /proc/self/cgroup.
func ownCgroup(controller string) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	return parseOwnCgroup(b, controller)
}

func parseOwnCgroup(b []byte, controller string) (string, error) {
	if controller == "" {
		return "", fmt.Errorf("no controller named")
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("no cgroup v1 %s controller in /proc/self/cgroup", controller)
}

// newCgroup makes the run's cgroups under parent (a name relative to the
// caller's own cgroup in each hierarchy below cgroupRoot) and writes the
// limits.
func newCgroup(cgroupRoot, parent string, memory int64, pids int) (*cgroup, error) {
	name := fmt.Sprintf("run-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	cg := &cgroup{}
	mk := func(controller string) (string, error) {
		own, err := ownCgroup(controller)
		if err != nil {
			return "", err
		}
		root := path.Join(cgroupRoot, controller)
		if _, err := os.Stat(path.Join(root, "cgroup.procs")); err != nil {
			return "", fmt.Errorf("the %s controller is not a cgroup v1 hierarchy at %s: %w", controller, root, err)
		}
		dir := path.Join(root, own, parent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		return dir, nil
	}
	var err error
	if cg.mem, err = mk("memory"); err != nil {
		return nil, err
	}
	if cg.pids, err = mk("pids"); err != nil {
		cg.remove()
		return nil, err
	}
	if d, err := mk("cpuacct"); err == nil {
		cg.cpu = d
	}
	lim := strconv.FormatInt(memory, 10)
	if err := write(cg.mem, "memory.limit_in_bytes", lim); err != nil {
		cg.remove()
		return nil, err
	}
	// With swap accounting, memory plus swap gets the same bound, so the
	// limit cannot be stretched by swapping. Without it there is no such
	// file, and swap is not charged to the cgroup at all.
	if _, err := os.Stat(path.Join(cg.mem, "memory.memsw.limit_in_bytes")); err == nil {
		if err := write(cg.mem, "memory.memsw.limit_in_bytes", lim); err != nil {
			cg.remove()
			return nil, err
		}
	}
	if err := write(cg.pids, "pids.max", strconv.Itoa(pids)); err != nil {
		cg.remove()
		return nil, err
	}
	return cg, nil
}

func write(dir, file, value string) error {
	return os.WriteFile(path.Join(dir, file), []byte(value), 0o644)
}

// add moves pid into both cgroups.
func (cg *cgroup) add(pid int) error {
	for _, d := range []string{cg.mem, cg.pids, cg.cpu} {
		if d == "" {
			continue
		}
		if err := write(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// oomKills is how many processes the kernel's OOM killer ended in the
// memory cgroup (the oom_kill line of memory.oom_control).
func (cg *cgroup) oomKills() int64 {
	return readKey(path.Join(cg.mem, "memory.oom_control"), "oom_kill")
}

// forkFailures is how many forks the pids limit refused (pids.events).
func (cg *cgroup) forkFailures() int64 {
	return readKey(path.Join(cg.pids, "pids.events"), "max")
}

// cpuUsage is the user and system CPU time of the whole tree, from
// cpuacct; ok is false without a cpuacct cgroup.
func (cg *cgroup) cpuUsage() (user, sys time.Duration, ok bool) {
	if cg.cpu == "" {
		return 0, 0, false
	}
	u, err1 := readInt(path.Join(cg.cpu, "cpuacct.usage_user"))
	s, err2 := readInt(path.Join(cg.cpu, "cpuacct.usage_sys"))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return time.Duration(u), time.Duration(s), true
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// memPeak is the most memory the tree used at once, in bytes.
func (cg *cgroup) memPeak() int64 {
	n, _ := readInt(path.Join(cg.mem, "memory.max_usage_in_bytes"))
	return n
}

// readKey reads "key value" lines and returns key's value, 0 if absent.
func readKey(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// killAll sends SIGKILL to every process still in the cgroups. They are
// this run's own (nothing else is ever put there), so this touches nothing
// airlock did not start.
func (cg *cgroup) killAll() {
	for _, d := range []string{cg.pids, cg.mem, cg.cpu} {
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

// remove kills what is left and removes the cgroups, waiting up to
// cgroupRemoveWait for the kernel to let go of them.
func (cg *cgroup) remove() error {
	var errs []error
	for _, d := range []string{cg.mem, cg.pids, cg.cpu} {
		if d == "" {
			continue
		}
		deadline := time.Now().Add(cgroupRemoveWait)
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
				break
			}
			cg.killAll()
			time.Sleep(5 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}
