package command

import (
	"fmt"
	"strings"
)

// riskyVars are variables whose value makes the shell or the loader run
// code the script does not show, or split words where it does not seem
// to. Setting one is denied.
var riskyVars = map[string]string{
	"IFS":            "changes how the shell splits words, so the commands run are not the ones written",
	"BASH_ENV":       "makes every bash run a file the command does not show",
	"ENV":            "makes every sh run a file the command does not show",
	"PROMPT_COMMAND": "makes the shell run a hidden command",
	"PS0":            "can make the shell run a hidden command",
	"PS4":            "can make the shell run a hidden command",
	"SHELLOPTS":      "changes shell options in every child shell",
	"BASHOPTS":       "changes shell options in every child shell",
	"BASH_ALIASES":   "gives command names new meanings",
	"BASH_CMDS":      "makes command names run other programs",
	"GIT_EXEC_PATH":  "makes git run programs from elsewhere",
}

// riskyPrefixes are families of such variables.
var riskyPrefixes = map[string]string{
	"LD_":         "makes every program load code from elsewhere",
	"DYLD_":       "makes every program load code from elsewhere",
	"BASH_FUNC_":  "defines functions in every child shell",
	"GIT_CONFIG_": "changes git's configuration, which can make it run commands",
}

// commandVars hold a command line that a program runs through a shell
// (git's pager and editor, ssh's askpass, ...). A literal value is judged
// as the script it is; one only known at run time is denied.
var commandVars = map[string]bool{
	"PAGER": true, "GIT_PAGER": true, "MANPAGER": true, "EDITOR": true, "VISUAL": true,
	"GIT_EDITOR": true, "GIT_SEQUENCE_EDITOR": true, "GIT_EXTERNAL_DIFF": true, "GIT_ASKPASS": true,
	"SSH_ASKPASS": true, "SUDO_ASKPASS": true, "GIT_SSH_COMMAND": true, "GIT_SSH": true,
	"GIT_PROXY_COMMAND": true, "LESSOPEN": true, "LESSCLOSE": true, "BROWSER": true,
}

// environVars change where programs and code are looked up; setting one
// is asked about.
var environVars = map[string]string{
	"PATH":              "changes which program each later name runs",
	"HOME":              "changes what ~ means, and so which paths the checks see",
	"CDPATH":            "changes where cd goes, and so which paths the checks see",
	"NODE_OPTIONS":      "can make node load code the command does not show",
	"PYTHONPATH":        "changes which code python imports",
	"PYTHONSTARTUP":     "makes python run a file first",
	"PYTHONHOME":        "changes which python runs",
	"PERL5OPT":          "can make perl load code the command does not show",
	"PERL5LIB":          "changes which code perl loads",
	"RUBYOPT":           "can make ruby load code the command does not show",
	"JAVA_TOOL_OPTIONS": "can make java load code the command does not show",
}

// readers may take IFS= for one call, the everyday `IFS= read -r line`.
var readers = map[string]bool{"read": true, "mapfile": true, "readarray": true}

// variable checks setting the variable name to val (nil when only known
// at run time); cmd is the command the assignment prefixes, if any, and
// text the assignment as written.
func (c *checker) variable(name string, val *arg, cmd, text string, f *frame) {
	if val != nil && c.codeValue == "" && (strings.Contains(val.lit, "$(") || strings.Contains(val.lit, "`")) {
		c.codeValue = text
	}
	why, risky := riskyVars[name]
	for p, w := range riskyPrefixes {
		if strings.HasPrefix(name, p) {
			why, risky = w, true
		}
	}
	switch {
	case daemonVars[name]:
		c.found(f, Deny, "deny:docker-socket", "", text, "setting "+name+" points docker or podman at a container daemon, which controls its host",
			"Leave "+name+" alone; ask the user to run container commands")
	case risky:
		if name == "IFS" && readers[cmd] {
			return
		}
		c.found(f, Deny, "deny:dynamic-command", "", text, "setting "+name+" "+why,
			"Leave "+name+" alone and write the commands out literally")
	case commandVars[name]:
		if val == nil {
			c.found(f, Deny, "deny:dynamic-command", "", text,
				name+" holds a command that programs run, and its value is only known when it runs",
				"Set "+name+" to a literal command, as in "+name+"=cat")
			return
		}
		if val.lit == "" {
			return
		}
		if f.depth+1 > MaxDepth {
			c.limit(f, CodeTooComplex, "MaxDepth", fmt.Sprintf("scripts nest more than %d deep (MaxDepth)", MaxDepth),
				"Run the inner command directly instead of wrapping it in more shells")
			return
		}
		restore := c.keepCwd()
		c.script(val.lit, f.depth+1, f.pos)
		restore()
	default:
		if why, ok := environVars[name]; ok {
			c.found(f, Ask, "ask:environment", "", text, "setting "+name+" "+why,
				"Leave "+name+" as it is, or ask the user to approve the change")
		}
	}
}
