package nsinit

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/sandbox/internal/seccomp"
)

// socketPolicy is what cfg's network mode lets socket(2) make.
func socketPolicy(cfg *Config) seccomp.Sockets {
	switch {
	case cfg.ProxyPort != 0:
		return seccomp.SocketsUnixTCP
	case cfg.NetworkNone:
		return seccomp.SocketsUnix
	}
	return seccomp.SocketsAny
}

// applySeccomp installs the sandbox's filter (package seccomp) on the
// calling thread only (no TSYNC): the command is forked from this thread,
// and the init's other threads never run code of the command.
func applySeccomp(sockets seccomp.Sockets) error {
	f, err := seccomp.Filter(sockets)
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("installing the seccomp filter: %w", e)
	}
	return nil
}
