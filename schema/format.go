package schema

import (
	"errors"
	"net/url"
	"path"
	"strings"
	"unicode"
)

// The custom formats every compiled schema asserts. Format assertion is on
// for all formats, so a value that does not match its format is a
// violation, never a mere annotation.
const (
	// FormatRelativePath is a slash-separated path relative to the
	// workspace root that does not lexically leave it: not empty, no
	// leading slash, no NUL, no backslash, and after path.Clean neither ".."
	// nor starting with "../". "." is the root itself. Only the lexical form
	// is judged here; symlinks are the workspace guard's business.
	FormatRelativePath = "relative-path"

	// FormatHTTPURL is an absolute http or https URL with a host and no
	// user information, without white space or control characters. Which
	// hosts may be reached is the egress guard's business.
	FormatHTTPURL = "http-url"
)

// knownFormats are the format names a bounded schema may use: ours and the
// ones the validator implements. An unknown name would silently assert
// nothing, so CheckBounded refuses it (a typo must not open a hole).
var knownFormats = map[string]bool{
	FormatRelativePath: true, FormatHTTPURL: true,
	"date-time": true, "date": true, "time": true, "duration": true, "period": true,
	"email": true, "hostname": true, "ipv4": true, "ipv6": true,
	"uri": true, "uri-reference": true, "iri": true, "iri-reference": true, "uri-template": true,
	"uuid": true, "json-pointer": true, "relative-json-pointer": true, "regex": true, "semver": true,
}

// validateRelativePath implements FormatRelativePath. A value that is not
// a string is the type keyword's business, not the format's.
func validateRelativePath(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	switch {
	case s == "":
		return errors.New("the path is empty; use \".\" for the workspace root")
	case strings.HasPrefix(s, "/"):
		return errors.New("the path is absolute; give it relative to the workspace root")
	case strings.IndexByte(s, 0) >= 0:
		return errors.New("the path contains a NUL byte")
	case strings.IndexByte(s, '\\') >= 0:
		return errors.New("the path contains a backslash; separate directories with /")
	}
	if c := path.Clean(s); c == ".." || strings.HasPrefix(c, "../") {
		return errors.New("the path leaves the workspace root (..)")
	}
	return nil
}

// validateHTTPURL implements FormatHTTPURL.
func validateHTTPURL(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return errors.New("the URL contains white space or a control character")
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("the URL does not parse")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the URL must be absolute with scheme http or https")
	case u.Opaque != "":
		return errors.New("the URL must have the form scheme://host/path")
	case u.User != nil:
		return errors.New("the URL must not carry user information (user@host)")
	case u.Hostname() == "":
		return errors.New("the URL has no host")
	}
	return nil
}
