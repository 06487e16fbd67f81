package seccomp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The seccomp profile of the OCI runtime spec, as Docker and Podman take
// it in JSON: a default action and a list of entries, each naming calls,
// an action and the argument comparisons that must all hold. runc and
// crun hand it to libseccomp, which compares all 64 bits of an argument
// and takes one comparison per argument in an entry; several entries for
// one call apply when any of them holds.

// OCIArg is one argument comparison of a profile entry.
type OCIArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// OCISyscall is one entry of a profile.
type OCISyscall struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet uint     `json:"errnoRet"`
	Args     []OCIArg `json:"args,omitempty"`
}

// The libseccomp names of the comparisons OCISyscalls writes.
const (
	ociNe       = "SCMP_CMP_NE"
	ociMaskedEq = "SCMP_CMP_MASKED_EQ"
)

// low32 masks an argument to the half the Ops compare.
const low32 = 0xffffffff

// OCISyscalls renders the Denied calls and the Rules of a sockets mode as
// the entries of a profile whose default action allows, refusing what
// Filter refuses on this architecture:
//
//   - OpEq is a masked comparison of the low 32 bits: a plain SCMP_CMP_EQ
//     would miss TIOCSTI|1<<32, which the kernel reads as TIOCSTI;
//   - OpNe is SCMP_CMP_NE of all 64 bits, which holds wherever the low
//     halves differ, and then some: a rule refuses no less than Filter;
//   - OpMaskedEq is SCMP_CMP_MASKED_EQ, exactly;
//   - OpAnyBit and OpMaskedNe hold when one of the Mask bits holds, which
//     is one entry per bit (a bit set, or a bit differing from Value's).
//
// A rule with two comparisons of one argument cannot be written for
// libseccomp (it refuses the entry), and is an error.
func OCISyscalls(sockets Sockets) ([]OCISyscall, error) {
	out := []OCISyscall{{Names: Names(), Action: "SCMP_ACT_ERRNO", ErrnoRet: uint(unix.EPERM)}}
	for _, r := range Rules(sockets) {
		if err := r.check(); err != nil {
			return nil, err
		}
		// Each Cond is one or more alternatives; the rule's entries are
		// every choice of one alternative per Cond.
		entries := [][]OCIArg{nil}
		var seen [MaxArg + 1]bool
		for _, c := range r.Conds {
			if seen[c.Arg] {
				return nil, fmt.Errorf("seccomp: rule on %s compares argument %d twice, which a profile entry cannot", r.Name, c.Arg)
			}
			seen[c.Arg] = true
			alts := ociAlternatives(c)
			var next [][]OCIArg
			for _, e := range entries {
				for _, a := range alts {
					next = append(next, append(append([]OCIArg{}, e...), a))
				}
			}
			entries = next
		}
		for _, args := range entries {
			out = append(out, OCISyscall{Names: []string{r.Name}, Action: "SCMP_ACT_ERRNO", ErrnoRet: uint(r.Errno), Args: args})
		}
	}
	return out, nil
}

// ociAlternatives are the comparisons of which any one makes c hold; c
// has passed Rule.check.
func ociAlternatives(c Cond) []OCIArg {
	i := uint(c.Arg)
	switch c.Op {
	case OpEq:
		return []OCIArg{{Index: i, Value: low32, ValueTwo: uint64(c.Value), Op: ociMaskedEq}}
	case OpNe:
		return []OCIArg{{Index: i, Value: uint64(c.Value), Op: ociNe}}
	case OpMaskedEq:
		return []OCIArg{{Index: i, Value: uint64(c.Mask), ValueTwo: uint64(c.Value), Op: ociMaskedEq}}
	}
	// OpAnyBit and OpMaskedNe: one of the Mask bits is set, or differs
	// from Value's.
	var alts []OCIArg
	for bit := uint32(1); bit != 0; bit <<= 1 {
		if c.Mask&bit == 0 {
			continue
		}
		want := bit
		if c.Op == OpMaskedNe {
			want = bit &^ c.Value
		}
		alts = append(alts, OCIArg{Index: i, Value: uint64(bit), ValueTwo: uint64(want), Op: ociMaskedEq})
	}
	return alts
}
