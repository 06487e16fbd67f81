package container

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/sandbox/internal/seccomp"
)

// The container's seccomp profile, in the engines' JSON format. Podman's
// and Docker's default profiles allow ptrace (on kernels since 4.8) and
// leave socket families open; a command here needs neither, so the
// backend gives its own profile, written from the sandbox's one deny list
// (package seccomp, which the native and bwrap filters are built from):
// EPERM for its calls, for any socket but AF_UNIX and for clone with a
// namespace flag, ENOSYS for clone3 (whose flags a filter cannot read; the
// C library then falls back to clone).

// cloneNamespaceFlags are seccomp.CloneNamespaces one flag at a time, as
// the profile tests them (a masked compare per flag).
var cloneNamespaceFlags = func() []uint64 {
	var flags []uint64
	for bit := uint64(1); bit != 0; bit <<= 1 {
		if seccomp.CloneNamespaces&bit != 0 {
			flags = append(flags, bit)
		}
	}
	return flags
}()

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
			{Names: seccomp.Names(), Action: "SCMP_ACT_ERRNO", ErrnoRet: uint(unix.EPERM)},
			{Names: []string{"clone3"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: uint(unix.ENOSYS)},
			{Names: []string{"socket"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: uint(unix.EPERM),
				Args: []seccompArg{{Index: 0, Value: unix.AF_UNIX, Op: "SCMP_CMP_NE"}}},
		},
	}
	for _, f := range cloneNamespaceFlags {
		p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"clone"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: uint(unix.EPERM),
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
