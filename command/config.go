package command

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Config is the commands: section of a policy file. Its lists add to the
// built-in rules:
//
//	commands:
//	  deny: [terraform, "kubectl delete"]
//	  ask:
//	    - name: make deploy
//	      message: deploys to production
//	      hint: Ask the release manager
//	  allow: [ssh, "npm install"]
//
// An entry is a command name, or a name and its subcommand ("git push"),
// matched against the resolved command (so "rm" also matches /bin/rm and
// nice rm); a program run by a relative path is matched by that path
// ("./gradlew"). A deny entry beats everything. An ask entry turns an allow
// into an ask. An allow entry only turns what the built-in rules would ask
// about into an allow: it can never loosen a built-in deny (sudo, rm
// outside the workspace, a pipe into a shell), nor a write to a path only
// known at run time.
type Config struct {
	Deny  []Entry `yaml:"deny,omitempty" json:"deny,omitempty"`
	Ask   []Entry `yaml:"ask,omitempty" json:"ask,omitempty"`
	Allow []Entry `yaml:"allow,omitempty" json:"allow,omitempty"`
}

// Entry is one command of a Config list. In YAML or JSON it is either a
// plain string, the Name, or a mapping with the fields below.
type Entry struct {
	Name string `yaml:"name" json:"name"`
	// ID names the rule in decisions; "" means "deny:config",
	// "ask:config" or "allow:config".
	ID      string `yaml:"id,omitempty" json:"id,omitempty"`
	Message string `yaml:"message,omitempty" json:"message,omitempty"`
	Hint    string `yaml:"hint,omitempty" json:"hint,omitempty"`
}

// Limits on a Config, so that a policy file cannot make every check slow.
const (
	MaxEntries    = 256  // entries in all three lists together
	MaxNameLength = 128  // bytes in an entry's name
	MaxIDLength   = 64   // bytes in an entry's id
	MaxTextLength = 1024 // bytes in an entry's message or hint
)

// UnmarshalYAML reads an Entry from a string or a mapping. It uses the
// callback form so that no YAML type is part of this package's API.
func (e *Entry) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		*e = Entry{Name: s}
		return nil
	}
	type plain Entry
	var p plain
	if err := unmarshal(&p); err != nil {
		return err
	}
	*e = Entry(p)
	return nil
}

// UnmarshalJSON reads an Entry from a string or an object.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*e = Entry{Name: s}
		return nil
	}
	type plain Entry
	var p plain
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*e = Entry(p)
	return nil
}

// ConfigError is an entry of a Config that cannot be compiled.
type ConfigError struct {
	Field string // where: "commands.deny[2].name"
	Msg   string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// entry is a compiled Entry.
type entry struct {
	verdict Verdict
	id      string
	msg     string // "" means the default message
	hint    string
	name    string
}

func (e *entry) message(shown string) string {
	if e.msg != "" {
		return e.msg
	}
	if e.verdict == Deny {
		return "the policy file denies " + e.name + " (" + shown + ")"
	}
	return "the policy file asks a person before " + e.name + " runs (" + shown + ")"
}

// Compile returns the built-in rules with cfg's entries added. A nil cfg
// gives the built-in rules alone. The error is a *ConfigError.
func Compile(cfg *Config) (*Policy, error) {
	if cfg == nil {
		return Default(), nil
	}
	if n := len(cfg.Deny) + len(cfg.Ask) + len(cfg.Allow); n > MaxEntries {
		return nil, &ConfigError{"commands", fmt.Sprintf("%d entries, over the limit of %d (MaxEntries)", n, MaxEntries)}
	}
	p := &Policy{user: map[string][]*entry{}}
	lists := []struct {
		key string
		v   Verdict
		es  []Entry
	}{{"deny", Deny, cfg.Deny}, {"ask", Ask, cfg.Ask}, {"allow", Allow, cfg.Allow}}
	for _, l := range lists {
		for i, e := range l.es {
			field := fmt.Sprintf("commands.%s[%d]", l.key, i)
			ce, err := compileEntry(e, l.v, l.key, field)
			if err != nil {
				return nil, err
			}
			p.user[ce.name] = append(p.user[ce.name], ce)
		}
	}
	return p, nil
}

func compileEntry(e Entry, v Verdict, key, field string) (*entry, error) {
	fields := strings.Fields(e.Name)
	name := strings.Join(fields, " ")
	switch {
	case len(fields) == 0:
		return nil, &ConfigError{field + ".name", "is empty; give a command name such as terraform, or a name and subcommand such as \"git push\""}
	case len(fields) > 2:
		return nil, &ConfigError{field + ".name", fmt.Sprintf("%q has %d words; give a command name and at most one subcommand", e.Name, len(fields))}
	case len(e.Name) > MaxNameLength:
		return nil, &ConfigError{field + ".name", fmt.Sprintf("is %d bytes, over the limit of %d (MaxNameLength)", len(e.Name), MaxNameLength)}
	}
	for _, f := range fields {
		if i := strings.IndexAny(f, "'\"$`;|&<>(){}[]*?!~#=\\"); i >= 0 {
			return nil, &ConfigError{field + ".name", fmt.Sprintf("%q holds %q; give the command's name as plain words, with no quotes, globs or shell syntax", e.Name, f[i])}
		}
	}
	id := e.ID
	if id == "" {
		id = key + ":config"
	}
	if len(id) > MaxIDLength {
		return nil, &ConfigError{field + ".id", fmt.Sprintf("is %d bytes, over the limit of %d (MaxIDLength)", len(id), MaxIDLength)}
	}
	for i := 0; i < len(id); i++ {
		ch := id[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || strings.IndexByte(":-_.", ch) >= 0) {
			return nil, &ConfigError{field + ".id", fmt.Sprintf("%q holds %q; use lower-case letters, digits and : - _ . as in deny:terraform", id, ch)}
		}
	}
	if len(e.Message) > MaxTextLength || len(e.Hint) > MaxTextLength {
		return nil, &ConfigError{field, fmt.Sprintf("the message or hint is over the limit of %d bytes (MaxTextLength)", MaxTextLength)}
	}
	hint := e.Hint
	if hint == "" {
		switch v {
		case Deny:
			hint = "Do not run " + name + ": the policy file forbids it; find another way or ask the user"
		case Ask:
			hint = "Ask the user to approve " + name
		}
	}
	return &entry{verdict: v, id: id, msg: e.Message, hint: hint, name: name}, nil
}
