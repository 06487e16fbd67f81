package command

import (
	"path"
	"strings"
)

// Network clients and development tools whose verdict depends on their
// subcommand: git, go, cargo, npm, pip, gh, docker, ...

func (x *cmd) netcat() {
	for _, a := range x.args[1:] {
		s := a.lit
		if !a.exact() {
			continue
		}
		if s == "--exec" || s == "--sh-exec" || s == "--lua-exec" || strings.HasPrefix(s, "--exec=") || strings.HasPrefix(s, "--sh-exec=") ||
			len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.ContainsAny(s[1:], "ec") {
			x.set(Deny, "deny:reverse-shell", x.name+" "+s+" hands a network connection to a program: a reverse or bind shell",
				"Do not connect programs to the network; ask for network access through an approved tool")
			return
		}
	}
	x.set(Ask, "ask:network", x.name+" connects to the network", "Ask the user to approve the network access")
	x.sender()
}

func (x *cmd) socat() {
	for _, a := range x.args[1:] {
		l := strings.ToLower(a.lit)
		if strings.Contains(l, "exec:") || strings.Contains(l, "system:") || strings.HasPrefix(l, "exec") {
			x.set(Deny, "deny:reverse-shell", "socat "+a.text+" hands a network connection to a program: a reverse or bind shell",
				"Do not connect programs to the network; ask for network access through an approved tool")
			return
		}
	}
	x.set(Ask, "ask:network", "socat connects to the network", "Ask the user to approve the network access")
	var addrs []string
	for _, a := range x.args[1:] {
		if !strings.HasPrefix(a.lit, "-") || a.lit == "-" {
			addrs = append(addrs, a.lit)
		}
	}
	if socatSends(addrs) {
		x.exfil("joins a file to a network address, sending or serving the file's contents")
		return
	}
	x.sender()
}

// networkWrites checks where curl and wget save what they download, and
// where scp and rsync copy to.
func (x *cmd) networkWrites() {
	switch x.name {
	case "scp", "rsync":
		p := parseOpts(x.args, 1, optSpec{short: "iFloPSce", long: []string{"--rsh", "--exclude", "--include", "--filter", "--rsync-path"}})
		if n := len(p.operands); n >= 2 {
			dest := x.args[p.operands[n-1]]
			if !strings.Contains(dest.lit, ":") {
				x.checkPath(dest, writes)
				x.destroy(dest) // what it copies replaces what is there
				if x.name == "rsync" {
					x.linked()
				}
			}
			// rsync --delete removes what the source lacks, and
			// --remove-source-files the sources.
			if x.name == "rsync" && (p.has(0, "--del", "--remove-source-files") || hasPrefixLong(p, "--delete")) {
				for _, i := range p.operands {
					if a := x.args[i]; !strings.Contains(a.lit, ":") {
						x.destroy(a)
					}
				}
			}
		}
	}
}

func (x *cmd) git() {
	p := parseOpts(x.args, 1, optSpec{short: "Cc", long: []string{"--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}, stop: true})
	for _, v := range p.values {
		if v.name == "-c" || v.name == "--config-env" || v.name == "--exec-path" {
			x.set(Ask, "ask:unknown", "git "+v.name+" "+v.val.text+" changes git's configuration, which can make it run other commands",
				"Run git without -c; ask the user to change the configuration if the task needs it")
			return
		}
	}
	sub := ""
	if p.end < len(x.args) {
		sub = x.args[p.end].lit
	}
	rest := parseOpts(x.args, p.end+1, optSpec{})
	x.gitDestroys(sub, p, rest)
	switch sub {
	case "status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "grep", "blame", "describe",
		"shortlog", "reflog", "show-ref", "cat-file", "ls-tree", "rev-list", "version", "help", "whatchanged", "count-objects":
		x.set(Allow, "allow:inspect", "", "")
		if x.gitDataLoss(sub, rest) {
			return
		}
		if sub == "grep" && (rest.has('O') || hasPrefixLong(rest, "--open-files-in-pager")) {
			x.set(Ask, "ask:unknown", "git grep -O runs a pager program on the files", "Run git grep without -O")
			return
		}
		if v, ok := rest.value("--output"); ok {
			x.overwrite(v, writes)
		}
	case "init":
		// git init writes DIR/.git (or DIR itself, bare), which the
		// protected list names: git runs its hooks and config on the host.
		x.set(Allow, "allow:build", "", "")
		dir := gitWorkDir(p)
		if len(rest.operands) > 0 {
			dir = x.args[rest.operands[0]]
		}
		x.checkPath(joinArg(dir, ".git"), writes)
	case "add", "commit", "checkout", "switch", "restore", "stash", "mv", "rm", "merge", "rebase", "reset",
		"cherry-pick", "revert", "tag", "clean", "apply", "am", "format-patch", "notes", "bisect", "worktree", "gc", "mergetool":
		x.set(Allow, "allow:build", "", "")
		x.gitDir(p) // first: a repository outside the workspace is denied, data loss or not
		if x.gitDataLoss(sub, rest) {
			return
		}
		if sub == "bisect" && len(rest.operands) > 0 && x.args[rest.operands[0]].lit == "run" {
			x.set(Ask, "ask:unknown", "git bisect run runs a command of its own at every step", "Run the test command directly, or ask the user to approve it")
			return
		}
	case "config":
		if rest.has(0, "--global", "--system", "--file") || rest.has('f') {
			x.set(Ask, "ask:unknown", "git config outside the repository changes git for every repository",
				"Change only the repository's own configuration, or ask the user")
			return
		}
		if gitConfigReads(x.args, rest) {
			x.set(Allow, "allow:inspect", "", "")
			return
		}
		// It writes .git/config, which the protected list names.
		x.set(Allow, "allow:build", "", "")
		x.checkPath(joinArg(gitWorkDir(p), ".git/config"), writes)
		x.gitDir(p)
	case "remote":
		if len(rest.operands) == 0 {
			x.set(Allow, "allow:inspect", "", "")
			return
		}
		x.set(Allow, "allow:build", "", "")
		x.gitDir(p)
	case "clone", "fetch", "pull", "ls-remote", "submodule", "fetch-pack", "archive":
		x.set(Ask, "ask:network", "git "+sub+" connects to a remote repository", "Ask the user to approve the network access")
		if sub == "clone" && len(rest.operands) >= 2 {
			x.checkPath(x.args[rest.operands[1]], writes)
		}
	case "push", "send-email", "send-pack", "request-pull":
		x.set(Ask, "ask:publish", "git "+sub+" publishes commits outside the workspace", "Ask the user to approve the push")
		if sub == "push" && x.gitPushRewrites(rest) {
			x.set(Deny, "deny:git-push-rewrite", "git push with force, --mirror or a delete rewrites or removes history on the remote, which no one can undo from here",
				"Push without --force, --mirror or deletes; ask the user to do it themselves if the task needs it")
		}
	default:
		x.set(Ask, "ask:unknown", "git "+sub+" is a git command the policy does not know", "Ask the user to approve it")
	}
}

// gitDataLoss asks before a git subcommand that throws away work that
// exists nowhere else (rule ask:git-data-loss): reset --hard, clean -f,
// checkout or restore of files over their changes, branch -D, stash drop
// or clear. It reports whether it did.
func (x *cmd) gitDataLoss(sub string, rest parsed) bool {
	what := x.gitLoss(sub, rest)
	if what == "" {
		return false
	}
	x.set(Ask, "ask:git-data-loss", what, "Ask the user first, or keep the work (commit or stash it) before throwing it away")
	return true
}

// gitLoss says how a git subcommand throws away work that exists nowhere
// else, or "" when it does not.
func (x *cmd) gitLoss(sub string, rest parsed) string {
	operand := func(lits ...string) bool {
		for _, i := range rest.operands {
			for _, l := range lits {
				if x.args[i].lit == l {
					return true
				}
			}
		}
		return false
	}
	var what string
	switch {
	case sub == "reset" && rest.has(0, "--hard", "--merge", "--keep"):
		what = "git reset --hard throws away the uncommitted changes"
	case sub == "clean" && (rest.has('f', "--force") || hasPrefixLong(rest, "--force")):
		what = "git clean -f deletes the files git does not track"
	case sub == "checkout" && (rest.has('f', "--force") || rest.dashdash || operand(".", ":/")):
		what = "git checkout of files overwrites their uncommitted changes"
	case sub == "restore" && !(rest.has('S', "--staged") && !rest.has('W', "--worktree")):
		what = "git restore overwrites the files' uncommitted changes"
	case sub == "branch" && (rest.has('D') || (rest.has('d', "--delete") && rest.has('f', "--force"))):
		what = "git branch -D deletes a branch whose commits may exist nowhere else"
	case sub == "stash" && operand("drop", "clear"):
		what = "git stash drop or clear deletes stashed changes"
	}
	return what
}

// gitDestroys records what a git command destroys in the work tree or
// the repository (destroy.go), whatever its verdict.
func (x *cmd) gitDestroys(sub string, p, rest parsed) {
	dir := gitWorkDir(p)
	switch sub {
	case "checkout", "switch", "restore", "reset", "merge", "rebase", "pull", "cherry-pick", "revert", "stash",
		"apply", "am", "worktree", "clone", "bisect", "mv", "rm":
		x.linked() // the work tree gets the links the commits hold
	}
	first := ""
	if len(rest.operands) > 0 {
		first = x.args[rest.operands[0]].lit
	}
	switch {
	case x.gitLoss(sub, rest) != "":
		x.destroy(dir)
	case sub == "checkout" && !rest.has('b', "--orphan", "--detach") && !rest.has('B'):
		// checkout BRANCH moves the work tree and keeps its changes;
		// checkout PATH (or TREE PATH) writes over PATH.
		x.gitPaths(dir, rest.operands)
	case sub == "switch" && rest.has('f', "--force", "--discard-changes"),
		sub == "apply" && !rest.has(0, "--check", "--stat", "--numstat", "--summary", "--cached"),
		sub == "worktree" && first == "remove",
		sub == "reflog" && (first == "expire" || first == "delete"),
		sub == "gc" && hasPrefixLong(rest, "--prune"),
		sub == "tag" && rest.has('d', "--delete"):
		x.destroy(dir)
	case sub == "rm" && !rest.has(0, "--cached"), sub == "mv":
		x.gitPaths(dir, rest.operands)
	}
}

// gitPaths records git writing over or deleting pathspecs, relative to
// dir: git itself expands glob characters and magic (:/, :(glob)), so
// those may name any file.
func (x *cmd) gitPaths(dir arg, idx []int) {
	for _, i := range idx {
		a := x.args[i]
		if !a.exact() || strings.ContainsAny(a.lit, "*?[") || strings.HasPrefix(a.lit, ":") {
			x.destroy(dir)
			continue
		}
		if strings.HasPrefix(a.lit, "/") {
			x.destroy(a)
			continue
		}
		x.destroy(joinArg(dir, a.lit))
	}
}

// gitPushRewrites reports whether a push forces, mirrors or deletes: a
// force flag, --mirror, --delete, or a refspec that forces (+ref) or
// deletes (:ref).
func (x *cmd) gitPushRewrites(rest parsed) bool {
	if rest.has('f', "--mirror", "--prune") || rest.has('d', "--delete") || hasPrefixLong(rest, "--force") {
		return true
	}
	for _, i := range rest.operands {
		if l := x.args[i].lit; strings.HasPrefix(l, "+") || strings.HasPrefix(l, ":") {
			return true
		}
	}
	return false
}

// gitConfigReads reports whether git config only reads: --get and its
// kin, --list, the get and list subcommands, or one key alone.
func gitConfigReads(args []arg, rest parsed) bool {
	if rest.has('l', "--list", "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool") {
		return true
	}
	if rest.has('e', "--edit", "--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section") {
		return false
	}
	switch {
	case len(rest.operands) == 0:
		return false // nothing to read: git prints its usage, or it is a form this check does not know
	case args[rest.operands[0]].lit == "get" || args[rest.operands[0]].lit == "list":
		return true
	}
	return len(rest.operands) == 1 && args[rest.operands[0]].exact()
}

// gitDir checks that a git command that changes a repository changes one
// inside the workspace.
func (x *cmd) gitDir(p parsed) {
	dir := gitWorkDir(p)
	for _, n := range []string{"--git-dir", "--work-tree"} {
		if v, ok := p.value(n); ok {
			x.checkPath(v, changes)
		}
	}
	x.checkPath(dir, changes)
}

func (x *cmd) goTool() {
	p := parseOpts(x.args, 1, optSpec{stop: true})
	sub := ""
	if p.end < len(x.args) {
		sub = x.args[p.end].lit
	}
	// go's flags have one dash, whatever their length: -o, -exec, -toolexec.
	var out []arg
	runs := false
	for i := p.end + 1; i < len(x.args); i++ {
		s := strings.TrimPrefix(x.args[i].lit, "-")
		name, val, inline := strings.Cut(strings.TrimPrefix(s, "-"), "=")
		switch name {
		case "exec", "toolexec", "overlay":
			runs = true
		case "o":
			if inline {
				out = append(out, literalArg(val))
			} else if i+1 < len(x.args) {
				out = append(out, x.args[i+1])
			}
		}
	}
	switch sub {
	case "build", "test", "vet", "run", "fmt", "env", "version", "list", "doc", "generate", "clean", "work", "fix":
		if sub == "run" {
			for _, a := range x.args[p.end+1:] {
				if strings.Contains(a.lit, "@") && !strings.HasPrefix(a.lit, "-") {
					x.set(Ask, "ask:package-install", "go run "+a.text+" downloads and runs a module from the network",
						"Ask the user to approve it, or run code inside the workspace")
					return
				}
			}
		}
		if runs {
			x.set(Ask, "ask:unknown", "go "+sub+" -exec or -toolexec runs another program, which this check cannot see",
				"Run go "+sub+" without -exec or -toolexec")
			return
		}
		x.set(Allow, "allow:build", "", "")
		for _, o := range out {
			x.checkPath(o, writes)
		}
	case "mod":
		if p.end+1 < len(x.args) && x.args[p.end+1].lit == "download" {
			x.set(Ask, "ask:package-install", "go mod download fetches modules", "Ask the user to approve the download")
			return
		}
		x.set(Allow, "allow:build", "", "")
	case "install", "get":
		x.set(Ask, "ask:package-install", "go "+sub+" downloads and installs packages", "Ask the user to approve the install, or build inside the workspace with go build")
	default:
		x.set(Ask, "ask:unknown", "go "+sub+" is a go command the policy does not know", "Ask the user to approve it")
	}
}

func (x *cmd) cargo() {
	switch sub := x.sub(); sub {
	case "build", "b", "test", "t", "check", "c", "run", "r", "fmt", "clippy", "doc", "bench", "clean", "tree", "metadata", "new", "init":
		x.set(Allow, "allow:build", "", "")
	case "install", "add", "fetch", "update", "uninstall":
		x.set(Ask, "ask:package-install", "cargo "+sub+" downloads or installs packages", "Ask the user to approve the install")
	case "publish", "yank", "owner", "login":
		x.set(Ask, "ask:publish", "cargo "+sub+" publishes to or changes a registry", "Ask the user to approve the release")
	default:
		x.set(Ask, "ask:unknown", "cargo "+sub+" is a cargo command the policy does not know", "Ask the user to approve it")
	}
}

func (x *cmd) npm() {
	sub := x.sub()
	switch sub {
	case "test", "t", "tst", "run", "run-script", "start", "stop", "restart", "build":
		x.set(Allow, "allow:build", "", "")
	case "install", "i", "in", "add", "ci", "uninstall", "remove", "rm", "update", "up", "upgrade", "exec", "x", "dlx", "create", "init", "link", "rebuild":
		x.set(Ask, "ask:package-install", x.name+" "+sub+" installs or runs packages from the network", "Ask the user to approve the install, or use what is already installed")
	case "":
		if x.name == "yarn" {
			x.set(Ask, "ask:package-install", "yarn without a command installs the project's packages", "Ask the user to approve the install")
			return
		}
		x.set(Ask, "ask:unknown", x.name+" without a command", "Say which "+x.name+" command to run")
	case "publish", "unpublish", "deprecate", "dist-tag", "owner", "login", "adduser":
		x.set(Ask, "ask:publish", x.name+" "+sub+" publishes to or changes a registry", "Ask the user to approve the release")
	case "ls", "list", "why", "explain", "config", "prefix", "root", "bin", "help", "version", "-v", "--version":
		x.set(Allow, "allow:inspect", "", "")
	case "view", "info", "show", "outdated", "search", "audit":
		x.set(Ask, "ask:network", x.name+" "+sub+" asks the registry over the network", "Ask the user to approve the network access")
	default:
		if x.name == "bun" {
			x.interpreter()
			return
		}
		x.set(Ask, "ask:unknown", x.name+" "+sub+" is a command the policy does not know", "Ask the user to approve it")
	}
}

func (x *cmd) pip() {
	switch sub := x.sub(); sub {
	case "list", "show", "freeze", "check", "help", "--version", "-V", "config", "debug", "inspect", "cache":
		x.set(Allow, "allow:inspect", "", "")
	default:
		x.set(Ask, "ask:package-install", x.name+" "+sub+" installs or changes packages", "Ask the user to approve the install, or use what is already installed")
	}
}

func (x *cmd) gem() {
	switch sub := x.sub(); sub {
	case "push", "yank", "owner", "signin":
		x.set(Ask, "ask:publish", "gem "+sub+" publishes to or changes a registry", "Ask the user to approve the release")
	case "list", "help", "env", "contents", "which":
		x.set(Allow, "allow:inspect", "", "")
	default:
		x.set(Ask, "ask:package-install", "gem "+sub+" installs or changes packages", "Ask the user to approve the install")
	}
}

func (x *cmd) twine() {
	if x.sub() == "check" {
		x.set(Allow, "allow:build", "", "")
		return
	}
	x.set(Ask, "ask:publish", "twine uploads packages to a registry", "Ask the user to approve the release")
}

func (x *cmd) gh() {
	switch x.sub() {
	case "release":
		x.set(Ask, "ask:publish", "gh release publishes or changes a release", "Ask the user to approve the release")
	default:
		x.set(Ask, "ask:network", "gh works on GitHub over the network", "Ask the user to approve the network access")
	}
}

func (x *cmd) docker() {
	if x.dockerRemote() {
		return
	}
	switch sub := x.sub(); sub {
	case "push":
		x.set(Ask, "ask:publish", x.name+" push publishes an image", "Ask the user to approve the push")
	case "ps", "images", "version", "info", "inspect", "logs":
		x.set(Allow, "allow:inspect", "", "")
	default:
		x.set(Ask, "ask:unknown", x.name+" "+sub+" runs or changes containers", "Ask the user to approve it")
	}
}

func (x *cmd) poetry() {
	switch sub := x.sub(); sub {
	case "publish":
		x.set(Ask, "ask:publish", "poetry publish uploads packages", "Ask the user to approve the release")
	case "add", "install", "update", "remove", "lock", "self":
		x.set(Ask, "ask:package-install", "poetry "+sub+" installs or changes packages", "Ask the user to approve the install")
	case "run", "build", "check", "show", "env", "version":
		x.set(Allow, "allow:build", "", "")
	default:
		x.set(Ask, "ask:unknown", "poetry "+sub+" is a command the policy does not know", "Ask the user to approve it")
	}
}

// gitWorkDir is the directory git works in: its -C, or ".".
func gitWorkDir(p parsed) arg {
	if v, ok := p.value("-C"); ok {
		return v
	}
	return literalArg(".")
}

// joinArg is the path dir/name as a word, for a file a command writes
// inside a directory it is given. A dir only known at run time stays as it
// is, so that it is judged as unknown.
func joinArg(dir arg, name string) arg {
	if dir.dyn || dir.braces || dir.glob {
		return dir
	}
	j := literalArg(path.Join(dir.lit, name))
	j.path, j.pattern = path.Join(dir.path, name), escapeGlob(path.Join(dir.path, name))
	return j
}
