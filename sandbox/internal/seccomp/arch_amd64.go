package seccomp

import "golang.org/x/sys/unix"

const (
	// AuditArch is the architecture the filter lets through.
	AuditArch = unix.AUDIT_ARCH_X86_64
	// SecondABIBit marks the x32 ABI's numbers (__X32_SYSCALL_BIT).
	SecondABIBit = 0x40000000
)

// archDenied are the calls only this architecture has.
var archDenied = []Syscall{
	{unix.SYS_IOPL, "iopl", "hardware I/O ports"},
	{unix.SYS_IOPERM, "ioperm", "hardware I/O ports"},
	{unix.SYS_USELIB, "uselib", "loading a library the old way, a past exploit path"},
}
