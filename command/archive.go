package command

import (
	"strings"
)

// Archivers: making and unpacking archives inside the workspace is a
// build step; what they write is checked like any write, and the options
// that run other programs ask.

// tarValueLetters are tar's short options that take a value: in the old
// style (tar czf out.tgz dir) their values follow the letters in order.
const tarValueLetters = "fCTXgbKLNVIFH"

var tarLongValues = []string{"--file", "--directory", "--files-from", "--exclude-from", "--listed-incremental",
	"--use-compress-program", "--to-command", "--info-script", "--new-volume-script", "--rsh-command",
	"--rmt-command", "--checkpoint-action", "--format", "--exclude", "--transform", "--xform", "--owner",
	"--group", "--mode", "--mtime", "--label", "--blocking-factor", "--newer", "--after-date", "--starting-file",
	"--index-file", "--suffix", "--strip-components", "--tape-length", "--volno-file", "--record-size",
	"--sort", "--quoting-style", "--warning", "--exclude-tag", "--exclude-tag-all", "--exclude-tag-under",
	"--xattrs-include", "--xattrs-exclude", "--newer-mtime"}

// tarRuns are tar's options that run another program.
var tarRuns = []string{"--to-command", "--use-compress-program", "--info-script", "--new-volume-script",
	"--rsh-command", "--rmt-command", "-I", "-F"}

func (x *cmd) tar() {
	args := x.args
	// The old style: a first word of bare letters, whose value-taking
	// letters take the next words in order.
	if len(args) > 1 && args[1].exact() && args[1].lit != "" && !strings.HasPrefix(args[1].lit, "-") &&
		strings.Trim(args[1].lit, "Acdtrux"+"zjJavpkmowSPhOlWBGMR"+tarValueLetters) == "" {
		out := []arg{args[0]}
		next := 2
		for _, ch := range args[1].lit {
			out = append(out, literalArg("-"+string(ch)))
			if strings.ContainsRune(tarValueLetters, ch) && next < len(args) {
				out = append(out, args[next])
				next++
			}
		}
		args = append(out, args[next:]...)
		// The option indexes below are into the rewritten words; the
		// decision shows the words as written.
		defer func(orig []arg) { x.args = orig }(x.args)
		x.args = args
	}
	p := parseOpts(args, 1, optSpec{short: tarValueLetters, long: tarLongValues})
	for _, n := range tarRuns {
		if v, ok := p.value(n); ok {
			x.set(Ask, "ask:unknown", "tar "+n+" "+v.text+" runs another program, which this check cannot see",
				"Run tar without options that run programs, and compress with gzip, xz or zstd separately")
			return
		}
	}
	if v, ok := p.value("--checkpoint-action"); ok && (strings.Contains(v.lit, "exec") || !v.exact()) {
		x.set(Ask, "ask:unknown", "tar --checkpoint-action="+v.text+" runs a command at each checkpoint, which this check cannot see",
			"Run tar without --checkpoint-action=exec")
		return
	}
	file, hasFile := p.value("-f", "--file")
	if hasFile && strings.Contains(strings.SplitN(file.lit, "/", 2)[0], ":") && !p.has(0, "--force-local") {
		x.set(Ask, "ask:network", "tar -f "+file.text+" reaches a remote archive over rsh", "Work on an archive inside the workspace, or pass --force-local")
		return
	}
	create := p.has('c', "--create") || p.has('r', "--append") || p.has('u', "--update") || p.has('A', "--concatenate", "--catenate") || p.has(0, "--delete")
	extract := p.has('x', "--extract", "--get")
	list := p.has('t', "--list") || p.has('d', "--diff", "--compare")
	switch {
	case create:
		x.set(Allow, "allow:build", "", "")
		if hasFile && file.lit != "-" {
			x.checkPath(file, writes)
			// -c writes the archive anew, --delete rewrites it; -r, -u
			// and -A add to its end.
			if p.has('c', "--create") || p.has(0, "--delete") {
				x.destroy(file)
			}
		}
		x.storeAncestors(p.operands) // tar recurses into what it archives
		if p.has(0, "--remove-files") {
			x.checkPaths(p.operands, deletes)
		}
	case extract:
		x.set(Allow, "allow:build", "", "")
		if p.has('P', "--absolute-names") {
			x.add(Deny, "deny:destructive-outside", "tar -P extracts members at their own absolute paths, anywhere on the system",
				"Extract without -P: tar then keeps every member inside the directory it extracts to")
		}
		x.linked() // members may be links
		// tar writes over the files it extracts, unless told to keep them
		// or to write to stdout.
		over := !p.has('k', "--keep-old-files", "--skip-old-files", "--to-stdout", "--to-command") && !p.has('O')
		dirs := 0
		for _, v := range p.values {
			if v.name == "-C" || v.name == "--directory" {
				x.checkPath(v.val, writes)
				if over {
					x.destroy(v.val)
				}
				dirs++
			}
		}
		if dirs == 0 {
			x.checkPath(literalArg("."), writes)
			if over {
				x.destroy(literalArg("."))
			}
		}
	case list:
		x.set(Allow, "allow:inspect", "", "")
	case p.has(0, "--help", "--version", "--usage"):
		x.set(Allow, "allow:inspect", "", "")
		return
	default:
		x.set(Ask, "ask:unknown", "tar without -c, -x or -t does something this check does not know", "Say what tar should do: -c, -x or -t")
		return
	}
	for _, n := range []string{"-g", "--listed-incremental", "--index-file", "--volno-file"} {
		if v, ok := p.value(n); ok {
			x.checkPath(v, writes)
		}
	}
}

// zip makes an archive; -m deletes what it archives, and -TT runs a
// program to test it.
func (x *cmd) zip() {
	p := parseOpts(x.args, 1, optSpec{short: "btnOPsI", long: []string{"--unzip-command", "--output-file", "--password", "--split-size", "--temp-path", "--suffixes"}})
	if v, ok := p.value("--unzip-command"); ok || hasPrefixLong(p, "--unzip-command") || p.has(0, "-TT") || strings.Contains(p.flags, "TT") {
		x.set(Ask, "ask:unknown", "zip -TT "+v.text+" runs a program to test the archive, which this check cannot see",
			"Run zip without -TT; test the archive with unzip -t")
		return
	}
	x.set(Allow, "allow:build", "", "")
	if v, ok := p.value("-O", "--output-file"); ok {
		x.overwrite(v, writes)
	}
	if len(p.operands) == 0 {
		return
	}
	if zf := x.args[p.operands[0]]; zf.lit != "-" {
		x.overwrite(zf, writes) // zip rewrites an archive that exists
	}
	srcs := p.operands[1:]
	if p.has('r', "--recurse-paths") || p.has('R') {
		x.storeAncestors(srcs)
	}
	if p.has('m', "--move") {
		x.checkPaths(srcs, deletes)
	}
}

// unzip writes what it extracts into -d DIR, or the current directory;
// -l, -t, -v, -p and -Z only read.
func (x *cmd) unzip() {
	p := parseOpts(x.args, 1, optSpec{short: "dPx"})
	if p.has('l') || p.has('t') || p.has('v') || p.has('p') || p.has('Z') || p.has('z') {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.set(Allow, "allow:build", "", "")
	x.linked() // members may be links
	dir := literalArg(".")
	if d, ok := p.value("-d"); ok {
		dir = d
	}
	x.checkPath(dir, writes)
	// Without -o, unzip asks before it writes over a file, and with no
	// one to answer it writes over none.
	if p.has('o') {
		x.destroy(dir)
	}
}

// compress judges gzip, xz, zstd and the like: each file becomes its
// compressed (or uncompressed) form and the original is gone, unless the
// output goes to stdout (-c) or the original is kept (-k).
func (x *cmd) compress() {
	p := parseOpts(x.args, 1, optSpec{short: "oSDTMFC", long: []string{"--suffix", "--output", "--memlimit", "--format", "--check", "--threads"}})
	x.set(Allow, "allow:build", "", "")
	if p.has('l', "--list") || p.has('t', "--test") || p.has(0, "--help", "--version") || p.has('h') || p.has('V') {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	if v, ok := p.value("-o", "--output"); ok && v.lit != "-" {
		x.checkPath(v, writes)
		if p.has('f', "--force") { // without -f, it refuses a file that exists
			x.destroy(v)
		}
		return
	}
	if p.has('c', "--stdout", "--to-stdout") {
		return
	}
	use := deletes
	// zstd and lz4 keep the original unless told --rm.
	if p.has('k', "--keep") || strings.Contains(x.name, "zstd") || strings.Contains(x.name, "lz4") && !p.has(0, "--rm") {
		use = writes
	}
	if strings.Contains(x.name, "zstd") && p.has(0, "--rm") {
		use = deletes
	}
	x.checkPaths(p.operands, use)
}
