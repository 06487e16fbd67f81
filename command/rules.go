package command

import (
	"strings"
)

// The built-in rules. Every decision names one of these ids.
//
// Deny, whatever the policy file says:
//
//	deny:destructive-outside  deleting, moving, truncating, changing modes or owners of, or writing to a
//	                          path outside the workspace (and /tmp), by argument or redirection; also
//	                          deleting paths only known at run time (rm -rf $x, xargs rm)
//	deny:privilege            sudo, su, doas, pkexec and the like; setuid or setgid bits (chmod u+s, 4755);
//	                          account and capability changes
//	deny:credentials          any word naming a credential store: ~/.ssh, /etc/shadow, ~/.aws, id_rsa, ...
//	deny:reverse-shell        nc/ncat -e, socat exec:, any /dev/tcp or /dev/udp path
//	deny:pipe-to-shell        a shell or interpreter that reads its program from a pipe, a here-document or
//	                          stdin (curl x | sh, base64 -d | bash, sh <<EOF)
//	deny:fork-bomb            a function that starts itself in a pipeline or in the background
//	deny:raw-disk             disk, memory and port devices (/dev/sda, /dev/mem), mkfs, fdisk, wipefs, ...
//	deny:kernel-module        insmod, rmmod, modprobe, kexec
//	deny:system               reboot, shutdown, halt, poweroff, iptables, mount, chroot, nsenter, unshare, ...
//	deny:dynamic-command      a command name only known at run time ($x, $(...), {a,b}, globs), eval,
//	                          source, alias, hash -p, ${x@P}, IFS, LD_PRELOAD or BASH_ENV assignments,
//	                          and a PAGER, EDITOR or GIT_SSH_COMMAND whose command is only known at run time
//	deny:parse-error, deny:limit:<Limit>, deny:no-policy, deny:internal
//
// Ask a person first:
//
//	ask:network          curl, wget, nc, ssh, scp, rsync, ftp, telnet, git clone/fetch/pull, ...
//	ask:package-install  apt, pip install, npm install, go install, cargo install, gem install, brew, npx, ...
//	ask:publish          git push, npm publish, cargo publish, twine upload, gh release, docker push
//	ask:dynamic-path     a write to a path only known at run time
//	ask:environment      an assignment to PATH, HOME, CDPATH, NODE_OPTIONS, PYTHONPATH and the like
//	ask:unknown          any command the rules do not know, scripts run from files, inline code (python -c)
//
// Allow:
//
//	allow:inspect   read-only commands: ls, cat, grep, find without -exec/-delete, git status/log/diff, ...
//	allow:build     build and test commands and edits inside the workspace: go build/test, make, cargo
//	                build, npm test, pytest, python FILE, gcc, mkdir, cp/mv/rm inside, sed, git add/commit
//	allow:wrapper   env, nice, timeout, xargs, sh -c ...: what they run decides
//	allow:function  a call of a function declared in the script, whose body was judged
//	allow:assign    a variable assignment; allow:empty, nothing to run
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

var network = words(`curl wget ssh scp sftp rsync ftp telnet aria2c ping dig nslookup host whois http https`)

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
	case network[n]:
		x.set(Ask, "ask:network", n+" connects to the network", "Ask the user to approve the network access, or work offline with what is in the workspace")
		x.networkWrites()
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

// wrapper judges the command after the wrapper's options.
func (x *cmd) wrapper(spec optSpec) {
	spec.stop = true
	p := parseOpts(x.args, 1, spec)
	x.inner(p.end, false)
}

func (x *cmd) env() {
	i := 1
	for ; i < len(x.args); i++ {
		a := x.args[i]
		s := a.lit
		if !a.exact() {
			break
		}
		switch {
		case s == "--":
			i++
			goto assigns
		case s == "-S" || strings.HasPrefix(s, "--split-string") || strings.HasPrefix(s, "-S"):
			x.set(Deny, "deny:dynamic-command", "env -S splits a string into a command, which hides what runs",
				"Give env the command's words one by one")
			return
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir":
			i++
			if s == "-C" || s == "--chdir" {
				// The inner command runs elsewhere; the shell stays.
				defer x.c.keepCwd()()
				dir := ""
				if i < len(x.args) && !x.args[i].dyn {
					dir, _ = x.c.resolve(x.args[i].path)
				}
				x.c.cwd = dir
			}
		case s == "-" || strings.HasPrefix(s, "-"):
		default:
			goto assigns
		}
	}
assigns:
	for ; i < len(x.args); i++ {
		a := x.args[i]
		name, _, ok := strings.Cut(a.lit, "=")
		if !a.exact() || !ok || name == "" || strings.ContainsAny(name, "/") {
			break
		}
		val := literalArg(a.lit[len(name)+1:])
		x.c.variable(name, &val, "", a.text, x.f)
		if x.c.stop {
			x.done = true
			return
		}
	}
	if i >= len(x.args) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.inner(i, true)
}

func (x *cmd) command() {
	p := parseOpts(x.args, 1, optSpec{stop: true})
	if p.has('v') || p.has('V') {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.inner(p.end, true)
}

func (x *cmd) exec() {
	p := parseOpts(x.args, 1, optSpec{short: "a", stop: true})
	x.inner(p.end, true)
}

func (x *cmd) nice() {
	// nice -5 is nice -n 5: digits after - are a value.
	i := 1
	for i < len(x.args) && x.args[i].exact() {
		s := x.args[i].lit
		if s == "-n" || s == "--adjustment" {
			i += 2
			continue
		}
		if strings.HasPrefix(s, "-") && s != "-" {
			i++
			if s == "--" {
				break
			}
			continue
		}
		break
	}
	x.inner(i, true)
}

func (x *cmd) timeout() {
	p := parseOpts(x.args, 1, optSpec{short: "sk", long: []string{"--signal", "--kill-after"}, stop: true})
	x.inner(p.end+1, true) // the duration comes first
}

func (x *cmd) time() {
	p := parseOpts(x.args, 1, optSpec{short: "fo", long: []string{"--format", "--output"}, stop: true})
	if v, ok := p.value("-o", "--output"); ok {
		x.checkPath(v, writes)
	}
	x.inner(p.end, true)
}

func (x *cmd) stdbuf() {
	x.wrapper(optSpec{short: "ioe", long: []string{"--input", "--output", "--error"}})
}

func (x *cmd) ionice() {
	p := parseOpts(x.args, 1, optSpec{short: "cnp", long: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}, stop: true})
	if p.has('p', "--pid", "--pgid", "--uid") || p.has('P') || p.has('u') {
		x.set(Ask, "ask:unknown", "ionice changes the priority of processes already running", "Run the command with ionice in front of it instead")
		return
	}
	x.inner(p.end, true)
}

// privileged names what sudo and the like would run, for the message;
// they are denied whatever it is.
func (x *cmd) privileged() {
	spec := optSpec{stop: true}
	switch x.name {
	case "sudo":
		spec.short, spec.long = "ugCDhprtTUc", []string{"--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type", "--command-timeout", "--other-user"}
	case "doas":
		spec.short = "uC"
	case "pkexec":
		spec.long = []string{"--user"}
	default:
		return
	}
	p := parseOpts(x.args, 1, spec)
	if p.end < len(x.args) {
		x.cls.msg = x.name + " runs " + display(x.args[p.end].text, x.args[p.end:]) + " with other privileges"
	}
}

func (x *cmd) xargs() {
	p := parseOpts(x.args, 1, optSpec{short: "adEILnPs", long: []string{"--arg-file", "--delimiter", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}, stop: true})
	inner := append([]arg{}, x.args[p.end:]...)
	if len(inner) == 0 {
		inner = []arg{literalArg("echo")}
	}
	// The words xargs adds come from its input: only known when it runs.
	inner = append(inner, arg{text: "<input>", lit: "<input>", expanded: true, dyn: true})
	x.set(Allow, "allow:wrapper", "", "")
	f := *x.f
	f.noFuncs, f.piped, f.fed = true, false, "" // xargs gives its command /dev/null as stdin
	x.c.simple(inner, &f)
}

// find is read-only unless it deletes, writes files or runs commands;
// a command it runs sees {} as a path under the starting points.
func (x *cmd) find() {
	i := 1
	for i < len(x.args) {
		s := x.args[i].lit
		if x.args[i].exact() && (strings.HasPrefix(s, "-") && len(s) > 1 || s == "(" || s == "!" || s == ")" || s == ",") {
			break
		}
		i++
	}
	starts := x.args[1:i]
	if len(starts) == 0 {
		starts = []arg{literalArg(".")}
	}
	// The worst starting point stands for {}.
	found := starts[0]
	for _, s := range starts {
		if pl, _ := x.c.locate(s); pl == outside || pl == unknown {
			found = s
			break
		}
	}
	x.set(Allow, "allow:inspect", "", "")
	for i < len(x.args) && !x.c.stop {
		s := x.args[i].lit
		switch s {
		case "-delete":
			x.set(Allow, "allow:build", "", "")
			for _, st := range starts {
				x.checkPath(st, destroys)
			}
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(x.args) {
				x.checkPath(x.args[i+1], writes)
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(x.args) && !(x.args[j].exact() && (x.args[j].lit == ";" || x.args[j].lit == "+")) {
				j++
			}
			inner := make([]arg, 0, j-i-1)
			for _, a := range x.args[i+1 : j] {
				// {} is literal to bash (not a brace expansion): find's placeholder.
				if !a.expanded && strings.Contains(a.lit, "{}") {
					a = found
					a.text = "{}"
				}
				inner = append(inner, a)
			}
			if len(inner) == 0 {
				break
			}
			f := *x.f
			f.noFuncs, f.piped, f.fed = true, false, ""
			x.c.simple(inner, &f)
			i = j
		}
		i++
	}
}

func (x *cmd) busybox() {
	if len(x.args) < 2 || strings.HasPrefix(x.args[1].lit, "-") {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.inner(1, true)
}

func (x *cmd) trap() {
	p := parseOpts(x.args, 1, optSpec{stop: true})
	if p.end >= len(x.args) || p.end+1 >= len(x.args) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	action := x.args[p.end]
	if action.exact() && (action.lit == "-" || action.lit == "" || isFD(action.lit)) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	x.nestedScript(action, "the trap's command")
}

func (x *cmd) watch() {
	p := parseOpts(x.args, 1, optSpec{short: "nd", long: []string{"--interval", "--differences"}, stop: true})
	if p.end >= len(x.args) {
		x.set(Allow, "allow:inspect", "", "")
		return
	}
	if p.end == len(x.args)-1 {
		x.nestedScript(x.args[p.end], "the command watch runs")
		return
	}
	x.inner(p.end, true)
}

func (x *cmd) cd() {
	x.set(Allow, "allow:inspect", "", "")
	p := parseOpts(x.args, 1, optSpec{})
	if len(p.operands) == 0 {
		x.c.cwd = homeDir
		return
	}
	a := x.args[p.operands[0]]
	if a.dyn || a.lit == "-" {
		x.c.cwd = ""
		return
	}
	if abs, ok := x.c.resolve(a.path); ok {
		x.c.cwd = abs
	} else {
		x.c.cwd = ""
	}
}

// shell judges sh, bash and the like: a literal -c script is walked; a
// script from a file is asked about; a script from stdin is denied.
func (x *cmd) shell() {
	if x.f.piped {
		x.set(Deny, "deny:pipe-to-shell", x.name+" is fed by a pipe, so it may run whatever the command before it prints",
			"Run the commands directly, or save the script in the workspace, read it, and run it as a file")
		return
	}
	i, script := 1, false
	for ; i < len(x.args); i++ {
		a := x.args[i]
		s := a.lit
		if a.fdPath {
			break // bash <(...): a script file another command writes
		}
		if !a.exact() {
			x.set(Deny, "deny:dynamic-command", x.name+"'s arguments are only known when it runs ("+a.text+")",
				"Give the shell a literal script: sh -c '...'")
			return
		}
		if s == "--" || s == "-" {
			i++
			break
		}
		if s == "--rcfile" || s == "--init-file" || s == "-o" || s == "+o" || s == "-O" || s == "+O" {
			i++
			continue
		}
		if strings.HasPrefix(s, "--") {
			continue
		}
		if len(s) > 1 && (s[0] == '-' || s[0] == '+') {
			if strings.ContainsAny(s[1:], "si") && s[0] == '-' {
				break // reads commands from stdin
			}
			if strings.Contains(s[1:], "c") {
				script = true
			}
			continue
		}
		break
	}
	if script {
		if i >= len(x.args) {
			x.set(Allow, "allow:wrapper", "", "")
			return
		}
		x.nestedScript(x.args[i], x.name+"'s script")
		return
	}
	if i < len(x.args) && !strings.HasPrefix(x.args[i].lit, "-") {
		if file := x.args[i]; file.fdPath || stdinPath(file.lit) {
			x.set(Deny, "deny:pipe-to-shell", x.name+" runs a script that another command writes into "+file.text+", which this check cannot see",
				"Run the commands directly, or save the script in the workspace, read it, and run it as a file")
			return
		}
		x.set(Ask, "ask:unknown", x.name+" runs the script file "+x.args[i].text+", whose commands this check cannot see",
			"Run the script's commands directly, or ask the user to approve the script")
		return
	}
	from := "its standard input"
	if x.f.fed != "" {
		from = x.f.fed
	}
	x.set(Deny, "deny:pipe-to-shell", x.name+" reads the commands it runs from "+from+", which this check cannot see",
		"Run the commands directly, or pass them literally with "+x.name+" -c '...'")
}

// interpreter judges python, node and the like.
func (x *cmd) interpreter() {
	inline := interpreters[x.name]
	spec := optSpec{short: "mWXr", long: []string{"--require", "--import", "--loader"}, stop: true}
	if x.name == "node" || x.name == "nodejs" {
		spec.short = "r"
	}
	p := parseOpts(x.args, 1, spec)
	for _, ch := range inline {
		if p.has(byte(ch)) || x.name != "python" && p.has(0, "--eval", "--print") {
			x.set(Ask, "ask:unknown", x.name+" runs inline code, which this check cannot read",
				"Save the code to a file in the workspace and run that file")
			return
		}
	}
	if strings.HasPrefix(x.name, "python") {
		if m, ok := p.value("-m"); ok {
			x.pythonModule(m)
			return
		}
	}
	if p.end >= len(x.args) || x.args[p.end].lit == "-" {
		if x.f.piped || x.f.fed != "" {
			from := "a pipe"
			if x.f.fed != "" {
				from = x.f.fed
			}
			x.set(Deny, "deny:pipe-to-shell", x.name+" reads the program it runs from "+from+", which this check cannot see",
				"Save the program to a file in the workspace and run that file")
			return
		}
		x.set(Ask, "ask:unknown", x.name+" without a program file reads one from its standard input",
			"Give the program file to run, inside the workspace")
		return
	}
	file := x.args[p.end]
	if file.fdPath || stdinPath(file.lit) {
		x.set(Deny, "deny:pipe-to-shell", x.name+" runs a program that another command writes into "+file.text+", which this check cannot see",
			"Save the program to a file in the workspace and run that file")
		return
	}
	if pl, _ := x.c.locate(file); pl == inside && (strings.HasPrefix(x.name, "python") || strings.HasPrefix(x.name, "node")) {
		x.set(Allow, "allow:build", "", "")
		return
	}
	x.set(Ask, "ask:unknown", x.name+" runs "+file.text+", a program this check cannot read",
		"Run a program file inside the workspace, or ask the user to approve it")
}

func (x *cmd) pythonModule(m arg) {
	switch m.lit {
	case "pytest", "unittest", "py_compile", "compileall", "venv", "black", "ruff", "mypy", "flake8", "pylint", "json.tool":
		x.set(Allow, "allow:build", "", "")
	case "pip":
		x.set(Ask, "ask:package-install", "python -m pip installs or changes packages", "Ask the user to approve the install, or use what is already installed")
	case "http.server":
		x.set(Ask, "ask:network", "python -m http.server serves files over the network", "Ask the user to approve the server")
	default:
		x.set(Ask, "ask:unknown", "python runs the module "+m.text+", which the policy does not know", "Ask the user to approve it")
	}
}

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
}

// networkWrites checks where curl and wget save what they download, and
// where scp and rsync copy to.
func (x *cmd) networkWrites() {
	switch x.name {
	case "curl":
		p := parseOpts(x.args, 1, optSpec{short: "oXHdFuAeEKTbcwmxyYz", long: []string{"--output", "--request", "--header", "--data", "--form", "--user", "--config", "--upload-file", "--cookie", "--cookie-jar", "--dump-header", "--url", "--proxy"}})
		for _, n := range []string{"-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header"} {
			if v, ok := p.value(n); ok && v.lit != "-" {
				x.checkPath(v, writes)
			}
		}
	case "wget":
		p := parseOpts(x.args, 1, optSpec{short: "OoaPe", long: []string{"--output-document", "--output-file", "--directory-prefix"}})
		for _, n := range []string{"-O", "--output-document", "-o", "--output-file", "-a", "-P", "--directory-prefix"} {
			if v, ok := p.value(n); ok && v.lit != "-" {
				x.checkPath(v, writes)
			}
		}
	case "scp", "rsync":
		p := parseOpts(x.args, 1, optSpec{short: "iFloPSce", long: []string{"--rsh", "--exclude", "--include", "--filter", "--rsync-path"}})
		if n := len(p.operands); n >= 2 {
			dest := x.args[p.operands[n-1]]
			if !strings.Contains(dest.lit, ":") {
				x.checkPath(dest, writes)
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
	switch sub {
	case "status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "grep", "blame", "describe",
		"shortlog", "reflog", "show-ref", "cat-file", "ls-tree", "rev-list", "version", "help", "whatchanged", "count-objects":
		x.set(Allow, "allow:inspect", "", "")
		if sub == "grep" && (rest.has('O') || hasPrefixLong(rest, "--open-files-in-pager")) {
			x.set(Ask, "ask:unknown", "git grep -O runs a pager program on the files", "Run git grep without -O")
			return
		}
		if v, ok := rest.value("--output"); ok {
			x.checkPath(v, writes)
		}
	case "add", "commit", "checkout", "switch", "restore", "stash", "init", "mv", "rm", "merge", "rebase", "reset",
		"cherry-pick", "revert", "tag", "clean", "apply", "am", "format-patch", "notes", "bisect", "worktree", "gc", "mergetool":
		x.set(Allow, "allow:build", "", "")
		x.gitDir(p)
	case "config":
		if rest.has(0, "--global", "--system", "--file") || rest.has('f') {
			x.set(Ask, "ask:unknown", "git config outside the repository changes git for every repository",
				"Change only the repository's own configuration, or ask the user")
			return
		}
		x.set(Allow, "allow:build", "", "")
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
	default:
		x.set(Ask, "ask:unknown", "git "+sub+" is a git command the policy does not know", "Ask the user to approve it")
	}
}

// gitDir checks that a git command that changes a repository changes one
// inside the workspace.
func (x *cmd) gitDir(p parsed) {
	dir := arg{text: ".", lit: ".", path: "."}
	if v, ok := p.value("-C"); ok {
		dir = v
	}
	for _, n := range []string{"--git-dir", "--work-tree"} {
		if v, ok := p.value(n); ok {
			x.checkPath(v, destroys)
		}
	}
	x.checkPath(dir, destroys)
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

// File commands: inside the workspace they are edits, allowed; outside it
// they are denied.

func (x *cmd) remove() {
	p := parseOpts(x.args, 1, optSpec{})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, destroys)
}

func (x *cmd) shred() {
	p := parseOpts(x.args, 1, optSpec{short: "ns", long: []string{"--iterations", "--size", "--random-source"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, destroys)
}

func (x *cmd) truncate() {
	p := parseOpts(x.args, 1, optSpec{short: "sr", long: []string{"--size", "--reference"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, destroys)
}

func (x *cmd) mv() {
	p := parseOpts(x.args, 1, optSpec{short: "tS", long: []string{"--target-directory", "--suffix"}})
	x.set(Allow, "allow:build", "", "")
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.checkPath(t, writes)
	}
	x.checkPaths(p.operands, destroys) // the sources are gone afterwards
}

func (x *cmd) cp() {
	p := parseOpts(x.args, 1, optSpec{short: "tS", long: []string{"--target-directory", "--suffix"}})
	x.set(Allow, "allow:build", "", "")
	if p.has('r', "--recursive") || p.has('R') || p.has('a', "--archive") {
		srcs := p.operands
		if _, ok := p.value("-t", "--target-directory"); !ok && len(srcs) > 0 {
			srcs = srcs[:len(srcs)-1]
		}
		x.storeAncestors(srcs)
	}
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.checkPath(t, writes)
		return
	}
	if n := len(p.operands); n >= 2 {
		x.checkPath(x.args[p.operands[n-1]], writes)
	}
}

func (x *cmd) ln() {
	p := parseOpts(x.args, 1, optSpec{short: "tS", long: []string{"--target-directory", "--suffix"}})
	x.set(Allow, "allow:build", "", "")
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.checkPath(t, writes)
		return
	}
	if n := len(p.operands); n >= 2 {
		x.checkPath(x.args[p.operands[n-1]], writes)
	}
}

func (x *cmd) touch() {
	p := parseOpts(x.args, 1, optSpec{short: "drt", long: []string{"--date", "--reference"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, writes)
}

func (x *cmd) mkdir() {
	p := parseOpts(x.args, 1, optSpec{short: "m", long: []string{"--mode"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, writes)
}

func (x *cmd) tee() {
	p := parseOpts(x.args, 1, optSpec{long: []string{"--output-error"}})
	x.set(Allow, "allow:build", "", "")
	x.checkPaths(p.operands, writes)
}

func (x *cmd) install() {
	p := parseOpts(x.args, 1, optSpec{short: "mogtS", long: []string{"--mode", "--owner", "--group", "--target-directory", "--suffix"}})
	x.set(Allow, "allow:build", "", "")
	if t, ok := p.value("-t", "--target-directory"); ok {
		x.checkPath(t, writes)
		return
	}
	if p.has('d', "--directory") {
		x.checkPaths(p.operands, writes)
		return
	}
	if n := len(p.operands); n >= 1 {
		x.checkPath(x.args[p.operands[n-1]], writes)
	}
}

func (x *cmd) chmod() {
	p := parseOpts(x.args, 1, optSpec{})
	x.set(Allow, "allow:build", "", "")
	ops := p.operands
	// chmod -x file: a mode that looks like an option.
	if len(ops) > 0 && strings.ContainsAny(p.flags, "rwxXst") && !p.has(0, "--reference") {
		if setuidMode("-" + p.flags) {
			x.set(Deny, "deny:privilege", "chmod with the setuid or setgid bit lets a program run with its owner's privileges",
				"Leave the setuid and setgid bits alone; chmod +x is enough to make a file executable")
			return
		}
	} else if len(ops) > 0 && !p.has(0, "--reference") {
		mode := x.args[ops[0]]
		ops = ops[1:]
		if !mode.exact() || setuidMode(mode.lit) {
			x.set(Deny, "deny:privilege", "chmod "+mode.text+" may set the setuid or setgid bit, which lets a program run with its owner's privileges",
				"Use a plain mode such as 755 or +x, without s or a leading 4, 2 or 6")
			return
		}
	}
	x.checkPaths(ops, destroys)
}

// setuidMode reports a chmod mode that sets the setuid or setgid bit:
// an octal mode of four digits whose first has 4 or 2 in it, or a
// symbolic mode that adds s.
func setuidMode(m string) bool {
	if m != "" && strings.Trim(m, "01234567") == "" {
		return len(m) >= 4 && (m[len(m)-4]-'0')&6 != 0
	}
	for _, clause := range strings.Split(m, ",") {
		if i := strings.IndexAny(clause, "+="); i >= 0 && strings.Contains(clause[i:], "s") {
			return true
		}
	}
	return false
}

func (x *cmd) chown() {
	p := parseOpts(x.args, 1, optSpec{})
	ops := p.operands
	if len(ops) > 0 && !p.has(0, "--reference") {
		ops = ops[1:]
	}
	x.set(Ask, "ask:unknown", x.name+" changes who owns files", "Ask the user to approve the change of owner")
	x.checkPaths(ops, destroys)
}

func (x *cmd) dd() {
	x.set(Allow, "allow:build", "", "")
	for _, a := range x.args[1:] {
		if v, ok := strings.CutPrefix(a.lit, "of="); ok {
			b := a
			b.text, b.lit, b.path, b.pattern = v, v, v, escapeGlob(v)
			if a.dyn {
				b.prefix = strings.TrimPrefix(a.prefix, "of=")
			}
			if t, ok := tildePath(v); ok {
				b.path = t
			}
			x.checkPath(b, destroys)
		}
	}
}

func (x *cmd) sed() {
	p := parseOpts(x.args, 1, optSpec{short: "efl", long: []string{"--expression", "--file", "--line-length"}})
	x.set(Allow, "allow:build", "", "")
	if !p.has('i', "--in-place") && !strings.Contains(p.flags, "i") && !hasPrefixLong(p, "--in-place") {
		return
	}
	ops := p.operands
	if _, ok := p.value("-e", "--expression", "-f", "--file"); !ok && len(ops) > 0 {
		ops = ops[1:] // the first operand is the script
	}
	x.checkPaths(ops, writes)
}

func hasPrefixLong(p parsed, prefix string) bool {
	for _, l := range p.longs {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	for _, v := range p.values {
		if strings.HasPrefix(v.name, prefix) {
			return true
		}
	}
	return false
}

func (x *cmd) sort() {
	p := parseOpts(x.args, 1, optSpec{short: "kotST", long: []string{"--key", "--output", "--field-separator", "--buffer-size", "--temporary-directory", "--compress-program"}})
	x.set(Allow, "allow:inspect", "", "")
	if v, ok := p.value("--compress-program"); ok {
		x.set(Ask, "ask:unknown", "sort --compress-program runs "+v.text+", which this check cannot see",
			"Sort without --compress-program")
		return
	}
	if v, ok := p.value("-o", "--output"); ok {
		x.checkPath(v, writes)
	}
}

func (x *cmd) uniq() {
	p := parseOpts(x.args, 1, optSpec{short: "fsw", long: []string{"--skip-fields", "--skip-chars", "--check-chars"}})
	x.set(Allow, "allow:inspect", "", "")
	if len(p.operands) >= 2 {
		x.checkPath(x.args[p.operands[1]], writes)
	}
}

// outputs checks the output file of compilers: -o FILE.
func (x *cmd) outputs(short string, long []string) {
	p := parseOpts(x.args, 1, optSpec{short: short, long: long})
	for _, v := range p.values {
		if v.name == "-o" || contains(long, v.name) {
			x.checkPath(v.val, writes)
		}
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
	p := parseOpts(x.args, 1, optSpec{short: "fvF", long: []string{"--file", "--assign", "--field-separator"}})
	x.set(Allow, "allow:build", "", "")
	if _, ok := p.value("-f", "--file"); ok {
		return // the program is a file: like python FILE
	}
	if len(p.operands) == 0 {
		return
	}
	prog := x.args[p.operands[0]]
	if !prog.exact() || strings.Contains(prog.lit, "system") || strings.Contains(prog.lit, "|") {
		x.set(Ask, "ask:unknown", x.name+"'s program may run shell commands (system, pipes), which this check cannot see",
			"Do the work with "+x.name+" alone, without system() or pipes, or run the commands directly")
	}
}

// grep reads; a recursive grep over a directory that holds a credential
// store (/, /etc, the home directory) reads the store too.
func (x *cmd) grep() {
	p := parseOpts(x.args, 1, optSpec{short: "efmABCDd", long: []string{"--regexp", "--file", "--max-count", "--context", "--after-context", "--before-context", "--include", "--exclude", "--exclude-dir", "--glob", "--type"}})
	x.set(Allow, "allow:inspect", "", "")
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
