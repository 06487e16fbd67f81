package redact

import (
	"slices"
	"strings"
)

// EnvFinding names an environment variable that holds a secret, and why:
// Kind is the kind found in its value, or "secret-name" when only the
// variable's name says so. It never holds the value.
type EnvFinding struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// secretNameParts mark a variable name as holding a credential wherever
// they stand in it (GITHUB_TOKEN, DBPASSWORD).
var secretNameParts = []string{
	"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "APIKEY", "CREDENTIAL", "COOKIE", "DATABASE_URL",
}

// secretNameWords mark it only as a whole word between underscores,
// dashes or dots (GITHUB_PAT, SIGNING_KEY, SENTRY_DSN): as parts they
// would match LD_LIBRARY_PATH, XKB_KEYMAP and the like.
var secretNameWords = []string{"PAT", "KEY", "DSN"}

// notSecretNames are variables whose names match secretNameParts but that
// hold no credential.
var notSecretNames = map[string]bool{
	"SSH_AUTH_SOCK": true, "GPG_AGENT_INFO": true, "XDG_SESSION_ID": true, "XDG_SESSION_TYPE": true,
	"XDG_SESSION_CLASS": true, "XDG_SESSION_DESKTOP": true, "DBUS_SESSION_BUS_ADDRESS": true,
	"SESSION_MANAGER": true, "DESKTOP_SESSION": true, "KEYTIMEOUT": true,
}

// ScanEnv reports which variables of environ ("NAME=value", as from
// os.Environ) hold secrets: those whose value contains a finding, and
// those whose name says credential (TOKEN, SECRET, PASSWORD, *_KEY, ...)
// with a value that is not empty or a placeholder. Personal data is not
// reported. The result is in the order of environ.
func (rd *Redactor) ScanEnv(environ []string) []EnvFinding {
	var out []EnvFinding
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if kind := rd.envValueKind(value); kind != "" {
			out = append(out, EnvFinding{Name: name, Kind: kind})
			continue
		}
		if secretName(name) && value != "" && !isPlaceholder([]byte(value)) {
			out = append(out, EnvFinding{Name: name, Kind: "secret-name"})
		}
	}
	return out
}

func (rd *Redactor) envValueKind(value string) string {
	// Seen as an assignment, so that a bare value in a secret-named
	// variable gets the same gates as in a .env file.
	for _, f := range rd.Find([]byte(value)) {
		switch f.Kind {
		case "email", "phone", "card-number", "ssn":
			continue
		}
		return f.Kind
	}
	return ""
}

func secretName(name string) bool {
	n := strings.ToUpper(name)
	if notSecretNames[n] {
		return false
	}
	for _, p := range secretNameParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	for w := range strings.FieldsFuncSeq(n, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if slices.Contains(secretNameWords, w) {
			return true
		}
	}
	return false
}
