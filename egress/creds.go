package egress

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The bounds of a credentials file.
const (
	MaxCredentialsFileBytes = 64 << 10 // bytes of a credentials file
	MaxCredentials          = 256      // credentials in one file
	// MinMaskedValueLength is the shortest injected value masked in
	// fetched bodies; a shorter one would mask ordinary text.
	MinMaskedValueLength = 8
)

// Masked replaces an injected credential value in what a caller sees.
const Masked = "[REDACTED:egress-credential]"

// Credential is a header egress attaches to requests for one host, so
// that the model, and the sandbox behind the proxy, never hold it.
type Credential struct {
	// Host is the exact host name it is sent to (no wildcards): a
	// subdomain or a lookalike gets nothing.
	Host string `yaml:"host"`
	// Header is the header's name; empty means Authorization.
	Header string `yaml:"header"`
	// Value is the header's value, such as "Bearer ghp_...". It is never
	// printed: String masks it.
	Value string `yaml:"value"`
	// Env names an environment variable to read Value from instead, when
	// loading a file.
	Env string `yaml:"env"`
	// AllowHTTP sends it over plain http too; by default only over https,
	// where nobody on the way reads it.
	AllowHTTP bool `yaml:"allow_http"`
	// Server and Variable, instead of Host and Header, give the value to
	// the gateway's stdio upstream Server as its environment variable
	// Variable. egress itself never sends such an entry.
	Server   string `yaml:"server"`
	Variable string `yaml:"variable"`
}

// String names the credential without its value.
func (c Credential) String() string {
	if c.Server != "" {
		return fmt.Sprintf("variable %s for server %s", c.Variable, c.Server)
	}
	return fmt.Sprintf("%s for %s", c.Header, c.Host)
}

// credentials are the compiled credentials.
type credentials struct {
	list   []Credential
	values []string // the values, for masking
}

func compileCredentials(in []Credential) (*credentials, error) {
	cs := &credentials{}
	for _, c := range in {
		if c.Server != "" || c.Variable != "" {
			if c.Server == "" || c.Variable == "" || c.Host != "" || c.Header != "" {
				return nil, fmt.Errorf("egress: credential for server %q, variable %q: an upstream's variable names both server and variable, and no host or header", c.Server, c.Variable)
			}
			if c.Value == "" || strings.ContainsRune(c.Value, 0) {
				return nil, fmt.Errorf("egress: credential for server %q, variable %q: the value is empty or holds NUL", c.Server, c.Variable)
			}
			cs.values = append(cs.values, c.Value) // masked wherever it surfaces, like every credential
			continue
		}
		if c.Header == "" {
			c.Header = "Authorization"
		}
		c.Header = textproto.CanonicalMIMEHeaderKey(c.Header)
		hp, err := compileHostPattern(c.Host)
		if err != nil || hp.suffix != "" || c.Host == "" {
			return nil, fmt.Errorf("egress: credential %s: the host must be one exact host name", c)
		}
		c.Host = hp.exact
		if c.Value == "" || strings.ContainsAny(c.Value, "\r\n\x00") {
			return nil, fmt.Errorf("egress: credential %s: the value is empty or has a line break", c)
		}
		switch c.Header {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Cookie2":
			return nil, fmt.Errorf("egress: credential %s: %s cannot carry a credential", c, c.Header)
		}
		cs.list = append(cs.list, c)
		cs.values = append(cs.values, c.Value)
	}
	// Longest first, so that a value containing another is masked whole.
	slices.SortFunc(cs.values, func(a, b string) int { return len(b) - len(a) })
	return cs, nil
}

// LoadCredentials reads a credentials file: YAML (or JSON) with a list
// under "credentials", each {host, header, value or env, allow_http}, or
// {server, variable, value or env} for a gateway stdio upstream. The
// file must not be readable by group or others. getenv resolves env
// (os.Getenv when nil).
func LoadCredentials(path string, getenv func(string) string) ([]Credential, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("credentials: %s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("credentials: %s is readable by others (mode %o): chmod 600 it", path, fi.Mode().Perm())
	case fi.Size() > MaxCredentialsFileBytes:
		return nil, fmt.Errorf("credentials: %s is over %d bytes (MaxCredentialsFileBytes)", path, MaxCredentialsFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	var doc struct {
		Credentials []Credential `yaml:"credentials"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("credentials: %s: %w", path, err)
	}
	if len(doc.Credentials) > MaxCredentials {
		return nil, fmt.Errorf("credentials: %s has more than %d entries (MaxCredentials)", path, MaxCredentials)
	}
	for i := range doc.Credentials {
		c := &doc.Credentials[i]
		switch {
		case c.Env != "" && c.Value != "":
			return nil, fmt.Errorf("credentials: entry %d (%s): give value or env, not both", i+1, c.Host)
		case c.Env != "":
			if c.Value = getenv(c.Env); c.Value == "" {
				return nil, fmt.Errorf("credentials: entry %d (%s): the environment variable %s is empty or unset", i+1, c.Host, c.Env)
			}
		}
	}
	if _, err := compileCredentials(doc.Credentials); err != nil {
		return nil, err
	}
	return doc.Credentials, nil
}

// InjectedValues returns the credential values egress attaches, for a
// redactor to mask wherever else they might surface.
func (c *Client) InjectedValues() []string { return slices.Clone(c.creds.values) }

// mask replaces every injected value in s.
func (cs *credentials) mask(s string) string {
	for _, v := range cs.values {
		if len(v) >= MinMaskedValueLength {
			s = strings.ReplaceAll(s, v, Masked)
		}
	}
	return s
}

// HeadersFor returns the headers creds attach to a request for u, by the
// rule web_fetch's requests follow: the credentials of u's exact host,
// over https, or over http where a credential allows it. The gateway
// attaches them to an HTTP upstream's requests.
func HeadersFor(creds []Credential, u *url.URL) (http.Header, error) {
	cs, err := compileCredentials(creds)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	for _, c := range cs.forRequest(u.Scheme, strings.ToLower(u.Hostname())) {
		h.Set(c.Header, c.Value)
	}
	return h, nil
}

// forRequest returns the credentials for a request's URL: exact host, and
// https unless the credential allows http.
func (cs *credentials) forRequest(scheme, host string) []Credential {
	var out []Credential
	for _, c := range cs.list {
		if c.Host == host && (scheme == "https" || c.AllowHTTP) {
			out = append(out, c)
		}
	}
	return out
}

// httpsOnly reports whether host has a credential sent over https only.
func (cs *credentials) httpsOnly(host string) bool {
	for _, c := range cs.list {
		if c.Host == host && !c.AllowHTTP {
			return true
		}
	}
	return false
}

// credTransport attaches credentials to each request for their host,
// redirects included, replacing any header of the same name the request
// had, and masks echoed values in the response's header.
type credTransport struct {
	base  http.RoundTripper
	creds *credentials
}

func (t *credTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.creds.list) == 0 {
		return t.base.RoundTrip(req)
	}
	r := req
	if cs := t.creds.forRequest(req.URL.Scheme, strings.ToLower(req.URL.Hostname())); len(cs) > 0 {
		// On a clone, so that the caller's request (which a redirect
		// copies headers from) never holds the value.
		r = req.Clone(req.Context())
		for _, c := range cs {
			r.Header.Set(c.Header, c.Value)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	for name, vals := range resp.Header {
		for i, v := range vals {
			vals[i] = t.creds.mask(v)
		}
		resp.Header[name] = vals
	}
	return resp, nil
}
