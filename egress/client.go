package egress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"airlock.dev/airlock/tool"
)

// systemResolver is the resolver of a nil Options.Resolver.
var systemResolver Resolver = net.DefaultResolver

// Client fetches URLs under the egress policy. It is safe for concurrent
// use; build one at start-up with NewClient.
type Client struct {
	pol      *policy
	opts     Options // with every default filled in
	resolver Resolver
	dialer   *net.Dialer
	creds    *credentials
	// transport is the guarded transport with credentials attached; the
	// proxy forwards through it too.
	transport http.RoundTripper
	http      *http.Client
}

// NewClient compiles the policy. A nil *Options means every default.
func NewClient(opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	pol, err := compilePolicy(&o)
	if err != nil {
		return nil, err
	}
	for _, ct := range o.ContentTypes {
		if typ, sub, ok := strings.Cut(ct, "/"); !ok || typ == "" || sub == "" {
			return nil, fmt.Errorf("egress: content type %q: want type/subtype, type/* or type/*+suffix", ct)
		}
	}
	fill := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	fill(&o.ConnectTimeout, DefaultConnectTimeout)
	fill(&o.HeaderTimeout, DefaultHeaderTimeout)
	fill(&o.Timeout, DefaultTimeout)
	fill(&o.TunnelTimeout, DefaultTunnelTimeout)
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxDecodeRatio <= 0 {
		o.MaxDecodeRatio = DefaultMaxDecodeRatio
	}
	if o.ContentTypes == nil {
		o.ContentTypes = DefaultContentTypes
	}
	creds, err := compileCredentials(o.Credentials)
	if err != nil {
		return nil, err
	}
	c := &Client{pol: pol, opts: o, resolver: o.Resolver, creds: creds}
	if c.resolver == nil {
		c.resolver = systemResolver
	}
	c.dialer = &net.Dialer{Timeout: o.ConnectTimeout, Control: c.control}
	tr := &http.Transport{
		Proxy:                  nil, // proxy variables are ignored: egress is the proxy
		DialContext:            c.DialContext,
		TLSClientConfig:        o.TLS.Clone(),
		TLSHandshakeTimeout:    o.ConnectTimeout,
		ResponseHeaderTimeout:  o.HeaderTimeout,
		DisableCompression:     true, // decoded by readBody, under its caps
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
	}
	c.transport = &credTransport{base: tr, creds: creds}
	c.http = &http.Client{Transport: c.transport, CheckRedirect: c.checkRedirect, Timeout: o.Timeout}
	return c, nil
}

// Check judges a URL as written, without fetching it and without
// resolving its host: it parses the URL strictly and checks scheme, port
// and host (the allow and deny lists, and an IP literal as the address it
// is). A DNS query is itself a message out, whose labels can carry data
// (<hex of a secret>.attacker.example), so a name is resolved only by a
// fetch or the proxy, once the request is made, and every address it
// resolves to is judged then, again on the socket's address. Check is the
// gate's URL guard, which runs before a call is allowed to. A refusal is a
// *tool.Error with one of the egress codes.
func (c *Client) Check(_ context.Context, rawURL string) error {
	if _, e := c.target(rawURL); e != nil {
		return e
	}
	return nil
}

// target parses a URL and judges what it says as written.
func (c *Client) target(rawURL string) (*Target, *tool.Error) {
	if c == nil || c.pol == nil {
		return nil, errUnconfigured
	}
	t, err := ParseURL(rawURL)
	if err != nil {
		var te *tool.Error
		if !errors.As(err, &te) {
			te = invalidURL("the URL does not parse")
		}
		return nil, te
	}
	if e := c.pol.checkTarget(t); e != nil {
		return nil, e
	}
	return t, nil
}

// resolveTarget is target, then the host resolved and every address
// checked: for a request that is being made (a fetch, a redirect it
// follows, a proxied request), never for a judgment ahead of one.
func (c *Client) resolveTarget(ctx context.Context, rawURL string) (*Target, []netip.Addr, *tool.Error) {
	t, e := c.target(rawURL)
	if e != nil {
		return nil, nil, e
	}
	addrs, e := c.resolve(ctx, t.Host)
	if e != nil {
		return nil, nil, e
	}
	return t, addrs, nil
}

// errUnconfigured is what a zero Client answers: it reaches nothing.
var errUnconfigured = &tool.Error{Code: CodeDenied, Message: "egress is not configured: a zero Client reaches nothing",
	Hint: "Tell the operator: build the client with egress.NewClient"}

// resolvedKey carries a fetch's checked addresses to its dials, so that
// each host is resolved once per fetch and dialed at what was checked.
type resolvedKey struct{}

type resolved struct {
	mu sync.Mutex
	m  map[string][]netip.Addr
}

func (r *resolved) get(host string) ([]netip.Addr, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.m[host]
	return a, ok
}

func (r *resolved) put(host string, addrs []netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[host] = addrs
}

// DialContext connects to addr ("host:port") under the policy: the port
// must be allowed, the host resolves once and every address is checked,
// and only checked addresses are dialed, each checked again by the
// socket's Control hook. The proxy and the fetch client dial through it.
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if c == nil || c.pol == nil {
		return nil, errUnconfigured
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, denied(hintPublic, "the dialer was asked for %q, which is not host:port", truncate(addr, 64))
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, denied(hintPublic, "the port %q is not a number", truncate(portStr, 16))
	}
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, denied(hintPublic, "network %q is not allowed; only tcp is", network)
	}
	var addrs []netip.Addr
	if r, ok := ctx.Value(resolvedKey{}).(*resolved); ok {
		addrs, _ = r.get(host)
	}
	if addrs == nil {
		var e *tool.Error
		if addrs, e = c.resolve(ctx, host); e != nil {
			return nil, e
		}
	}
	// IPv4 first: a sandbox or container more often lacks an IPv6 route,
	// and each address tried waits up to ConnectTimeout.
	addrs = slices.Clone(addrs)
	slices.SortStableFunc(addrs, func(a, b netip.Addr) int {
		return cmp.Compare(boolInt(!a.Is4()), boolInt(!b.Is4()))
	})
	var last error
	for _, a := range addrs {
		conn, err := c.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		last = err
		var te *tool.Error
		if errors.As(err, &te) || ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// control is the dialer's Control hook: the last check, on the address
// the socket is about to connect to.
func (c *Client) control(network, address string, _ syscall.RawConn) error {
	if e := c.pol.checkDial(address); e != nil {
		return e
	}
	return nil
}

// sameHostKey marks a fetch that follows redirects to its own host only
// (FetchOptions.SameHost); its value is that host.
type sameHostKey struct{}

// checkRedirect checks every redirect as a first request is checked.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if c.opts.MaxRedirects < 0 {
		return http.ErrUseLastResponse
	}
	if len(via) > c.opts.MaxRedirects {
		return &tool.Error{Code: CodeRedirectDenied,
			Message: fmt.Sprintf("the URL redirected more than %d times (MaxRedirects)", c.opts.MaxRedirects),
			Hint:    "Fetch the final URL directly, if you know it; do not retry this one"}
	}
	if host, ok := req.Context().Value(sameHostKey{}).(string); ok && !strings.EqualFold(req.URL.Hostname(), host) {
		return http.ErrUseLastResponse // judged, and resolved, by whoever makes the next request
	}
	t, addrs, e := c.resolveTarget(req.Context(), req.URL.String())
	if e != nil {
		return &tool.Error{Code: CodeRedirectDenied,
			Message: fmt.Sprintf("the URL redirected to %s, which is refused: %s", truncate(req.URL.Redacted(), 200), e.Message),
			Hint:    "The redirect target cannot be fetched; do not retry it. " + e.Hint}
	}
	if r, ok := req.Context().Value(resolvedKey{}).(*resolved); ok {
		r.put(t.Host, addrs)
	}
	req.URL = t.URL
	req.Host = ""
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func timeoutError(what string) *tool.Error {
	return &tool.Error{Code: CodeTimeout, Message: what + " ran past its time limit",
		Hint: "The server is slow or unreachable; try again later or fetch something smaller"}
}
