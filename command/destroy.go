package command

import (
	"path"
	"strings"
)

// What a script destroys (Decision.Destroys): whether it deletes,
// truncates or writes over data the workspace holds before it runs. It is
// extra information beside the verdict, which it never changes: auto-edit
// lets an Allow run without approval unless it destroys.
//
// Destroying, for a path inside the workspace (outside it the command is
// denied already; /tmp and /dev/null hold nothing of the workspace):
//
//   - every path a command deletes: rm, rmdir, unlink, shred, truncate, the
//     sources of mv, find -delete and find -exec rm {}, tar --remove-files,
//     zip -m, gzip/xz/... without -k or -c (the original is gone), git rm
//     and git mv;
//   - every path a command truncates or writes over: > and >| and &>
//     redirections (not >>), <> (it may write over what is there), tee
//     without -a, dd of=, sort -o, uniq's output, cp, install and ln -f
//     onto an existing path (cp -n and --update=none do not), sed -i,
//     perl -i, ruby -i and gawk -i inplace on their files, tar -c/--delete
//     on its archive file, zip onto an existing archive, tar -x (unless -k,
//     --skip-old-files or -O) and unzip -o into an existing directory, find
//     -fprint, time -o, git --output, curl -o/-O/-c/-D, wget -O/-o and
//     --save-cookies, compressors' -o with -f, and scp or rsync onto an
//     existing destination (rsync --delete and --remove-source-files always);
//   - git throwing work away: every ask:git-data-loss (reset --hard, clean
//     -f, checkout -- files, restore, branch -D, stash drop), git checkout
//     of a path that exists, switch -f or --discard-changes, apply (not
//     --check, --stat, --cached), worktree remove, tag -d, reflog
//     expire/delete, gc --prune;
//   - a target that may name existing files whatever Exists says: a glob,
//     braces, a word only known at run time ($x, $(...), xargs's input),
//     find's {}, a relative path after cd to a directory only known at run
//     time, and git pathspecs with glob characters or magic (':');
//   - inline code (python -c, node -e, perl -e, awk programs, ...) that
//     deletes, renames or writes files (os.remove, shutil.rmtree, unlink,
//     fs.rmSync, fs.writeFileSync, File.write, open(p, 'w'), open(F, '>p'),
//     awk's print > f), whatever Exists says: a scanner of tokens cannot be
//     sure which path the code names. Code that only appends (open(p, 'a'),
//     appendFileSync), makes directories or changes modes does not destroy.
//
// Not destroying: reads; creating a path that does not exist (Exists
// says so); mkdir, touch, chmod, chown; appends; a build's or a
// compiler's own outputs (go build -o bin/app, gcc -o x, cargo build,
// make), which the build writes again each time; and what a program run
// by the script does by itself (a test, a Makefile's recipe, a script
// file, python FILE), which this check cannot see.
//
// A path written over that does not exist can still reach existing data
// through a link the same script makes first: ln -s notes.txt l; > l. So
// when one command writes over or deletes a path that does not exist and
// another command of the script may make links (ln, cp -s/-l/-r/-a, tar
// -x, unzip, rsync, git commands that change the work tree), Destroys is
// set: whichever order, loops and functions included.

// steps are the commands of a check something was seen in: the first,
// and whether another.
type steps struct {
	first   int
	another bool
	seen    bool
}

func (s *steps) add(step int) {
	switch {
	case !s.seen:
		s.first, s.seen = step, true
	case s.first != step:
		s.another = true
	}
}

// apart reports whether s and t were seen in two different commands.
func (s steps) apart(t steps) bool {
	return s.seen && t.seen && (s.first != t.first || s.another || t.another)
}

// linked records that the command may make links.
func (x *cmd) linked() { x.c.links.add(x.step) }

// destroy records that a, read as a path the command deletes or writes
// over, may hold the workspace's data: a path inside it that exists, or
// one that may (a glob, braces, a word only known at run time, find's {}).
func (x *cmd) destroy(a arg) {
	c := x.c
	if c.destroys || a.fdPath {
		return
	}
	if a.braces {
		if len(a.alts) == 0 {
			c.destroys = true // too many words: only known at run time
			return
		}
		for _, alt := range a.alts {
			if pl, _ := c.locate(alt); pl == inside || pl == unknown {
				c.destroys = true
				return
			}
		}
		return
	}
	if a.dyn {
		if pl, _ := c.locate(a); pl != outside {
			c.destroys = true
		}
		return
	}
	x.destroyPath(a.path, a.glob || a.found)
}

// destroyPath is destroy for a path known before the script runs; many
// says it stands for whichever files match it (a glob, find's {}).
func (x *cmd) destroyPath(p string, many bool) {
	c := x.c
	abs, ok := c.resolve(p)
	switch {
	case !ok: // relative to a directory only known at run time
		c.destroys = true
	case c.where(abs) != inside:
	case many || c.exist(abs):
		c.destroys = true
	default:
		c.fresh.add(x.step)
	}
}

// exist asks Options.Exists about an absolute path inside the workspace.
// Without Exists, or past MaxExistsCalls, every path exists.
func (c *checker) exist(abs string) bool {
	if c.exists == nil || c.existsCalls >= MaxExistsCalls {
		return true
	}
	c.existsCalls++
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, c.ws), "/")
	if rel == "" {
		rel = "."
	}
	return c.exists(rel)
}

// A path written over that does not exist counts when another command of
// the script may make links: a command's own links (cp -r, tar -x) are not
// written through by that command.
func (c *checker) destroyed() bool { return c.destroys || c.fresh.apart(c.links) }

// overwrite checks a path the command writes to and records that it
// writes over what is there.
func (x *cmd) overwrite(a arg, use pathUse) {
	x.checkPath(a, use)
	x.destroy(a)
}

// copyOnto records what cp, install and ln -f write over: with a target
// directory (-t DIR, several sources, or a destination such as dir/ or .),
// DIR/NAME for each source; else the destination itself, file or
// directory.
func (x *cmd) copyOnto(p parsed) {
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.copyInto(t, p.operands)
		return
	}
	n := len(p.operands)
	switch {
	case n == 1 && x.name == "ln":
		// ln -sf ../x makes ./x.
		x.copyInto(literalArg("."), p.operands)
	case n == 2 && !isDir(x.args[p.operands[1]].lit):
		x.destroy(x.args[p.operands[1]])
	case n >= 2:
		x.copyInto(x.args[p.operands[n-1]], p.operands[:n-1])
	}
}

// isDir reports a path that can only name a directory: one ending in /,
// ., or ..
func isDir(p string) bool {
	return strings.HasSuffix(p, "/") || p == "." || p == ".." || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
}

// copyInto records what copying the sources into dir writes over: dir/NAME
// for a source whose name is known; dir itself (which may hold anything)
// for one only known at run time.
func (x *cmd) copyInto(dir arg, srcs []int) {
	for _, i := range srcs {
		s := x.args[i]
		base := path.Base(s.path)
		if !s.exact() || s.found || dir.dyn || dir.braces || dir.glob || dir.found || base == "/" || base == "." || base == ".." {
			x.destroy(dir)
			continue
		}
		x.destroyPath(path.Join(dir.path, base), false)
	}
}

// destroyAll records that the command writes over each of the args at idx.
func (x *cmd) destroyAll(idx []int) {
	for _, i := range idx {
		x.destroy(x.args[i])
	}
}
