package egress

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const testToken = "Bearer ghp_0123456789abcdefghijklmnopqrstuvwxyz"

// echoServer answers with the Authorization header it received, and
// records what each path saw.
type echoServer struct {
	mu   sync.Mutex
	seen map[string]string
}

func (e *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.seen[r.Host+r.URL.Path] = r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
	e.mu.Unlock()
	if strings.HasPrefix(r.URL.Path, "/to/") {
		http.Redirect(w, r, "https://"+strings.TrimPrefix(r.URL.Path, "/to/")+"/landed", http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Echo", r.Header.Get("Authorization"))
	fmt.Fprintf(w, "you sent: %s", r.Header.Get("Authorization"))
}

func (e *echoServer) got(key string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen[key]
}

func TestCredentialInjection(t *testing.T) {
	echo := &echoServer{seen: map[string]string{}}
	s := httptest.NewTLSServer(echo)
	t.Cleanup(s.Close)
	plain := httptest.NewServer(echo)
	t.Cleanup(plain.Close)
	port, plainPort := serverPort(t, s), serverPort(t, plain)
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	// httptest's certificate is for example.com; other.example.com is
	// accepted here too, so that only the credential's host differs.
	tlsConf := s.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsConf.InsecureSkipVerify = true
	c := newClient(t, &Options{
		Ports: []int{port, plainPort}, AllowAddrs: []netip.Prefix{loopback}, TLS: tlsConf,
		Resolver:    Pins{"example.com": lo, "other.example.com": lo, "sub.example.com": lo}.Resolver(noAnswers{}),
		Credentials: []Credential{{Host: "example.com", Value: testToken}},
	})
	resp, err := c.Fetch(t.Context(), fmt.Sprintf("https://example.com:%d/api", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := echo.got(fmt.Sprintf("example.com:%d/api", port)); got != testToken {
		t.Fatalf("the server got %q, want the injected token", got)
	}
	if strings.Contains(resp.Body, "ghp_") || !strings.Contains(resp.Body, Masked) {
		t.Fatalf("the echoed token is not masked: %q", resp.Body)
	}
	// Another host, a subdomain, plain http: nothing.
	for _, u := range []string{
		fmt.Sprintf("https://other.example.com:%d/api", port),
		fmt.Sprintf("https://sub.example.com:%d/api", port),
		fmt.Sprintf("http://example.com:%d/plain", plainPort),
	} {
		if _, err := c.Fetch(t.Context(), u, nil); err != nil {
			t.Fatal(u, err)
		}
	}
	for _, k := range []string{
		fmt.Sprintf("other.example.com:%d/api", port), fmt.Sprintf("sub.example.com:%d/api", port),
		fmt.Sprintf("example.com:%d/plain", plainPort),
	} {
		if got := echo.got(k); got != "" {
			t.Errorf("%s got the credential %q", k, got)
		}
	}
	// A redirect from the credential's host to another carries nothing on.
	if _, err := c.Fetch(t.Context(), fmt.Sprintf("https://example.com:%d/to/other.example.com:%d", port, port), nil); err != nil {
		t.Fatal(err)
	}
	if got := echo.got(fmt.Sprintf("other.example.com:%d/landed", port)); got != "" {
		t.Fatalf("the redirect target got %q", got)
	}
	// The proxy's transport masks an echo in the response header.
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://example.com:%d/h", port), nil)
	hr, err := c.transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if h := hr.Header.Get("X-Echo"); h != Masked {
		t.Fatalf("X-Echo = %q", h)
	}
	if req.Header.Get("Authorization") != "" {
		t.Fatal("the caller's request was changed")
	}
	if v := c.InjectedValues(); len(v) != 1 || v[0] != testToken {
		t.Fatalf("InjectedValues = %v", v)
	}
	if s := fmt.Sprint(Credential{Host: "example.com", Header: "Authorization", Value: testToken}); strings.Contains(s, "ghp_") {
		t.Fatalf("String shows the value: %s", s)
	}
}

func TestCredentialAllowHTTP(t *testing.T) {
	echo := &echoServer{seen: map[string]string{}}
	s := httptest.NewServer(echo)
	t.Cleanup(s.Close)
	c := newClient(t, allowing(t, s, &Options{
		Resolver:    Pins{"example.com": {netip.MustParseAddr("127.0.0.1")}}.Resolver(noAnswers{}),
		Credentials: []Credential{{Host: "example.com", Header: "x-api-key", Value: "k-0123456789", AllowHTTP: true}},
	}))
	port := serverPort(t, s)
	if _, err := c.Fetch(t.Context(), fmt.Sprintf("http://example.com:%d/", port), nil); err != nil {
		t.Fatal(err)
	}
	if got := echo.got(fmt.Sprintf("example.com:%d/", port)); got != "k-0123456789" {
		t.Fatalf("the server got %q over http, which the credential allows", got)
	}
}

func TestLoadCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	env := func(k string) string { return map[string]string{"GH": "Bearer from-env-123"}[k] }
	good := write("good.yaml", "credentials:\n  - host: api.github.com\n    env: GH\n  - host: api.example.com\n    header: X-Key\n    value: literal-value\n  - server: github\n    variable: GITHUB_TOKEN\n    env: GH\n", 0o600)
	cs, err := LoadCredentials(good, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 || cs[0].Value != "Bearer from-env-123" || cs[1].Header != "X-Key" || cs[2].Variable != "GITHUB_TOKEN" || cs[2].Value != "Bearer from-env-123" {
		t.Fatalf("got %v", cs)
	}
	for name, tc := range map[string]struct {
		body string
		mode os.FileMode
		says string
	}{
		"open.yaml":    {"credentials: []\n", 0o644, "chmod 600"},
		"unset.yaml":   {"credentials:\n  - host: a.com\n    env: NOPE\n", 0o600, "NOPE is empty"},
		"both.yaml":    {"credentials:\n  - host: a.com\n    env: GH\n    value: x\n", 0o600, "not both"},
		"unknown.yaml": {"credentials:\n  - host: a.com\n    token: x\n", 0o600, "token"},
		"wild.yaml":    {"credentials:\n  - host: '*.a.com'\n    value: xxxxxxxx\n", 0o600, "exact host"},
		"half.yaml":    {"credentials:\n  - server: github\n    value: xxxxxxxx\n", 0o600, "names both server and variable"},
		"mixed.yaml":   {"credentials:\n  - server: github\n    variable: T\n    host: a.com\n    value: xxxxxxxx\n", 0o600, "no host or header"},
		"big.yaml":     {strings.Repeat("#", MaxCredentialsFileBytes+1), 0o600, "MaxCredentialsFileBytes"},
	} {
		_, err := LoadCredentials(write(name, tc.body, tc.mode), env)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: got %v, want it to say %q", name, err, tc.says)
		}
	}
	if _, err := LoadCredentials(filepath.Join(dir, "missing"), env); err == nil {
		t.Error("a missing file loaded")
	}
}

// TestHeadersFor: the headers for a URL follow web_fetch's rule: exact
// host, https unless allow_http; an upstream's variable is never a header.
func TestHeadersFor(t *testing.T) {
	creds := []Credential{
		{Host: "api.example.com", Value: "Bearer https-only-1234"},
		{Host: "plain.example.com", Header: "x-key", Value: "plain-allowed-1234", AllowHTTP: true},
		{Server: "github", Variable: "GITHUB_TOKEN", Value: "variable-only-1234"},
	}
	for _, tc := range []struct {
		url, header, want string
	}{
		{"https://api.example.com/mcp", "Authorization", "Bearer https-only-1234"},
		{"https://API.example.com:8443/mcp", "Authorization", "Bearer https-only-1234"},
		{"http://api.example.com/mcp", "Authorization", ""},
		{"https://sub.api.example.com/mcp", "Authorization", ""},
		{"http://plain.example.com/mcp", "X-Key", "plain-allowed-1234"},
	} {
		u, _ := url.Parse(tc.url)
		h, err := HeadersFor(creds, u)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Get(tc.header); got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.url, tc.header, got, tc.want)
		}
		for _, vs := range h {
			for _, v := range vs {
				if v == "variable-only-1234" {
					t.Errorf("%s: an upstream's variable became a header", tc.url)
				}
			}
		}
	}
	if _, err := HeadersFor([]Credential{{Host: "*.x.com", Value: "v-1234567"}}, &url.URL{Scheme: "https", Host: "a.x.com"}); err == nil {
		t.Error("a credential with a wildcard host was accepted")
	}
}
