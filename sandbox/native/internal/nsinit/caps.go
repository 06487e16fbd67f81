package nsinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dropPrivileges leaves the calling thread, and so the command forked
// from it, with no capability in any set and the command's own ids. Each
// step is a raw per-thread syscall: the Go wrappers act on every thread,
// which the cgo runtime cannot do, and only this thread matters.
func dropPrivileges(cfg *Config) *failure {
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
			return fail("caps_dropped", "fault", fmt.Errorf("dropping capability %d from the bounding set: %w", c, e))
		}
	}
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 {
		return fail("caps_dropped", "fault", fmt.Errorf("clearing ambient capabilities: %w", e))
	}
	if cfg.SetGroups {
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			return fail("caps_dropped", "fault", fmt.Errorf("clearing supplementary groups: %w", e))
		}
	}
	gid, uid := uintptr(cfg.GID), uintptr(cfg.UID)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, gid, gid, gid); e != 0 {
		return fail("caps_dropped", "fault", fmt.Errorf("setresgid %d: %w", cfg.GID, e))
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uid, uid, uid); e != 0 {
		return fail("caps_dropped", "fault", fmt.Errorf("setresuid %d: %w", cfg.UID, e))
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fail("caps_dropped", "fault", fmt.Errorf("capset: %w", e))
	}
	// Check, rather than trust: read back what the kernel holds.
	if _, _, e := unix.RawSyscall(unix.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fail("caps_dropped", "fault", fmt.Errorf("capget: %w", e))
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return fail("caps_dropped", "fault", fmt.Errorf("capabilities remain after the drop: %+v", data))
		}
	}
	return nil
}
