package container

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"airlock.dev/airlock/sandbox/internal/seccomp"
)

// The container's seccomp profile, in the engines' JSON format. Podman's
// and Docker's default profiles allow ptrace (on kernels since 4.8) and
// leave socket families open; a command here needs neither, so the
// backend gives its own profile, rendered from the
// sandbox's one policy (package seccomp, whose filter the native and bwrap
// backends load): its deny list, and its rules on arguments for a sandbox
// without network (seccomp.SocketsUnix), the same data the filter's
// program is assembled from.

type seccompProfile struct {
	DefaultAction string               `json:"defaultAction"`
	Architectures []string             `json:"architectures"`
	Syscalls      []seccomp.OCISyscall `json:"syscalls"`
}

// profileSockets is what the profile lets socket(2) make: the backend has
// no proxied network mode.
const profileSockets = seccomp.SocketsUnix

// seccompJSON is the profile, the same bytes every time.
func seccompJSON() ([]byte, error) {
	arches := []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}
	if runtime.GOARCH == "arm64" {
		arches = []string{"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"}
	}
	calls, err := seccomp.OCISyscalls(profileSockets)
	if err != nil {
		return nil, fmt.Errorf("container: the seccomp profile: %w", err)
	}
	return json.Marshal(seccompProfile{DefaultAction: "SCMP_ACT_ALLOW", Architectures: arches, Syscalls: calls})
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
