package bwrap

import "airlock.dev/airlock/sandbox/internal/seccomp"

// seccompProgram is the filter bwrap loads (--seccomp FD) just before it
// runs the command: the sandbox's one filter (package seccomp), the same
// the native init installs, with socket(2) allowed for AF_UNIX only,
// which is what sandbox.NetworkNone promises on top of the empty network
// namespace (this backend refuses the proxied mode). Built once.
var seccompProgram = mustProgram()

func mustProgram() []byte {
	prog, err := seccomp.Filter(seccomp.SocketsUnix)
	if err != nil {
		// Filter fails only on a program it assembled wrongly, the same
		// on every run: seccomp's tests catch it before a release.
		panic(err)
	}
	return seccomp.Bytes(prog)
}
