package container

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Engine API does not say when the pids limit refused a fork, gives no
// CPU time, and Podman on cgroup v1 with the cgroupfs manager does not
// always set State.OOMKilled; and the engine removes the container's
// cgroups as soon as it stops, taking the kernel's counts with them. So,
// for a local engine on cgroup v1 with the cgroupfs manager, the container
// is made under a parent cgroup the backend names (Options.CgroupParent),
// and while it runs the backend reads the counters of the container's own
// cgroups (found under that parent by the container id in their name)
// every WatchInterval. cgroup v1 sends no inotify event when these change,
// hence the polling; a reading changes nothing in the cgroup.
//
// This is best effort by nature: a count that rises in the last
// WatchInterval before the engine removes the cgroup can be missed. The
// limits themselves are the engine's and hold regardless.

// WatchInterval is how often a running container's cgroup counters are
// read. The reads are a few small kernel files; at 2ms they cost well
// under 1% of a core.
const WatchInterval = 2 * time.Millisecond

type cgroupWatch struct {
	root, parent, id string
	stop, done       chan struct{}

	mu         sync.Mutex
	dirs       map[string]string // controller → the container's cgroup
	pidsFailed bool
	oomKilled  bool
	memPeak    int64
	user, sys  time.Duration
	cpuKnown   bool
}

// watchCgroups starts watching for the container's cgroups under parent
// in the v1 hierarchies below root. It returns nil where there is no such
// hierarchy, and the run goes on without these readings.
func watchCgroups(root, parent, id string) *cgroupWatch {
	if _, err := os.Stat(filepath.Join(root, "pids", "cgroup.procs")); err != nil {
		return nil
	}
	w := &cgroupWatch{root: root, parent: parent, id: id, stop: make(chan struct{}), done: make(chan struct{}), dirs: map[string]string{}}
	go w.loop()
	return w
}

var watched = []string{"pids", "memory", "cpuacct"}

func (w *cgroupWatch) loop() {
	defer close(w.done)
	t := time.NewTicker(WatchInterval)
	defer t.Stop()
	for n := 0; ; n++ {
		w.read(n%10 == 0)
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

// read takes one reading; slow readings (peak memory, CPU) only when all.
func (w *cgroupWatch) read(all bool) {
	for _, c := range watched {
		w.mu.Lock()
		dir := w.dirs[c]
		w.mu.Unlock()
		if dir == "" {
			dir = w.find(c)
			if dir == "" {
				continue
			}
			w.mu.Lock()
			w.dirs[c] = dir
			w.mu.Unlock()
			all = true
		}
		switch c {
		case "pids":
			if keyValue(filepath.Join(dir, "pids.events"), "max") > 0 {
				w.mu.Lock()
				w.pidsFailed = true
				w.mu.Unlock()
			}
		case "memory":
			oom := keyValue(filepath.Join(dir, "memory.oom_control"), "oom_kill") > 0
			var peak int64
			if all {
				peak, _ = readInt(filepath.Join(dir, "memory.max_usage_in_bytes"))
			}
			w.mu.Lock()
			w.oomKilled = w.oomKilled || oom
			w.memPeak = max(w.memPeak, peak)
			w.mu.Unlock()
		case "cpuacct":
			if !all {
				continue
			}
			u, err1 := readInt(filepath.Join(dir, "cpuacct.usage_user"))
			s, err2 := readInt(filepath.Join(dir, "cpuacct.usage_sys"))
			if err1 == nil && err2 == nil {
				w.mu.Lock()
				w.user, w.sys = max(w.user, time.Duration(u)), max(w.sys, time.Duration(s))
				w.cpuKnown = true
				w.mu.Unlock()
			}
		}
	}
}

// find looks for the container's cgroup under the parent: Podman names it
// libpod-<id>, Docker <id>.
func (w *cgroupWatch) find(controller string) string {
	dir := filepath.Join(w.root, controller, w.parent)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if e.IsDir() && strings.Contains(e.Name(), w.id) {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

// finish stops the watch after one last reading.
func (w *cgroupWatch) finish() {
	if w == nil {
		return
	}
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.read(true)
}

// keyValue reads "key value" lines and returns key's value, 0 if absent.
func keyValue(path, key string) int64 {
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

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
