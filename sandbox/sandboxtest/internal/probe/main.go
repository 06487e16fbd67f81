// Command probe is the escape probe of the sandbox conformance suite. The
// suite builds it statically (CGO_ENABLED=0), so that it runs in any root
// filesystem, even a busybox image, and places it in the workspace.
//
// Each mode makes one real attempt at something a sandboxed command must not
// be able to do, and says whether it got there: exit status 0 and a line
// starting "reached" when the attempt succeeded, 1 and a line starting
// "denied" when it did not, 2 for bad usage. The suite runs every mode once
// outside the sandbox (or in a control case) to prove it can succeed, so a
// denial inside the sandbox means something.
//
//	probe tcp ADDR TOKEN        connect, send TOKEN, expect it echoed
//	probe udp ADDR TOKEN        send TOKEN in a datagram (the host sees it or not)
//	probe unix PATH TOKEN       connect to a unix socket ("@name": abstract)
//	probe raw                   open AF_PACKET and AF_INET raw sockets
//	probe read PATH             print a file
//	probe sys NAME [DIR]        ptrace, mount (on DIR), unshare, setns, kexec_load, bpf
//	probe sysctl TOKEN          write TOKEN to /proc/sys/kernel/hostname and read it back
//	probe ids                   print euid and CapEff
//	probe pids TOKEN PID KILL   look for a process whose argv holds TOKEN, try to kill it and PID
//	probe env [TOKEN]           print the environment, or look for TOKEN in every environ
//	probe mem MIB               allocate and touch MIB mebibytes
//	probe daemon TOKEN          leave a double-forked, setsid'd "marker TOKEN" behind
//	probe marker TOKEN          sleep for ever, with TOKEN in its argv
//	probe tty TOKEN             type TOKEN into a controlling terminal with TIOCSTI, and try TIOCLINUX
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// dialTimeout bounds every connection attempt, so that a probe in a network
// that drops packets still ends well within the suite's wall limits.
const dialTimeout = 3 * time.Second

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	args := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "tcp":
		need(args, 2)
		err = stream("tcp", args[0], args[1])
	case "unix":
		need(args, 2)
		err = stream("unix", args[0], args[1])
	case "udp":
		need(args, 2)
		err = udp(args[0], args[1])
	case "raw":
		err = raw()
	case "read":
		need(args, 1)
		err = read(args[0])
	case "sys":
		need(args, 1)
		err = sys(args[0], args[1:])
	case "ids":
		err = ids()
	case "sysctl":
		need(args, 1)
		err = sysctl(args[0])
	case "pids":
		need(args, 3)
		err = pids(args[0], args[1], args[2] == "1")
	case "env":
		err = env(args)
	case "mem":
		need(args, 1)
		err = mem(args[0])
	case "daemon":
		need(args, 1)
		err = daemon(args[0], false)
	case "daemon2":
		need(args, 1)
		err = daemon(args[0], true)
	case "tty":
		need(args, 1)
		err = tty(args[0])
	case "tty-child":
		need(args, 1)
		err = ttyChild(args[0])
	case "marker", "sleepchild":
		for {
			time.Sleep(time.Hour)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Println("denied:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: probe tcp|udp|unix|raw|read|sys|ids|pids|env|mem|daemon|marker|tty ...")
	os.Exit(2)
}

func need(args []string, n int) {
	if len(args) < n {
		usage()
	}
}

func reached(format string, a ...any) {
	fmt.Printf("reached "+format+"\n", a...)
}

func stream(network, addr, token string) error {
	c, err := net.DialTimeout(network, addr, dialTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(dialTimeout))
	if _, err := fmt.Fprintln(c, token); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != token {
		return fmt.Errorf("got %q back, not the token", line)
	}
	reached("%s %s", network, addr)
	return nil
}

func udp(addr, token string) error {
	c, err := net.DialTimeout("udp", addr, dialTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	// Several datagrams, in case one is lost; whether any arrived is for
	// the listener to say.
	for i := 0; i < 5; i++ {
		if _, err := c.Write([]byte(token)); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	reached("udp sent to %s", addr)
	return nil
}

func raw() error {
	var errs []error
	for _, s := range []struct {
		name              string
		family, typ, prot int
	}{
		{"AF_PACKET", syscall.AF_PACKET, syscall.SOCK_RAW, int(htons(syscall.ETH_P_ALL))},
		{"AF_INET/SOCK_RAW", syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP},
	} {
		fd, err := syscall.Socket(s.family, s.typ, s.prot)
		if err == nil {
			syscall.Close(fd)
			reached("%s socket", s.name)
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
	}
	return errors.Join(errs...)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func read(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		reached("directory %s", path)
		for _, e := range ents {
			fmt.Println(e.Name())
		}
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	reached("file %s", path)
	os.Stdout.Write(b)
	return nil
}

// blocked reports whether errno means the kernel (or a filter) refused the
// caller, rather than looking at the arguments.
func blocked(e syscall.Errno) bool {
	return e == syscall.EPERM || e == syscall.EACCES || e == syscall.ENOSYS
}

func sys(name string, rest []string) error {
	runtime.LockOSThread()
	var e syscall.Errno
	switch name {
	case "ptrace":
		child := exec.Command(os.Args[0], "sleepchild")
		if err := child.Start(); err != nil {
			return fmt.Errorf("starting a child to trace: %w", err)
		}
		defer func() { child.Process.Kill(); child.Wait() }()
		_, _, e = syscall.RawSyscall6(syscall.SYS_PTRACE, syscall.PTRACE_ATTACH, uintptr(child.Process.Pid), 0, 0, 0, 0)
		if e == 0 {
			syscall.RawSyscall6(syscall.SYS_PTRACE, syscall.PTRACE_DETACH, uintptr(child.Process.Pid), 0, 0, 0, 0)
		}
	case "mount":
		if len(rest) < 1 {
			usage()
		}
		src, _ := syscall.BytePtrFromString("tmpfs")
		dir, _ := syscall.BytePtrFromString(rest[0])
		_, _, e = syscall.Syscall6(syscall.SYS_MOUNT, uintptr(unsafe.Pointer(src)), uintptr(unsafe.Pointer(dir)), uintptr(unsafe.Pointer(src)), 0, 0, 0)
		if e == 0 {
			syscall.Unmount(rest[0], syscall.MNT_DETACH)
		}
	case "unshare":
		// A new UTS namespace for this thread only: harmless anywhere,
		// and a step towards every namespace escape.
		_, _, e = syscall.RawSyscall(syscall.SYS_UNSHARE, syscall.CLONE_NEWUTS, 0, 0)
	case "setns":
		fd, err := syscall.Open("/proc/self/ns/uts", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening /proc/self/ns/uts: %w", err)
		}
		defer syscall.Close(fd)
		_, _, e = syscall.RawSyscall(308 /* SYS_SETNS on amd64 */, uintptr(fd), syscall.CLONE_NEWUTS, 0)
	case "kexec_load":
		// One segment more than KEXEC_SEGMENT_MAX: a kernel that lets the
		// caller in answers EINVAL, and nothing is loaded.
		_, _, e = syscall.RawSyscall6(syscall.SYS_KEXEC_LOAD, 0, 17, 0, 0, 0, 0)
	case "bpf":
		// An unknown command: a kernel that lets the caller in answers
		// EINVAL.
		_, _, e = syscall.RawSyscall(321 /* SYS_BPF on amd64 */, 0xffff, 0, 0)
	default:
		usage()
	}
	switch {
	case e == 0:
		reached("%s errno=0", name)
		return nil
	case (name == "kexec_load" || name == "bpf") && !blocked(e):
		reached("%s errno=%d (%v): the kernel looked at the arguments", name, int(e), e)
		return nil
	}
	return fmt.Errorf("%s errno=%d (%v)", name, int(e), e)
}

func ids() error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	capEff := "unknown"
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			capEff = strings.TrimSpace(v)
		}
	}
	fmt.Printf("euid=%d uid=%d capeff=%s\n", os.Geteuid(), os.Getuid(), capEff)
	return nil
}

func pids(token, hostPid string, kill bool) error {
	var found []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(token)) && !bytes.Contains(cmdline, []byte("pids\x00"+token)) {
			found = append(found, pid)
		}
	}
	sig := syscall.Signal(0)
	if kill {
		sig = syscall.SIGKILL
	}
	hit := false
	for _, pid := range found {
		fmt.Printf("found pid %d\n", pid)
		if err := syscall.Kill(pid, sig); err == nil {
			hit = true
		}
	}
	if n, err := strconv.Atoi(hostPid); err == nil && n > 0 {
		if err := syscall.Kill(n, sig); err == nil {
			fmt.Printf("signalled pid %d\n", n)
			hit = true
		} else {
			fmt.Printf("kill %d: %v\n", n, err)
		}
	}
	if hit {
		reached("%d processes with the token, signal %d delivered", len(found), sig)
		return nil
	}
	return fmt.Errorf("no process with the token (%d found, none signalled)", len(found))
}

func env(args []string) error {
	if len(args) == 0 {
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return nil
	}
	token := args[0]
	var where []string
	for _, kv := range os.Environ() {
		if strings.Contains(kv, token) {
			where = append(where, "own environment")
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(b, []byte(token)) {
			where = append(where, "/proc/"+e.Name()+"/environ")
		}
	}
	if len(where) > 0 {
		reached("token in %s", strings.Join(where, ", "))
		return nil
	}
	return errors.New("token in no environment")
}

func mem(mib string) error {
	n, err := strconv.Atoi(mib)
	if err != nil {
		usage()
	}
	var keep [][]byte
	for i := 0; i < n; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		keep = append(keep, b)
	}
	reached("%d MiB touched", len(keep))
	return nil
}

// daemon leaves a grandchild in a session of its own, detached from the
// command: the second call starts the marker and returns at once, so the
// marker is re-parented away from the command's tree.
func daemon(token string, second bool) error {
	next := []string{"daemon2", token}
	if second {
		next = []string{"marker", token}
	}
	c := exec.Command(os.Args[0], next...)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return err
	}
	if second {
		fmt.Printf("marker pid %d\n", c.Process.Pid)
		return nil
	}
	return c.Wait()
}

// sysctl writes a sysctl, the UTS-namespaced host name, as the witness of
// a writable /proc/sys: where it works, so would kernel.core_pattern for a
// process that is root on the host.
func sysctl(token string) error {
	const p = "/proc/sys/kernel/hostname"
	if err := os.WriteFile(p, []byte(token), 0); err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(b)) != token {
		return fmt.Errorf("wrote %s but read back %q", p, b)
	}
	reached("%s written", p)
	return nil
}
