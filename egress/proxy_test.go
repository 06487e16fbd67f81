package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// proxyClient is an http.Client that sends everything through the proxy.
func proxyClient(t *testing.T, proxy *httptest.Server, tr *http.Transport) *http.Client {
	t.Helper()
	pu, _ := url.Parse(proxy.URL)
	if tr == nil {
		tr = &http.Transport{}
	}
	tr.Proxy = http.ProxyURL(pu)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestProxyForwardsAllowed(t *testing.T) {
	upstream := textServer(t, "through the proxy", nil)
	// The proxy's policy allows the upstream's loopback address and port.
	p := httptest.NewServer(NewProxy(newClient(t, allowing(t, upstream, nil))))
	t.Cleanup(p.Close)
	resp, err := proxyClient(t, p, nil).Get(upstream.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "through the proxy" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
}

func TestProxyRefuses(t *testing.T) {
	var hits atomic.Int32
	upstream := textServer(t, "internal", &hits)
	port := serverPort(t, upstream)
	// The port is allowed, loopback is not (the default).
	c := newClient(t, &Options{Ports: []int{80, 443, port},
		Resolver: Pins{"sneaky.example": {netip.MustParseAddr("127.0.0.1")}}.Resolver(noAnswers{})})
	p := httptest.NewServer(NewProxy(c))
	t.Cleanup(p.Close)
	hc := proxyClient(t, p, nil)
	for _, tc := range []struct {
		url, code, says string
		status          int
	}{
		{upstream.URL, string(CodeDenied), "loopback", 403},
		{fmt.Sprintf("http://sneaky.example:%d/", port), string(CodeDenied), "resolves to 127.0.0.1", 403},
		{"http://169.254.169.254/latest/meta-data/", string(CodeDenied), "metadata", 403},
		{"http://10.0.0.5/", string(CodeDenied), "private", 403},
		{"http://nowhere.example/", string(CodeUnresolvable), "does not resolve", 502},
		{"http://8.8.8.8:22/", string(CodeDenied), "port 22", 403},
	} {
		resp, err := hc.Get(tc.url)
		if err != nil {
			t.Fatal(tc.url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get(ErrorHeader) != tc.code || !strings.Contains(string(body), tc.says) ||
			!strings.Contains(string(body), "hint: ") {
			t.Errorf("%s: got %d %s %q", tc.url, resp.StatusCode, resp.Header.Get(ErrorHeader), body)
		}
	}
	if hits.Load() != 0 {
		t.Fatal("the internal server was reached through the proxy")
	}
}

// connect sends a raw CONNECT and returns the proxy's status line and
// header.
func connect(t *testing.T, proxy *httptest.Server, target string) (*http.Response, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(proxy.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatal(err)
	}
	return resp, conn
}

func TestProxyConnect(t *testing.T) {
	var hits atomic.Int32
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "tunnelled")
	}))
	t.Cleanup(upstream.Close)
	port := serverPort(t, upstream)

	// Refused: loopback by default, metadata, private, a bad port.
	denying := httptest.NewServer(NewProxy(newClient(t, &Options{Ports: []int{443, port}})))
	t.Cleanup(denying.Close)
	for target, says := range map[string]string{
		fmt.Sprintf("127.0.0.1:%d", port): "loopback",
		"169.254.169.254:443":             "metadata",
		"[fd00:ec2::254]:443":             "metadata",
		"10.0.0.5:443":                    "private",
		"8.8.8.8:25":                      "port 25",
	} {
		resp, _ := connect(t, denying, target)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 4 || !strings.Contains(string(body), says) || resp.Header.Get(ErrorHeader) == "" {
			t.Errorf("CONNECT %s: got %d %q", target, resp.StatusCode, body)
		}
	}
	if hits.Load() != 0 {
		t.Fatal("a refused CONNECT reached the server")
	}

	// Allowed: an https client tunnels through and speaks TLS end to end.
	allowing := httptest.NewServer(NewProxy(newClient(t, allowing(t, upstream, nil))))
	t.Cleanup(allowing.Close)
	tr := upstream.Client().Transport.(*http.Transport).Clone()
	resp, err := proxyClient(t, allowing, tr).Get(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "tunnelled" || hits.Load() != 1 {
		t.Fatalf("got %d %q, %d hits", resp.StatusCode, body, hits.Load())
	}
}

func TestProxyOriginFormRefused(t *testing.T) {
	p := httptest.NewServer(NewProxy(newClient(t, nil)))
	t.Cleanup(p.Close)
	resp, err := http.Get(p.URL + "/not-a-proxy-request")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Header.Get(ErrorHeader) != string(CodeInvalidURL) {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Header.Get(ErrorHeader))
	}
}

// TestProxyCredentials: a plain http request for a host with an https-only
// credential goes on over https with the credential; the command never
// sees it, and another host gets nothing.
func TestProxyCredentials(t *testing.T) {
	echo := &echoServer{seen: map[string]string{}}
	upstream := httptest.NewTLSServer(echo)
	t.Cleanup(upstream.Close)
	port := serverPort(t, upstream)
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	tlsConf := upstream.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsConf.InsecureSkipVerify = true // other.example.com shares example.com's test certificate
	c := newClient(t, &Options{Ports: []int{port}, AllowAddrs: []netip.Prefix{loopback}, TLS: tlsConf,
		Resolver:    Pins{"example.com": lo, "other.example.com": lo}.Resolver(noAnswers{}),
		Credentials: []Credential{{Host: "example.com", Value: testToken}}})
	p := httptest.NewServer(NewProxy(c))
	t.Cleanup(p.Close)
	hc := proxyClient(t, p, nil)
	resp, err := hc.Get(fmt.Sprintf("http://example.com:%d/api", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := echo.got(fmt.Sprintf("example.com:%d/api", port)); got != testToken {
		t.Fatalf("upstream got %q (status %d %q)", got, resp.StatusCode, body)
	}
	if resp.Header.Get("X-Echo") != Masked {
		t.Fatalf("the echoed header reached the command: %q", resp.Header.Get("X-Echo"))
	}
	// The body streams through unchanged: the proxy does not rewrite
	// downloads. The fetch client masks bodies; the lead's redactor gets
	// InjectedValues for the rest.
	if !strings.Contains(string(body), "you sent: ") {
		t.Fatalf("body %q", body)
	}
	// Another host, over plain http: no upgrade; the upstream speaks TLS
	// only, so it answers the plain request with 400.
	resp, err = hc.Get(fmt.Sprintf("http://other.example.com:%d/api", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("other.example.com: status %d, want the TLS server's 400 to a plain request (no upgrade)", resp.StatusCode)
	}
}

func TestProxyServe(t *testing.T) {
	upstream := textServer(t, "served", nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- NewProxy(newClient(t, allowing(t, upstream, nil))).Serve(ctx, l) }()
	pu, _ := url.Parse("http://" + l.Addr().String())
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}, Timeout: 10 * time.Second}
	resp, err := hc.Get(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "served" {
		t.Fatalf("got %q", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

// TestProxyUnreachable: an allowed host that refuses the connection is a
// 502 with the reason, for CONNECT and for a forwarded request.
func TestProxyUnreachable(t *testing.T) {
	closed := textServer(t, "", nil)
	closed.Close()
	p := httptest.NewServer(NewProxy(newClient(t, allowing(t, closed, nil))))
	t.Cleanup(p.Close)
	resp, _ := connect(t, p, strings.TrimPrefix(closed.URL, "http://"))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(ErrorHeader) != string(CodeConnectionFailed) {
		t.Fatalf("CONNECT: %d %q", resp.StatusCode, body)
	}
	resp, err := proxyClient(t, p, nil).Get(closed.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(ErrorHeader) != string(CodeConnectionFailed) {
		t.Fatalf("forward: %d %s", resp.StatusCode, resp.Header.Get(ErrorHeader))
	}
}

// TestProxyHopHeaders: hop-by-hop headers and those Connection names stop
// at the proxy.
func TestProxyHopHeaders(t *testing.T) {
	seen := make(chan http.Header, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Content-Type", "text/plain")
	}))
	t.Cleanup(upstream.Close)
	p := httptest.NewServer(NewProxy(newClient(t, allowing(t, upstream, nil))))
	t.Cleanup(p.Close)
	req, _ := http.NewRequest("GET", upstream.URL, nil)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	req.Header.Set("Connection", "X-Private")
	req.Header.Set("X-Private", "drop me")
	req.Header.Set("X-Kept", "keep me")
	resp, err := proxyClient(t, p, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-seen
	if h.Get("Proxy-Authorization") != "" || h.Get("X-Private") != "" || h.Get("X-Kept") != "keep me" {
		t.Fatalf("upstream saw %v", h)
	}
}
