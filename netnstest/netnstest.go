// Package netnstest runs a test inside a network and a mount namespace of
// its own, with a DNS server the test controls, so that what airlock
// sends out (HTTP requests, DNS queries) can be recorded without leaving
// the machine.
//
// The test re-executes its own binary in the new namespaces; the copy
// finds itself there by an environment variable and does the real work:
//
//	func TestX(t *testing.T) {
//		if outer, inside := netnstest.Inside(env); inside {
//			netnstest.Isolate(t, outer)
//			dns := netnstest.StartDNS(t, answer)
//			netnstest.UseResolver(t)
//			...
//			return
//		}
//		out, err := netnstest.Reexec(t, "^TestX$", env, nil)
//		...
//	}
//
// Creating the namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN);
// without it Reexec fails the test, never skips it.
package netnstest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// Inside says whether this process is the copy Reexec started, and
// returns the mount namespace of the process that started it.
func Inside(env string) (outer string, inside bool) {
	outer = os.Getenv(env)
	return outer, outer != ""
}

// Reexec runs the test binary again, with -test.run=run, in new network
// and mount namespaces, env set to this process's mount namespace. Its
// output also goes to live, when not nil, as it comes. A failure to start
// it fails t with the reason (most often: not root); the copy's own
// failure is returned with its output.
func Reexec(t testing.TB, run, env string, live io.Writer) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	outer, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run="+run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+outer)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS}
	var out strings.Builder
	var w io.Writer = &out
	if live != nil {
		w = io.MultiWriter(&out, live)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("starting the test in a new network and mount namespace failed (%v): it needs root, "+
			"or CAP_SYS_ADMIN and CAP_NET_ADMIN, to create them; run it as root", err)
	}
	return out.String(), err
}

// Isolate makes sure the process is in namespaces of its own before it
// binds a port or mounts anything (a network namespace with only
// loopback, a mount namespace other than outer), makes its mounts
// private, so that none propagates back to the host, and brings loopback
// up.
func Isolate(t testing.TB, outer string) {
	t.Helper()
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil || self == outer {
		t.Fatalf("not in a mount namespace of its own (%s, %v); refusing to mount anything", self, err)
	}
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) != 1 || ifs[0].Flags&net.FlagLoopback == 0 {
		t.Fatalf("not in a network namespace of its own: interfaces %v (%v)", ifs, err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("making the mounts private: %v", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifs[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		t.Fatal(err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("bringing up loopback: %v", err)
	}
}

// AddAddress adds a as a host address (/32, /128) to the interface named
// name, by rtnetlink, as `ip addr add` does: a public-looking address on
// loopback is a server egress may reach that is still on this machine.
func AddAddress(name string, a netip.Addr) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	family, flags := byte(unix.AF_INET), uint32(0)
	if a.Is6() {
		family, flags = unix.AF_INET6, unix.IFA_F_NODAD
	}
	attr := func(typ uint16, data []byte) []byte {
		n := unix.SizeofRtAttr + len(data)
		b := make([]byte, (n+3)&^3)
		binary.NativeEndian.PutUint16(b[0:], uint16(n))
		binary.NativeEndian.PutUint16(b[2:], typ)
		copy(b[unix.SizeofRtAttr:], data)
		return b
	}
	body := []byte{family, byte(a.BitLen()), 0, unix.RT_SCOPE_UNIVERSE}
	body = binary.NativeEndian.AppendUint32(body, uint32(ifi.Index))
	body = append(body, attr(unix.IFA_LOCAL, a.AsSlice())...)
	body = append(body, attr(unix.IFA_ADDRESS, a.AsSlice())...)
	body = append(body, attr(unix.IFA_FLAGS, binary.NativeEndian.AppendUint32(nil, flags))...)
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.SizeofNlMsghdr+len(body)))
	binary.NativeEndian.PutUint16(msg[4:], unix.RTM_NEWADDR)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n < unix.SizeofNlMsghdr+4 || binary.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("netlink: unexpected answer of %d bytes", n)
	}
	if code := int32(binary.NativeEndian.Uint32(buf[unix.SizeofNlMsghdr:])); code != 0 {
		return fmt.Errorf("netlink: %w", unix.Errno(-code))
	}
	return nil
}

// UseResolver bind-mounts a resolv.conf naming the DNS server StartDNS
// starts (127.0.0.1) over /etc/resolv.conf, so that every process of the
// mount namespace resolves through it. Call Isolate first.
func UseResolver(t testing.TB) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver 127.0.0.1\noptions timeout:2 attempts:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(conf, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting the test's resolv.conf: %v", err)
	}
}

// MaxDNSMessage bounds one DNS message the server reads.
const MaxDNSMessage = 64 << 10

// DNS is a DNS server that records the name of every query and answers
// each A query with what its answer function gives (no records for other
// types; a name error for a name it does not know).
type DNS struct {
	answer func(name string) (netip.Addr, bool)
	mu     sync.Mutex
	names  []string
}

// StartDNS serves DNS on 127.0.0.1:53, UDP and TCP, until t ends. answer
// gives the IPv4 address of a name (lower case, no final dot); false
// answers it does not exist.
func StartDNS(t testing.TB, answer func(name string) (netip.Addr, bool)) *DNS {
	t.Helper()
	d := &DNS{answer: answer}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:53")
	if err != nil {
		t.Fatalf("listening on 127.0.0.1:53/udp: %v", err)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:53")
	if err != nil {
		t.Fatalf("listening on 127.0.0.1:53/tcp: %v", err)
	}
	t.Cleanup(func() { pc.Close(); l.Close() })
	go func() {
		buf := make([]byte, MaxDNSMessage)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := d.reply(buf[:n]); out != nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go d.serveTCP(c)
		}
	}()
	return d
}

func (d *DNS) serveTCP(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for {
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		out := d.reply(msg)
		if out == nil {
			return
		}
		c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...))
	}
}

func (d *DNS) reply(msg []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	d.mu.Lock()
	d.names = append(d.names, name)
	d.mu.Unlock()
	addr, known := d.answer(name)
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	if known && q.Type == dnsmessage.TypeA && addr.Is4() {
		res := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
		if b.AResource(res, dnsmessage.AResource{A: addr.As4()}) != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// Names returns the name of every query so far, in order.
func (d *DNS) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.names...)
}

// Count is how many queries named host, or a name under it.
func (d *DNS) Count(host string) int {
	n := 0
	for _, name := range d.Names() {
		if name == host || strings.HasSuffix(name, "."+host) {
			n++
		}
	}
	return n
}
