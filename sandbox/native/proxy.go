package native

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
//
// The relay works on raw sockets wrapped in *os.File rather than on
// package net: net sorts late among the packages Go initializes, and this
// package is on the path of `airlock exec`'s fast start
// (cmd/airlock/internal/fastexec), which runs only once all of its
// imports are initialized. Every socket is non-blocking, so os.File's
// reads and writes, and the accepts and connects below (through
// SyscallConn), wait in the runtime's poller, as net's would.

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

// Before a 502 for a connection it cannot carry, the relay reads the
// command's request head, up to these bounds: an answer that arrives
// before the request is written is, to an HTTP client, an unsolicited
// response on an idle connection, and Go's client then reports a broken
// connection instead of the 502.
const (
	unreachableReadBytes = 64 << 10
	unreachableReadWait  = 2 * time.Second
)

// headEnd ends an HTTP request head.
var headEnd = []byte("\r\n\r\n")

// relay carries one run's connections to the host proxy.
type relay struct {
	proxy string
	ctl   *os.File // the control socket the listener arrives on

	mu     sync.Mutex
	ln     *os.File
	conns  map[*os.File]struct{} // both sides of every relayed connection, dials in progress included
	n      int                   // the command's connections among them
	closed bool
	wg     sync.WaitGroup
}

// startRelay waits, in the background, for the init's listener on ctl
// and then relays to the unix socket at proxy. close ends it.
func startRelay(ctl *os.File, proxy string) (*relay, error) {
	// A copy of the descriptor in non-blocking mode, so that waiting for
	// the listener parks in the poller and close can end the wait.
	fd, err := unix.FcntlInt(ctl.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	ctl.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: the relay's control socket: %w", err)
	}
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || typ != unix.AF_UNIX {
		unix.Close(fd)
		return nil, errors.New("sandbox: the relay's control socket is not a unix socket")
	}
	c, err := pollable(fd, "relay-ctl")
	if err != nil {
		return nil, fmt.Errorf("sandbox: the relay's control socket: %w", err)
	}
	r := &relay{proxy: proxy, ctl: c, conns: map[*os.File]struct{}{}}
	r.wg.Add(1)
	go r.run()
	return r, nil
}

// pollable wraps the socket fd, made non-blocking, in an *os.File whose
// I/O goes through the runtime's poller; on error fd is closed.
func pollable(fd int, name string) (*os.File, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
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
		c, err := accept(ln)
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

// receive reads the listening socket the init sends, received
// close-on-exec so that no other child of this process inherits it.
func (r *relay) receive() (*os.File, error) {
	defer r.ctl.Close()
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	var oobn int
	var recvErr error
	rc, err := r.ctl.SyscallConn()
	if err != nil {
		return nil, err
	}
	err = rc.Read(func(fd uintptr) bool {
		for {
			_, oobn, _, _, recvErr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
			if recvErr != unix.EINTR {
				return recvErr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = recvErr
	}
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
	return pollable(fds[0], "relay")
}

// accept waits in the poller for the next connection on ln and returns
// it non-blocking and close-on-exec. An error ends the relay's accepting
// (ln closed, or the process out of descriptors), as net's Accept would;
// a connection reset before it was taken is skipped, as net skips it.
func accept(ln *os.File) (*os.File, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var acceptErr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			nfd, _, acceptErr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if acceptErr != unix.EINTR && acceptErr != unix.ECONNABORTED {
				return acceptErr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = acceptErr
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(nfd), "relay-conn"), nil
}

// dial connects the socket p (a new, non-blocking unix stream socket) to
// the unix socket at path, waiting in the poller for at most
// ProxyDialTimeout; closing p ends the wait.
func dial(p *os.File, path string) error {
	rc, err := p.SyscallConn()
	if err != nil {
		return err
	}
	p.SetWriteDeadline(time.Now().Add(ProxyDialTimeout))
	defer p.SetWriteDeadline(time.Time{})
	sa := &unix.SockaddrUnix{Name: path}
	started := false
	var connErr error
	err = rc.Write(func(fd uintptr) bool {
		if !started {
			started = true
			connErr = unix.Connect(int(fd), sa)
		} else {
			// Writable again: the connect has ended, and SO_ERROR says
			// how; 0 with no peer yet is a wake-up too early.
			var e int
			e, connErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
			if connErr == nil && e != 0 {
				connErr = unix.Errno(e)
			} else if connErr == nil {
				if _, err := unix.Getpeername(int(fd)); err == unix.ENOTCONN {
					return false
				}
			}
		}
		return connErr != unix.EINPROGRESS && connErr != unix.EALREADY && connErr != unix.EINTR
	})
	if err == nil {
		err = connErr
	}
	return err
}

// track registers c, the command's side when command, or reports false
// when the relay is closed or (for the command's side) full.
func (r *relay) track(c *os.File, command bool) bool {
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

func (r *relay) untrack(c *os.File, command bool) {
	r.mu.Lock()
	delete(r.conns, c)
	if command {
		r.n--
	}
	r.mu.Unlock()
	c.Close()
}

// serve carries one connection, both ways, until either side is done.
func (r *relay) serve(c *os.File) {
	defer r.wg.Done()
	defer r.untrack(c, true)
	pfd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		unreachable(c)
		return
	}
	p := os.NewFile(uintptr(pfd), "relay-proxy")
	// Tracked while it dials, so that close ends a dial in progress.
	if !r.track(p, false) {
		p.Close()
		return
	}
	defer r.untrack(p, false)
	if err := dial(p, r.proxy); err != nil {
		unreachable(c)
		return
	}
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

// unreachable tells the command, in HTTP, the language it spoke to us,
// that its connection could not be carried to the host proxy: once its
// request head has arrived (or unreachableReadWait has passed).
func unreachable(c *os.File) {
	c.SetReadDeadline(time.Now().Add(unreachableReadWait))
	var head []byte
	buf := make([]byte, 4096)
	for len(head) < unreachableReadBytes && !bytes.Contains(head, headEnd) {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	msg := fmt.Sprintf("%s: the egress proxy at the host does not answer\nhint: check that airlock's egress proxy is running\n", CodeProxyUnreachable)
	fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nX-Airlock-Error: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		CodeProxyUnreachable, len(msg), msg)
}

// closeWrite half-closes the socket c: the peer reads EOF, and can still
// send.
func closeWrite(c *os.File) {
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_WR) })
	}
}

// close ends the relay: the wait for the listener, the listener, every
// connection and dial, then waits for its goroutines.
func (r *relay) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
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
