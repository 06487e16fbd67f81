// Package seccomp is the one seccomp policy of every sandbox backend: the
// system calls refused inside a sandbox (Denied) and the refusals that
// look at a call's arguments (Rules), each with its reason, written once
// as data and rendered twice: as the classic BPF filter (Filter) that the
// native init installs and the bwrap backend hands to bwrap, and as the
// entries of the OCI seccomp profile (OCISyscalls) that the container
// backend gives the engine. A call or rule added here is refused by all
// three.
//
// The filter is a deny list on top of the namespaces, the dropped
// capabilities and Landlock, not a replacement for them. Inside the
// sandbox, a refused call gets EPERM (clone3 gets ENOSYS: its flags live
// in memory a filter cannot read, and C libraries then fall back to clone,
// whose flags it can); a call of a foreign architecture kills the process.
//
// It imports only x/sys/unix and the standard library's smallest
// packages: the native init runs it before the heavy packages of the
// airlock binary initialize.
package seccomp

import (
	"embed"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Sources are this package's files as the binary was built from, for the
// native init's build fingerprint: an init binary built with another
// filter than its parent's must be told apart.
//
//go:embed *.go
var Sources embed.FS

// Syscall is one refused system call.
type Syscall struct {
	Nr     uintptr // this architecture's number
	Name   string  // as the kernel and libseccomp name it
	Reason string  // why a sandboxed command may not make it
}

// Denied are the system calls every backend refuses with EPERM.
var Denied = append([]Syscall{
	{unix.SYS_PTRACE, "ptrace", "reading and steering other processes"},
	{unix.SYS_PROCESS_VM_READV, "process_vm_readv", "reading other processes' memory"},
	{unix.SYS_PROCESS_VM_WRITEV, "process_vm_writev", "writing other processes' memory"},
	{unix.SYS_KCMP, "kcmp", "comparing other processes' kernel state"},
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
	{unix.SYS_UNSHARE, "unshare", "new namespaces give back capabilities"},
	{unix.SYS_SETNS, "setns", "entering other namespaces"},
	{unix.SYS_KEXEC_LOAD, "kexec_load", "replacing the kernel"},
	{unix.SYS_KEXEC_FILE_LOAD, "kexec_file_load", "replacing the kernel"},
	{unix.SYS_INIT_MODULE, "init_module", "loading kernel code"},
	{unix.SYS_FINIT_MODULE, "finit_module", "loading kernel code"},
	{unix.SYS_DELETE_MODULE, "delete_module", "unloading kernel code"},
	{unix.SYS_BPF, "bpf", "kernel programs, a large attack surface"},
	{unix.SYS_PERF_EVENT_OPEN, "perf_event_open", "kernel profiling, a large attack surface"},
	{unix.SYS_USERFAULTFD, "userfaultfd", "a tool for kernel race exploits"},
	{unix.SYS_IO_URING_SETUP, "io_uring_setup", "bypasses system call filtering"},
	{unix.SYS_IO_URING_ENTER, "io_uring_enter", "bypasses system call filtering"},
	{unix.SYS_IO_URING_REGISTER, "io_uring_register", "bypasses system call filtering"},
	{unix.SYS_KEYCTL, "keyctl", "the kernel keyrings are not namespaced"},
	{unix.SYS_ADD_KEY, "add_key", "the kernel keyrings are not namespaced"},
	{unix.SYS_REQUEST_KEY, "request_key", "the kernel keyrings are not namespaced"},
	{unix.SYS_OPEN_BY_HANDLE_AT, "open_by_handle_at", "opening files by handle, around the mount tree"},
	{unix.SYS_NAME_TO_HANDLE_AT, "name_to_handle_at", "file handles, see open_by_handle_at"},
	{unix.SYS_FANOTIFY_INIT, "fanotify_init", "watching the host's filesystems"},
	{unix.SYS_LOOKUP_DCOOKIE, "lookup_dcookie", "kernel internals"},
	{unix.SYS_SYSLOG, "syslog", "reading the host kernel's log"},
	{unix.SYS_REBOOT, "reboot", "stopping the host"},
	{unix.SYS_SWAPON, "swapon", "host memory management"},
	{unix.SYS_SWAPOFF, "swapoff", "host memory management"},
	{unix.SYS_ACCT, "acct", "host process accounting"},
	{unix.SYS_QUOTACTL, "quotactl", "host filesystem quotas"},
	{unix.SYS_SETTIMEOFDAY, "settimeofday", "the host's clock"},
	{unix.SYS_CLOCK_SETTIME, "clock_settime", "the host's clock"},
	{unix.SYS_CLOCK_ADJTIME, "clock_adjtime", "the host's clock"},
	{unix.SYS_ADJTIMEX, "adjtimex", "the host's clock"},
	{unix.SYS_VHANGUP, "vhangup", "terminals of others"},
}, archDenied...)

// Names are the names of the Denied calls, in order.
func Names() []string {
	names := make([]string, len(Denied))
	for i, s := range Denied {
		names[i] = s.Name
	}
	return names
}

// Sockets says which sockets the filter lets socket(2) make.
type Sockets int

const (
	// SocketsAny: every family (a network the namespaces bound).
	SocketsAny Sockets = iota
	// SocketsUnix: AF_UNIX only (sandbox.NetworkNone).
	SocketsUnix
	// SocketsUnixTCP: AF_UNIX, and AF_INET stream sockets of protocol 0
	// or IPPROTO_TCP (sandbox.NetworkProxy): enough to reach the relay,
	// never UDP, raw, SCTP or MPTCP, which Landlock's TCP rules do not
	// cover.
	SocketsUnixTCP
)

// SockTypeMask keeps the type of socket(2)'s second argument, without
// SOCK_NONBLOCK and SOCK_CLOEXEC.
const SockTypeMask = 0xf

// CloneNamespaces are the clone(2) flags that make namespaces: refused
// like unshare(2).
const CloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// The offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16 // the first argument's low 32 bits, little-endian; 8 bytes each
)

// Return values of the filter.
const (
	RetAllow  = unix.SECCOMP_RET_ALLOW
	RetEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	RetENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	RetKill   = unix.SECCOMP_RET_KILL_PROCESS
)

// maxErrno is the largest errno a filter may return (the kernel's
// MAX_ERRNO).
const maxErrno = 4095

// insn is one BPF instruction whose jumps may name labels.
type insn struct {
	op     uint16
	k      uint32
	jt, jf string // labels; "" is the next instruction
	label  string // this instruction's label
}

// Filter returns the program: kill on a foreign architecture; EPERM for
// a second ABI's numbers (x32) and the Denied calls; then the Rules of
// the sockets mode, each call's rules tried in order, the first that
// holds giving its errno; everything else is allowed.
func Filter(sockets Sockets) ([]unix.SockFilter, error) {
	ld := func(off uint32, label string) insn {
		return insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off, label: label}
	}
	jeq := func(k uint32, jt string) insn {
		return insn{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt}
	}
	ret := func(k uint32, label string) insn { return insn{op: unix.BPF_RET | unix.BPF_K, k: k, label: label} }
	p := []insn{
		ld(offArch, ""),
		jeq(AuditArch, "nr"),
		ret(RetKill, ""),
		ld(offNr, "nr"),
	}
	if SecondABIBit != 0 {
		// The x32 ABI's calls have this bit set and reach the same kernel
		// entry points under other numbers: refused as a whole, so that
		// no denied call comes in through its twin.
		p = append(p, insn{op: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: SecondABIBit, jt: "deny"})
	}
	for _, s := range Denied {
		p = append(p, jeq(uint32(s.Nr), "deny"))
	}
	// One jump per call that has rules, to its block of rules.
	var calls []uintptr
	byCall := map[uintptr][]Rule{}
	for _, r := range Rules(sockets) {
		if _, ok := byCall[r.Nr]; !ok {
			calls = append(calls, r.Nr)
			p = append(p, jeq(uint32(r.Nr), ruleLabel(r.Nr, 0)))
		}
		byCall[r.Nr] = append(byCall[r.Nr], r)
	}
	p = append(p, ret(RetAllow, ""))
	for _, nr := range calls {
		rules := byCall[nr]
		for i, r := range rules {
			code, err := rule(r, ruleLabel(nr, i), ruleLabel(nr, i+1))
			if err != nil {
				return nil, err
			}
			p = append(p, code...)
		}
		p = append(p, ret(RetAllow, ruleLabel(nr, len(rules))))
	}
	p = append(p, ret(RetEPERM, "deny"))
	return assemble(p)
}

func ruleLabel(nr uintptr, i int) string { return fmt.Sprintf("%d/%d", nr, i) }

// rule is the code of one Rule, its first instruction labelled label:
// each Cond in turn jumps to next (the call's next rule) when it does not
// hold; past the last, the rule's errno is returned.
func rule(r Rule, label, next string) ([]insn, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	var code []insn
	add := func(in insn) {
		if len(code) == 0 {
			in.label = label
		}
		code = append(code, in)
	}
	jmp := func(op uint16, k uint32, onTrue, onFalse string) {
		add(insn{op: unix.BPF_JMP | op | unix.BPF_K, k: k, jt: onTrue, jf: onFalse})
	}
	for _, c := range r.Conds {
		add(insn{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArgs + 8*uint32(c.Arg)})
		switch c.Op {
		case OpEq:
			jmp(unix.BPF_JEQ, c.Value, "", next)
		case OpNe:
			jmp(unix.BPF_JEQ, c.Value, next, "")
		case OpMaskedEq, OpMaskedNe:
			add(insn{op: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: c.Mask})
			if c.Op == OpMaskedEq {
				jmp(unix.BPF_JEQ, c.Value, "", next)
			} else {
				jmp(unix.BPF_JEQ, c.Value, next, "")
			}
		case OpAnyBit:
			jmp(unix.BPF_JSET, c.Mask, "", next)
		}
	}
	add(insn{op: unix.BPF_RET | unix.BPF_K, k: unix.SECCOMP_RET_ERRNO | uint32(r.Errno)})
	return code, nil
}

// assemble resolves the labels into the relative jumps of classic BPF.
func assemble(p []insn) ([]unix.SockFilter, error) {
	at := map[string]int{}
	for i, in := range p {
		if in.label == "" {
			continue
		}
		if _, dup := at[in.label]; dup {
			return nil, fmt.Errorf("seccomp: label %q is on two instructions", in.label)
		}
		at[in.label] = i
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
	if len(out) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: %d instructions, over the kernel's %d", len(out), unix.BPF_MAXINSNS)
	}
	return out, nil
}

// Bytes is prog as an array of struct sock_filter in this machine's byte
// order: what bwrap reads from its --seccomp descriptor.
func Bytes(prog []unix.SockFilter) []byte {
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.NativeEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	return b
}
