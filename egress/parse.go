package egress

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// The bounds of a URL and its host.
const (
	MaxURLLength   = 4096 // bytes of a URL, as given
	MaxHostLength  = 253  // bytes of a host name after IDNA, trailing dot removed
	MaxLabelLength = 63   // bytes of one label of a host name
)

// Target is a URL that parsed strictly: one reading only, with a canonical
// host.
type Target struct {
	// URL is the canonical URL: scheme and host in lower case, the host in
	// ASCII (IDNA), no trailing dot, no fragment, no default port.
	URL *url.URL
	// Host is the ASCII host name, or the IP literal without brackets.
	Host string
	// Addr is the host as an address when it is an IP literal.
	Addr netip.Addr
	// Port is the explicit port, else the scheme's default.
	Port int
}

// defaultPorts are the ports of the schemes egress speaks.
var defaultPorts = map[string]int{"http": 80, "https": 443}

// ParseURL parses raw strictly. It refuses, as egress_invalid_url with the
// reason, anything that a browser-style (WHATWG) parser and Go's net/url
// could read as different hosts: user information, backslashes, white
// space and control characters, percent-encoded or non-canonical numeric
// hosts, an empty port, a scheme not followed by "//". A scheme other
// than http or https is egress_denied. It judges no other policy: which
// hosts, addresses and ports may be reached is the Client's business.
func ParseURL(raw string) (*Target, error) {
	if len(raw) > MaxURLLength {
		return nil, invalidURL("the URL is %d bytes, over the limit of %d (MaxURLLength)", len(raw), MaxURLLength)
	}
	if !utf8.ValidString(raw) {
		return nil, invalidURL("the URL is not valid UTF-8")
	}
	if i := strings.IndexFunc(raw, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError || !unicode.IsPrint(r)
	}); i >= 0 {
		return nil, invalidURL("the URL contains white space or a control character at byte %d", i)
	}
	if strings.IndexByte(raw, '\\') >= 0 {
		return nil, invalidURL("the URL contains a backslash, which browsers read as / and Go does not")
	}
	colon := strings.IndexByte(raw, ':')
	if colon <= 0 || !validScheme(raw[:colon]) {
		return nil, invalidURL("the URL has no scheme; it must start with http:// or https://")
	}
	scheme := strings.ToLower(raw[:colon])
	def, ok := defaultPorts[scheme]
	if !ok {
		return nil, denied("Use an http:// or https:// URL", "the scheme %q is not allowed; only http and https are", truncate(scheme, 16))
	}
	rest := raw[colon+1:]
	if !strings.HasPrefix(rest, "//") || strings.HasPrefix(rest, "///") {
		return nil, invalidURL("the scheme must be followed by exactly two slashes and the host, as in %s://example.com/", scheme)
	}
	rest = rest[2:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	// An @ anywhere before the path begins is user information to one
	// parser and part of a query or fragment to another
	// ("http://a.com#@b.com"): refuse it, as user information is anyway.
	pathStart := strings.IndexByte(rest, '/')
	if pathStart < 0 {
		pathStart = len(rest)
	}
	if strings.IndexByte(rest[:pathStart], '@') >= 0 {
		return nil, invalidURL("the URL carries user information (user@host) or an @ before its path, which parsers read differently")
	}
	if authority == "" {
		return nil, invalidURL("the URL has no host")
	}
	rawHost, portStr, err := splitAuthority(authority)
	if err != nil {
		return nil, err
	}
	t := &Target{Port: def}
	if portStr != "" {
		p, err := parsePort(portStr)
		if err != nil {
			return nil, err
		}
		t.Port = p
	}
	if err := t.parseHost(rawHost); err != nil {
		return nil, err
	}
	// The second reading: net/url must see the same scheme, host and port,
	// and no user information.
	u, perr := url.Parse(raw)
	if perr != nil {
		return nil, invalidURL("the URL does not parse: %s", urlErrorReason(perr))
	}
	if strings.ToLower(u.Scheme) != scheme || u.Opaque != "" || u.User != nil ||
		!strings.EqualFold(u.Host, authority) || u.Port() != portStr {
		return nil, invalidURL("the URL reads differently to different parsers")
	}
	u.Scheme = scheme
	u.Fragment, u.RawFragment = "", ""
	u.Host = t.hostPort(def)
	t.URL = u
	return t, nil
}

func validScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// splitAuthority splits host[:port], the host maybe a bracketed IPv6
// literal.
func splitAuthority(a string) (host, port string, err error) {
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", invalidURL("the IPv6 host has no closing ]")
		}
		host, rest := a[:end+1], a[end+1:]
		switch {
		case rest == "":
			return host, "", nil
		case rest[0] == ':':
			if rest == ":" {
				return "", "", invalidURL("the URL has an empty port after the colon")
			}
			return host, rest[1:], nil
		}
		return "", "", invalidURL("unexpected text after the IPv6 host")
	}
	i := strings.LastIndexByte(a, ':')
	if i < 0 {
		return a, "", nil
	}
	if strings.IndexByte(a[:i], ':') >= 0 {
		return "", "", invalidURL("the host has more than one colon; write an IPv6 address in brackets, as in http://[2001:db8::1]/")
	}
	if i == len(a)-1 {
		return "", "", invalidURL("the URL has an empty port after the colon")
	}
	return a[:i], a[i+1:], nil
}

func parsePort(s string) (int, error) {
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, invalidURL("the port %q is not a number", truncate(s, 16))
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, invalidURL("the port %q has a leading zero; write it plainly", truncate(s, 16))
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, invalidURL("the port %q is out of range 1-65535", truncate(s, 16))
	}
	return p, nil
}

// parseHost sets t.Host and, for an IP literal, t.Addr.
func (t *Target) parseHost(h string) error {
	if strings.HasPrefix(h, "[") {
		inner := h[1 : len(h)-1]
		if strings.IndexByte(inner, '%') >= 0 {
			return invalidURL("the IPv6 host carries a zone (%%...); scoped addresses cannot be fetched")
		}
		a, err := netip.ParseAddr(inner)
		if err != nil || !a.Is6() {
			return invalidURL("the host %q is not a valid IPv6 address", truncate(h, 64))
		}
		t.Addr, t.Host = a, a.String()
		return nil
	}
	if strings.IndexByte(h, '%') >= 0 {
		return invalidURL("the host is percent-encoded; write it plainly")
	}
	ascii, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return invalidURL("the host %q is not a valid host name (IDNA: %s)", truncate(h, 64), idnaReason(err))
	}
	ascii = strings.ToLower(ascii)
	if strings.HasSuffix(ascii, ".") {
		ascii = ascii[:len(ascii)-1] // the root; "a.com." is "a.com"
	}
	if ascii == "" {
		return invalidURL("the URL has no host")
	}
	if len(ascii) > MaxHostLength {
		return invalidURL("the host is %d bytes, over the limit of %d (MaxHostLength)", len(ascii), MaxHostLength)
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		switch {
		case l == "":
			return invalidURL("the host %q has an empty label (two dots, or a leading dot)", truncate(h, 64))
		case len(l) > MaxLabelLength:
			return invalidURL("a label of the host is %d bytes, over the limit of %d (MaxLabelLength)", len(l), MaxLabelLength)
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return invalidURL("the host %q contains %q, which a host name may not", truncate(h, 64), r)
			}
		}
	}
	// A browser reads a host whose last label is a number as an IPv4
	// address, in any of several forms; only the canonical dotted quad
	// reads the same everywhere.
	if last := labels[len(labels)-1]; numericLabel(last) {
		a, err := netip.ParseAddr(ascii)
		if err != nil || !a.Is4() {
			return invalidURL("the host %q is a non-canonical IPv4 form (%s); write the address as four decimal numbers, as in 93.184.216.34",
				truncate(h, 64), ipv4Form(labels))
		}
		t.Addr = a
	}
	t.Host = ascii
	return nil
}

// numericLabel reports whether a WHATWG parser would read the label as a
// number: decimal digits, or 0x and hex digits.
func numericLabel(l string) bool {
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for _, r := range l[2:] {
			if !unicode.Is(unicode.ASCII_Hex_Digit, r) {
				return false
			}
		}
		return true
	}
	for _, r := range l {
		if r < '0' || r > '9' {
			return false
		}
	}
	return l != ""
}

// ipv4Form names what is non-canonical about a numeric host.
func ipv4Form(labels []string) string {
	for _, l := range labels {
		switch {
		case len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X'):
			return "hexadecimal"
		case len(l) > 1 && l[0] == '0':
			return "octal or zero-padded"
		}
	}
	switch len(labels) {
	case 1:
		return "a single decimal number"
	case 2, 3:
		return "fewer than four parts"
	case 4:
		return "a part over 255"
	}
	return "more than four parts, or letters in a numeric address"
}

// hostPort is the URL's host part: brackets for IPv6, the port only when
// it is not the scheme's default.
func (t *Target) hostPort(def int) string {
	h := t.Host
	if t.Addr.Is6() {
		h = "[" + h + "]"
	}
	if t.Port != def {
		h += ":" + strconv.Itoa(t.Port)
	}
	return h
}

func urlErrorReason(err error) string {
	if ue, ok := err.(*url.Error); ok {
		err = ue.Err
	}
	return truncate(err.Error(), 120)
}

func idnaReason(err error) string {
	// idna's messages quote the input; keep them short.
	return truncate(err.Error(), 120)
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cut(s, n) + "..."
}

// cut cuts s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
