package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/idna"

	"airlock.dev/airlock/tool"
)

// The defaults of Options, each used when its field is zero or nil.
const (
	DefaultConnectTimeout = 5 * time.Second  // to connect, TLS handshake included
	DefaultHeaderTimeout  = 10 * time.Second // from the request sent to the response's header
	DefaultTimeout        = 30 * time.Second // one fetch, redirects and body included
	DefaultMaxRedirects   = 5                // redirects one fetch follows; each is checked again
	DefaultMaxBodyBytes   = 1 << 20          // decoded body bytes a fetch returns (1 MiB)
	DefaultMaxDecodeRatio = 100              // decoded bytes per byte received, for a compressed body
	DefaultTunnelTimeout  = 15 * time.Minute // one CONNECT tunnel of the proxy
	// MaxResponseHeaderBytes caps a response's header, and a proxy
	// request's.
	MaxResponseHeaderBytes = 64 << 10
	// NoRedirects (or any negative value), as Options.MaxRedirects,
	// follows none: a redirect is returned as the response.
	NoRedirects = -1
)

// DefaultSchemes and DefaultPorts are what may be reached when Options
// names none.
var (
	DefaultSchemes = []string{"http", "https"}
	DefaultPorts   = []int{80, 443}
)

// DefaultContentTypes are the media types a fetch accepts when Options
// names none: text a model can read. "type/*" matches any subtype, and
// "application/*+json" any structured-syntax suffix.
var DefaultContentTypes = []string{
	"text/*", "application/json", "application/*+json", "application/xml", "application/*+xml",
	"application/javascript", "application/ecmascript", "application/x-ndjson", "application/yaml",
}

// DefaultDenyHosts are always refused, whatever Options allows: loopback
// and local-network names and the cloud metadata services' names.
// A single-label name ("intranet", "metadata") is refused too, since the
// system resolver would complete it with the local search domains.
var DefaultDenyHosts = []string{
	"localhost", "*.localhost", "*.local", "*.localdomain", "*.home.arpa", "*.internal", "*.intranet", "*.lan",
	"metadata.google.internal", "metadata.goog", "metadata.azure.internal", "instance-data.ec2.internal",
	"metadata.tencentyun.com", "metadata.platformequinix.com",
}

// metadataHosts are the names a refusal calls metadata services.
var metadataHosts = []string{
	"metadata", "metadata.google.internal", "metadata.goog", "metadata.azure.internal", "instance-data",
	"instance-data.ec2.internal", "metadata.tencentyun.com", "metadata.platformequinix.com",
}

// Resolver resolves host names. *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configures a Client. A nil *Options means every default: public
// hosts only, by http or https on ports 80 and 443.
type Options struct {
	// Schemes that may be fetched: a subset of http and https. Nil means
	// DefaultSchemes.
	Schemes []string
	// Ports that may be connected to. Nil means DefaultPorts.
	Ports []int
	// AllowHosts, when not empty, are the only hosts that may be reached:
	// exact names, "*.example.com" for any name below example.com, or IP
	// literals. Names are compared after IDNA.
	AllowHosts []string
	// DenyHosts are refused even when allowed; DefaultDenyHosts are
	// always added.
	DenyHosts []string
	// AllowAddrs are non-public ranges that may still be reached, such as
	// a test server's loopback address. Empty: none.
	AllowAddrs []netip.Prefix
	// Resolver resolves host names; nil means the system's
	// (net.DefaultResolver).
	Resolver Resolver
	// The time limits; zero means the Default constant of the same name.
	ConnectTimeout time.Duration
	HeaderTimeout  time.Duration
	Timeout        time.Duration
	TunnelTimeout  time.Duration
	// MaxRedirects is how many redirects a fetch follows; zero means
	// DefaultMaxRedirects, NoRedirects none.
	MaxRedirects int
	// MaxBodyBytes caps the decoded body a fetch returns; zero means
	// DefaultMaxBodyBytes. A longer body is cut and marked truncated.
	MaxBodyBytes int64
	// MaxDecodeRatio caps decoded bytes per received byte of a compressed
	// body; zero means DefaultMaxDecodeRatio. Over it, the fetch is
	// refused as a decompression bomb.
	MaxDecodeRatio int64
	// ContentTypes a fetch accepts; nil means DefaultContentTypes.
	ContentTypes []string
	// Credentials are attached to requests for their host only, by the
	// client and the proxy; the caller never sees them.
	Credentials []Credential
	// TLS, when set, is the TLS configuration (such as a test's root CAs);
	// nil means the system's roots.
	TLS *tls.Config
}

// policy is Options compiled: what may be reached.
type policy struct {
	schemes    []string
	ports      []int
	allow      []hostPattern
	deny       []hostPattern
	allowAddrs []netip.Prefix
	// summary completes a refusal: "only public hosts on ports 80 and 443
	// are allowed".
	summary string
}

// hostPattern is an exact host, or a suffix for "*.example.com".
type hostPattern struct {
	exact  string
	suffix string // ".example.com"
}

func (p hostPattern) match(host string) bool {
	if p.suffix != "" {
		return strings.HasSuffix(host, p.suffix) && len(host) > len(p.suffix)
	}
	return host == p.exact
}

func (p hostPattern) String() string {
	if p.suffix != "" {
		return "*" + p.suffix
	}
	return p.exact
}

// compileHostPattern normalises a pattern as a URL's host is normalised.
func compileHostPattern(s string) (hostPattern, error) {
	wild := strings.HasPrefix(s, "*.")
	name := strings.TrimPrefix(s, "*.")
	if a, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil && !wild {
		return hostPattern{exact: a.String()}, nil
	}
	ascii, err := idna.Lookup.ToASCII(name)
	if err != nil || strings.ContainsAny(name, "*/:@%") || name == "" {
		return hostPattern{}, fmt.Errorf("host pattern %q: want a host name, *.domain or an IP address", s)
	}
	ascii = strings.TrimSuffix(strings.ToLower(ascii), ".")
	if wild {
		return hostPattern{suffix: "." + ascii}, nil
	}
	return hostPattern{exact: ascii}, nil
}

func compilePolicy(o *Options) (*policy, error) {
	p := &policy{schemes: DefaultSchemes, ports: DefaultPorts}
	if o.Schemes != nil {
		p.schemes = nil
		for _, s := range o.Schemes {
			s = strings.ToLower(s)
			if _, ok := defaultPorts[s]; !ok {
				return nil, fmt.Errorf("egress: scheme %q: only http and https are supported", s)
			}
			p.schemes = append(p.schemes, s)
		}
	}
	if o.Ports != nil {
		p.ports = nil
		for _, n := range o.Ports {
			if n < 1 || n > 65535 {
				return nil, fmt.Errorf("egress: port %d is out of range 1-65535", n)
			}
			p.ports = append(p.ports, n)
		}
	}
	for _, s := range o.AllowHosts {
		hp, err := compileHostPattern(s)
		if err != nil {
			return nil, fmt.Errorf("egress: allowed %w", err)
		}
		p.allow = append(p.allow, hp)
	}
	for _, s := range append(slices.Clone(DefaultDenyHosts), o.DenyHosts...) {
		hp, err := compileHostPattern(s)
		if err != nil {
			return nil, fmt.Errorf("egress: denied %w", err)
		}
		p.deny = append(p.deny, hp)
	}
	for _, a := range o.AllowAddrs {
		if !a.IsValid() {
			return nil, errors.New("egress: an allowed address range is invalid")
		}
		p.allowAddrs = append(p.allowAddrs, a.Masked())
	}
	ports := make([]string, len(p.ports))
	for i, n := range p.ports {
		ports[i] = strconv.Itoa(n)
	}
	p.summary = "only public hosts on " + plural("port", ports) + " are allowed"
	if len(p.allow) > 0 {
		p.summary = "only the configured hosts, on " + plural("port", ports) + ", are allowed"
	}
	return p, nil
}

// plural writes "port 80" or "ports 80 and 443" or "ports 80, 443 and 8080".
func plural(word string, items []string) string {
	switch len(items) {
	case 0:
		return "no " + word + "s"
	case 1:
		return word + " " + items[0]
	}
	return word + "s " + strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// checkTarget judges what the URL alone says: scheme, port, host name and
// an IP literal host. Resolved addresses are checkAddr's.
func (p *policy) checkTarget(t *Target) *tool.Error {
	scheme := t.URL.Scheme
	if !slices.Contains(p.schemes, scheme) {
		return denied("Use a URL with scheme "+strings.Join(p.schemes, " or "),
			"the scheme %s is not allowed; %s", scheme, p.summary)
	}
	if e := p.checkHost(t.Host, t.Addr); e != nil {
		return e
	}
	if !slices.Contains(p.ports, t.Port) {
		return denied("Use the default port of http or https (leave the port out)",
			"port %d is not allowed; %s", t.Port, p.summary)
	}
	return nil
}

func (p *policy) checkHost(host string, literal netip.Addr) *tool.Error {
	if !literal.IsValid() {
		if slices.Contains(metadataHosts, host) {
			return denied(hintPublic, "%s is a cloud metadata host name; %s", host, p.summary)
		}
		for _, d := range p.deny {
			if d.match(host) {
				return denied(hintPublic, "%s is a denied host (%s); %s", host, d, p.summary)
			}
		}
		if !strings.Contains(host, ".") {
			return denied("Give the host's full domain name, such as example.com",
				"%s is a single-label host name, which the local resolver completes with internal search domains; %s", host, p.summary)
		}
	}
	if len(p.allow) > 0 && !slices.ContainsFunc(p.allow, func(a hostPattern) bool { return a.match(host) }) {
		return denied("Fetch one of the allowed hosts instead; do not retry this one",
			"%s is not one of the allowed hosts; %s", host, p.summary)
	}
	if literal.IsValid() {
		return p.checkAddr(literal.String(), literal)
	}
	return nil
}

// checkAddr judges one address the host resolved to, or is.
func (p *policy) checkAddr(host string, a netip.Addr) *tool.Error {
	if slices.ContainsFunc(p.allowAddrs, func(pr netip.Prefix) bool { return pr.Contains(a) }) {
		return nil
	}
	why := nonPublic(a)
	if why == "" {
		return nil
	}
	if host == a.String() {
		return denied(hintPublic, "%s is %s; %s", a, why, p.summary)
	}
	return denied(hintPublic, "%s resolves to %s, %s; %s", host, a, why, p.summary)
}

// checkDial judges the socket address the dialer is about to connect to.
func (p *policy) checkDial(address string) *tool.Error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return denied(hintPublic, "the dialer was asked for %q, which is not an address and port", truncate(address, 64))
	}
	if !slices.Contains(p.ports, int(ap.Port())) {
		return denied("Use the default port of http or https", "port %d is not allowed; %s", ap.Port(), p.summary)
	}
	return p.checkAddr(ap.Addr().String(), ap.Addr())
}

// resolve returns every address of host, each checked; a refusal names
// the first forbidden one. An IP literal is its own address.
func (c *Client) resolve(ctx context.Context, host string) ([]netip.Addr, *tool.Error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if e := c.pol.checkAddr(host, a); e != nil {
			return nil, e
		}
		return []netip.Addr{a}, nil
	}
	// Rooted, so that the system resolver appends no search domain.
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", host+".")
	if err != nil || len(addrs) == 0 {
		var dnsErr *net.DNSError
		if ctx.Err() != nil || errors.As(err, &dnsErr) && dnsErr.IsTimeout {
			return nil, &tool.Error{Code: CodeTimeout, Message: fmt.Sprintf("resolving %s timed out", host),
				Hint: "Try again later, or fetch another host"}
		}
		return nil, &tool.Error{Code: CodeUnresolvable, Message: fmt.Sprintf("the host %s does not resolve", host), Hint: hintUnresolved}
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		// The system resolver gives an IPv4 answer in the IPv4-mapped form
		// at times (from /etc/hosts): it is the IPv4 address, and is
		// checked and dialed as that.
		out[i] = a.Unmap()
		if e := c.pol.checkAddr(host, out[i]); e != nil {
			return nil, e
		}
	}
	return out, nil
}
