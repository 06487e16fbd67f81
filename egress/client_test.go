package egress

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"airlock.dev/airlock/tool"
)

var loopback = netip.MustParsePrefix("127.0.0.1/32")

// serverPort is the port of a test server's URL.
func serverPort(t testing.TB, s *httptest.Server) int {
	t.Helper()
	u, _ := url.Parse(s.URL)
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// allowing returns options that explicitly allow the test server's
// loopback address and port, as a positive test must; everything else is
// the default.
func allowing(t testing.TB, s *httptest.Server, o *Options) *Options {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.Ports == nil {
		o.Ports = DefaultPorts
	}
	o.Ports = append(slices.Clone(o.Ports), serverPort(t, s))
	o.AllowAddrs = append(o.AllowAddrs, loopback)
	return o
}

func newClient(t testing.TB, o *Options) *Client {
	t.Helper()
	c, err := NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantCode fails unless err is a *tool.Error with the code, a message
// and a hint.
func wantCode(t *testing.T, err error, code tool.Code, says string) {
	t.Helper()
	var te *tool.Error
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want %s", err, code)
	}
	if te.Code != code || !strings.Contains(te.Message, says) || te.Hint == "" {
		t.Fatalf("got %s %q (hint %q), want %s saying %q", te.Code, te.Message, te.Hint, code, says)
	}
}

func textServer(t *testing.T, body string, hits *atomic.Int32) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits != nil {
			hits.Add(1)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestFetchAllowedLoopback(t *testing.T) {
	s := textServer(t, "hello", nil)
	c := newClient(t, allowing(t, s, nil))
	resp, err := c.Fetch(t.Context(), s.URL+"/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || resp.Body != "hello" || resp.Truncated || !strings.HasPrefix(resp.ContentType, "text/plain") ||
		resp.URL != s.URL+"/x" {
		t.Fatalf("got %+v", resp)
	}
}

// TestDefaultDeniesLoopback proves the default refuses a local server,
// and that nothing reached it.
func TestDefaultDeniesLoopback(t *testing.T) {
	var hits atomic.Int32
	s := textServer(t, "secret", &hits)
	port := serverPort(t, s)
	for _, o := range []*Options{
		nil,                                    // default ports and addresses
		{Ports: []int{port}},                   // the port allowed, the address not
		{AllowAddrs: []netip.Prefix{loopback}}, // the address allowed, the port not
	} {
		c := newClient(t, o)
		_, err := c.Fetch(t.Context(), s.URL, nil)
		wantCode(t, err, CodeDenied, "")
	}
	c := newClient(t, &Options{Ports: []int{port}, Resolver: Pins{"looks-public.example": {netip.MustParseAddr("127.0.0.1")}}.Resolver(nil)})
	_, err := c.Fetch(t.Context(), fmt.Sprintf("http://looks-public.example:%d/", port), nil)
	wantCode(t, err, CodeDenied, "resolves to 127.0.0.1, a loopback address")
	if hits.Load() != 0 {
		t.Fatalf("the loopback server was reached %d times", hits.Load())
	}
}

// rebinder answers a name with an allowed address on the first query and
// a forbidden one (the server's, loopback) on every later one: DNS
// rebinding. The allowed address stands in for a public one: it is
// 127.0.0.2, allowed explicitly, where nothing listens, so that the test
// sends nothing off the machine.
type rebinder struct {
	queries atomic.Int32
}

var rebindFirst = netip.MustParseAddr("127.0.0.2")

func (r *rebinder) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if r.queries.Add(1) == 1 {
		return []netip.Addr{rebindFirst}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestDNSRebinding: the check sees a public address, a second resolution
// would give loopback. The fetch must dial what was checked, never
// loopback, and resolve only once.
func TestDNSRebinding(t *testing.T) {
	var hits atomic.Int32
	s := textServer(t, "internal", &hits)
	port := serverPort(t, s)
	var dialed []string
	var mu sync.Mutex
	r := &rebinder{}
	c := newClient(t, &Options{Ports: []int{port}, Resolver: r, AllowAddrs: []netip.Prefix{netip.PrefixFrom(rebindFirst, 32)},
		ConnectTimeout: 500 * time.Millisecond, Timeout: 2 * time.Second})
	inner := c.dialer.Control
	c.dialer.Control = func(network, address string, rc syscall.RawConn) error {
		mu.Lock()
		dialed = append(dialed, address)
		mu.Unlock()
		return inner(network, address, rc)
	}
	_, err := c.Fetch(t.Context(), fmt.Sprintf("http://rebind.example:%d/", port), nil)
	if err == nil {
		t.Fatal("the fetch succeeded; it can only have reached loopback")
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server was reached")
	}
	if n := r.queries.Load(); n != 1 {
		t.Fatalf("the name was resolved %d times, want once", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 1 || dialed[0] != netip.AddrPortFrom(rebindFirst, uint16(port)).String() {
		t.Fatalf("dialed %v, want only the checked address", dialed)
	}
	// A second fetch (a second query) now sees loopback, and refuses.
	_, err = c.Fetch(t.Context(), fmt.Sprintf("http://rebind.example:%d/", port), nil)
	wantCode(t, err, CodeDenied, "loopback")
	if hits.Load() != 0 {
		t.Fatalf("the loopback server was reached")
	}
}

// TestControlHookChecksDialedAddress: even a dial that skipped the
// resolution check is refused on the socket's address.
func TestControlHookChecksDialedAddress(t *testing.T) {
	var hits atomic.Int32
	s := textServer(t, "internal", &hits)
	port := serverPort(t, s)
	c := newClient(t, &Options{Ports: []int{80, port}})
	ctx := context.WithValue(t.Context(), resolvedKey{}, &resolved{m: map[string][]netip.Addr{
		"poisoned.example": {netip.MustParseAddr("127.0.0.1")}, // as if a check had let it through
	}})
	_, err := c.DialContext(ctx, "tcp", net.JoinHostPort("poisoned.example", strconv.Itoa(port)))
	wantCode(t, err, CodeDenied, "loopback")
	wantCode(t, c.control("tcp4", "10.1.2.3:80", nil), CodeDenied, "private")
	wantCode(t, c.control("tcp4", "8.8.8.8:22", nil), CodeDenied, "port 22")
	if c.control("tcp4", "8.8.8.8:80", nil) != nil {
		t.Fatal("a public address on port 80 was refused")
	}
	if hits.Load() != 0 {
		t.Fatal("the server was reached")
	}
}

func TestMixedAnswersDenied(t *testing.T) {
	c := newClient(t, &Options{Resolver: Pins{"mixed.example": {
		netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.5")}}.Resolver(nil)})
	_, err := c.Fetch(t.Context(), "http://mixed.example/", nil)
	wantCode(t, err, CodeDenied, "resolves to 10.0.0.5, a private address")
}

type noAnswers struct{}

// countingResolver counts its queries and answers each with addr.
type countingResolver struct {
	addr    netip.Addr
	queries atomic.Int32
}

func (r *countingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.queries.Add(1)
	return []netip.Addr{r.addr}, nil
}

// TestCheckResolvesNothing: Check judges the URL as written and sends no
// query, whatever the host; an IP literal is judged as the address it
// is. The addresses a name resolves to are judged by the fetch.
func TestCheckResolvesNothing(t *testing.T) {
	r := &countingResolver{addr: netip.MustParseAddr("10.0.0.5")}
	c := newClient(t, &Options{Resolver: r, DenyHosts: []string{"*.blocked.example"}})
	for u, want := range map[string]tool.Code{
		"http://6869.attacker.example/":    "", // allowed as written: its address is the fetch's to judge
		"https://example.com/a?b":          "",
		"http://x.blocked.example/":        CodeDenied,
		"http://metadata.google.internal/": CodeDenied,
		"http://intranet/":                 CodeDenied,
		"http://10.0.0.5/":                 CodeDenied,
		"http://[::ffff:127.0.0.1]/":       CodeDenied,
		"https://93.184.216.34/":           "",
		"https://example.com:8443/":        CodeDenied,
		"http://0x7f.1/":                   CodeInvalidURL,
	} {
		err := c.Check(t.Context(), u)
		var te *tool.Error
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want allowed", u, err)
		case want != "" && (!errors.As(err, &te) || te.Code != want):
			t.Errorf("%s: %v, want %s", u, err, want)
		}
	}
	if n := r.queries.Load(); n != 0 {
		t.Fatalf("Check sent %d queries, want none", n)
	}
	_, err := c.Fetch(t.Context(), "http://6869.attacker.example/", nil)
	wantCode(t, err, CodeDenied, "resolves to 10.0.0.5")
	if r.queries.Load() == 0 {
		t.Fatal("the fetch resolved nothing")
	}
}

func (noAnswers) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
}

func TestUnresolvable(t *testing.T) {
	c := newClient(t, &Options{Resolver: noAnswers{}})
	_, err := c.Fetch(t.Context(), "https://does-not-exist.example/", nil)
	wantCode(t, err, CodeUnresolvable, "does not resolve")
}

func TestRedirects(t *testing.T) {
	var internalHits atomic.Int32
	internal := textServer(t, "internal", &internalHits)
	mux := http.NewServeMux()
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	to := func(path, target string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target, http.StatusFound) })
	}
	to("/metadata", "http://169.254.169.254/latest/meta-data/")
	to("/private", "http://10.0.0.5/")
	to("/v6", "http://[::1]/")
	to("/name", fmt.Sprintf("http://internal.example:%d/", serverPort(t, internal)))
	to("/decimal", "http://2130706433/")
	to("/scheme", "ftp://example.com/")
	to("/loop", "/loop")
	to("/ok", "/final")
	mux.HandleFunc("/final", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "arrived")
	})
	o := allowing(t, s, &Options{Ports: []int{serverPort(t, internal)},
		Resolver: Pins{"internal.example": {netip.MustParseAddr("127.0.0.2")}}.Resolver(nil)})
	c := newClient(t, o)
	for path, says := range map[string]string{
		"/metadata": "metadata", "/private": "private", "/v6": "loopback", "/name": "127.0.0.2",
		"/decimal": "non-canonical", "/scheme": "scheme", "/loop": "MaxRedirects",
	} {
		_, err := c.Fetch(t.Context(), s.URL+path, nil)
		wantCode(t, err, CodeRedirectDenied, says)
	}
	resp, err := c.Fetch(t.Context(), s.URL+"/ok", nil)
	if err != nil || resp.Body != "arrived" || resp.URL != s.URL+"/final" {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if internalHits.Load() != 0 {
		t.Fatal("a redirect reached an internal server")
	}
	// NoRedirects returns the redirect itself.
	c = newClient(t, allowing(t, s, &Options{MaxRedirects: NoRedirects}))
	resp, err = c.Fetch(t.Context(), s.URL+"/metadata", nil)
	if err != nil || resp.Status != http.StatusFound {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

func TestRedirectLimitDefault(t *testing.T) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Redirect(w, r, "/again", http.StatusFound)
	}))
	t.Cleanup(s.Close)
	c := newClient(t, allowing(t, s, nil))
	_, err := c.Fetch(t.Context(), s.URL, nil)
	wantCode(t, err, CodeRedirectDenied, strconv.Itoa(DefaultMaxRedirects)+" times")
	if got := n.Load(); got != DefaultMaxRedirects+1 {
		t.Fatalf("the server saw %d requests, want %d", got, DefaultMaxRedirects+1)
	}
}

func TestProxyEnvironmentIgnored(t *testing.T) {
	var proxyHits atomic.Int32
	proxy := textServer(t, "proxied", &proxyHits)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	s := textServer(t, "direct", nil)
	c := newClient(t, allowing(t, s, nil))
	resp, err := c.Fetch(t.Context(), s.URL, nil)
	if err != nil || resp.Body != "direct" || proxyHits.Load() != 0 {
		t.Fatalf("got %+v, %v; proxy hits %d", resp, err, proxyHits.Load())
	}
}

func TestTimeouts(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slowbody" {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(200)
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); s.Close() })
	c := newClient(t, allowing(t, s, &Options{HeaderTimeout: 200 * time.Millisecond, Timeout: 5 * time.Second}))
	start := time.Now()
	_, err := c.Fetch(t.Context(), s.URL+"/slowheader", nil)
	wantCode(t, err, CodeTimeout, "time limit")
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("the header timeout took %s", d)
	}
	c = newClient(t, allowing(t, s, &Options{Timeout: 300 * time.Millisecond}))
	_, err = c.Fetch(t.Context(), s.URL+"/slowbody", nil)
	wantCode(t, err, CodeTimeout, "time limit")
}

func TestConnectionRefused(t *testing.T) {
	s := textServer(t, "", nil)
	s.Close()
	c := newClient(t, allowing(t, s, nil))
	_, err := c.Fetch(t.Context(), s.URL, nil)
	wantCode(t, err, CodeConnectionFailed, "could not be reached")
}

func TestBodyLimits(t *testing.T) {
	big := strings.Repeat("abcdefgh", 1<<15) // 256 KiB
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, big)
		case "/gzip":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, `{"compressed":true}`)
			zw.Close()
		case "/bomb":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
			zw.Write(make([]byte, 64<<20)) // 64 MiB of zeros, some 64 KiB on the wire
			zw.Close()
		case "/br":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "br")
			io.WriteString(w, "xx")
		case "/image":
			w.Header().Set("Content-Type", "image/png")
			io.WriteString(w, "\x89PNG")
		case "/notype":
			w.Header()["Content-Type"] = nil
			io.WriteString(w, "\x00\x01")
		case "/utf8":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "ab€") // € is 3 bytes
		}
	}))
	t.Cleanup(s.Close)
	c := newClient(t, allowing(t, s, &Options{MaxBodyBytes: 100_000}))
	resp, err := c.Fetch(t.Context(), s.URL+"/big", nil)
	if err != nil || len(resp.Body) != 100_000 || !resp.Truncated {
		t.Fatalf("big: %d bytes, truncated %v, %v", len(resp.Body), resp.Truncated, err)
	}
	resp, err = c.Fetch(t.Context(), s.URL+"/big", &FetchOptions{MaxBytes: 10})
	if err != nil || resp.Body != "abcdefghab" || !resp.Truncated {
		t.Fatalf("big/10: %+v, %v", resp, err)
	}
	resp, err = c.Fetch(t.Context(), s.URL+"/big", &FetchOptions{MaxBytes: 1 << 30})
	if err != nil || len(resp.Body) != 100_000 {
		t.Fatalf("MaxBytes over the client's cap: %d bytes, %v", len(resp.Body), err)
	}
	resp, err = c.Fetch(t.Context(), s.URL+"/gzip", nil)
	if err != nil || resp.Body != `{"compressed":true}` || resp.Truncated {
		t.Fatalf("gzip: %+v, %v", resp, err)
	}
	// With the default cap of 1 MiB, the ratio trips first.
	_, err = newClient(t, allowing(t, s, nil)).Fetch(t.Context(), s.URL+"/bomb", nil)
	wantCode(t, err, CodeTooLarge, "MaxDecodeRatio")
	// Under a small cap, the bomb is cut at the cap.
	resp, err = c.Fetch(t.Context(), s.URL+"/bomb", &FetchOptions{MaxBytes: 1000})
	if err != nil || len(resp.Body) != 1000 || !resp.Truncated {
		t.Fatalf("bomb under a small cap: %d bytes, %v", len(resp.Body), err)
	}
	_, err = c.Fetch(t.Context(), s.URL+"/br", nil)
	wantCode(t, err, CodeContentType, "br")
	_, err = c.Fetch(t.Context(), s.URL+"/image", nil)
	wantCode(t, err, CodeContentType, `"image/png"`)
	_, err = c.Fetch(t.Context(), s.URL+"/notype", nil)
	wantCode(t, err, CodeContentType, "not declared")
	resp, err = c.Fetch(t.Context(), s.URL+"/utf8", &FetchOptions{MaxBytes: 4})
	if err != nil || resp.Body != "ab" || !resp.Truncated {
		t.Fatalf("a rune cut by the limit: %q, %v", resp.Body, err)
	}
}

func TestContentTypes(t *testing.T) {
	tests := []struct {
		ct string
		ok bool
	}{
		{"text/html; charset=utf-8", true},
		{"TEXT/PLAIN", true},
		{"application/json", true},
		{"application/ld+json", true},
		{"application/atom+xml", true},
		{"application/xml", true},
		{"application/octet-stream", false},
		{"image/svg+xml", false},
		{"application/jsonx", false},
		{"", false},
		{"text", false},
	}
	for _, tt := range tests {
		if _, ok := mediaTypeAllowed(tt.ct, DefaultContentTypes); ok != tt.ok {
			t.Errorf("%q: allowed %v, want %v", tt.ct, ok, tt.ok)
		}
	}
}

func TestHostLists(t *testing.T) {
	pins := Pins{}
	for _, h := range []string{"api.example.com", "example.com", "evil.com", "a.b.example.com", "blocked.example.com"} {
		pins[h] = []netip.Addr{netip.MustParseAddr("93.184.216.34")}
	}
	c := newClient(t, &Options{AllowHosts: []string{"*.example.com", "93.184.216.34"}, DenyHosts: []string{"blocked.example.com"},
		Resolver: pins.Resolver(noAnswers{})})
	for u, code := range map[string]tool.Code{
		"https://api.example.com/":     "",
		"https://a.b.example.com/":     "",
		"https://API.Example.COM./":    "",
		"https://93.184.216.34/":       "",
		"https://example.com/":         CodeDenied, // the apex is not *.example.com
		"https://evil.com/":            CodeDenied,
		"https://blocked.example.com/": CodeDenied,
		"https://8.8.8.8/":             CodeDenied,
	} {
		err := c.Check(t.Context(), u)
		if code == "" {
			if err != nil {
				t.Errorf("%s: %v", u, err)
			}
			continue
		}
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != code {
			t.Errorf("%s: got %v, want %s", u, err, code)
		}
	}
	for _, bad := range []string{"*", "a/b", "*.*.com", "user@host"} {
		if _, err := NewClient(&Options{AllowHosts: []string{bad}}); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []*Options{
		{Schemes: []string{"ftp"}},
		{Ports: []int{0}},
		{Ports: []int{70000}},
		{ContentTypes: []string{"text"}},
		{Credentials: []Credential{{Host: "*.example.com", Value: "x"}}},
		{Credentials: []Credential{{Host: "example.com", Value: ""}}},
		{Credentials: []Credential{{Host: "example.com", Value: "a\r\nb"}}},
		{Credentials: []Credential{{Host: "example.com", Header: "Host", Value: "abc"}}},
	} {
		if _, err := NewClient(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestDefaults(t *testing.T) {
	c := newClient(t, nil)
	got := c.opts
	if got.ConnectTimeout != DefaultConnectTimeout || got.HeaderTimeout != DefaultHeaderTimeout || got.Timeout != DefaultTimeout ||
		got.TunnelTimeout != DefaultTunnelTimeout || got.MaxRedirects != DefaultMaxRedirects || got.MaxBodyBytes != DefaultMaxBodyBytes ||
		got.MaxDecodeRatio != DefaultMaxDecodeRatio || len(got.ContentTypes) != len(DefaultContentTypes) {
		t.Fatalf("defaults: %+v", got)
	}
	if !bytes.Equal([]byte(c.pol.summary), []byte("only public hosts on ports 80 and 443 are allowed")) {
		t.Fatalf("summary %q", c.pol.summary)
	}
	// Only http and https schemes, ports 80 and 443.
	wantCode(t, c.Check(t.Context(), "https://8.8.8.8:8443/"), CodeDenied, "port 8443")
	if err := c.Check(t.Context(), "https://8.8.8.8/"); err != nil {
		t.Fatal(err)
	}
	c = newClient(t, &Options{Schemes: []string{"https"}})
	wantCode(t, c.Check(t.Context(), "http://8.8.8.8/"), CodeDenied, "scheme http")
}

// TestZeroClientRefuses: the zero Client fails closed.
func TestZeroClientRefuses(t *testing.T) {
	var c Client
	wantCode(t, c.Check(t.Context(), "https://93.184.216.34/"), CodeDenied, "not configured")
	_, err := c.Fetch(t.Context(), "https://93.184.216.34/", nil)
	wantCode(t, err, CodeDenied, "not configured")
	_, err = c.DialContext(t.Context(), "tcp", "93.184.216.34:443")
	wantCode(t, err, CodeDenied, "not configured")
}

// TestResolverMappedAnswers: an IPv4-mapped answer is judged as the IPv4
// address it is.
func TestResolverMappedAnswers(t *testing.T) {
	c := newClient(t, &Options{Resolver: Pins{
		"mapped-public.example": {netip.MustParseAddr("::ffff:93.184.216.34")},
		"mapped-lo.example":     {netip.MustParseAddr("::ffff:127.0.0.1")},
	}.Resolver(noAnswers{})})
	if _, addrs, e := c.resolveTarget(t.Context(), "https://mapped-public.example/"); e != nil || len(addrs) != 1 || !addrs[0].Is4() {
		t.Fatalf("got %v, %v; want the IPv4 address", addrs, e)
	}
	_, _, e := c.resolveTarget(t.Context(), "https://mapped-lo.example/")
	wantCode(t, e, CodeDenied, "127.0.0.1, a loopback address")
}

// TestDialOrderAndFallback: IPv4 answers are dialed first, and a failed
// address falls back to the next one checked.
func TestDialOrderAndFallback(t *testing.T) {
	s := textServer(t, "dual", nil)
	// ::1 stands in for a public IPv6 address; the server listens on
	// 127.0.0.1 only.
	c := newClient(t, allowing(t, s, &Options{AllowAddrs: []netip.Prefix{netip.MustParsePrefix("::1/128")},
		Resolver: Pins{"dual.example": {netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}}.Resolver(noAnswers{})}))
	var dialed []string
	inner := c.dialer.Control
	c.dialer.Control = func(network, address string, rc syscall.RawConn) error {
		dialed = append(dialed, address)
		return inner(network, address, rc)
	}
	if _, err := c.Fetch(t.Context(), fmt.Sprintf("http://dual.example:%d/", serverPort(t, s)), nil); err != nil {
		t.Fatal(err)
	}
	if len(dialed) != 1 || !strings.HasPrefix(dialed[0], "127.0.0.1:") {
		t.Fatalf("dialed %v, want 127.0.0.1 first", dialed)
	}
	// A closed first address falls back to the next.
	closed := textServer(t, "", nil)
	closed.Close()
	c = newClient(t, &Options{Ports: []int{serverPort(t, s)}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Resolver: Pins{"two.example": {netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.1")}}.Resolver(noAnswers{})})
	resp, err := c.Fetch(t.Context(), fmt.Sprintf("http://two.example:%d/", serverPort(t, s)), nil)
	if err != nil || resp.Body != "dual" {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

// TestSameHostRedirects: with FetchOptions.SameHost a redirect within
// the host is followed, and one to another host is returned, unvisited
// and its name unresolved, with its Location.
func TestSameHostRedirects(t *testing.T) {
	var otherHits atomic.Int32
	other := textServer(t, "other", &otherHits)
	mux := http.NewServeMux()
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	away := fmt.Sprintf("http://other.example:%d/x?d=secret", serverPort(t, other))
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, away, http.StatusFound) })
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/final", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/final", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "arrived")
	})
	r := &countingResolver{addr: netip.MustParseAddr("127.0.0.1")}
	o := allowing(t, s, &Options{Ports: []int{serverPort(t, other)}, Resolver: r})
	c := newClient(t, o)

	resp, err := c.Fetch(t.Context(), s.URL+"/here", &FetchOptions{SameHost: true})
	if err != nil || resp.Body != "arrived" {
		t.Fatalf("a redirect within the host: %+v, %v; want it followed", resp, err)
	}
	resp, err = c.Fetch(t.Context(), s.URL+"/away", &FetchOptions{SameHost: true})
	if err != nil || resp.Status != http.StatusFound || resp.Location != away || otherHits.Load() != 0 || r.queries.Load() != 0 {
		t.Fatalf("a redirect to another host: %+v, %v, %d hits and %d lookups there; want the 302 and its Location, nothing sent or resolved",
			resp, err, otherHits.Load(), r.queries.Load())
	}
	resp, err = c.Fetch(t.Context(), s.URL+"/away", nil)
	if err != nil || resp.Body != "other" || otherHits.Load() != 1 {
		t.Fatalf("without SameHost: %+v, %v; want the redirect followed", resp, err)
	}
}
