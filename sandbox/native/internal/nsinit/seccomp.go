package nsinit

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DeniedSyscalls are refused with EPERM inside the sandbox, each for the
// reason given. The filter is an allowlist of everything else: a denylist
// of the kernel's most dangerous surfaces on top of the namespaces, the
// dropped capabilities and Landlock, not a replacement for them.
var DeniedSyscalls = []struct {
	Nr     uintptr
	Name   string
	Reason string
}{
	{unix.SYS_PTRACE, "ptrace", "reading and steering other processes"},
	{unix.SYS_PROCESS_VM_READV, "process_vm_readv", "reading other processes' memory"},
	{unix.SYS_PROCESS_VM_WRITEV, "process_vm_writev", "writing other processes' memory"},
	{unix.SYS_MOUNT, "mount", "changing the filesystem view"},
	{unix.SYS_UMOUNT2, "umount2", "uncovering what the masks hide"},
	{unix.SYS_PIVOT_ROOT, "pivot_root", "changing the root after setup"},
	{unix.SYS_CHROOT, "chroot", "changing the root after setup"},
	{unix.SYS_OPEN_TREE, "open_tree", "the new mount API"},
	{unix.SYS_MOVE_MOUNT, "move_mount", "the new mount API"},
	{unix.SYS_FSOPEN, "fsopen", "the new mount API"},
	{unix.SYS_FSCONFIG, "fsconfig", "the new mount API"},
	{unix.SYS_FSMOUNT, "fsmount", "the new mount API"},
	{unix.SYS_FSPICK, "fspick", "the new mount API"},
	{unix.SYS_MOUNT_SETATTR, "mount_setattr", "making read-only mounts writable"},
	{unix.SYS_KEXEC_LOAD, "kexec_load", "replacing the kernel"},
	{unix.SYS_KEXEC_FILE_LOAD, "kexec_file_load", "replacing the kernel"},
	{unix.SYS_BPF, "bpf", "kernel programs, a large attack surface"},
	{unix.SYS_PERF_EVENT_OPEN, "perf_event_open", "kernel profiling, a large attack surface"},
	{unix.SYS_KEYCTL, "keyctl", "the kernel keyrings are not namespaced"},
	{unix.SYS_ADD_KEY, "add_key", "the kernel keyrings are not namespaced"},
	{unix.SYS_REQUEST_KEY, "request_key", "the kernel keyrings are not namespaced"},
	{unix.SYS_UNSHARE, "unshare", "new namespaces give back capabilities"},
	{unix.SYS_SETNS, "setns", "entering other namespaces"},
	{unix.SYS_IO_URING_SETUP, "io_uring_setup", "bypasses syscall filtering"},
	{unix.SYS_IO_URING_ENTER, "io_uring_enter", "bypasses syscall filtering"},
	{unix.SYS_IO_URING_REGISTER, "io_uring_register", "bypasses syscall filtering"},
	{unix.SYS_USERFAULTFD, "userfaultfd", "a tool for kernel race exploits"},
	{unix.SYS_INIT_MODULE, "init_module", "loading kernel code"},
	{unix.SYS_FINIT_MODULE, "finit_module", "loading kernel code"},
	{unix.SYS_DELETE_MODULE, "delete_module", "unloading kernel code"},
	{unix.SYS_REBOOT, "reboot", "stopping the host"},
	{unix.SYS_SWAPON, "swapon", "host memory management"},
	{unix.SYS_SWAPOFF, "swapoff", "host memory management"},
	{unix.SYS_OPEN_BY_HANDLE_AT, "open_by_handle_at", "opening files by handle, around the mount tree"},
	{unix.SYS_NAME_TO_HANDLE_AT, "name_to_handle_at", "file handles, see open_by_handle_at"},
	{unix.SYS_ACCT, "acct", "host process accounting"},
	{unix.SYS_QUOTACTL, "quotactl", "host filesystem quotas"},
	{unix.SYS_LOOKUP_DCOOKIE, "lookup_dcookie", "kernel internals"},
	{unix.SYS_IOPL, "iopl", "hardware I/O ports"},
	{unix.SYS_IOPERM, "ioperm", "hardware I/O ports"},
	{unix.SYS_VHANGUP, "vhangup", "terminals of others"},
}

// Sockets says which sockets the filter lets socket(2) make.
type Sockets int

const (
	// SocketsAny: every family (a network the namespaces bound).
	SocketsAny Sockets = iota
	// SocketsUnix: AF_UNIX only (NetworkNone).
	SocketsUnix
	// SocketsUnixTCP: AF_UNIX, and AF_INET stream sockets of protocol 0
	// or IPPROTO_TCP (NetworkProxy): enough to reach the relay, never
	// UDP, raw, SCTP or MPTCP, which Landlock's TCP rules do not cover.
	SocketsUnixTCP
)

// socketPolicy is what cfg's network mode allows.
func socketPolicy(cfg *Config) Sockets {
	switch {
	case cfg.ProxyPort != 0:
		return SocketsUnixTCP
	case cfg.NetworkNone:
		return SocketsUnix
	}
	return SocketsAny
}

// sockTypeMask keeps the type of socket(2)'s second argument, without
// SOCK_NONBLOCK and SOCK_CLOEXEC.
const sockTypeMask = 0xf

// cloneNamespaces are the clone(2) flags that make namespaces: refused
// like unshare(2).
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// x32SyscallBit marks the x32 ABI's syscall numbers, refused as a whole so
// that no denied call can come in through its x32 twin.
const x32SyscallBit = 0x40000000

// The offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // the low 32 bits, little-endian
	offArg1 = 24
	offArg2 = 32
)

// insn is one BPF instruction whose jumps may name labels.
type insn struct {
	op     uint16
	k      uint32
	jt, jf string // labels; "" is the next instruction
	label  string // this instruction's label
}

// Filter returns the seccomp program: kill on a foreign architecture,
// EPERM for the x32 ABI and the DeniedSyscalls, clone with namespace
// flags, TIOCSTI and TIOCLINUX ioctls and socket(2) for what sockets does
// not allow; ENOSYS for clone3 (whose flags a filter cannot read), so that
// C libraries fall back to clone.
func Filter(sockets Sockets) ([]unix.SockFilter, error) {
	ld := func(off uint32) insn { return insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off} }
	jeq := func(k uint32, jt string) insn {
		return insn{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt}
	}
	ret := func(k uint32, label string) insn { return insn{op: unix.BPF_RET | unix.BPF_K, k: k, label: label} }
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		kill   = unix.SECCOMP_RET_KILL_PROCESS
	)
	p := []insn{
		ld(offArch),
		jeq(unix.AUDIT_ARCH_X86_64, "nr"),
		ret(kill, ""),
		{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offNr, label: "nr"},
		{op: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: x32SyscallBit, jt: "deny"},
	}
	for _, s := range DeniedSyscalls {
		p = append(p, jeq(uint32(s.Nr), "deny"))
	}
	p = append(p,
		jeq(unix.SYS_CLONE, "clone"),
		jeq(unix.SYS_CLONE3, "enosys"),
		jeq(unix.SYS_IOCTL, "ioctl"),
	)
	if sockets != SocketsAny {
		p = append(p, jeq(unix.SYS_SOCKET, "socket"))
	}
	p = append(p,
		ret(allow, ""),
		insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg0, label: "clone"},
		insn{op: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: cloneNamespaces, jt: "deny"},
		ret(allow, ""),
		insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg1, label: "ioctl"},
		jeq(unix.TIOCSTI, "deny"),
		jeq(unix.TIOCLINUX, "deny"),
		ret(allow, ""),
	)
	switch sockets {
	case SocketsUnix:
		p = append(p,
			insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg0, label: "socket"},
			jeq(unix.AF_UNIX, "allow"),
			ret(eperm, ""),
		)
	case SocketsUnixTCP:
		p = append(p,
			insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg0, label: "socket"},
			jeq(unix.AF_UNIX, "allow"),
			jeq(unix.AF_INET, "inet"),
			ret(eperm, ""),
			insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg1, label: "inet"},
			insn{op: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: sockTypeMask},
			jeq(unix.SOCK_STREAM, "inetproto"),
			ret(eperm, ""),
			insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg2, label: "inetproto"},
			jeq(0, "allow"),
			jeq(unix.IPPROTO_TCP, "allow"),
			ret(eperm, ""),
		)
	}
	p = append(p, ret(allow, "allow"), ret(enosys, "enosys"), ret(eperm, "deny"))
	return assemble(p)
}

// assemble resolves the labels into the relative jumps of classic BPF.
func assemble(p []insn) ([]unix.SockFilter, error) {
	at := map[string]int{}
	for i, in := range p {
		if in.label != "" {
			at[in.label] = i
		}
	}
	out := make([]unix.SockFilter, len(p))
	for i, in := range p {
		rel := func(l string) (uint8, error) {
			if l == "" {
				return 0, nil
			}
			j, ok := at[l]
			if !ok || j <= i || j-i-1 > 255 {
				return 0, fmt.Errorf("seccomp: bad jump from %d to %q", i, l)
			}
			return uint8(j - i - 1), nil
		}
		jt, err := rel(in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := rel(in.jf)
		if err != nil {
			return nil, err
		}
		out[i] = unix.SockFilter{Code: in.op, Jt: jt, Jf: jf, K: in.k}
	}
	return out, nil
}

// applySeccomp installs the filter on the calling thread only (no TSYNC):
// the command is forked from this thread, and the init's other threads
// never run code of the command.
func applySeccomp(sockets Sockets) error {
	f, err := Filter(sockets)
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("installing the seccomp filter: %w", e)
	}
	return nil
}
