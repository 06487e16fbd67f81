package seccomp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Op is how a Cond compares an argument of a system call. Every Op looks
// at the argument's low 32 bits only: the kernel reads no more of the
// arguments the rules look at (an int or an unsigned int, or clone's
// flags, whose namespace bits are all low), and a load of classic BPF
// gives no more. The zero Op is invalid, and a rule holding it fails to
// render.
type Op uint8

const (
	OpEq       Op = iota + 1 // the argument is Value
	OpNe                     // the argument is not Value
	OpMaskedEq               // the argument's Mask bits are Value
	OpMaskedNe               // the argument's Mask bits are not Value
	OpAnyBit                 // the argument has one of the Mask bits set
)

// MaxArg is the highest argument index a system call has.
const MaxArg = 5

// Cond is one comparison of a Rule.
type Cond struct {
	Arg   uint8  // the argument's index, 0 to MaxArg
	Op    Op     //
	Mask  uint32 // for OpMaskedEq, OpMaskedNe and OpAnyBit
	Value uint32 // for OpEq, OpNe, OpMaskedEq and OpMaskedNe
}

// holds reports whether c holds for the argument values args.
func (c Cond) holds(args [MaxArg + 1]uint64) bool {
	a := uint32(args[c.Arg])
	switch c.Op {
	case OpEq:
		return a == c.Value
	case OpNe:
		return a != c.Value
	case OpMaskedEq:
		return a&c.Mask == c.Value
	case OpMaskedNe:
		return a&c.Mask != c.Value
	case OpAnyBit:
		return a&c.Mask != 0
	}
	return false
}

// Rule is one refusal of a system call that looks at its arguments: when
// every Cond holds (a Rule without any always applies), the call fails
// with Errno. The rules of one call all give the same Errno, so that the
// order in which a filter tries them does not matter.
type Rule struct {
	Nr     uintptr // this architecture's number
	Name   string  // as the kernel and libseccomp name it
	Conds  []Cond
	Errno  unix.Errno
	Reason string // why a sandboxed command may not make the call so
}

// Holds reports whether every Cond of r holds for the argument values
// args: what the filter and the container's profile must both do.
func (r Rule) Holds(args [MaxArg + 1]uint64) bool {
	for _, c := range r.Conds {
		if !c.holds(args) {
			return false
		}
	}
	return true
}

// check reports what makes r impossible to render faithfully.
func (r Rule) check() error {
	if r.Errno <= 0 || r.Errno > maxErrno {
		return fmt.Errorf("seccomp: rule on %s: errno %d is out of range", r.Name, int(r.Errno))
	}
	for _, c := range r.Conds {
		switch {
		case c.Arg > MaxArg:
			return fmt.Errorf("seccomp: rule on %s: argument %d past the last (%d)", r.Name, c.Arg, MaxArg)
		case c.Op < OpEq || c.Op > OpAnyBit:
			return fmt.Errorf("seccomp: rule on %s: unknown comparison %d", r.Name, c.Op)
		case (c.Op == OpMaskedEq || c.Op == OpMaskedNe || c.Op == OpAnyBit) && c.Mask == 0:
			return fmt.Errorf("seccomp: rule on %s: comparison %d with an empty mask", r.Name, c.Op)
		case (c.Op == OpMaskedEq || c.Op == OpMaskedNe) && c.Value&^c.Mask != 0:
			return fmt.Errorf("seccomp: rule on %s: value %#x has bits outside the mask %#x", r.Name, c.Value, c.Mask)
		}
	}
	return nil
}

// argRules hold in every mode.
var argRules = []Rule{
	{unix.SYS_CLONE, "clone", []Cond{{Arg: 0, Op: OpAnyBit, Mask: CloneNamespaces}}, unix.EPERM,
		"a clone into new namespaces gives back capabilities, as unshare does"},
	{unix.SYS_CLONE3, "clone3", nil, unix.ENOSYS,
		"its flags live in memory a filter cannot read; with ENOSYS, C libraries fall back to clone, whose flags it can"},
	{unix.SYS_IOCTL, "ioctl", []Cond{{Arg: 1, Op: OpEq, Value: unix.TIOCSTI}}, unix.EPERM,
		"TIOCSTI types into a terminal as if its user did, into the shell waiting there"},
	{unix.SYS_IOCTL, "ioctl", []Cond{{Arg: 1, Op: OpEq, Value: unix.TIOCLINUX}}, unix.EPERM,
		"TIOCLINUX works a virtual console: its selection can be pasted as input"},
}

// socketRules are what each Sockets mode refuses of socket(2).
var socketRules = map[Sockets][]Rule{
	SocketsUnix: {
		{unix.SYS_SOCKET, "socket", []Cond{{Arg: 0, Op: OpNe, Value: unix.AF_UNIX}}, unix.EPERM,
			"no network: only AF_UNIX sockets"},
	},
	SocketsUnixTCP: {
		{unix.SYS_SOCKET, "socket", []Cond{{Arg: 0, Op: OpNe, Value: unix.AF_UNIX}, {Arg: 0, Op: OpNe, Value: unix.AF_INET}}, unix.EPERM,
			"only AF_UNIX, and AF_INET for the proxy"},
		{unix.SYS_SOCKET, "socket", []Cond{{Arg: 0, Op: OpEq, Value: unix.AF_INET}, {Arg: 1, Op: OpMaskedNe, Mask: SockTypeMask, Value: unix.SOCK_STREAM}}, unix.EPERM,
			"AF_INET only as a stream: no UDP or raw sockets, which Landlock's TCP rules do not cover"},
		{unix.SYS_SOCKET, "socket", []Cond{{Arg: 0, Op: OpEq, Value: unix.AF_INET}, {Arg: 2, Op: OpNe, Value: 0}, {Arg: 2, Op: OpNe, Value: unix.IPPROTO_TCP}}, unix.EPERM,
			"AF_INET streams only over TCP: no SCTP or MPTCP, which Landlock's TCP rules do not cover"},
	},
}

// Rules are the refusals that look at arguments in a sockets mode, in the
// order the filter tries them.
func Rules(sockets Sockets) []Rule {
	return append(append([]Rule{}, argRules...), socketRules[sockets]...)
}
