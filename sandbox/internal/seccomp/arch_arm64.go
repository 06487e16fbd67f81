package seccomp

import "golang.org/x/sys/unix"

const (
	// AuditArch is the architecture the filter lets through.
	AuditArch = unix.AUDIT_ARCH_AARCH64
	// SecondABIBit is 0: arm64 has no second ABI under other numbers.
	SecondABIBit = 0
)

// archDenied are the calls only this architecture has: none.
var archDenied []Syscall
