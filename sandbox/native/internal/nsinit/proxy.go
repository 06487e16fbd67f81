package nsinit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// RelayBacklog is how many connections to the relay may wait for the
// parent to accept them.
const RelayBacklog = 64

// openRelay makes the proxy mode's one way out: it brings loopback up in
// the sandbox's empty network namespace, listens on 127.0.0.1:port and
// hands the listening socket to the parent over ProxyFD, which then
// accepts and relays each connection from outside the sandbox. The init
// keeps no copy: it holds neither the listener nor the way to the host
// proxy, so there is nothing in it for the command to take, and the relay
// needs no capability the command lacks. It runs before the privileges
// are dropped, as bringing an interface up needs CAP_NET_ADMIN in the
// namespace.
func openRelay(port uint16) *failure {
	f := func(err error) *failure {
		r := fail("egress_proxy", "fault", err)
		r.layer = "egress_proxy"
		return r
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return f(fmt.Errorf("socket: %w", err))
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return f(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return f(fmt.Errorf("reading loopback's flags: %w", err))
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		r := f(fmt.Errorf("bringing loopback up: %w", err))
		r.kind = "unavailable"
		return r
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return f(fmt.Errorf("bind 127.0.0.1:%d: %w", port, err))
	}
	if err := unix.Listen(fd, RelayBacklog); err != nil {
		return f(fmt.Errorf("listen: %w", err))
	}
	if err := unix.Sendmsg(ProxyFD, []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
		return f(fmt.Errorf("handing the listener to the parent: %w", err))
	}
	unix.Close(ProxyFD)
	return nil
}
