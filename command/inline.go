package command

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Inline code (python -c, node -e, perl -e, awk programs, ...) always asks
// (ask:inline-code), but first a small scanner reads it for what is denied
// whatever a person would say: destruction outside the workspace, a
// reverse shell, data read and sent over the network, and shell commands
// given literally (os.system('rm -rf /'), subprocess.run(['curl', ...]))
// which are judged as commands of their own. It is a scanner of tokens
// (names, string literals, punctuation), not a parser: it denies on
// evidence, and anything it cannot read stays an ask.

// Limits of the scanner.
const (
	// MaxInlineBytes is the most bytes of inline code the scanner reads,
	// all -c/-e values of one command together; longer code asks without
	// being read.
	MaxInlineBytes = 16 << 10
	// MaxInlineShellOuts is the most literal shell commands in one piece
	// of inline code judged as commands; later ones are not judged, and
	// the code still asks.
	MaxInlineShellOuts = 16
)

// lang is the language of a piece of inline code, for the few places the
// scanner reads them differently.
type lang uint8

const (
	langOther lang = iota
	langPython
	langJS
	langPerl
	langRuby
	langPHP
	langLua
	langAwk
)

func langOf(name string) lang {
	switch {
	case strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy"):
		return langPython
	case name == "node" || name == "nodejs" || name == "deno" || name == "bun":
		return langJS
	case name == "perl":
		return langPerl
	case name == "ruby" || name == "irb":
		return langRuby
	case name == "php":
		return langPHP
	case name == "lua":
		return langLua
	case strings.HasSuffix(name, "awk"):
		return langAwk
	}
	return langOther
}

type tokKind uint8

const (
	tokName  tokKind = iota // a name, dotted: os.system, File::Path::rmtree
	tokStr                  // a string literal; text is its content
	tokPunct                // one other character
)

type token struct {
	kind  tokKind
	text  string
	quote byte // for tokStr: ', " or `
}

// tokenize splits code into names, string literals and punctuation. A
// string ends at its closing quote (or at the end of the code); a
// backslash escapes the next character; Python's triple quotes are read
// whole. Names are joined across . and ::, and lower-cased.
func tokenize(src string) []token {
	var out []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			triple := strings.HasPrefix(src[i:], strings.Repeat(string(c), 3))
			j := i + 1
			if triple {
				j = i + 3
			}
			var b strings.Builder
			for j < len(src) {
				if src[j] == '\\' && j+1 < len(src) {
					b.WriteByte(src[j+1])
					j += 2
					continue
				}
				if triple && strings.HasPrefix(src[j:], strings.Repeat(string(c), 3)) {
					j += 3
					break
				}
				if !triple && src[j] == c {
					j++
					break
				}
				b.WriteByte(src[j])
				j++
			}
			out = append(out, token{kind: tokStr, text: b.String(), quote: c})
			i = j
		case isIdentByte(c):
			j := i
			for j < len(src) {
				switch {
				case isIdentByte(src[j]) || src[j] >= '0' && src[j] <= '9':
					j++
					continue
				case src[j] == '.' && j+1 < len(src) && isIdentByte(src[j+1]):
					j++
					continue
				case strings.HasPrefix(src[j:], "::") && j+2 < len(src) && isIdentByte(src[j+2]):
					j += 2
					continue
				}
				break
			}
			out = append(out, token{kind: tokName, text: strings.ToLower(src[i:j])})
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			out = append(out, token{kind: tokPunct, text: src[i : i+1]})
			i++
		}
	}
	return out
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c >= 0x80
}

// lastName is the last part of a dotted name: system for os.system.
func lastName(n string) string {
	if i := strings.LastIndexAny(n, ".:"); i >= 0 {
		return n[i+1:]
	}
	return n
}

// shellCalls run their string argument as a shell command, or their
// list argument as an argv.
var shellCalls = words(`system popen popen2 popen3 popen4 getoutput getstatusoutput check_output check_call
	execsync execfilesync execfile spawnsync spawn shell_exec passthru proc_open exec execv execvp execvpe
	execl execlp execle execve spawnl spawnlp spawnv spawnvp open3 capture2 capture2e capture3`)

// shellCallsFull are calls that run commands only under their full name.
var shellCallsFull = words(`subprocess.run subprocess.call subprocess.popen os.execute io.popen deno.run
	pty.spawn kernel.system kernel.exec io.popen deno.command`)

// destroyCalls delete, truncate or write the path in their first string
// argument.
var destroyCalls = map[string]pathUse{
	"rmtree": deletes, "remove": deletes, "unlink": deletes, "rmdir": deletes, "removedirs": deletes,
	"rmsync": deletes, "rm": deletes, "rmdirsync": deletes, "unlinksync": deletes, "rm_rf": deletes,
	"rm_r": deletes, "rm_f": deletes, "remove_dir": deletes, "remove_entry": deletes, "remove_entry_secure": deletes,
	"delete": deletes, "remove_tree": deletes, "truncate": deletes, "truncatesync": deletes, "ftruncate": deletes,
	"writefilesync": writes, "writefile": writes, "appendfilesync": writes, "appendfile": writes,
	"write_text": writes, "write_bytes": writes, "file_put_contents": writes, "copyfile": writes,
	"copyfilesync": writes, "createwritestream": writes, "rename": changes, "renamesync": changes,
	"chmod": changes, "chmodsync": changes, "chown": changes, "chownsync": changes, "symlink": writes,
	"symlinksync": writes, "mkdir": writes, "mkdirsync": writes, "makedirs": writes, "touch": writes,
}

func isDestroyCall(name string) bool {
	_, ok := destroyCalls[lastName(name)]
	return ok
}

// openCalls open the path in their first string argument, for reading or,
// with a mode that has w, a, x or +, writing.
var openCalls = words(`open fopen io.open file.open fs.opensync fs.open builtins.open codecs.open io.open`)

// Signatures, matched in the lower-cased code: a network connection, a
// process or shell started, data read from files or the environment, and
// data sent out.
var (
	sigConnect = []string{"socket.socket", "socket(", "net.connect", "net.socket", "net.createconnection", "tls.connect",
		"tcpsocket", "fsockopen", "stream_socket_client", "io::socket", "socket.tcp", "deno.connect", "socket.connect",
		"bun.connect", `require("net")`, `require('net')`, `require("tls")`, `require('tls')`, `require("dgram")`, `require('dgram')`}
	sigShell = []string{"dup2", "pty.spawn", "subprocess", "child_process", "/bin/sh", "/bin/bash", "cmd.exe", "exec(", "exec ",
		"spawn(", "popen", "proc_open", "system(", "os.execute", "exec \"", "exec '", "execsync", "deno.command"}
	sigEnv  = []string{"os.environ", "getenv", "process.env", "env[", "%env", "$env", "deno.env", "environ("}
	sigRead = []string{"readfilesync", "readfile(", "file_get_contents", "read_text", "read_bytes", "file.read",
		"io.read", "slurp", "deno.readtextfile", "deno.readfile", "createreadstream", "os.walk", "os.listdir",
		"readdir", "glob.glob", "dir.glob"}
	sigSend = []string{"urllib", "requests.", "http.client", "httplib", "urlopen", "fetch(", "http.request", "https.request",
		"http.get(", "https.get(", "axios", "xmlhttprequest", "net::http", "lwp::", "http::tiny", "curl_exec", "curl_init",
		"smtplib", "ftplib", ".sendall(", ".send(", ".sendto(", "websocket", "dns.resolve", "dns.lookup",
		"gethostbyname", "getaddrinfo", "socket.http", "deno.connect", "tcpsocket", "fsockopen", "net.connect",
		"socket.socket", "io::socket", "stream_socket_client", "httpx", "aiohttp", "urlfetch",
		`file_get_contents("http`, `file_get_contents('http`, `fopen("http`, `fopen('http`}
)

func hasAny(s string, sigs []string) bool {
	for _, g := range sigs {
		if strings.Contains(s, g) {
			return true
		}
	}
	return false
}

// inlineCode judges the inline code of an interpreter: the values of its
// -c, -e or --eval options, all of which must be literal.
func (x *cmd) inlineCode(codes []arg) {
	total := 0
	for _, c := range codes {
		if !c.exact() {
			x.c.destroyByCode("", false) // code unseen may do anything
			x.set(Ask, "ask:inline-code", x.name+" runs inline code that is only known when it runs ("+c.text+")",
				"Save the code to a file in the workspace and run that file")
			return
		}
		total += len(c.lit)
	}
	if total > MaxInlineBytes {
		x.c.destroyByCode("", false)
		x.set(Ask, "ask:inline-code", fmt.Sprintf("%s runs %d bytes of inline code, over the %d this check reads (MaxInlineBytes)", x.name, total, MaxInlineBytes),
			"Save the code to a file in the workspace and run that file")
		return
	}
	x.set(Ask, "ask:inline-code", x.name+" runs inline code, which this check reads only for what is always denied",
		"Save the code to a file in the workspace and run that file, or ask the user to approve it")
	for _, c := range codes {
		if x.scanInline(c.lit, langOf(x.name)) {
			return
		}
	}
}

// scanInline reads one piece of inline code and records what it denies.
// It reports whether the command is decided (a deny found).
func (x *cmd) scanInline(src string, lg lang) bool {
	low := strings.ToLower(src)
	toks := tokenize(src)
	x.codeDestroys(toks, low, lg)
	// Every string literal is a word the command holds: credential
	// stores, /dev/tcp, raw disks, metadata addresses, daemon sockets.
	for _, t := range toks {
		if t.kind == tokStr && x.c.argChecks([]arg{literalArg(t.text)}, x.name, display(x.name, x.args), x.f) {
			x.done = true
			return true
		}
	}
	if hasAny(low, sigConnect) && hasAny(low, sigShell) {
		x.set(Deny, "deny:reverse-shell", x.name+"'s inline code opens a network connection and starts a process or shell: a reverse shell",
			"Do not connect programs to the network; ask for network access through an approved tool")
		return true
	}
	if hasAny(low, sigSend) && (hasAny(low, sigEnv) || hasAny(low, sigRead) || readsFile(toks)) {
		x.set(Deny, "deny:exfiltration", x.name+"'s inline code reads files or the environment and sends data over the network", exfilHint)
		return true
	}
	shellOuts := 0
	for i, t := range toks {
		if x.c.stop {
			x.done = true
			return true
		}
		switch {
		case t.kind == tokStr && t.quote == '`' && (lg == langPerl || lg == langRuby || lg == langPHP):
			if shellOuts++; shellOuts <= MaxInlineShellOuts {
				x.shellOut([]string{t.text}, true)
			}
		case t.kind == tokName && (shellCalls[lastName(t.text)] || shellCallsFull[t.text]) && !(lg == langPython && t.text == "exec") && !(lg == langJS && t.text == "eval"):
			argv, script := callArgs(toks[i+1:], lg == langPython && (strings.HasPrefix(lastName(t.text), "exec") || strings.HasPrefix(lastName(t.text), "spawn")) && t.text != "pty.spawn")
			if argv != nil {
				if shellOuts++; shellOuts <= MaxInlineShellOuts {
					x.shellOut(argv, script)
				}
			}
		case t.kind == tokName && isDestroyCall(t.text):
			// The call's own path, and, for Path('/x').unlink(), the
			// object's.
			if s, ok := firstString(toks[i+1:]); ok {
				x.checkPath(literalArg(s), destroyCalls[lastName(t.text)])
			}
			if i >= 4 && toks[i-1].text == "." && toks[i-2].text == ")" && toks[i-3].kind == tokStr && toks[i-4].text == "(" {
				x.checkPath(literalArg(toks[i-3].text), destroyCalls[lastName(t.text)])
			}
		case t.kind == tokName && openCalls[t.text]:
			if p, ok := openedForWrite(toks[i+1:]); ok {
				x.checkPath(literalArg(p), writes)
			}
		case lg == langAwk && t.kind == tokPunct && (t.text == ">" || t.text == "|"):
			// print > "file", print | "cmd"; ">>" is two tokens.
			j := i + 1
			if j < len(toks) && toks[j].text == ">" {
				j++
			}
			if j < len(toks) && toks[j].kind == tokStr {
				if t.text == ">" {
					x.checkPath(literalArg(toks[j].text), writes)
				} else if shellOuts++; shellOuts <= MaxInlineShellOuts {
					x.shellOut([]string{toks[j].text}, true)
				}
			}
			// "cmd" | getline
			if t.text == "|" && i > 0 && toks[i-1].kind == tokStr && j < len(toks) && toks[j].text == "getline" {
				if shellOuts++; shellOuts <= MaxInlineShellOuts {
					x.shellOut([]string{toks[i-1].text}, true)
				}
			}
		}
	}
	for _, e := range x.extra {
		if e.v == Deny {
			return true
		}
	}
	if x.c.stop {
		x.done = true
		return true
	}
	return false
}

// callArgs reads the arguments of a call that runs a command: a string
// ("rm -rf /", a script), or a list of strings (an argv), or a string and
// then a list (spawn('rm', ['-rf', '/'])). listOnly is for Python's
// os.exec* and os.spawn*, whose first string is the program's path and
// whose list is the whole argv. It returns nil when the arguments are not
// literal.
func callArgs(toks []token, listOnly bool) (argv []string, script bool) {
	i := 0
	if i < len(toks) && toks[i].text == "(" {
		i++
	}
	i = skipKey(toks, i) // Deno.run({cmd: [...]})
	if i < len(toks) && toks[i].kind == tokName && (toks[i].text == "mode" || toks[i].text == "os.p_wait" || toks[i].text == "os.p_nowait") {
		i += 2 // os.spawnv(os.P_WAIT, ...)
	}
	if i < len(toks) && toks[i].kind == tokStr {
		first := toks[i].text
		i++
		if i+1 < len(toks) && toks[i].text == "," {
			var list []string
			if j := skipKey(toks, i+1); j < len(toks) && toks[j].text == "[" {
				// spawn('rm', ['-rf', '/']), new Deno.Command('rm', {args: [...]})
				if list = stringList(toks[j+1:]); list == nil {
					return nil, false
				}
			} else {
				// system("rm", "-rf", "/"), os.execl(path, "sh", "-c", ...)
				for j := i; j+1 < len(toks) && toks[j].text == "," && toks[j+1].kind == tokStr; j += 2 {
					list = append(list, toks[j+1].text)
				}
			}
			if list != nil {
				if listOnly {
					return list, false
				}
				return append([]string{first}, list...), false
			}
		}
		return []string{first}, true
	}
	if i < len(toks) && toks[i].text == "[" {
		return stringList(toks[i+1:]), false
	}
	return nil, false
}

// skipKey skips an object's opening and first key, { key:, so that the
// value after it is read.
func skipKey(toks []token, i int) int {
	if i+2 < len(toks) && toks[i].text == "{" && (toks[i+1].kind == tokName || toks[i+1].kind == tokStr) && toks[i+2].text == ":" {
		return i + 3
	}
	return i
}

// stringList reads "a", "b", ... ] : nil if an element is not a string.
func stringList(toks []token) []string {
	var out []string
	for i := 0; i < len(toks); i++ {
		switch t := toks[i]; {
		case t.kind == tokStr:
			out = append(out, t.text)
		case t.text == ",":
		case t.text == "]":
			return out
		default:
			return nil
		}
	}
	return nil
}

// firstString is the first string literal among the next few tokens of a
// call, before the statement ends.
func firstString(toks []token) (string, bool) {
	for i := 0; i < len(toks) && i < 6; i++ {
		switch t := toks[i]; {
		case t.kind == tokStr:
			return t.text, true
		case t.text == ";" || t.text == ")":
			return "", false
		}
	}
	return "", false
}

// openedForWrite reads open(PATH, MODE) and Perl's open(F, ">PATH") and
// open(F, ">", PATH): the path, when the mode writes.
func openedForWrite(toks []token) (string, bool) {
	var strs []string
	for i := 0; i < len(toks) && i < 8 && toks[i].text != ")" && toks[i].text != ";"; i++ {
		if toks[i].kind == tokStr {
			strs = append(strs, toks[i].text)
		}
	}
	if len(strs) == 0 {
		return "", false
	}
	// Perl: ">file", ">>file", "+<file", or a mode then the path.
	if m := strings.TrimLeft(strs[0], " "); strings.HasPrefix(m, ">") || strings.HasPrefix(m, "+<") {
		p := strings.TrimSpace(strings.TrimLeft(m, "+<>"))
		if p == "" && len(strs) > 1 {
			p = strs[1]
		}
		return p, p != ""
	}
	if len(strs) > 1 && strings.ContainsAny(strs[1], "wax+") && len(strs[1]) <= 4 {
		return strs[0], true
	}
	return "", false
}

// readsFile reports an open of a literal path for reading: open('x'),
// open('x', 'r'), File.open("x").
func readsFile(toks []token) bool {
	for i, t := range toks {
		if t.kind != tokName || !openCalls[t.text] {
			continue
		}
		if _, w := openedForWrite(toks[i+1:]); w {
			continue
		}
		if _, ok := firstString(toks[i+1:]); ok {
			return true
		}
	}
	return false
}

// shellOut judges a command inline code runs: a script (a string the
// call hands to a shell) or an argv. A string that is not valid shell is
// not judged: the call would fail, or it is not a shell command at all.
func (x *cmd) shellOut(argv []string, script bool) {
	if x.f.depth+1 > MaxDepth {
		return
	}
	if script {
		parser := parsers.Get().(*syntax.Parser)
		_, err := parser.Parse(strings.NewReader(argv[0]), "")
		parsers.Put(parser)
		if err != nil {
			return
		}
		restore := x.c.keepCwd()
		x.c.script(argv[0], x.f.depth+1, x.f.pos)
		restore()
		return
	}
	if len(argv) == 0 {
		return
	}
	args := make([]arg, len(argv))
	for i, a := range argv {
		args[i] = literalArg(a)
	}
	f := *x.f
	f.depth++
	f.piped, f.fed, f.argsFed = false, "", ""
	restore := x.c.keepCwd()
	x.c.simple(args, &f)
	restore()
}
