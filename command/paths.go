package command

import (
	"path"
	"strings"
)

// place is where a path points, as far as the check can tell.
type place uint8

const (
	inside  place = iota // the workspace
	scratch              // /tmp, /dev/null and the like: private to the sandbox, fine to write
	outside              // anywhere else, the home directory included
	unknown              // only known at run time
)

// scratchPaths may be written whatever the workspace: the sandbox gives
// each run its own /tmp, and these devices hold nothing.
var scratchPaths = []string{"/tmp", "/var/tmp", "/dev/shm"}
var scratchFiles = map[string]bool{
	"/dev/null": true, "/dev/zero": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/stdin": true,
	"/dev/tty": true, "/dev/random": true, "/dev/urandom": true, "/dev/full": true,
}

// resolve makes p absolute against the current directory; ok is false
// when the directory is unknown and p is relative.
func (c *checker) resolve(p string) (string, bool) {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p), true
	}
	if c.cwd == "" {
		return "", false
	}
	return path.Join(c.cwd, p), true
}

// where tells where an absolute, clean path points.
func (c *checker) where(abs string) place {
	if within(abs, c.ws) {
		return inside
	}
	if scratchFiles[abs] || strings.HasPrefix(abs, "/dev/fd/") || strings.HasPrefix(abs, "/proc/self/fd/") {
		return scratch
	}
	for _, s := range scratchPaths {
		if within(abs, s) {
			return scratch
		}
	}
	return outside
}

func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// locate tells where a word points when read as a path, and the path to
// show. A word that expands at run time is outside when its known start
// is already a directory outside the workspace (/etc/$x), else unknown.
func (c *checker) locate(a arg) (place, string) {
	if a.fdPath {
		return scratch, a.text
	}
	if a.braces {
		// The worst of the words it expands to: outside, then unknown.
		worst, shown := unknown, a.text
		if len(a.alts) > 0 {
			worst = inside
		}
		for _, alt := range a.alts {
			pl, s := c.locate(alt)
			if pl == outside || pl == unknown && worst != outside {
				worst, shown = pl, s
			}
		}
		return worst, shown
	}
	if !a.dyn {
		abs, ok := c.resolve(a.path)
		if !ok {
			return unknown, a.text
		}
		return c.where(abs), show(abs)
	}
	dir := a.prefix[:strings.LastIndexByte(a.prefix, '/')+1]
	if dir == "" || dir == "/" {
		return unknown, a.text
	}
	abs, ok := c.resolve(dir)
	if ok && abs != "/" && c.where(abs) == outside {
		return outside, a.text
	}
	return unknown, a.text
}

// show writes homeDir back as ~.
func show(abs string) string {
	if abs == homeDir || strings.HasPrefix(abs, homeDir+"/") {
		return "~" + abs[len(homeDir):]
	}
	return abs
}

// The credential stores no command may touch, whatever it does: under
// every home directory, and in the system.
var (
	homeRoots  = []string{homeDir, "/root", "/home/*"}
	homeStores = []string{
		".ssh", ".aws", ".config/gcloud", ".kube", ".docker/config.json", ".netrc",
		".git-credentials", ".pgpass", ".gnupg", ".pypirc", ".config/gh", ".azure",
		".password-store", ".vault-token", ".terraform.d/credentials.tfrc.json",
		".cargo/credentials", ".cargo/credentials.toml", ".npmrc", ".my.cnf",
	}
	systemStores = []string{
		"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/security/opasswd",
		"/etc/ssh/ssh_host_*_key", "/etc/ssl/private", "/var/run/secrets", "/run/secrets",
		"/etc/sudoers", "/etc/sudoers.d",
	}
	// keyNames are private key and token files by name, wherever they are.
	keyNames = []string{
		"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
		".netrc", ".git-credentials", ".pgpass", "credentials.tfrc.json",
	}
	credentialPatterns = func() [][]string {
		var out [][]string
		for _, root := range homeRoots {
			for _, s := range homeStores {
				out = append(out, split(root+"/"+s))
			}
		}
		for _, s := range systemStores {
			out = append(out, split(s))
		}
		return out
	}()
)

func split(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }

// credential reports whether the path p (absolute, or relative when the
// directory is unknown) names a credential store or a file in one. When
// glob is set, p is a pattern and matching any store is enough.
func credential(p string, glob bool) bool {
	base := path.Base(p)
	for _, k := range keyNames {
		// A glob stands for a key file only when it spells enough of the
		// name (id_*), so that ls * is not taken for a key read.
		if base == k || glob && literalPrefix(base) >= 3 && globMatches(base, k) {
			return true
		}
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	parts := split(path.Clean(p))
	for _, store := range credentialPatterns {
		if len(parts) < len(store) {
			continue
		}
		ok := true
		for i, s := range store {
			if !matches(s, parts[i]) && !(glob && globMatches(parts[i], s)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// globMatches is path.Match as the shell globs: a leading dot must be
// matched by a dot, so ~/* does not reach ~/.ssh.
func globMatches(pattern, name string) bool {
	if strings.HasPrefix(name, ".") && !strings.HasPrefix(pattern, ".") {
		return false
	}
	return matches(pattern, name)
}

func literalPrefix(pattern string) int {
	if i := strings.IndexAny(pattern, "*?[\\"); i >= 0 {
		return i
	}
	return len(pattern)
}

func matches(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// rawDisks are device files that give the disks, memory or the kernel's
// ports directly.
var rawDisks = []string{
	"/dev/sd*", "/dev/hd*", "/dev/vd*", "/dev/xvd*", "/dev/nvme*", "/dev/mmcblk*", "/dev/mem",
	"/dev/kmem", "/dev/port", "/dev/disk/*", "/dev/mapper/*", "/dev/dm-*", "/dev/loop*",
	"/dev/md*", "/dev/sg*", "/dev/sr*", "/dev/root",
}

func rawDisk(abs string) bool {
	for _, d := range rawDisks {
		if matches(d, abs) || strings.HasSuffix(d, "/*") && strings.HasPrefix(abs, strings.TrimSuffix(d, "*")) {
			return true
		}
	}
	return false
}

// netDevice reports a bash network path: opening /dev/tcp/host/port
// connects, which is how a reverse shell is written in bash alone.
func netDevice(s string) bool {
	return strings.Contains(s, "/dev/tcp/") || strings.Contains(s, "/dev/udp/") ||
		strings.HasSuffix(s, "/dev/tcp") || strings.HasSuffix(s, "/dev/udp")
}

// argChecks runs the checks every word of every command gets, whatever
// the command: no network device, raw disk or credential store. It reports
// a deny and returns true on the first word that fails one.
func (c *checker) argChecks(args []arg, name, shown string, f *frame) bool {
	for _, a := range args {
		if len(a.alts) > 0 && c.argChecks(a.alts, name, shown, f) {
			return true
		}
		if h := metadataHost(a.lit); h != "" {
			c.found(f, Deny, "deny:metadata", name, shown,
				"the command names "+h+", a cloud metadata service, which hands out the machine's credentials",
				"Do not reach cloud metadata services; if the task needs a credential, ask the user to provide it")
			return true
		}
		if s := containerSocket(a.lit); s != "" {
			c.found(f, Deny, "deny:docker-socket", name, shown,
				"the command names "+s+", a container daemon's socket: whoever talks to it controls the host",
				"Leave container daemons' sockets alone; ask the user to run container commands")
			return true
		}
		for _, cand := range candidates(a) {
			if netDevice(cand.path) || netDevice(a.lit) {
				c.found(f, Deny, "deny:reverse-shell", name, shown,
					"the command opens a network connection through "+a.text+", the way a reverse shell does",
					"Do not open /dev/tcp or /dev/udp; ask for network access through an approved tool")
				return true
			}
			abs, ok := c.resolve(cand.path)
			if !ok {
				abs = cand.path
			}
			if ok && rawDisk(abs) {
				c.found(f, Deny, "deny:raw-disk", name, shown,
					"the command touches the raw device "+show(abs)+", which bypasses every file permission",
					"Work on files inside the workspace, never on disk or memory devices")
				return true
			}
			pat := abs
			if cand.glob {
				pat = cand.pattern
				if ok && !strings.HasPrefix(pat, "/") {
					pat = path.Join(c.cwd, pat)
				}
			}
			if credential(pat, cand.glob) {
				c.found(f, Deny, "deny:credentials", name, shown,
					"the command touches "+show(abs)+", a credential store",
					"Leave keys, tokens and password files alone; if the task needs a credential, ask the user to provide it another way")
				return true
			}
		}
	}
	return false
}

type candidate struct {
	path, pattern string
	glob          bool
}

// candidates are the paths a word may name: the word itself and, for
// --opt=PATH or of=PATH, the part after the first =.
func candidates(a arg) []candidate {
	if a.dyn && a.prefix == "" {
		return nil
	}
	p, pat := a.path, a.pattern
	if a.dyn {
		p, pat = a.prefix, escapeGlob(a.prefix)
	}
	out := []candidate{{p, pat, a.glob}}
	if _, v, ok := strings.Cut(p, "="); ok && v != "" {
		_, vp, _ := strings.Cut(pat, "=")
		if t, ok := tildePath(v); ok {
			v, vp = t, escapeGlob(t)
		}
		out = append(out, candidate{v, vp, a.glob})
	}
	return out
}
