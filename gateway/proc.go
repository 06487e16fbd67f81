package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxMessageBytes bounds one JSON-RPC message from a stdio upstream: a
// longer line ends the connection (the upstream is then treated as
// crashed), rather than being buffered without end.
const MaxMessageBytes = 16 << 20

// proc is a stdio upstream's process: its stdin and stdout carry the
// session, and closing it ends the whole process group it leads.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	exited chan struct{} // closed when the leader has exited (not yet reaped)
}

// startProc starts cmd in its own process group, killed with the
// gateway (Pdeathsig).
func startProc(cmd *exec.Cmd) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, stdout: stdout, exited: make(chan struct{})}
	go func() {
		// WNOWAIT leaves the leader a zombie: its pid, which is the
		// group's id, stays ours until Close has killed the group.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		close(p.exited)
	}()
	return p, nil
}

// Write writes to the process's stdin.
func (p *proc) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close ends the session as the MCP spec asks of a client: it closes
// stdin and gives the server StopGrace to exit; then it kills what is
// left of the process group and reaps the leader.
func (p *proc) Close() error {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(StopGrace):
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	p.cmd.Wait() // reaps the leader and closes the pipes; its exit status is of no use here
	return nil
}

// errMalformed ends a stdio upstream's connection on a line that is not
// one JSON value.
var errMalformed = errors.New("the upstream wrote a line that is not JSON-RPC (malformed JSON)")

// lineReader passes a stdio upstream's stdout on line by line, each line
// checked to be one whole JSON value of at most MaxMessageBytes. A line
// that is not ends the connection, as a crash does: the SDK decodes a
// stream, not lines, and would otherwise wait for the rest of a
// truncated message and swallow the next one into it, leaving every
// later call of that upstream hanging.
type lineReader struct {
	rc  io.ReadCloser
	br  *bufio.Reader
	buf []byte // the checked line not yet read
	err error  // what ends the stream once buf is read
}

func newLineReader(rc io.ReadCloser) *lineReader {
	return &lineReader{rc: rc, br: bufio.NewReaderSize(rc, 64<<10)}
}

func (r *lineReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		line, err := readMessage(r.br)
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if !json.Valid(t) {
				r.err = errMalformed
				return 0, r.err
			}
			r.buf = append(t, '\n')
		}
		if err != nil {
			r.err = err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *lineReader) Close() error { return r.rc.Close() }

// readMessage reads one line of at most MaxMessageBytes.
func readMessage(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxMessageBytes {
			return nil, fmt.Errorf("the upstream wrote a message over %d bytes (MaxMessageBytes)", MaxMessageBytes)
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
