package nsinit

import (
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// LandlockABI is the Landlock ABI the sandbox asks for: V4 brought TCP
// bind and connect rules, V5 device ioctls, V6 the scoping of abstract
// unix sockets and signals.
const LandlockABI = 6

// LandlockVersion is the kernel's Landlock ABI, 0 when it has none.
func LandlockVersion() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// applyLandlock restricts the calling thread: reads (and execution) of the
// bound system dirs, /proc and /dev; writes only to /tmp, /dev/shm, a few
// devices and, when writable, the workspace; no TCP bind, and no TCP
// connect but to the relay's port in proxy mode; no
// signals or abstract sockets across the domain's edge. It reports false
// when it applied less than that (only when degradation is allowed).
func applyLandlock(cfg *Config) (bool, error) {
	c := landlock.V6
	if !cfg.LandlockStrict {
		c = c.BestEffort()
	}
	var ro, roFiles []string
	for _, d := range append(append([]string{}, SystemDirs...), "/proc", "/dev") {
		ro = append(ro, d)
	}
	for _, p := range cfg.ReadOnly {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			roFiles = append(roFiles, p)
		} else {
			ro = append(ro, p)
		}
	}
	rw := []string{"/tmp", "/dev/shm"}
	if cfg.Workspace != "" {
		if cfg.Writable {
			rw = append(rw, "/workspace")
		} else {
			ro = append(ro, "/workspace")
		}
	}
	var devs []string
	for _, d := range []string{"null", "zero", "full", "tty"} {
		devs = append(devs, "/dev/"+d)
	}
	rules := []landlock.Rule{
		// Listing directories anywhere: the tree holds only what was bound.
		landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadDir), "/"),
		landlock.RODirs(ro...).IgnoreIfMissing(),
		landlock.RWDirs(rw...),
		landlock.RWFiles(devs...).IgnoreIfMissing(),
	}
	if len(roFiles) > 0 {
		rules = append(rules, landlock.ROFiles(roFiles...))
	}
	if cfg.ProxyPort != 0 {
		rules = append(rules, landlock.ConnectTCP(cfg.ProxyPort))
	}
	fd, flags, err := c.NewRulesetFD(rules...)
	if err != nil {
		return false, err
	}
	if fd < 0 {
		return false, nil
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return false, fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return LandlockVersion() >= LandlockABI, nil
}
