package native

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/sandbox/sandboxtest"
)

// proxyFixture is an egress proxy on a unix socket whose policy allows
// exactly one loopback test server, another loopback server it refuses,
// and a workspace holding the probe.
type proxyFixture struct {
	sock         string // the proxy's unix socket
	ws           string // the workspace, with /workspace/probe
	probe        string // the probe on the host, for the controls
	allowed      *httptest.Server
	other        *httptest.Server
	allowedHits  atomic.Int32
	otherHits    atomic.Int32
	allowedPort  int
	otherPort    int
	allowedURL   string // by a name only the proxy resolves
	otherURL     string
	allowedToken string
}

func buildProxyProbe(t testing.TB) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the proxy tests build their probe with the go command, which is not in PATH: install Go (%v)", err)
	}
	out := filepath.Join(t.TempDir(), "proxyprobe")
	cmd := exec.Command(goCmd, "build", "-trimpath", "-o", out, "./testdata/proxyprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, b)
	}
	return out
}

// serveProxy serves an egress proxy for c on a new unix socket until the
// test ends, and returns the socket's path.
func serveProxy(t testing.TB, c *egress.Client) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- egress.NewProxy(c).Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("the egress proxy: %v", err)
		}
	})
	return sock
}

func newProxyFixture(t testing.TB) *proxyFixture {
	t.Helper()
	f := &proxyFixture{probe: buildProxyProbe(t), allowedToken: "allowed-" + strconv.Itoa(os.Getpid())}
	f.allowed = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.allowedHits.Add(1)
		fmt.Fprint(w, f.allowedToken)
	}))
	t.Cleanup(f.allowed.Close)
	f.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.otherHits.Add(1)
		fmt.Fprint(w, "other")
	}))
	t.Cleanup(f.other.Close)
	f.allowedPort = f.allowed.Listener.Addr().(*net.TCPAddr).Port
	f.otherPort = f.other.Listener.Addr().(*net.TCPAddr).Port
	// Names, not 127.0.0.1: HTTP clients never send a loopback address
	// to a proxy, and inside the sandbox nothing resolves them.
	f.allowedURL = fmt.Sprintf("http://allowed.test:%d/x", f.allowedPort)
	f.otherURL = fmt.Sprintf("http://other.test:%d/x", f.otherPort)
	lo := netip.MustParseAddr("127.0.0.1")
	c, err := egress.NewClient(&egress.Options{
		Schemes:    []string{"http"},
		Ports:      []int{f.allowedPort},
		AllowHosts: []string{"allowed.test"},
		AllowAddrs: []netip.Prefix{netip.PrefixFrom(lo, 32)},
		Resolver:   egress.Pins{"allowed.test": {lo}, "other.test": {lo}}.Resolver(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.sock = serveProxy(t, c)
	f.ws = t.TempDir()
	b, err := os.ReadFile(f.probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "probe"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs the probe in the sandbox with args.
func (f *proxyFixture) run(t *testing.T, sb *Sandbox, network sandbox.Network, args ...string) sandbox.Result {
	t.Helper()
	spec := sandbox.Spec{Argv: append([]string{"/workspace/probe"}, args...), Workspace: f.ws, Network: network,
		Limits: sandbox.Limits{Wall: 30 * time.Second}}
	if network == sandbox.NetworkProxy {
		spec.Proxy = f.sock
	}
	r, err := sb.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("%s %q: %v", network, args, err)
	}
	return r
}

// host runs the probe outside the sandbox: the control that shows an
// attempt can succeed, so that a denial inside means something.
func (f *proxyFixture) host(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(f.probe, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("control: probe %q on the host failed, so the test proves nothing: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestProxyMode(t *testing.T) {
	f := newProxyFixture(t)
	sb := newNative(t, nil)
	loAllowed := "127.0.0.1:" + strconv.Itoa(f.allowedPort)
	loOther := "127.0.0.1:" + strconv.Itoa(f.otherPort)

	t.Run("allowed server through the proxy", func(t *testing.T) {
		before := f.allowedHits.Load()
		r := f.run(t, sb, sandbox.NetworkProxy, "get", f.allowedURL)
		out := string(r.Stdout)
		if r.ExitCode != 0 || !strings.HasPrefix(out, "status 200") || !strings.Contains(out, f.allowedToken) {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.ExitCode, out, r.Stderr)
		}
		if f.allowedHits.Load() != before+1 {
			t.Errorf("the allowed server saw %d requests, want 1", f.allowedHits.Load()-before)
		}
		if !r.Has(sandbox.LayerEgressProxy) || !r.Has(sandbox.LayerNetNS) || !r.Has(sandbox.LayerLandlock) || !r.Has(sandbox.LayerSeccomp) {
			t.Errorf("Enforced %q lacks egress_proxy, netns, landlock or seccomp", r.Enforced)
		}
	})
	t.Run("other server refused by the proxy", func(t *testing.T) {
		r := f.run(t, sb, sandbox.NetworkProxy, "get", f.otherURL)
		out := string(r.Stdout)
		if r.ExitCode != 0 || !strings.HasPrefix(out, "status 403 "+string(egress.CodeDenied)) {
			t.Fatalf("exit %d, stdout %q, stderr %q; want a 403 %s", r.ExitCode, out, r.Stderr, egress.CodeDenied)
		}
		if n := f.otherHits.Load(); n != 0 {
			t.Errorf("the refused server was reached %d times", n)
		}
	})
	t.Run("direct connections denied by Landlock", func(t *testing.T) {
		for _, addr := range []string{loAllowed, loOther} {
			f.host(t, "tcp", addr)
			r := f.run(t, sb, sandbox.NetworkProxy, "tcp", addr)
			if r.ExitCode != 1 || !strings.Contains(string(r.Stdout), "permission denied") {
				t.Errorf("tcp %s: exit %d, stdout %q; want Landlock's permission denied", addr, r.ExitCode, r.Stdout)
			}
		}
	})
	t.Run("bind denied by Landlock", func(t *testing.T) {
		f.host(t, "bind", "127.0.0.1:0")
		r := f.run(t, sb, sandbox.NetworkProxy, "bind", "127.0.0.1:0")
		if r.ExitCode != 1 || !strings.Contains(string(r.Stdout), "permission denied") {
			t.Errorf("bind: exit %d, stdout %q; want Landlock's permission denied", r.ExitCode, r.Stdout)
		}
	})
	t.Run("direct connections find another network namespace", func(t *testing.T) {
		// Landlock off: the connect is allowed, and finds nothing there,
		// for the host's servers are in another network namespace.
		bare := newNative(t, nil)
		bare.skip = map[sandbox.Layer]bool{sandbox.LayerLandlock: true}
		before := f.allowedHits.Load()
		r := f.run(t, bare, sandbox.NetworkProxy, "tcp", loAllowed)
		if r.ExitCode != 1 || !strings.Contains(string(r.Stdout), "connection refused") || r.Has(sandbox.LayerLandlock) {
			t.Errorf("without Landlock: exit %d, stdout %q, Enforced %q; want connection refused", r.ExitCode, r.Stdout, r.Enforced)
		}
		// The relay still works there, so the refusal is not a broken loopback.
		r = f.run(t, bare, sandbox.NetworkProxy, "get", f.allowedURL)
		if !strings.HasPrefix(string(r.Stdout), "status 200") {
			t.Errorf("without Landlock, the relay: stdout %q stderr %q", r.Stdout, r.Stderr)
		}
		if got := f.allowedHits.Load() - before; got != 1 {
			t.Errorf("the allowed server saw %d requests, want only the proxied one", got)
		}
	})
	t.Run("udp and raw sockets denied by seccomp", func(t *testing.T) {
		for _, args := range [][]string{{"udp", loAllowed}, {"raw"}} {
			f.host(t, args...)
			r := f.run(t, sb, sandbox.NetworkProxy, args...)
			if r.ExitCode != 1 || !strings.Contains(string(r.Stdout), "operation not permitted") {
				t.Errorf("%q: exit %d, stdout %q; want seccomp's operation not permitted", args, r.ExitCode, r.Stdout)
			}
		}
	})
	t.Run("environment", func(t *testing.T) {
		spec := sandbox.Spec{Argv: []string{"/bin/sh", "-c", "echo $HTTP_PROXY $HTTPS_PROXY $http_proxy $https_proxy; echo ${ALL_PROXY:-unset}"},
			Network: sandbox.NetworkProxy, Proxy: f.sock, Env: []string{"https_proxy=http://mine:1"}}
		r, err := sb.Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		p := "http://" + sandbox.ProxyAddr
		if want := p + " " + p + " " + p + " http://mine:1\nunset\n"; string(r.Stdout) != want {
			t.Errorf("got %q, want %q", r.Stdout, want)
		}
	})
}

// TestNoProxyWithoutProxyMode: with NetworkNone, none of it works: the
// probe cannot open the socket (seccomp), and with the filter and
// Landlock off the relay's port is closed, loopback not even up.
func TestNoProxyWithoutProxyMode(t *testing.T) {
	f := newProxyFixture(t)
	before := f.allowedHits.Load()
	sb := newNative(t, nil)
	r := f.run(t, sb, sandbox.NetworkNone, "tcp", sandbox.ProxyAddr)
	if r.ExitCode != 1 || !strings.Contains(string(r.Stdout), "operation not permitted") || r.Has(sandbox.LayerEgressProxy) {
		t.Errorf("none: exit %d, stdout %q, Enforced %q", r.ExitCode, r.Stdout, r.Enforced)
	}
	bare := newNative(t, nil)
	bare.skip = map[sandbox.Layer]bool{sandbox.LayerLandlock: true, sandbox.LayerSeccomp: true}
	r = f.run(t, bare, sandbox.NetworkNone, "tcp", sandbox.ProxyAddr)
	if r.ExitCode != 1 || !strings.Contains(string(r.Stdout), "network is unreachable") {
		t.Errorf("none, no filters: exit %d, stdout %q; want network is unreachable", r.ExitCode, r.Stdout)
	}
	spec := sandbox.Spec{Argv: []string{"/workspace/probe", "get", f.allowedURL}, Workspace: f.ws,
		Env: []string{"HTTP_PROXY=http://" + sandbox.ProxyAddr}}
	r, err := bare.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 1 || !strings.HasPrefix(string(r.Stdout), "denied:") {
		t.Errorf("none, a proxy in the environment: exit %d, stdout %q", r.ExitCode, r.Stdout)
	}
	if f.allowedHits.Load() != before {
		t.Error("the allowed server was reached without proxy mode")
	}
}

func TestProxyAddrMatchesPort(t *testing.T) {
	if want := "127.0.0.1:" + strconv.Itoa(sandbox.ProxyPort); sandbox.ProxyAddr != want {
		t.Fatalf("sandbox.ProxyAddr is %q, but ProxyPort makes it %q", sandbox.ProxyAddr, want)
	}
}

func TestProxySpecRefusals(t *testing.T) {
	sb := newNative(t, nil)
	notSock := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notSock, nil, 0o600)
	for _, c := range []struct {
		name string
		spec sandbox.Spec
		says string
	}{
		{"proxy without socket", sandbox.Spec{Network: sandbox.NetworkProxy}, "needs Proxy"},
		{"proxy relative socket", sandbox.Spec{Network: sandbox.NetworkProxy, Proxy: "proxy.sock"}, "needs Proxy"},
		{"socket without proxy", sandbox.Spec{Proxy: "/run/proxy.sock"}, "Network is not"},
		{"socket with none", sandbox.Spec{Network: sandbox.NetworkNone, Proxy: "/run/proxy.sock"}, "Network is not"},
		{"not a socket", sandbox.Spec{Network: sandbox.NetworkProxy, Proxy: notSock}, "not a unix socket"},
		{"missing socket", sandbox.Spec{Network: sandbox.NetworkProxy, Proxy: notSock + ".missing"}, "not a unix socket"},
	} {
		c.spec.Argv = []string{"true"}
		_, err := sb.Run(context.Background(), c.spec)
		var e *sandbox.Error
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !errors.As(err, &e) || !strings.Contains(e.Message, c.says) || e.Hint == "" {
			t.Errorf("%s: got %v, want invalid_spec saying %q with a hint", c.name, err, c.says)
		}
	}
}

// TestProxyUnreachable: a proxy socket nobody serves any more is a 502
// the command can read, naming the code, not a hang.
func TestProxyUnreachable(t *testing.T) {
	f := newProxyFixture(t)
	dead := filepath.Join(t.TempDir(), "dead.sock")
	l, err := net.Listen("unix", dead)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	sb := newNative(t, nil)
	r, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"/workspace/probe", "get", f.allowedURL}, Workspace: f.ws,
		Network: sandbox.NetworkProxy, Proxy: dead})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(r.Stdout), "status 502 "+CodeProxyUnreachable) {
		t.Errorf("exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
}

// BenchmarkProxyRun is the latency of a sandboxed `true` with NetworkNone
// and with NetworkProxy (what the relay's setup adds), and of one fetch
// through the relay and the egress proxy.
func BenchmarkProxyRun(b *testing.B) {
	f := newProxyFixture(b)
	sb, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		network sandbox.Network
		argv    []string
	}{
		{"none", sandbox.NetworkNone, []string{"true"}},
		{"proxy", sandbox.NetworkProxy, []string{"true"}},
		{"proxy-fetch", sandbox.NetworkProxy, []string{"/workspace/probe", "get", f.allowedURL}},
	} {
		b.Run(c.name, func(b *testing.B) {
			spec := sandbox.Spec{Argv: c.argv, Network: c.network, Workspace: f.ws}
			if c.network == sandbox.NetworkProxy {
				spec.Proxy = f.sock
			}
			sandboxtest.Latency(b, sb, func() sandbox.Spec { return spec })
		})
	}
}

// TestRelayLimitAndClose drives the relay on the host as the init would
// (a listener handed over a socket pair): it carries MaxProxyConns
// connections at once, closes the next one at once, and close ends them
// all.
func TestRelayLimitAndClose(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hold.sock")
	pl, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	go func() {
		// The "proxy" echoes one byte then holds the connection open.
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			go func() {
				b := make([]byte, 1)
				if _, err := c.Read(b); err == nil {
					c.Write(b)
				}
				c.Read(b)
				c.Close()
			}()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Sendmsg(fds[1], []byte{0}, unix.UnixRights(int(lf.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	unix.Close(fds[1])
	r, err := startRelay(os.NewFile(uintptr(fds[0]), "ctl"), sock)
	if err != nil {
		t.Fatal(err)
	}
	echo := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte{'x'}); err != nil {
			return err
		}
		b := make([]byte, 1)
		_, err := c.Read(b)
		return err
	}
	var held []net.Conn
	for i := 0; i < MaxProxyConns; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if err := echo(c); err != nil {
			t.Fatalf("connection %d of %d (MaxProxyConns): %v", i+1, MaxProxyConns, err)
		}
	}
	over, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(over); err == nil {
		t.Errorf("connection %d was relayed, past MaxProxyConns", MaxProxyConns+1)
	}
	over.Close()
	done := make(chan struct{})
	go func() { r.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not end the relay's connections")
	}
	for i, c := range held {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("held connection %d still open after close: %v", i, err)
		}
		c.Close()
	}
}

// TestProxyModeHTTPS: https goes through the relay as a CONNECT tunnel;
// the TLS inside is the command's own, checked against the test server's
// certificate (given as SSL_CERT_FILE, which Go reads).
func TestProxyModeHTTPS(t *testing.T) {
	probe := buildProxyProbe(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "over tls") }))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	lo := netip.MustParseAddr("127.0.0.1")
	// example.com is a name the test server's certificate holds.
	c, err := egress.NewClient(&egress.Options{
		Schemes:    []string{"https"},
		Ports:      []int{port},
		AllowHosts: []string{"example.com"},
		AllowAddrs: []netip.Prefix{netip.PrefixFrom(lo, 32)},
		Resolver:   egress.Pins{"example.com": {lo}}.Resolver(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	sock := serveProxy(t, c)
	ws := t.TempDir()
	b, err := os.ReadFile(probe)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := errors.Join(os.WriteFile(filepath.Join(ws, "probe"), b, 0o755), os.WriteFile(filepath.Join(ws, "ca.pem"), ca, 0o644)); err != nil {
		t.Fatal(err)
	}
	r, err := newNative(t, nil).Run(context.Background(), sandbox.Spec{
		Argv:      []string{"/workspace/probe", "get", fmt.Sprintf("https://example.com:%d/", port)},
		Env:       []string{"SSL_CERT_FILE=/workspace/ca.pem"},
		Workspace: ws, Network: sandbox.NetworkProxy, Proxy: sock,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || !strings.HasPrefix(string(r.Stdout), "status 200") || !strings.Contains(string(r.Stdout), "over tls") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
}
