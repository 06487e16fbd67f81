package container

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// The container's seccomp profile, in the engines' JSON format. Podman's
// and Docker's default profiles allow ptrace (on kernels since 4.8) and
// leave socket families open; a command here needs neither, so the
// backend gives its own profile. It is a deny list that agrees with the
// bwrap backend's filter (sandbox/bwrap/seccomp.go; the two lists should
// be kept alike): EPERM for calls that reach the kernel's attack surface
// or would undo the sandbox, EAFNOSUPPORT for any socket but AF_UNIX,
// EPERM for clone with a namespace flag, ENOSYS for clone3 (whose flags a
// filter cannot read; the C library then falls back to clone).

var deniedSyscalls = []string{
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns",
	"swapon", "swapoff", "reboot", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module",
	"acct", "quotactl", "syslog",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd", "fanotify_init",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"iopl", "ioperm", "uselib", "vhangup",
}

// Namespace flags of clone(2), as the profile tests them one by one.
var cloneNamespaceFlags = []uint64{
	0x00020000, // CLONE_NEWNS
	0x02000000, // CLONE_NEWCGROUP
	0x04000000, // CLONE_NEWUTS
	0x08000000, // CLONE_NEWIPC
	0x10000000, // CLONE_NEWUSER
	0x20000000, // CLONE_NEWPID
	0x40000000, // CLONE_NEWNET
	0x00000080, // CLONE_NEWTIME
}

type seccompArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

type seccompRule struct {
	Names    []string     `json:"names"`
	Action   string       `json:"action"`
	ErrnoRet uint         `json:"errnoRet"`
	Args     []seccompArg `json:"args,omitempty"`
}

type seccompProfile struct {
	DefaultAction string        `json:"defaultAction"`
	Architectures []string      `json:"architectures"`
	Syscalls      []seccompRule `json:"syscalls"`
}

const (
	errnoEPERM        = 1
	errnoENOSYS       = 38
	errnoEAFNOSUPPORT = 97
	afUnix            = 1
)

// seccompJSON is the profile, the same bytes every time.
func seccompJSON() []byte {
	arches := []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}
	if runtime.GOARCH == "arm64" {
		arches = []string{"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"}
	}
	p := seccompProfile{
		DefaultAction: "SCMP_ACT_ALLOW",
		Architectures: arches,
		Syscalls: []seccompRule{
			{Names: deniedSyscalls, Action: "SCMP_ACT_ERRNO", ErrnoRet: errnoEPERM},
			{Names: []string{"clone3"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: errnoENOSYS},
			{Names: []string{"socket"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: errnoEAFNOSUPPORT,
				Args: []seccompArg{{Index: 0, Value: afUnix, Op: "SCMP_CMP_NE"}}},
		},
	}
	for _, f := range cloneNamespaceFlags {
		p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"clone"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: errnoEPERM,
			Args: []seccompArg{{Index: 0, Value: f, ValueTwo: f, Op: "SCMP_CMP_MASKED_EQ"}}})
	}
	b, _ := json.Marshal(p) // plain structs: cannot fail
	return b
}

// seccompFile writes the profile where a local Podman can read it (Podman
// takes seccomp=PATH, Docker the JSON itself) and returns the path. The
// name holds the content's hash, and the file is replaced by a rename, so
// a file someone else left there is never used.
func seccompFile(dir string, profile []byte) (string, error) {
	sum := sha256.Sum256(profile)
	path := filepath.Join(dir, "airlock-seccomp-"+hex.EncodeToString(sum[:8])+".json")
	tmp, err := os.CreateTemp(dir, "airlock-seccomp-*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(profile)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %v %v", tmp.Name(), werr, cerr)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}
