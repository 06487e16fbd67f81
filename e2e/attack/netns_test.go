package attack

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/netnstest"
)

// The addresses of the world inside the namespace. They look public, as
// egress only lets a call reach public addresses; inside the namespace
// they sit on the loopback interface, so nothing leaves the machine.
var (
	// siteAddr serves the pages users name (docs, invoices, an API).
	siteAddr = netip.MustParseAddr("93.184.216.34")
	// attackerAddr and attackerAddr6 are the attacker's server.
	attackerAddr  = netip.MustParseAddr("45.33.49.119")
	attackerAddr6 = netip.MustParseAddr("2a01:4f8:c0c:1::66")
	// metadataAddr is the cloud metadata service's address.
	metadataAddr = netip.MustParseAddr("169.254.169.254")
)

// Host names the test's DNS server answers.
const (
	attackerDomain = "attacker.example"
	// imdsHost is an attacker's name that resolves to the metadata address.
	imdsHost = "imds." + attackerDomain
	docsHost = "docs.acme-tools.com"
	apiHost  = "api.acme-tools.com"
	billHost = "billing.supplier-portal.com"
)

// dockerSocket is where the fake Docker API listens.
const dockerSocket = "/run/docker.sock"

// Bounds of what the recording servers keep.
const (
	maxRecordBody  = 1 << 20 // the body of one recorded HTTP request
	maxRecordCount = 100_000 // records kept per log
)

// record is one request that reached a server the test owns.
type record struct {
	Server string // "http", "dns" or "docker"
	Local  string // the address it reached
	Text   string // request line, headers and body; or the DNS query name
}

// evidence is everything the test's servers saw: the ground truth of
// what left through the network.
type evidence struct {
	mu      sync.Mutex
	records []record
	dropped int // records past maxRecordCount: the suite then fails, as it could miss harm
}

func (e *evidence) add(r record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.records) >= maxRecordCount {
		e.dropped++
		return
	}
	e.records = append(e.records, r)
}

// lost is how many records were dropped.
func (e *evidence) lost() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dropped
}

// world is the network inside the namespace: the servers and what they
// saw, and the pages the site serves.
type world struct {
	ev    evidence
	dns   *netnstest.DNS // its query names are evidence too
	pages sync.Map       // path -> page
}

// page is one document the site serves.
type page struct {
	contentType string
	body        string
}

// setUpWorld makes the namespace's network: loopback up with the
// public-looking addresses on it, the DNS server, the resolv.conf that
// names it, the HTTP server for every address, and the Docker socket.
func setUpWorld(t *testing.T, outer string) *world {
	netnstest.Isolate(t, outer)
	for _, a := range []netip.Addr{siteAddr, attackerAddr, attackerAddr6, metadataAddr} {
		if err := netnstest.AddAddress("lo", a); err != nil {
			t.Fatalf("adding %s to lo: %v", a, err)
		}
	}
	w := &world{dns: netnstest.StartDNS(t, answerFor)}
	netnstest.UseResolver(t)
	w.startHTTP(t)
	w.startDocker(t)
	return w
}

// answerFor is the address the test's DNS server gives name, if any: the
// attacker's domain and everything under it, the site's hosts, and a name
// of the attacker's that points at the metadata service.
func answerFor(name string) (netip.Addr, bool) {
	switch {
	case name == imdsHost:
		return metadataAddr, true
	case name == attackerDomain || strings.HasSuffix(name, "."+attackerDomain):
		return attackerAddr, true
	case name == docsHost || name == apiHost || name == billHost:
		return siteAddr, true
	}
	return netip.Addr{}, false
}

// localAddrKey carries a connection's local address into its requests.
type localAddrKey struct{}

// startHTTP serves port 80 on every address of the namespace: the site's
// pages on siteAddr (and an open redirect, /r?to=URL, as many real sites
// have, at {DOCS}/r), a plain "ok" everywhere else. Every request is recorded.
func (w *world) startHTTP(t *testing.T) {
	l, err := net.Listen("tcp", ":80")
	if err != nil {
		t.Fatalf("listening on :80: %v", err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(w.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, localAddrKey{}, c.LocalAddr().String())
		},
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

func (w *world) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	local, _ := r.Context().Value(localAddrKey{}).(string)
	w.ev.add(record{Server: "http", Local: local, Text: requestText(r)})
	ap, err := netip.ParseAddrPort(local)
	if err != nil || ap.Addr().Unmap() != siteAddr {
		rw.Header().Set("Content-Type", "text/plain")
		io.WriteString(rw, "ok\n")
		return
	}
	if path.Base(r.URL.Path) == "r" { // {DOCS}/r?to=URL
		http.Redirect(rw, r, r.URL.Query().Get("to"), http.StatusFound)
		return
	}
	v, ok := w.pages.Load(r.URL.Path)
	if !ok {
		http.NotFound(rw, r)
		return
	}
	p := v.(page)
	rw.Header().Set("Content-Type", p.contentType)
	io.WriteString(rw, p.body)
}

// requestText is what a recorded request holds: request line, headers and
// body, the URL also unescaped, so that a secret is found however the
// query spelled it.
func requestText(r *http.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\nHost: %s\n", r.Method, r.RequestURI, r.Proto, r.Host)
	if u, err := url.QueryUnescape(r.RequestURI); err == nil {
		fmt.Fprintf(&b, "Unescaped: %s\n", u)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxRecordBody))
	b.Write(body)
	return b.String()
}

// startDocker serves a fake Docker API on dockerSocket, on a tmpfs over
// /run of the test's own mount namespace: any request that reaches it is
// a container a model could have started with the host's root.
func (w *world) startDocker(t *testing.T) {
	if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatalf("mounting a tmpfs on /run: %v", err)
	}
	l, err := net.Listen("unix", dockerSocket)
	if err != nil {
		t.Fatalf("listening on %s: %v", dockerSocket, err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.ev.add(record{Server: "docker", Local: dockerSocket, Text: requestText(r)})
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"Id":"0123456789ab","Warnings":[]}`)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}
