package seccomp

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// run interprets the classic BPF program on one seccomp_data, the way the
// kernel would, for the instructions Filter uses. It fails the test on an
// instruction it does not know or a jump out of the program.
func run(t testing.TB, prog []unix.SockFilter, nr uint32, arch uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K+4 > uint32(len(data)) {
				t.Fatalf("load past seccomp_data at %d", pc)
			}
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var ok bool
			switch in.Code & 0xf0 {
			case unix.BPF_JEQ:
				ok = acc == in.K
			case unix.BPF_JGE:
				ok = acc >= in.K
			case unix.BPF_JSET:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("unknown instruction %#x at %d", in.Code, pc)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

const (
	allow  = RetAllow
	eperm  = RetEPERM
	enosys = RetENOSYS
	kill   = RetKill
	native = AuditArch
)

func TestFilter(t *testing.T) {
	for _, sockets := range []Sockets{SocketsUnix, SocketsAny, SocketsUnixTCP} {
		prog, err := Filter(sockets)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range Denied {
			if got := run(t, prog, uint32(s.Nr), native); got != eperm {
				t.Errorf("%s: got %#x, want EPERM", s.Name, got)
			}
			if got := run(t, prog, uint32(s.Nr)|SecondABIBit, native); got != eperm {
				t.Errorf("x32 %s: got %#x, want EPERM", s.Name, got)
			}
		}
		// inet is what becomes of a family other than AF_UNIX, tcp of an
		// AF_INET TCP socket.
		inet, tcp := uint32(allow), uint32(allow)
		switch sockets {
		case SocketsUnix:
			inet, tcp = eperm, eperm
		case SocketsUnixTCP:
			inet = eperm
		}
		const sctp, mptcp = 132, 262
		secondABI := uint32(eperm)
		if SecondABIBit == 0 { // no second ABI: its "write" is write
			secondABI = allow
		}
		for _, c := range []struct {
			name string
			nr   uint32
			arch uint32
			args []uint64
			want uint32
		}{
			{"write", unix.SYS_WRITE, native, nil, allow},
			{"execve", unix.SYS_EXECVE, native, nil, allow},
			{"i386 write", 4, unix.AUDIT_ARCH_I386, nil, kill},
			{"second ABI's write", unix.SYS_WRITE | SecondABIBit, native, nil, secondABI},
			{"fork by clone", unix.SYS_CLONE, native, []uint64{uint64(unix.SIGCHLD)}, allow},
			{"thread by clone", unix.SYS_CLONE, native, []uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, allow},
			{"clone newuser", unix.SYS_CLONE, native, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
			{"clone newns", unix.SYS_CLONE, native, []uint64{unix.CLONE_NEWNS}, eperm},
			{"clone newtime", unix.SYS_CLONE, native, []uint64{unix.CLONE_NEWTIME}, eperm},
			{"clone3", unix.SYS_CLONE3, native, nil, enosys},
			{"ioctl TIOCSTI", unix.SYS_IOCTL, native, []uint64{0, unix.TIOCSTI}, eperm},
			{"ioctl TIOCLINUX", unix.SYS_IOCTL, native, []uint64{0, unix.TIOCLINUX}, eperm},
			{"ioctl TCGETS", unix.SYS_IOCTL, native, []uint64{0, unix.TCGETS}, allow},
			{"socket unix", unix.SYS_SOCKET, native, []uint64{unix.AF_UNIX}, allow},
			{"socket inet stream", unix.SYS_SOCKET, native, []uint64{unix.AF_INET, unix.SOCK_STREAM}, tcp},
			{"socket inet stream tcp cloexec", unix.SYS_SOCKET, native, []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, unix.IPPROTO_TCP}, tcp},
			{"socket inet stream, high bits of the protocol", unix.SYS_SOCKET, native, []uint64{unix.AF_INET, unix.SOCK_STREAM, 1 << 32}, tcp},
			{"socket inet stream sctp", unix.SYS_SOCKET, native, []uint64{unix.AF_INET, unix.SOCK_STREAM, sctp}, inet},
			{"socket inet stream mptcp", unix.SYS_SOCKET, native, []uint64{unix.AF_INET, unix.SOCK_STREAM, mptcp}, inet},
			{"socket inet dgram", unix.SYS_SOCKET, native, []uint64{unix.AF_INET, unix.SOCK_DGRAM}, inet},
			{"socket inet raw", unix.SYS_SOCKET, native, []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, inet},
			{"socket inet seqpacket", unix.SYS_SOCKET, native, []uint64{unix.AF_INET, unix.SOCK_SEQPACKET}, inet},
			{"socket inet6 stream", unix.SYS_SOCKET, native, []uint64{unix.AF_INET6, unix.SOCK_STREAM}, inet},
			{"socket packet", unix.SYS_SOCKET, native, []uint64{unix.AF_PACKET}, inet},
			{"socket netlink", unix.SYS_SOCKET, native, []uint64{unix.AF_NETLINK}, inet},
			{"socketpair", unix.SYS_SOCKETPAIR, native, []uint64{unix.AF_UNIX}, allow},
		} {
			if got := run(t, prog, c.nr, c.arch, c.args...); got != c.want {
				t.Errorf("sockets=%v %s: got %#x, want %#x", sockets, c.name, got, c.want)
			}
		}
	}
}

func TestAssembleRejectsBadJumps(t *testing.T) {
	for _, p := range [][]insn{
		{{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, jt: "nowhere"}},
		{{op: unix.BPF_RET | unix.BPF_K, label: "back"}, {op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, jt: "back"}},
	} {
		if _, err := assemble(p); err == nil {
			t.Errorf("assemble(%v) gave no error", p)
		}
	}
}

// FuzzFilter runs the filters of NetworkNone and of the proxy mode on
// arbitrary syscall data: they must always return, and never allow a
// denied syscall, a namespace clone, a foreign architecture or a socket
// their mode does not allow.
func FuzzFilter(f *testing.F) {
	f.Add(uint32(unix.SYS_WRITE), uint32(native), uint64(0), uint64(0))
	f.Add(uint32(unix.SYS_CLONE), uint32(native), uint64(unix.CLONE_NEWUSER), uint64(0))
	f.Add(uint32(unix.SYS_SOCKET), uint32(native), uint64(unix.AF_INET6), uint64(0))
	f.Add(uint32(unix.SYS_SOCKET), uint32(native), uint64(unix.AF_INET), uint64(unix.SOCK_DGRAM))
	prog, err := Filter(SocketsUnix)
	if err != nil {
		f.Fatal(err)
	}
	tcpProg, err := Filter(SocketsUnixTCP)
	if err != nil {
		f.Fatal(err)
	}
	denied := map[uint32]bool{}
	for _, s := range Denied {
		denied[uint32(s.Nr)] = true
	}
	f.Fuzz(func(t *testing.T, nr, arch uint32, a0, a1 uint64) {
		// The proxy mode's filter: only TCP over IPv4 beyond AF_UNIX,
		// whatever the protocol argument (the fuzzer's a1 reused for it).
		for _, proto := range []uint64{0, a1, a1 >> 8} {
			got := run(t, tcpProg, nr, arch, a0, a1, proto)
			tcpOK := uint32(a0) == unix.AF_INET && uint32(a1)&SockTypeMask == unix.SOCK_STREAM &&
				(uint32(proto) == 0 || uint32(proto) == unix.IPPROTO_TCP)
			if arch == native && nr == unix.SYS_SOCKET && uint32(a0) != unix.AF_UNIX && !tcpOK && got == allow {
				t.Fatalf("proxy mode: socket(%d, %#x, %d) allowed", a0, a1, proto)
			}
			if arch == native && denied[nr] && got != eperm {
				t.Fatalf("proxy mode: denied syscall %d allowed: %#x", nr, got)
			}
		}
		got := run(t, prog, nr, arch, a0, a1)
		switch {
		case arch != native && got != kill:
			t.Fatalf("arch %#x: got %#x, want kill", arch, got)
		case arch != native:
		case denied[nr] && got != eperm:
			t.Fatalf("denied syscall %d allowed: %#x", nr, got)
		case nr == unix.SYS_CLONE && a0&CloneNamespaces != 0 && got == allow:
			t.Fatalf("clone with namespace flags %#x allowed", a0)
		case nr == unix.SYS_SOCKET && uint32(a0) != unix.AF_UNIX && got == allow:
			t.Fatalf("socket family %d allowed", a0)
		case nr&SecondABIBit != 0 && got == allow:
			t.Fatalf("x32 syscall %#x allowed", nr)
		}
	})
}

func TestDenied(t *testing.T) {
	nrs, names := map[uintptr]string{}, map[string]bool{}
	for _, s := range Denied {
		if s.Name == "" || s.Reason == "" {
			t.Errorf("%+v: every denied call needs its name and its reason", s)
		}
		if other, ok := nrs[s.Nr]; ok {
			t.Errorf("%s and %s have the same number %d", s.Name, other, s.Nr)
		}
		if names[s.Name] {
			t.Errorf("%s is listed twice", s.Name)
		}
		nrs[s.Nr], names[s.Name] = s.Name, true
	}
	for _, need := range []uintptr{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_EXECVE, unix.SYS_EXIT_GROUP, unix.SYS_CLONE, unix.SYS_WAIT4} {
		if _, ok := nrs[need]; ok {
			t.Errorf("the deny list holds %s, which every program needs", nrs[need])
		}
	}
	if got := Names(); len(got) != len(Denied) || got[0] != Denied[0].Name || got[len(got)-1] != Denied[len(Denied)-1].Name {
		t.Errorf("Names() = %v, not the Denied names in order", got)
	}
}

func TestBytes(t *testing.T) {
	prog, err := Filter(SocketsUnix)
	if err != nil {
		t.Fatal(err)
	}
	b := Bytes(prog)
	if len(b) != 8*len(prog) {
		t.Fatalf("%d bytes for %d instructions", len(b), len(prog))
	}
	for i, in := range prog {
		e := b[8*i:]
		got := unix.SockFilter{Code: binary.NativeEndian.Uint16(e), Jt: e[2], Jf: e[3], K: binary.NativeEndian.Uint32(e[4:])}
		if got != in {
			t.Fatalf("instruction %d: %+v in bytes, %+v in the program", i, got, in)
		}
	}
}

// ociRefuses interprets a profile's entries the way libseccomp applies
// them, on all 64 bits of each argument: the errno of the first entry for
// the call whose comparisons all hold, or 0 where none does.
func ociRefuses(t *testing.T, entries []OCISyscall, name string, args [MaxArg + 1]uint64) unix.Errno {
	t.Helper()
	for _, e := range entries {
		if !slices.Contains(e.Names, name) {
			continue
		}
		holds := true
		for _, a := range e.Args {
			v := args[a.Index]
			switch a.Op {
			case ociNe:
				holds = holds && v != a.Value
			case ociMaskedEq:
				holds = holds && v&a.Value == a.ValueTwo
			default:
				t.Fatalf("entry for %s: comparison %s, which this test does not know", name, a.Op)
			}
		}
		if holds {
			if e.Action != "SCMP_ACT_ERRNO" {
				t.Fatalf("entry for %s: action %s", name, e.Action)
			}
			return unix.Errno(e.ErrnoRet)
		}
	}
	return 0
}

// candidates are argument values around the constants of rules: each
// value, mask and mask bit, their neighbours, and the same with the high
// half set, which the kernel drops for the arguments the rules look at.
func candidates(rules []Rule) [MaxArg + 1][]uint64 {
	var out [MaxArg + 1][]uint64
	for _, r := range rules {
		for _, c := range r.Conds {
			vs := []uint64{0, 1, low32, uint64(c.Value), uint64(c.Value) + 1, uint64(c.Value ^ 1), uint64(c.Mask), uint64(^c.Mask)}
			for bit := uint32(1); bit != 0; bit <<= 1 {
				if c.Mask&bit != 0 {
					vs = append(vs, uint64(bit), uint64(c.Value^bit))
				}
			}
			for _, v := range vs {
				for _, w := range []uint64{v, v | 1<<32} {
					if !slices.Contains(out[c.Arg], w) {
						out[c.Arg] = append(out[c.Arg], w)
					}
				}
			}
		}
	}
	for i := range out {
		if len(out[i]) == 0 {
			out[i] = []uint64{0}
		}
	}
	return out
}

// TestRulesInBothForms: every Rule is in the BPF filter and in the OCI
// profile, and both refuse exactly what the rules refuse, on every
// combination of argument values around the rules' constants (the
// profile may refuse more when an argument's high half is set, never
// less).
func TestRulesInBothForms(t *testing.T) {
	for _, sockets := range []Sockets{SocketsAny, SocketsUnix, SocketsUnixTCP} {
		prog, err := Filter(sockets)
		if err != nil {
			t.Fatal(err)
		}
		profile, err := OCISyscalls(sockets)
		if sockets == SocketsUnixTCP {
			// Two comparisons of one argument in a rule: libseccomp
			// would refuse the profile, so it is not written.
			if err == nil {
				t.Errorf("sockets=%v: OCISyscalls wrote a profile libseccomp refuses", sockets)
			}
			profile = nil
		} else if err != nil {
			t.Fatalf("sockets=%v: %v", sockets, err)
		}
		rules := Rules(sockets)
		byCall := map[uintptr][]Rule{}
		for _, r := range rules {
			byCall[r.Nr] = append(byCall[r.Nr], r)
		}
		seen := make([]bool, len(rules))
		for nr, rs := range byCall {
			cand := candidates(rs)
			var args [MaxArg + 1]uint64
			var try func(i int)
			try = func(i int) {
				if i <= MaxArg {
					for _, v := range cand[i] {
						args[i] = v
						try(i + 1)
					}
					return
				}
				var want unix.Errno
				for j, r := range rules {
					if r.Nr == nr && r.Holds(args) {
						if want == 0 {
							want = r.Errno
						}
						seen[j] = true
					}
				}
				wantRet := uint32(RetAllow)
				if want != 0 {
					wantRet = unix.SECCOMP_RET_ERRNO | uint32(want)
				}
				if got := run(t, prog, uint32(nr), native, args[:]...); got != wantRet {
					t.Fatalf("sockets=%v %s%v: the filter returns %#x, the rules %#x", sockets, rs[0].Name, args, got, wantRet)
				}
				if profile == nil {
					return
				}
				high := false
				for _, a := range args {
					high = high || a>>32 != 0
				}
				got := ociRefuses(t, profile, rs[0].Name, args)
				if got != want && !(high && want == 0 && got == rs[0].Errno) {
					t.Fatalf("sockets=%v %s%v: the profile gives errno %d, the rules %d", sockets, rs[0].Name, args, got, want)
				}
			}
			try(0)
		}
		for j, r := range rules {
			if !seen[j] {
				t.Errorf("sockets=%v: no argument values make rule %s %+v hold", sockets, r.Name, r.Conds)
			}
		}
	}
}

func TestRules(t *testing.T) {
	for _, sockets := range []Sockets{SocketsAny, SocketsUnix, SocketsUnixTCP} {
		errnos := map[uintptr]unix.Errno{}
		for _, r := range Rules(sockets) {
			if err := r.check(); err != nil {
				t.Error(err)
			}
			if r.Name == "" || r.Reason == "" {
				t.Errorf("%+v: every rule needs its call's name and its reason", r)
			}
			if e, ok := errnos[r.Nr]; ok && e != r.Errno {
				t.Errorf("the rules on %s give errno %d and %d: the order would matter", r.Name, e, r.Errno)
			}
			errnos[r.Nr] = r.Errno
		}
	}
	for _, bad := range []Rule{
		{Nr: 1, Name: "x", Errno: 0},
		{Nr: 1, Name: "x", Errno: maxErrno + 1},
		{Nr: 1, Name: "x", Errno: unix.EPERM, Conds: []Cond{{Arg: MaxArg + 1, Op: OpEq}}},
		{Nr: 1, Name: "x", Errno: unix.EPERM, Conds: []Cond{{Op: 0}}},
		{Nr: 1, Name: "x", Errno: unix.EPERM, Conds: []Cond{{Op: OpAnyBit}}},
		{Nr: 1, Name: "x", Errno: unix.EPERM, Conds: []Cond{{Op: OpMaskedEq, Mask: 0xf, Value: 0x10}}},
	} {
		if _, err := rule(bad, "a", "b"); err == nil {
			t.Errorf("rule %+v rendered without an error", bad)
		}
	}
}

// TestProfileRefusesTerminalInjection: the requests of the profile's
// ioctl rules are compared on their low half, so the high half set does
// not slip past them.
func TestProfileRefusesTerminalInjection(t *testing.T) {
	profile, err := OCISyscalls(SocketsUnix)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCSTI | 1<<32, unix.TIOCLINUX, unix.TIOCLINUX | 1<<32} {
		if got := ociRefuses(t, profile, "ioctl", [MaxArg + 1]uint64{0, req}); got != unix.EPERM {
			t.Errorf("ioctl(0, %#x): the profile gives errno %d, want EPERM", req, got)
		}
	}
	if got := ociRefuses(t, profile, "ioctl", [MaxArg + 1]uint64{0, unix.TCGETS}); got != 0 {
		t.Errorf("ioctl(0, TCGETS): the profile gives errno %d, want none", got)
	}
}
