package bwrap

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// The seccomp filter bwrap loads (--seccomp FD) just before it runs the
// command. It is a deny list: the command may do what an ordinary program
// does, and gets EPERM for the calls that reach the kernel's attack surface
// or would undo the sandbox (mounts, new namespaces, module loading,
// tracing, keyrings, BPF, io_uring). socket() is allowed for AF_UNIX only,
// which is what sandbox.NetworkNone promises on top of the empty network
// namespace; ioctl TIOCSTI and TIOCLINUX get EPERM. A foreign architecture's system call (the x32 ABI, or 32-bit
// calls on a 64-bit kernel) kills the process, since the numbers below mean
// nothing there.
//
// The native backend keeps its own filter; the two lists should agree.

// deniedSyscalls answer EPERM. Numbers come from x/sys/unix for the
// architecture being built; seccomp_<arch>.go adds the ones only it has.
var deniedSyscalls = append([]uintptr{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_SYSLOG,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_FANOTIFY_INIT,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_LOOKUP_DCOOKIE,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_VHANGUP,
}, archDeniedSyscalls...)

// namespaceFlags are the clone flags that would make a new namespace; a
// clone with any of them is refused like unshare.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Offsets into struct seccomp_data.
const (
	offNr    = 0
	offArch  = 4
	offArg0  = 16 // low 32 bits of args[0] on a little-endian machine
	offArg1  = 24
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

func stmt(code uint16, k uint32) insn { return insn{code: code, k: k} }
func jump(code uint16, k uint32, jt, jf uint8) insn {
	return insn{code: code, jt: jt, jf: jf, k: k}
}

const (
	ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret   = unix.BPF_RET | unix.BPF_K
)

// seccompProgram is the filter as the bytes of a sock_filter array, which
// is what bwrap reads from its --seccomp descriptor. Built once; the test
// checks it stays under the kernel's BPF_MAXINSNS.
var seccompProgram = filterProgram()

func filterProgram() []byte {
	p := []insn{
		stmt(ldAbs, offArch),
		jump(jeq, auditArch, 1, 0),
		stmt(ret, retKill),
		stmt(ldAbs, offNr),
	}
	if x32Bit != 0 {
		// x32 system calls have this bit set and reach the same kernel
		// entry points under other numbers.
		p = append(p, jump(jge, x32Bit, 0, 1), stmt(ret, retKill))
	}
	for _, nr := range deniedSyscalls {
		p = append(p, jump(jeq, uint32(nr), 0, 1), stmt(ret, retErrno(unix.EPERM)))
	}
	// clone3 passes its flags in memory a filter cannot read: answer
	// ENOSYS, and the C library falls back to clone, whose flags it can.
	p = append(p, jump(jeq, unix.SYS_CLONE3, 0, 1), stmt(ret, retErrno(unix.ENOSYS)))
	p = append(p,
		jump(jeq, unix.SYS_CLONE, 0, 4),
		stmt(ldAbs, offArg0),
		jump(jset, namespaceFlags, 0, 1),
		stmt(ret, retErrno(unix.EPERM)),
		stmt(ret, retAllow),
	)
	p = append(p,
		jump(jeq, unix.SYS_SOCKET, 0, 4),
		stmt(ldAbs, offArg0),
		jump(jeq, unix.AF_UNIX, 0, 1),
		stmt(ret, retAllow),
		stmt(ret, retErrno(unix.EAFNOSUPPORT)),
	)
	// Pushing input into a terminal (TIOCSTI) or its console controls
	// (TIOCLINUX); --new-session already leaves the command without one.
	p = append(p,
		jump(jeq, unix.SYS_IOCTL, 0, 5),
		stmt(ldAbs, offArg1),
		jump(jeq, unix.TIOCSTI, 2, 0),
		jump(jeq, unix.TIOCLINUX, 1, 0),
		stmt(ret, retAllow),
		stmt(ret, retErrno(unix.EPERM)),
	)
	p = append(p, stmt(ret, retAllow))
	b := make([]byte, 0, 8*len(p))
	for _, in := range p {
		b = binary.NativeEndian.AppendUint16(b, in.code)
		b = append(b, in.jt, in.jf)
		b = binary.NativeEndian.AppendUint32(b, in.k)
	}
	return b
}
