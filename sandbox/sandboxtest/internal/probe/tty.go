package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"
)

// ttyReadWait bounds how long the child waits to read the pushed token
// back from the terminal.
const ttyReadWait = 2 * time.Second

// highBits is a request number's upper half, which ioctl(2) drops (its
// request is an unsigned int): a filter that compares all 64 bits lets
// TIOCSTI|highBits through to a kernel that runs it as TIOCSTI.
const highBits = 1 << 32

// tty is the terminal-injection attempt. TIOCSTI pushes bytes into a
// terminal's input as if they were typed, so a command holding its
// user's terminal could type commands into the shell that waits there.
// The kernel lets a process push only into its controlling terminal, so
// the probe opens a pseudo-terminal and starts a child in a session of
// its own with that terminal as its controlling one; the child pushes
// TOKEN and reads it back. Where there is no /dev/ptmx the child tries its
// standard input, a pipe: the kernel answers ENOTTY there, so an EPERM can
// only come from a filter. Each attempt prints "NAME errno=N (text)".
func tty(token string) error {
	child := exec.Command(os.Args[0], "tty-child", token)
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	term, err := openTerminal()
	if err == nil {
		defer term.Close()
		child.Stdin = term
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	} else {
		fmt.Printf("no pseudo-terminal (%v): trying standard input, a pipe\n", err)
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		defer w.Close()
		child.Stdin = r
	}
	err = child.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		os.Exit(exit.ExitCode()) // the child said reached or denied
	}
	return err
}

// openTerminal opens a new pseudo-terminal and returns its terminal side.
// The controller side is left open for the life of the probe.
func openTerminal() (*os.File, error) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		ptmx.Close()
		return nil, fmt.Errorf("unlocking the pseudo-terminal: %w", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		ptmx.Close()
		return nil, fmt.Errorf("numbering the pseudo-terminal: %w", e)
	}
	term, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptmx.Close()
		return nil, err
	}
	return term, nil
}

// ttyChild makes the attempts on its standard input.
func ttyChild(token string) error {
	pushed := false
	for _, a := range []struct {
		name string
		req  uintptr
	}{
		{"TIOCSTI", syscall.TIOCSTI},
		{"TIOCSTI|1<<32", syscall.TIOCSTI | highBits},
	} {
		var e syscall.Errno
		for _, c := range []byte(token + "\n") {
			if _, _, e = syscall.Syscall(syscall.SYS_IOCTL, 0, a.req, uintptr(unsafe.Pointer(&c))); e != 0 {
				break
			}
		}
		fmt.Printf("%s errno=%d (%v)\n", a.name, int(e), e)
		pushed = pushed || e == 0
	}
	// TIOCLINUX's subcode 12 asks which virtual console is in front: a
	// harmless question, whose answer is not the point; the errno is.
	sub := [2]byte{12}
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCLINUX, uintptr(unsafe.Pointer(&sub[0])))
	fmt.Printf("TIOCLINUX errno=%d (%v)\n", int(e), e)
	if !pushed {
		return errors.New("no byte was pushed into the terminal")
	}
	got, err := readFor(0, ttyReadWait)
	if !bytes.Contains(got, []byte(token)) {
		return fmt.Errorf("the push said yes but %q came back (%v)", got, err)
	}
	reached("the token was typed into the terminal")
	return nil
}

// readFor reads fd until nothing more comes for d.
func readFor(fd int, d time.Duration) ([]byte, error) {
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "terminal")
	f.SetReadDeadline(time.Now().Add(d))
	var out []byte
	buf := make([]byte, 256)
	for {
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
		if bytes.Contains(out, []byte("\n")) {
			return out, nil
		}
	}
}
