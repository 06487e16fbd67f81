package bwrap

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0 // arm64 has no second ABI under other numbers
)

var archDeniedSyscalls []uintptr
