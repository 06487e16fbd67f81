package command

import (
	"strings"
)

// The built-in rules. Every decision names one of these ids.
//
// Deny, whatever the policy file says:
//
//	deny:destructive-outside  deleting, moving, truncating, changing modes or owners of, or writing to a
//	                          path outside both the workspace and /tmp, by argument or redirection; also
//	                          deleting paths only known at run time (rm -rf $x, xargs rm)
//	deny:privilege            sudo, su, doas, pkexec and the like; setuid or setgid bits (chmod u+s, 4755);
//	                          account and capability changes
//	deny:credentials          any word naming a credential store: ~/.ssh, /etc/shadow, ~/.aws, id_rsa, ...;
//	                          a recursive read of a directory holding one (grep -r x ~, cp -r / x)
//	deny:reverse-shell        nc/ncat -e, socat exec:, any /dev/tcp or /dev/udp path (the one home of
//	                          /dev/tcp, whether it runs a shell or carries data out)
//	deny:exfiltration         data sent out by a network client: a pipe, a file or xargs's input feeding
//	                          nc, ncat, socat, telnet, ssh or openssl s_client (tar c . | nc h 1); curl
//	                          uploads (-d @file, -F x=@file, -T, -H @file, --json @x), wget --post-file and
//	                          --body-file, a command's output ($(...), backquotes) in any word of curl, wget
//	                          or nc, a variable in curl's or wget's data, header or user options, socat
//	                          joining a file to a network address, and any word only known at run time
//	                          given to dig, nslookup, host, drill, ping, whois and other name lookups
//	deny:metadata             any word naming a cloud metadata service: 169.254.169.254, fd00:ec2::254,
//	                          169.254.170.2, 100.100.100.200, metadata.google.internal, in any form
//	                          (2852039166, 0xa9fea9fe, octal, ::ffff:..., 169.254.169.254.nip.io)
//	deny:docker-socket        any word naming a container daemon's socket (docker.sock, podman.sock,
//	                          containerd.sock, ...), DOCKER_HOST and the like, docker -H/--context,
//	                          podman --url/--remote, curl --unix-socket
//	deny:pipe-to-shell        a shell or interpreter that reads its program from a pipe, a here-document or
//	                          stdin (curl x | sh, base64 -d | bash, sh <<EOF)
//	deny:fork-bomb            a function that starts itself in a pipeline or in the background
//	deny:raw-disk             disk, memory and port devices (/dev/sda, /dev/mem), mkfs, fdisk, wipefs, ...
//	deny:kernel-module        insmod, rmmod, modprobe, kexec
//	deny:system               reboot, shutdown, halt, poweroff, iptables, mount, chroot, nsenter, unshare, ...
//	deny:dynamic-command      a command name only known at run time ($x, $(...), {a,b}, globs), eval,
//	                          source, alias, hash -p, ${x@P}, IFS, LD_PRELOAD or BASH_ENV assignments,
//	                          and a PAGER, EDITOR or GIT_SSH_COMMAND whose command is only known at run time
//	deny:git-push-rewrite     git push --force (and --force-with-lease), --mirror, --delete, +ref or :ref
//	deny:protected-file       writing or deleting one of airlock's own files inside the workspace: its state
//	                          directory (.airlock) and the policy, credentials and config files the runtime
//	                          names (package protect; Policy.WithProtected)
//	deny:parse-error, deny:limit:<Limit>, deny:no-policy, deny:internal
//
// Ask a person first:
//
//	ask:network          curl, wget, nc, ssh, scp, rsync, ftp, telnet, dig, ping, openssl s_client, git
//	                     clone/fetch/pull, ...: a request whose data is in the command itself
//	ask:package-install  apt, pip install, npm install, go install, cargo install, gem install, brew, npx, ...
//	ask:publish          git push, npm publish, cargo publish, twine upload, gh release, docker push
//	ask:dynamic-path     a write to a path only known at run time
//	ask:host-executed-file a write to a file a host later runs by itself, from protect's list (.git at
//	                     any depth, .envrc, .vscode/tasks.json, package.json, Makefile, .github/workflows,
//	                     .husky, ...): > Makefile, sed -i x *.json, git init, git config that sets; deleting
//	                     one by name (rm -rf .git), not by a glob. A policy file's protected: section
//	                     changes the list; a commands: allow entry does not loosen it
//	ask:workspace-delete deleting the whole workspace: rm -rf . (or *, ./*, $PWD, ..), find . -delete or
//	                     find . -exec rm with no test that narrows what it selects, truncate/shred/tee/
//	                     sed -i/mv of a glob that covers every name at the root. An allow entry for the
//	                     command loosens it
//	ask:git-data-loss    git reset --hard, clean -f, checkout -- . (or -f), restore of the work tree,
//	                     branch -D, stash drop or clear: work that exists nowhere else is thrown away
//	ask:environment      an assignment to PATH, HOME, CDPATH, NODE_OPTIONS, PYTHONPATH and the like
//	ask:inline-code      inline code: python -c, node -e/-p/--eval, perl -e/-E, ruby -e, php -r, lua -e,
//	                     deno eval, awk programs with system() or pipes. A scanner of tokens and string
//	                     literals (inline.go) reads it first, up to MaxInlineBytes, and denies under the
//	                     rules above what it finds: paths deleted or written outside the workspace
//	                     (shutil.rmtree('/'), fs.rmSync, unlink, open(p, 'w')), a connection joined to a
//	                     shell (deny:reverse-shell), files or the environment read and sent
//	                     (deny:exfiltration), and literal shell commands (os.system, subprocess, execSync,
//	                     spawn, backquotes, awk system and pipes), judged as commands of their own
//	ask:unknown          any command the rules do not know, scripts run from files
//
// Allow:
//
//	allow:inspect   read-only commands: ls, cat, grep, find without -exec/-delete, git status/log/diff, ...
//	allow:build     build and test commands and edits inside the workspace: go build/test, make, cargo
//	                build, npm test, pytest, python FILE, gcc, mkdir, cp/mv/rm inside, sed, git add/commit;
//	                archives made and unpacked inside (tar c/x, zip, unzip, gzip, xz, zstd), their writes
//	                checked like any write (tar -C /, tar -P and unzip -d /usr are denied), and their
//	                options that run programs (tar --to-command, -I, --checkpoint-action=exec, zip -TT)
//	                asked about
//	allow:wrapper   env, nice, timeout, xargs, sh -c ...: what they run decides
//	allow:function  a call of a function declared in the script, whose body was judged
//	allow:assign    a variable assignment; allow:empty, nothing to run
//
// A policy file's entries decide as deny:config, ask:config and
// allow:config, or under the id the entry gives.
var handlers map[string]func(*cmd)

// inspect are read-only commands.
var inspect = words(`ls cat head tail wc stat file du df pwd echo true false :
	date printenv which whereis type cut tr diff cmp comm sha1sum sha224sum sha256sum sha384sum
	sha512sum md5sum cksum b2sum sum jq yq tree basename dirname realpath readlink test [ seq id whoami
	uname hostname nproc uptime column paste join fold nl expand unexpand rev tac xxd od hexdump strings
	base64 base32 sleep set shopt ulimit umask wait jobs exit return break continue
	shift getopts unset help times caller local export readonly declare typeset let zcat bzcat xzcat zgrep
	ps free lscpu locale getconf arch less more fmt look cal history disown bg fg tput unalias`)

// build are build and test commands; they work inside the workspace.
var build = words(`cmake ninja pytest py.test tsc gcc cc clang g++ c++ clang++ gofmt rustfmt`)

var network = words(`ssh scp sftp rsync ftp telnet aria2c http https`)

var packages = words(`apt apt-get aptitude yum dnf apk zypper pacman brew snap flatpak conda mamba npx bunx pnpx
	pipx`)

var privilege = words(`sudo su doas pkexec runuser setpriv passwd chpasswd usermod useradd userdel groupadd
	groupmod groupdel visudo newgrp sg setcap capsh`)

var kernel = words(`insmod rmmod modprobe kmod depmod kexec`)

var system = words(`reboot shutdown halt poweroff init telinit iptables ip6tables iptables-restore
	ip6tables-restore nft ebtables arptables mount umount chroot nsenter unshare swapon swapoff pivot_root`)

var disks = words(`mkfs mke2fs mkswap fdisk sfdisk cfdisk parted gdisk sgdisk wipefs blkdiscard hdparm debugfs
	losetup dmsetup cryptsetup badblocks mknod`)

var shells = words(`sh bash dash zsh ksh mksh ash yash posh fish csh tcsh rbash`)

// interpreters run a program from a file, -c/-e code, or stdin.
var interpreters = map[string]string{ // name: the flags that give code inline
	"python": "c", "python2": "c", "python3": "c", "pypy": "c", "pypy3": "c",
	"node": "ep", "nodejs": "ep", "deno": "", "bun": "e",
	"perl": "eE", "ruby": "e", "php": "r", "lua": "e", "Rscript": "e", "tclsh": "", "irb": "",
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// classify judges a command by its name alone, for the names without a
// handler of their own.
func (x *cmd) classify() {
	n := x.name
	switch {
	case inspect[n]:
		x.set(Allow, "allow:inspect", "", "")
	case build[n]:
		x.set(Allow, "allow:build", "", "")
		x.outputs("o", nil)
	case lookups[n]:
		x.lookup()
	case network[n]:
		x.set(Ask, "ask:network", n+" connects to the network", "Ask the user to approve the network access, or work offline with what is in the workspace")
		x.networkWrites()
		if n == "ssh" || n == "telnet" {
			x.sender()
		}
	case packages[n]:
		x.set(Ask, "ask:package-install", n+" installs or runs packages from the network", "Ask the user to approve the install, or use what is already installed")
	case privilege[n]:
		x.set(Deny, "deny:privilege", n+" runs commands with other privileges or changes accounts", "Run the command without sudo or su; the sandbox gives you the access the task needs")
		x.privileged()
	case kernel[n]:
		x.set(Deny, "deny:kernel-module", n+" loads or removes kernel code", "Do not change the running kernel; it is not part of any task in the workspace")
	case system[n]:
		x.set(Deny, "deny:system", n+" changes the whole system (power, firewall, mounts or namespaces)", "Leave the system alone; work on files inside the workspace")
	case disks[n] || strings.HasPrefix(n, "mkfs."):
		x.set(Deny, "deny:raw-disk", n+" formats or edits disks and devices", "Work on files inside the workspace, never on disks or devices")
	case shells[n]:
		x.shell()
	default:
		if _, ok := interpreters[n]; ok {
			x.interpreter()
			return
		}
		x.set(Ask, "ask:unknown", n+" is a command the policy does not know", "Ask the user to approve it, or use a known command (ls, cat, grep, go, make, ...)")
	}
}

func init() {
	handlers = map[string]func(*cmd){
		"env": (*cmd).env, "command": (*cmd).command, "builtin": func(x *cmd) { x.inner(1, true) },
		"exec": (*cmd).exec, "nice": (*cmd).nice, "nohup": func(x *cmd) { x.inner(1, false) },
		"setsid":  func(x *cmd) { x.wrapper(optSpec{stop: true}) },
		"timeout": (*cmd).timeout, "time": (*cmd).time, "stdbuf": (*cmd).stdbuf, "ionice": (*cmd).ionice,
		"xargs": (*cmd).xargs, "find": (*cmd).find, "busybox": (*cmd).busybox, "toybox": (*cmd).busybox,
		"trap": (*cmd).trap, "watch": (*cmd).watch,
		"eval":   dynamic("eval runs a string as a command, so what it runs is only known when it runs"),
		"source": dynamic("source runs the commands of a file, which this check cannot see"),
		".":      dynamic(". runs the commands of a file, which this check cannot see"),
		"alias":  dynamic("alias gives a command name a new meaning"),
		"enable": dynamic("enable loads or changes shell builtins"),
		"cd":     (*cmd).cd, "pushd": (*cmd).cd, "popd": func(x *cmd) { x.c.cwd = ""; x.set(Allow, "allow:inspect", "", "") },
		"nc": (*cmd).netcat, "ncat": (*cmd).netcat, "netcat": (*cmd).netcat, "socat": (*cmd).socat,
		"curl": (*cmd).curl, "wget": (*cmd).wget, "openssl": (*cmd).openssl,
		"tar": (*cmd).tar, "gtar": (*cmd).tar, "bsdtar": (*cmd).tar, "zip": (*cmd).zip, "unzip": (*cmd).unzip,
		"gzip": (*cmd).compress, "gunzip": (*cmd).compress, "bzip2": (*cmd).compress, "bunzip2": (*cmd).compress,
		"xz": (*cmd).compress, "unxz": (*cmd).compress, "lzma": (*cmd).compress, "unlzma": (*cmd).compress,
		"zstd": (*cmd).compress, "unzstd": (*cmd).compress, "lz4": (*cmd).compress, "unlz4": (*cmd).compress,
		"pigz": (*cmd).compress, "unpigz": (*cmd).compress,
		"git": (*cmd).git, "go": (*cmd).goTool, "cargo": (*cmd).cargo,
		"npm": (*cmd).npm, "pnpm": (*cmd).npm, "yarn": (*cmd).npm, "bun": (*cmd).npm,
		"pip": (*cmd).pip, "pip3": (*cmd).pip, "gem": (*cmd).gem, "twine": (*cmd).twine, "gh": (*cmd).gh,
		"docker": (*cmd).docker, "podman": (*cmd).docker, "poetry": (*cmd).poetry,
		"rm": (*cmd).remove, "rmdir": (*cmd).remove, "unlink": (*cmd).remove, "shred": (*cmd).shred,
		"truncate": (*cmd).truncate, "mv": (*cmd).mv, "cp": (*cmd).cp, "ln": (*cmd).ln,
		"touch": (*cmd).touch, "mkdir": (*cmd).mkdir, "tee": (*cmd).tee, "install": (*cmd).install,
		"chmod": (*cmd).chmod, "chown": (*cmd).chown, "chgrp": (*cmd).chown, "dd": (*cmd).dd,
		"sed": (*cmd).sed, "sort": (*cmd).sort, "uniq": (*cmd).uniq, "systemctl": (*cmd).systemctl,
		"sysctl": (*cmd).sysctl, "kill": (*cmd).kill, "hash": (*cmd).hash,
		"printf": (*cmd).printf, "read": (*cmd).read, "mapfile": (*cmd).read, "readarray": (*cmd).read,
		"make": (*cmd).make, "gmake": (*cmd).make,
		"awk": (*cmd).awk, "gawk": (*cmd).awk, "mawk": (*cmd).awk, "nawk": (*cmd).awk,
		"grep": (*cmd).grep, "egrep": (*cmd).grep, "fgrep": (*cmd).grep, "rg": (*cmd).grep, "ag": (*cmd).grep,
	}
}

func dynamic(why string) func(*cmd) {
	return func(x *cmd) {
		x.set(Deny, "deny:dynamic-command", why, "Write out the commands to run literally instead")
	}
}

func (x *cmd) systemctl() {
	switch x.sub() {
	case "reboot", "poweroff", "halt", "kexec", "suspend", "hibernate", "emergency", "rescue", "default", "isolate":
		x.set(Deny, "deny:system", "systemctl "+x.sub()+" changes the state of the whole system", "Leave the system alone; work on files inside the workspace")
	case "status", "list-units", "list-unit-files", "show", "is-active", "is-enabled", "cat":
		x.set(Allow, "allow:inspect", "", "")
	default:
		x.set(Ask, "ask:unknown", "systemctl "+x.sub()+" changes system services", "Ask the user to approve it")
	}
}

func (x *cmd) sysctl() {
	for _, a := range x.args[1:] {
		if a.lit == "-w" || a.lit == "--write" || a.lit == "-p" || a.lit == "--load" || strings.Contains(a.lit, "=") {
			x.set(Deny, "deny:system", "sysctl changes kernel settings", "Leave kernel settings alone")
			return
		}
	}
	x.set(Allow, "allow:inspect", "", "")
}

func (x *cmd) kill() {
	for i, a := range x.args[1:] {
		if !a.exact() || a.lit == "--" {
			continue
		}
		if i == 0 && strings.HasPrefix(a.lit, "-") && len(x.args) > 2 {
			continue // the signal: kill -9 ...
		}
		if a.lit == "-1" || a.lit == "0" {
			x.set(Deny, "deny:system", "kill "+a.lit+" signals every process it can reach", "Signal only the processes the task started, by their id")
			return
		}
	}
	x.set(Ask, "ask:unknown", "kill signals other processes", "Ask the user to approve it, or let the command end by itself")
}

// stdinPath reports the paths that are a process's standard input.
func stdinPath(p string) bool {
	return p == "/dev/stdin" || p == "-" || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

// awk is a build tool, but its program may run shell commands: system(),
// print | "cmd", "cmd" | getline. Those are asked about.
func (x *cmd) awk() {
	// gawk's options too: -e/--source give program text, -f/--file and
	// -E/--exec a program file, -i/--include an awk library, -l/--load a
	// compiled extension. Each takes a value, which is not the program.
	p := parseOpts(x.args, 1, optSpec{short: "fvFiEel", long: []string{"--file", "--assign", "--field-separator",
		"--include", "--source", "--exec", "--load"}})
	x.set(Allow, "allow:build", "", "")
	x.awkInPlace()
	if _, ok := p.value("-l", "--load"); ok {
		x.set(Ask, "ask:inline-code", x.name+" --load runs a compiled extension, whose code this check cannot see",
			"Run "+x.name+" without --load, or ask the user to approve it")
		return
	}
	for _, v := range p.values {
		if (v.name == "-i" || v.name == "--include") && strings.TrimSuffix(v.val.lit, ".awk") != "inplace" {
			x.set(Ask, "ask:inline-code", x.name+" --include runs the awk library "+v.val.text+", whose code this check cannot see",
				"Run "+x.name+" without --include, or ask the user to approve it")
			return
		}
	}
	var progs []arg
	for _, v := range p.values {
		if v.name == "-e" || v.name == "--source" {
			progs = append(progs, v.val)
		}
	}
	_, fromFile := p.value("-f", "--file", "-E", "--exec")
	if len(progs) == 0 && !fromFile && len(p.operands) > 0 {
		progs = append(progs, x.args[p.operands[0]])
	}
	for _, prog := range progs {
		if !x.awkProgram(prog) {
			return
		}
	}
}

// awkProgram judges one awk program given on the command line; false
// when it decided the command (a deny or an ask).
func (x *cmd) awkProgram(prog arg) bool {
	if !prog.exact() {
		x.inlineCode([]arg{prog})
		return false
	}
	if len(prog.lit) > MaxInlineBytes || x.scanInline(prog.lit, langAwk) {
		if len(prog.lit) > MaxInlineBytes {
			x.inlineCode([]arg{prog})
		}
		return false
	}
	if strings.Contains(prog.lit, "system") || strings.Contains(prog.lit, "|") {
		x.set(Ask, "ask:inline-code", x.name+"'s program may run shell commands (system, pipes) that are only known when it runs",
			"Do the work with "+x.name+" alone, without system() or pipes, or run the commands directly")
		return false
	}
	return true
}

// grep reads; a recursive grep over a directory that holds a credential
// store (/, /etc, the home directory) reads the store too.
func (x *cmd) grep() {
	p := parseOpts(x.args, 1, optSpec{short: "efmABCDd", long: []string{"--regexp", "--file", "--max-count", "--context", "--after-context", "--before-context", "--include", "--exclude", "--exclude-dir", "--glob", "--type"}})
	x.set(Allow, "allow:inspect", "", "")
	if hasPrefixLong(p, "--pre") {
		x.set(Ask, "ask:unknown", x.name+" --pre runs a program on every file it searches", "Search without --pre")
		return
	}
	recursive := x.name == "rg" || x.name == "ag" || p.has('r', "--recursive", "--dereference-recursive") || p.has('R')
	if !recursive {
		return
	}
	ops := p.operands
	if _, ok := p.value("-e", "--regexp", "-f", "--file"); !ok && len(ops) > 0 {
		ops = ops[1:] // the pattern
	}
	x.storeAncestors(ops)
}

// storeAncestors denies reading, recursively, a directory that holds a
// credential store.
func (x *cmd) storeAncestors(idx []int) {
	for _, i := range idx {
		a := x.args[i]
		if a.dyn {
			continue
		}
		abs, ok := x.c.resolve(a.path)
		if !ok {
			continue
		}
		if holdsStore(abs) {
			x.add(Deny, "deny:credentials", x.name+" would read all of "+show(abs)+", credential stores included",
				"Search inside the workspace, or name the directories to read")
			return
		}
	}
}

// holdsStore reports a directory with a credential store somewhere
// inside it: /, /etc, /home and a home directory.
func holdsStore(abs string) bool {
	switch abs {
	case "/", "/etc", "/home", "/root", homeDir, "/var", "/run", "/var/run", "/etc/ssh":
		return true
	}
	return strings.HasPrefix(abs, "/home/") && strings.Count(abs, "/") == 2
}

func (x *cmd) hash() {
	p := parseOpts(x.args, 1, optSpec{short: "pt"})
	if _, ok := p.value("-p"); ok {
		x.set(Deny, "deny:dynamic-command", "hash -p makes a command name run another program",
			"Call the program by its own name or path")
		return
	}
	x.set(Allow, "allow:inspect", "", "")
}

// printf -v, read and mapfile set variables: not IFS and the like.
func (x *cmd) printf() {
	x.set(Allow, "allow:inspect", "", "")
	p := parseOpts(x.args, 1, optSpec{short: "v", stop: true})
	if v, ok := p.value("-v"); ok {
		x.setsVar(v, nil)
	}
}

func (x *cmd) read() {
	x.set(Allow, "allow:inspect", "", "")
	p := parseOpts(x.args, 1, optSpec{short: "adinNpstuCc"})
	if v, ok := p.value("-a"); ok {
		x.setsVar(v, nil)
	}
	for _, i := range p.operands {
		x.setsVar(x.args[i], nil)
	}
}

func (x *cmd) setsVar(name arg, val *arg) {
	if !name.exact() {
		x.set(Deny, "deny:dynamic-command", x.name+" sets a variable whose name is only known when it runs",
			"Name the variable literally")
		return
	}
	x.c.variable(name.lit, val, "", x.name+" "+name.text, x.f)
	if x.c.stop {
		x.done = true
	}
}

// make runs the workspace's Makefile; one elsewhere is asked about.
func (x *cmd) make() {
	p := parseOpts(x.args, 1, optSpec{short: "CfIjlWo", long: []string{"--directory", "--file", "--makefile", "--include-dir"}})
	x.set(Allow, "allow:build", "", "")
	for _, n := range []string{"-C", "--directory", "-f", "--file", "--makefile"} {
		if v, ok := p.value(n); ok {
			if pl, _ := x.c.locate(v); pl != inside {
				x.set(Ask, "ask:unknown", "make runs the makefile in "+v.text+", outside the workspace",
					"Run make on the workspace's own makefile")
				return
			}
		}
	}
}
