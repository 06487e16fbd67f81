package nsinit

import (
	"embed"
	"io"
	"runtime"
	"strconv"
	"sync"

	"airlock.dev/airlock/sandbox/internal/seccomp"
)

// The init may be a binary of its own (package native's Options.Exe, the
// airlock-sandbox-init command) rather than the parent's, and so may have
// been built from other sources: an init left over from an older build
// would apply that build's mounts, Landlock rules and seccomp filter to
// the parent's Config. The parent therefore sets EnvMarker to its own
// Fingerprint, a hash of the code that makes up the init (this package's
// sources and the seccomp filter's, as compiled in, and the Go release),
// and an init whose own Fingerprint differs refuses to build anything: it
// reports StageStale and exits, and the parent runs its own binary as the
// init instead. The modules the init uses (x/sys, go-landlock) are not
// part of it: a test binary carries no list of them to hash, and a change
// of their version leaves the Config's meaning as it was.

// sources are this package's own files, as this binary was built from.
//
//go:embed *.go
var sources embed.FS

// fingerprintChunk is the read buffer's size, a multiple of the hash's
// eight-byte word, so that a file's words do not depend on where reads end.
const fingerprintChunk = 4096

// Fingerprint identifies the code of the init compiled into this binary:
// two binaries with the same Fingerprint run the same init. It covers this
// package and the seccomp filter it installs (package seccomp).
var Fingerprint = sync.OnceValue(func() string {
	h := fnvOffset
	// One buffer, a multiple of eight bytes, read into: ReadFile would
	// copy each file onto fresh heap pages, which costs more than the
	// hashing.
	var buf [fingerprintChunk]byte
	for _, fsys := range []embed.FS{sources, seccomp.Sources} {
		h = h.add([]byte{1}) // where one package's files end
		// The files are compiled in: reading them cannot fail.
		ents, _ := fsys.ReadDir(".")
		for _, e := range ents {
			h = h.add([]byte(e.Name())).add([]byte{0})
			f, err := fsys.Open(e.Name())
			if err != nil {
				continue
			}
			for {
				n, err := io.ReadFull(f, buf[:])
				h = h.add(buf[:n])
				if err != nil {
					break
				}
			}
			f.Close()
			h = h.add([]byte{0})
		}
	}
	h = h.add([]byte(runtime.Version()))
	return strconv.FormatUint(uint64(h), 16)
})

// fnv64 is FNV-1a taken a word at a time (eight bytes per step, then the
// tail bytewise): the fingerprint only has to tell builds apart, not
// resist forgery (whoever can replace the init binary can replace
// airlock), and it runs in every sandbox's init, so it must be quick
// (tens of microseconds for the package's sources); hash/fnv's bytewise
// loop took ten times as long.
type fnv64 uint64

const fnvPrime = 1099511628211

const fnvOffset fnv64 = 14695981039346656037

func (h fnv64) add(s []byte) fnv64 {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		h ^= fnv64(w)
		h *= fnvPrime
		h ^= h >> 29 // carry the high bits down: a word's top byte moves the low ones too
	}
	for ; i < len(s); i++ {
		h ^= fnv64(s[i])
		h *= fnvPrime
	}
	return h
}
