// Package protect owns the one list of workspace files that no tool may
// change freely: airlock's own files, which nothing may write (rule
// deny:protected-file), and the files a host later runs by itself (git
// hooks and config, direnv, editor tasks, package lifecycle scripts, CI
// workflows, ...), whose every write a person approves, in every mode
// (rule ask:host-executed-file).
//
// The command judge asks it about every path a command writes, and the
// gate about every path a file tool writes:
//
//	l := protect.Default().WithOwn(protect.Own{Workspace: ws, Policy: policyFile})
//	if d := l.Check("sub/.git/hooks/pre-commit"); d.Verdict != protect.Allow {
//		// d.Rule, d.Reason, d.Hint
//	}
//
// Paths are workspace-relative and slash-separated; matching ignores case,
// as a case-insensitive file system would. A policy file's protected:
// section (Config) adds entries and removes default ask entries; airlock's
// own files cannot be removed.
package protect

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// StateDir is airlock's state directory at the workspace root: the store,
// the audit log, snapshots. It is workspace.StateDir (a test keeps them
// equal); this package sits below workspace and cannot import it.
const StateDir = ".airlock"

// Verdict is what a Check lets happen. The zero Verdict denies, so a
// forgotten field fails closed.
type Verdict uint8

const (
	Deny  Verdict = iota // never written, whatever the mode
	Ask                  // written once a person approves, in every mode
	Allow                // not protected
)

var verdictNames = [...]string{Deny: "deny", Ask: "ask", Allow: "allow"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// The rules a Decision names.
const (
	RuleProtected    = "deny:protected-file"
	RuleHostExecuted = "ask:host-executed-file"
)

// Decision is the answer for one path. For Allow, only Verdict is set.
type Decision struct {
	Verdict Verdict
	Rule    string // RuleProtected or RuleHostExecuted
	Entry   string // the entry of the list that matched, as written
	Reason  string // why, in words safe to show a model
	Hint    string // one concrete repair
}

// Limits on a Config, so that a policy file cannot make every check slow.
const (
	MaxEntries     = 256  // entries in deny, ask and remove together
	MaxEntryLength = 256  // bytes in one entry
	MaxPathLength  = 4096 // bytes of a path given to Check; a longer one is denied
)

// entry is one compiled pattern of the list.
type entry struct {
	text  string   // as written
	parts []string // lower-case components; glob characters as path.Match reads them
	// anchored entries match from the workspace root; the others match at
	// any depth (a component sequence anywhere in the path), the way
	// .gitignore reads a name without a slash.
	anchored bool
	dir      bool // written with a trailing slash: a directory
	literal  bool // its components are names, not globs
	verdict  Verdict
	why      string
}

// List is a compiled protected list. It is immutable and safe for
// concurrent use. A nil *List is Default().
type List struct {
	entries []entry
}

// defaultAsk are the files a host runs without anyone reading them, in the
// order they are checked, each with why it is there. A name without a
// slash matches at any depth; one with a slash (or a leading /) is
// anchored at the workspace root; a trailing slash marks a directory. An
// entry also covers everything beneath it.
var defaultAsk = []struct{ pattern, why string }{
	{".git/", "git runs a repository's hooks and the commands its config names (core.fsmonitor, core.pager, aliases) on the host"},
	{".envrc", "direnv runs it in the host's shell on entering the directory"},
	{".vscode/tasks.json", "VS Code runs its tasks, some on opening the folder"},
	{".vscode/launch.json", "VS Code runs its launch configurations"},
	{".vscode/settings.json", "VS Code settings name programs the editor and its extensions run (interpreters, formatters, terminal profiles)"},
	{".idea/runConfigurations/", "JetBrains IDEs run its run configurations"},
	{".idea/workspace.xml", "JetBrains IDEs keep run configurations and tool commands there"},
	{".run/", "JetBrains IDEs run the shared run configurations there"},
	{".devcontainer/", "a dev container's lifecycle commands (postCreateCommand, ...) run when it is built"},
	{"package.json", "npm, yarn and pnpm run its lifecycle scripts (preinstall, postinstall, prepare) at install"},
	{".npmrc", "it can name the shell and the node options npm runs scripts with"},
	{".yarnrc.yml", "yarnPath names a program yarn runs in place of itself"},
	{".yarnrc", "yarn-path names a program yarn runs in place of itself"},
	{"Makefile", "make runs its recipes"},
	{"GNUmakefile", "make runs its recipes"},
	{"Justfile", "just runs its recipes"},
	{".justfile", "just runs its recipes"},
	{"Taskfile.yml", "task runs its commands"},
	{"Taskfile.yaml", "task runs its commands"},
	{"setup.py", "pip runs it when it installs or builds the package"},
	{".pre-commit-config.yaml", "pre-commit runs the hooks it names at every commit"},
	{".husky/", "husky's hooks run at every commit"},
	{".github/workflows/", "CI runs its workflows, with the repository's secrets, once pushed"},
	{".gitlab-ci.yml", "CI runs its jobs, with the repository's secrets, once pushed"},
	{"/.bashrc", "the shell runs it at start, when the workspace is a home directory"},
	{"/.bash_profile", "the shell runs it at login, when the workspace is a home directory"},
	{"/.bash_login", "the shell runs it at login, when the workspace is a home directory"},
	{"/.profile", "the shell runs it at login, when the workspace is a home directory"},
	{"/.zshrc", "zsh runs it at start, when the workspace is a home directory"},
	{"/.zshenv", "zsh runs it at start, when the workspace is a home directory"},
	{"/.zprofile", "zsh runs it at login, when the workspace is a home directory"},
	{"/.gitconfig", "git runs the commands it names, when the workspace is a home directory"},
}

// stateWhy is why StateDir is never written.
const stateWhy = "airlock keeps its store, audit log and snapshots there"

var builtin = sync.OnceValue(func() *List {
	l := &List{}
	l.add("/"+StateDir+"/", Deny, stateWhy)
	for _, e := range defaultAsk {
		l.add(e.pattern, Ask, e.why)
	}
	return l
})

// Default returns the built-in list: StateDir is never written, and the
// default host-executed files ask.
func Default() *List { return builtin() }

// DefaultAsk returns the patterns of the built-in host-executed files, in
// order, for documentation and for a policy file's remove list.
func DefaultAsk() []string {
	out := make([]string, len(defaultAsk))
	for i, e := range defaultAsk {
		out[i] = e.pattern
	}
	return out
}

// add appends a pattern known to be valid.
func (l *List) add(pattern string, v Verdict, why string) {
	e, _ := compile(pattern)
	e.verdict, e.why = v, why
	l.entries = append(l.entries, e)
}

// compile reads a pattern: workspace-relative, slash-separated, with
// optional glob characters in its components. It returns why a pattern is
// not one.
func compile(pattern string) (entry, string) {
	p := strings.TrimSuffix(pattern, "/")
	anchored := strings.HasPrefix(p, "/")
	p = strings.TrimPrefix(p, "/")
	switch {
	case p == "":
		return entry{}, "is empty; give a path relative to the workspace, such as Makefile or .github/workflows"
	case len(pattern) > MaxEntryLength:
		return entry{}, fmt.Sprintf("is %d bytes, over the limit of %d (MaxEntryLength)", len(pattern), MaxEntryLength)
	case strings.ContainsAny(p, "\\\x00"):
		return entry{}, "holds a backslash or a NUL; write the path with forward slashes"
	}
	parts := strings.Split(strings.ToLower(p), "/")
	for _, s := range parts {
		if s == "" || s == "." || s == ".." {
			return entry{}, "has an empty, . or .. component; write a plain path inside the workspace"
		}
		if _, err := path.Match(s, ""); err != nil {
			return entry{}, fmt.Sprintf("component %q is not a valid glob", s)
		}
	}
	return entry{text: pattern, parts: parts, anchored: anchored || len(parts) > 1, dir: strings.HasSuffix(pattern, "/")}, ""
}

// Own is where airlock's own files are on the host: they are never
// written through a tool when they lie inside the workspace. Paths are
// absolute and, ideally, with symbolic links resolved (filepath.EvalSymlinks),
// since the check compares names.
type Own struct {
	Workspace   string // the workspace directory on the host
	Policy      string // the policy file (runtime.Config.Policy); "" for none
	Credentials string // the credentials file (runtime.Config.Credentials); "" for none
	Config      string // airlock's config file (airlock.yaml); "" for none
	Upstreams   string // the gateway's upstream servers file; "" for none
}

// WithOwn returns a copy of l that also denies writing the files of own
// that lie inside own.Workspace. A nil l is Default().
func (l *List) WithOwn(own Own) *List {
	l = l.orDefault()
	out := &List{entries: slices.Clone(l.entries)}
	if own.Workspace == "" {
		return out
	}
	ws := filepath.Clean(own.Workspace)
	for _, f := range []struct{ file, what string }{
		{own.Policy, "airlock's policy file"}, {own.Credentials, "airlock's credentials file"}, {own.Config, "airlock's config file"},
		{own.Upstreams, "the gateway's file of upstream servers"},
	} {
		if f.file == "" || !filepath.IsAbs(f.file) {
			continue
		}
		rel, err := filepath.Rel(ws, filepath.Clean(f.file))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue // outside the workspace: the tools cannot reach it
		}
		// Its name is matched exactly, glob characters and all.
		e := entry{text: filepath.ToSlash(rel), parts: strings.Split(strings.ToLower(filepath.ToSlash(rel)), "/"),
			anchored: true, literal: true, verdict: Deny, why: "it is " + f.what + ", which decides what airlock lets through"}
		out.entries = slices.Insert(out.entries, 0, e)
	}
	return out
}

func (l *List) orDefault() *List {
	if l == nil {
		return Default()
	}
	return l
}

// Check tells what writing (creating, changing, deleting, renaming) the
// workspace-relative path rel means. rel is slash-separated; a leading
// "/" or "./" is the workspace root, and it is cleaned first (a/../.git is
// .git). A path that climbs out of the workspace, or is over
// MaxPathLength, is denied: the caller resolves paths first, so one that
// is not relative to the workspace is a bug, and fails closed.
func (l *List) Check(rel string) Decision {
	l = l.orDefault()
	if len(rel) > MaxPathLength || strings.IndexByte(rel, 0) >= 0 {
		return Decision{Verdict: Deny, Rule: RuleProtected, Reason: "the path is too long or holds a NUL, so it cannot be checked",
			Hint: "Name a shorter path inside the workspace"}
	}
	if c := path.Clean(rel); !strings.HasPrefix(rel, "/") && (c == ".." || strings.HasPrefix(c, "../")) {
		return Decision{Verdict: Deny, Rule: RuleProtected, Reason: "the path " + rel + " climbs out of the workspace",
			Hint: "Name a path inside the workspace"}
	}
	clean := path.Clean("/" + rel)
	if clean == "/" {
		return Decision{Verdict: Allow}
	}
	parts := strings.Split(strings.ToLower(clean[1:]), "/")
	return l.match(parts, func(e *entry, i int) bool { return matchAt(e, parts, i, literalMatch) })
}

// CheckPattern is Check for a glob pattern that the shell expands (sed -i
// x *.json): the worst verdict of any path the pattern could match that an
// entry protects. A * does not match a leading dot, as in the shell.
func (l *List) CheckPattern(relPattern string) Decision {
	l = l.orDefault()
	if len(relPattern) > MaxPathLength || strings.IndexByte(relPattern, 0) >= 0 {
		return Decision{Verdict: Deny, Rule: RuleProtected, Reason: "the path is too long or holds a NUL, so it cannot be checked",
			Hint: "Name a shorter path inside the workspace"}
	}
	clean := path.Clean("/" + relPattern)
	if clean == "/" {
		return Decision{Verdict: Allow}
	}
	parts := strings.Split(strings.ToLower(clean[1:]), "/")
	return l.match(parts, func(e *entry, i int) bool {
		// A glob that stands for the entry's last component with more
		// of the path below it must name a directory: src/*/x.go is not
		// taken for a file called package.json.
		if end := i + len(e.parts); !e.dir && end < len(parts) && hasGlob(parts[end-1]) {
			return false
		}
		return matchAt(e, parts, i, globMatch)
	})
}

// match returns the decision of the first Deny entry that matches, else
// the first Ask one.
func (l *List) match(parts []string, at func(*entry, int) bool) Decision {
	var found *entry
	for k := range l.entries {
		e := &l.entries[k]
		if found != nil && e.verdict >= found.verdict {
			continue
		}
		last := 0
		if !e.anchored {
			last = len(parts) - len(e.parts)
		}
		for i := 0; i <= last; i++ {
			if at(e, i) {
				found = e
				break
			}
		}
	}
	if found == nil {
		return Decision{Verdict: Allow}
	}
	return found.decision()
}

// matchAt reports whether e's components match parts from index i on;
// parts may go on below the entry (a file inside a protected directory).
func matchAt(e *entry, parts []string, i int, eq func(pattern, part string) bool) bool {
	if i+len(e.parts) > len(parts) {
		return false
	}
	for j, p := range e.parts {
		if e.literal && !hasGlob(parts[i+j]) {
			if p != parts[i+j] {
				return false
			}
			continue
		}
		if e.literal {
			p = quoteGlob(p)
		}
		if !eq(p, parts[i+j]) {
			return false
		}
	}
	return true
}

// literalMatch matches a path component against an entry's component.
func literalMatch(pattern, part string) bool {
	ok, err := path.Match(pattern, part)
	return err == nil && ok
}

// globMatch reports whether a path component written as a glob (part)
// could name a file the entry's component (pattern) matches. With two
// globs it is decided on the entry's literal prefix: conservative, it may
// say yes where no file matches both.
func globMatch(pattern, part string) bool {
	if !hasGlob(part) {
		return literalMatch(pattern, part)
	}
	if strings.HasPrefix(pattern, ".") && !strings.HasPrefix(part, ".") {
		return false // the shell's * does not match a leading dot
	}
	if !hasGlob(pattern) {
		return literalMatch(part, pattern)
	}
	// Both are globs: compare what each spells before its first glob
	// character, and after its last.
	a, b := pattern[:strings.IndexAny(pattern, `*?[\`)], part[:strings.IndexAny(part, `*?[\`)]
	if !strings.HasPrefix(a, b) && !strings.HasPrefix(b, a) {
		return false
	}
	a, b = pattern[strings.LastIndexAny(pattern, `*?]`)+1:], part[strings.LastIndexAny(part, `*?]`)+1:]
	return strings.HasSuffix(a, b) || strings.HasSuffix(b, a)
}

func hasGlob(s string) bool { return strings.ContainsAny(s, `*?[\`) }

func (e *entry) decision() Decision {
	if e.verdict == Deny {
		return Decision{Verdict: Deny, Rule: RuleProtected, Entry: e.text,
			Reason: "it is protected (" + e.text + "): " + e.why,
			Hint:   "Leave airlock's own files alone; ask the user to change them"}
	}
	return Decision{Verdict: Ask, Rule: RuleHostExecuted, Entry: e.text,
		Reason: "a host runs it (" + e.text + "): " + e.why,
		Hint:   "A person approves every change to files a host runs; ask the user, or change other files"}
}

// Config is the protected: section of a policy file:
//
//	protected:
//	  deny: [deploy/prod.env]         # never written
//	  ask: [pyproject.toml, build.rs] # a person approves every write
//	  remove: [Makefile]              # a default host-executed entry dropped
//
// Entries are patterns as in DefaultAsk: a name without a slash matches at
// any depth, one with a slash (or a leading /) from the workspace root,
// and each covers everything beneath it. remove names default ask entries
// only (see DefaultAsk); StateDir and airlock's own files stay denied.
type Config struct {
	Deny   []string `yaml:"deny,omitempty" json:"deny,omitempty"`
	Ask    []string `yaml:"ask,omitempty" json:"ask,omitempty"`
	Remove []string `yaml:"remove,omitempty" json:"remove,omitempty"`
}

// ConfigError is an entry of a Config that cannot be compiled.
type ConfigError struct {
	Field string // where: "protected.ask[2]"
	Msg   string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// Compile returns the built-in list with cfg's changes. A nil cfg gives
// Default(). The error is a *ConfigError.
func Compile(cfg *Config) (*List, error) {
	if cfg == nil {
		return Default(), nil
	}
	if n := len(cfg.Deny) + len(cfg.Ask) + len(cfg.Remove); n > MaxEntries {
		return nil, &ConfigError{"protected", fmt.Sprintf("%d entries, over the limit of %d (MaxEntries)", n, MaxEntries)}
	}
	removed := map[string]bool{}
	for i, r := range cfg.Remove {
		key := removeKey(r)
		ok := false
		for _, d := range defaultAsk {
			if removeKey(d.pattern) == key {
				ok = true
			}
		}
		if !ok {
			return nil, &ConfigError{fmt.Sprintf("protected.remove[%d]", i),
				fmt.Sprintf("%q is not a default host-executed entry; remove names one of: %s", r, strings.Join(DefaultAsk(), ", "))}
		}
		removed[key] = true
	}
	l := &List{}
	for _, e := range Default().entries {
		if e.verdict == Ask && removed[removeKey(e.text)] {
			continue
		}
		l.entries = append(l.entries, e)
	}
	for _, list := range []struct {
		key string
		v   Verdict
		ps  []string
		why string
	}{
		{"deny", Deny, cfg.Deny, "the policy file protects it"},
		{"ask", Ask, cfg.Ask, "the policy file names it as a file a host runs"},
	} {
		for i, p := range list.ps {
			e, why := compile(p)
			if why != "" {
				return nil, &ConfigError{fmt.Sprintf("protected.%s[%d]", list.key, i), fmt.Sprintf("%q %s", p, why)}
			}
			e.verdict, e.why = list.v, list.why
			l.entries = append(l.entries, e)
		}
	}
	return l, nil
}

// removeKey is how a remove entry names a default one: case and a
// trailing slash do not matter.
func removeKey(p string) string { return strings.ToLower(strings.TrimSuffix(p, "/")) }

// quoteGlob escapes the glob characters of a name, for path.Match.
func quoteGlob(s string) string {
	if !hasGlob(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// contentDirectives are lines that, written into a file of the given
// suffix, make a host run a command later: what CheckContent looks for.
var contentDirectives = []struct{ suffix, prefix, why string }{
	{".go", "//go:generate", "go generate runs the command a //go:generate line names, on the host"},
}

// CheckContent tells what writing content into the workspace-relative
// path rel means, beyond the path itself (Check): content that adds a
// directive a host runs (a //go:generate line in a Go file) asks, in
// every mode (rule ask:host-executed-file).
func CheckContent(rel, content string) Decision {
	lower := strings.ToLower(rel)
	for _, d := range contentDirectives {
		if !strings.HasSuffix(lower, d.suffix) {
			continue
		}
		for line := range strings.Lines(content) {
			if strings.HasPrefix(strings.TrimLeft(line, " \t"), d.prefix) {
				return Decision{Verdict: Ask, Rule: RuleHostExecuted, Entry: d.prefix,
					Reason: "the content holds a " + d.prefix + " line: " + d.why,
					Hint:   "Leave the directive out, or ask the user to approve it"}
			}
		}
	}
	return Decision{Verdict: Allow}
}
