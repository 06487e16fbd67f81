package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"airlock.dev/airlock/sandbox"
)

// The proxy mode (sandbox.NetworkProxy). The init listens on
// sandbox.ProxyAddr in the sandbox's network namespace and hands the
// listening socket out; this process, outside the sandbox, accepts each
// connection the command makes and carries it to the egress proxy's unix
// socket on the host. The command gains one TCP port and nothing else:
// the relay runs where the command cannot reach it, and the socket's path
// is never inside the sandbox.

// MaxProxyConns bounds the connections one run's relay carries at once;
// a connection past it is closed at once (an HTTP client retries or
// fails, it does not hang).
const MaxProxyConns = 64

// ProxyDialTimeout bounds connecting to the host proxy's socket for one
// relayed connection.
const ProxyDialTimeout = 5 * time.Second

// CodeProxyUnreachable is sent, as a 502's X-Airlock-Error, to a command
// whose connection the relay could not carry to the host proxy.
const CodeProxyUnreachable = "egress_proxy_unreachable"

// relay carries one run's connections to the host proxy.
type relay struct {
	proxy  string
	ctl    *net.UnixConn
	ctx    context.Context // ends dials in progress when the relay closes
	cancel context.CancelFunc

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{} // both sides of every relayed connection
	n      int                   // the command's connections among them
	closed bool
	wg     sync.WaitGroup
}

// startRelay waits, in the background, for the init's listener on ctl
// and then relays to the unix socket at proxy. close ends it.
func startRelay(ctl *os.File, proxy string) (*relay, error) {
	c, err := net.FileConn(ctl)
	ctl.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: the relay's control socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("sandbox: the relay's control socket is not a unix socket")
	}
	r := &relay{proxy: proxy, ctl: uc, conns: map[net.Conn]struct{}{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.wg.Add(1)
	go r.run()
	return r, nil
}

func (r *relay) run() {
	defer r.wg.Done()
	ln, err := r.receive()
	if err != nil {
		return // the init failed first, and says why on its own
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		ln.Close()
		return
	}
	r.ln = ln
	r.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !r.track(c, true) {
			c.Close()
			continue
		}
		r.wg.Add(1)
		go r.serve(c)
	}
}

// receive reads the listening socket the init sends. Go receives it
// close-on-exec, so no other child of this process inherits it.
func (r *relay) receive() (net.Listener, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	_, oobn, _, _, err := r.ctl.ReadMsgUnix(buf, oob)
	r.ctl.Close()
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the init sent %d descriptors, not 1", len(fds))
	}
	f := os.NewFile(uintptr(fds[0]), "relay")
	defer f.Close()
	return net.FileListener(f)
}

// track registers c, the command's side when command, or reports false
// when the relay is closed or (for the command's side) full.
func (r *relay) track(c net.Conn, command bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || command && r.n >= MaxProxyConns {
		return false
	}
	r.conns[c] = struct{}{}
	if command {
		r.n++
	}
	return true
}

func (r *relay) untrack(c net.Conn, command bool) {
	r.mu.Lock()
	delete(r.conns, c)
	if command {
		r.n--
	}
	r.mu.Unlock()
	c.Close()
}

// serve carries one connection, both ways, until either side is done.
func (r *relay) serve(c net.Conn) {
	defer r.wg.Done()
	defer r.untrack(c, true)
	d := net.Dialer{Timeout: ProxyDialTimeout}
	p, err := d.DialContext(r.ctx, "unix", r.proxy)
	if err != nil {
		// Say it in HTTP, the language the command spoke to us.
		msg := fmt.Sprintf("%s: the egress proxy at the host does not answer\nhint: check that airlock's egress proxy is running\n", CodeProxyUnreachable)
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nX-Airlock-Error: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			CodeProxyUnreachable, len(msg), msg)
		return
	}
	if !r.track(p, false) {
		p.Close()
		return
	}
	defer r.untrack(p, false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(p, c)
		closeWrite(p)
	}()
	io.Copy(c, p)
	closeWrite(c)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// close ends the relay: the listener, every connection, then waits for
// its goroutines.
func (r *relay) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	r.cancel()
	r.ctl.Close()
	if r.ln != nil {
		r.ln.Close()
	}
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// proxyEnv adds the proxy variables env does not set.
func proxyEnv(env []string) []string {
	out := env
	for _, name := range sandbox.ProxyEnv {
		set := false
		for _, kv := range env {
			if strings.HasPrefix(kv, name+"=") {
				set = true
				break
			}
		}
		if !set {
			out = append(out, name+"=http://"+sandbox.ProxyAddr)
		}
	}
	return out
}

// checkProxy checks the host side of the proxy mode: the socket exists.
func checkProxy(spec *sandbox.Spec) error {
	if spec.Network != sandbox.NetworkProxy {
		return nil
	}
	st, err := os.Stat(spec.Proxy)
	if err != nil || st.Mode().Type() != os.ModeSocket {
		return sandbox.Invalid(fmt.Sprintf("Proxy %q is not a unix socket on the host", spec.Proxy),
			"start the egress proxy listening on that socket before the run")
	}
	return nil
}
