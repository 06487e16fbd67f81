package bwrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// bwrap is started with os.StartProcess rather than os/exec, because
// os/exec imports path/filepath and both initialize late: this package is
// on the path of `airlock exec`'s fast start (cmd/airlock/internal/fastexec),
// which runs only once all of its imports are initialized. process does
// the little of os/exec that Run needs.

// WaitDelay bounds the wait, once bwrap has exited, for its output pipes
// to close. Once everything in the sandbox is dead they close at once;
// this only guards against a descriptor leaked to something outside.
const WaitDelay = time.Second

// process is a started bwrap: its stdin fed from a byte slice, its stdout
// and stderr copied into writers.
type process struct {
	*os.Process
	pipes  []*os.File // this side's ends: stdin's writer, the output readers
	copies sync.WaitGroup
}

// procFiles are what startProcess hands the child besides its standard
// streams.
type procFiles struct {
	stdin          []byte
	stdout, stderr io.Writer
	extra          []*os.File // fds 3 and on
}

// startProcess starts bin with args (args[0] included), an empty
// environment, / as its directory, and files.
func startProcess(bin string, args []string, files procFiles, sys *syscall.SysProcAttr) (*process, error) {
	p := &process{}
	var child []*os.File // the child's ends, ours to close once it has them
	defer func() { closeFiles(child) }()
	pipe := func(childReads bool) (theirs, ours *os.File, err error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		theirs, ours = w, r
		if childReads {
			theirs, ours = r, w
		}
		child = append(child, theirs)
		p.pipes = append(p.pipes, ours)
		return theirs, ours, nil
	}
	inR, inW, err1 := pipe(true)
	outW, outR, err2 := pipe(false)
	errW, errR, err3 := pipe(false)
	if err := errors.Join(err1, err2, err3); err != nil {
		closeFiles(p.pipes)
		return nil, err
	}
	proc, err := os.StartProcess(bin, args, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{}, // bwrap's own environment; --clearenv sets the command's
		Files: append([]*os.File{inR, outW, errW}, files.extra...),
		Sys:   sys,
	})
	if err != nil {
		closeFiles(p.pipes)
		return nil, err
	}
	p.Process = proc
	p.copies.Add(3)
	go func() {
		// A command that does not read its input must not block the
		// wait: the write ends when the pipe breaks or the wait closes it.
		defer p.copies.Done()
		inW.Write(files.stdin)
		inW.Close()
	}()
	for _, c := range []struct {
		w io.Writer
		r *os.File
	}{{files.stdout, outR}, {files.stderr, errR}} {
		go func() {
			defer p.copies.Done()
			io.Copy(c.w, c.r)
		}()
	}
	return p, nil
}

// wait waits for bwrap to exit, then up to WaitDelay for its pipes to be
// done, and closes them.
func (p *process) wait() (*os.ProcessState, error) {
	st, err := p.Wait()
	done := make(chan struct{})
	go func() { p.copies.Wait(); close(done) }()
	t := time.NewTimer(WaitDelay)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		for _, f := range p.pipes {
			f.Close() // ends the copies
		}
		<-done
	}
	for _, f := range p.pipes {
		f.Close()
	}
	return st, err
}

// lookPath is os/exec.LookPath on Linux: name itself when it has a
// slash, else the first file called name in a $PATH directory (an empty
// entry is the current directory) that is executable and not a
// directory; a file found relative to the current directory is returned
// with an error, as os/exec's ErrDot.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("%q: %w", name, err)
		}
		return name, nil
	}
	env := os.Getenv("PATH")
	if env == "" {
		return "", fmt.Errorf("%q: executable file not found in $PATH", name)
	}
	for _, dir := range strings.Split(env, ":") {
		if dir == "" {
			dir = "."
		}
		p := path.Join(dir, name)
		if executable(p) == nil {
			if !path.IsAbs(p) {
				return p, fmt.Errorf("%q resolves to %s, relative to the current directory", name, p)
			}
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: executable file not found in $PATH", name)
}

// executable reports why file is not one this process may run, or nil.
func executable(file string) error {
	fi, err := os.Stat(file)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return syscall.EISDIR
	}
	err = unix.Faccessat(unix.AT_FDCWD, file, unix.X_OK, unix.AT_EACCESS)
	if err == nil || err != unix.ENOSYS && err != unix.EPERM {
		return err
	}
	// Where the kernel cannot say, the mode bits do.
	if fi.Mode()&0o111 != 0 {
		return nil
	}
	return os.ErrPermission
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
