package redact_test

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"
)

// liveStream runs Stream between two pipes, as on a live log: the test
// writes input in pieces and reads the output back while the input is open.
type liveStream struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func newLiveStream(t *testing.T) *liveStream {
	t.Helper()
	r := newRedactor(t, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &liveStream{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := r.Stream(outW, inR)
		outW.CloseWithError(err)
		s.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return s
}

func (s *liveStream) write(text string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, text); err != nil {
		s.t.Fatal(err)
	}
}

// line reads one output line, failing if none comes within a few seconds.
func (s *liveStream) line() string {
	s.t.Helper()
	got := make(chan string, 1)
	go func() {
		l, _ := s.out.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(5 * time.Second):
		s.t.Fatal("no output line while the input is open: Stream holds complete lines back")
		return ""
	}
}

// TestStreamLive: each complete line is written as soon as it is read,
// masked; a secret that spans lines (a private key, an AWS secret whose
// value is on the next line) is still caught whole.
func TestStreamLive(t *testing.T) {
	s := newLiveStream(t)
	token := "ghp_" + strings.Repeat("aB3dE5gH7j", 4)[:36]
	s.write("started with " + token + "\n")
	if got, want := s.line(), "started with [REDACTED:github-token]\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	s.write("plain line\n")
	if got := s.line(); got != "plain line\n" {
		t.Fatalf("got %q", got)
	}

	// A private key arrives line by line; nothing of it is written before
	// it is whole, and then only its mask.
	body := strings.Repeat("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n", 4)
	s.write("-----BEGIN RSA PRIVATE KEY-----\n")
	for _, l := range strings.SplitAfter(body, "\n") {
		s.write(l)
	}
	s.write("-----END RSA PRIVATE KEY-----\nafter the key\n")
	if got := s.line(); got != "[REDACTED:private-key]\n" {
		t.Fatalf("got %q, want the key's mask", got)
	}
	if got := s.line(); got != "after the key\n" {
		t.Fatalf("got %q", got)
	}

	// An AWS secret key whose value follows on the next line.
	s.write("aws_secret_access_key =\n")
	s.write("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vN2pL4k\n")
	if got := s.line() + s.line(); strings.Contains(got, "wJalrXUtnFEMI") || !strings.Contains(got, "[REDACTED:aws-secret-key]") {
		t.Fatalf("got %q, want the secret masked", got)
	}
	s.write("aws region is us-east-1\n") // names aws, but cannot start a secret: not held back
	if got := s.line(); got != "aws region is us-east-1\n" {
		t.Fatalf("got %q", got)
	}

	s.in.Close()
	if err := <-s.done; err != nil {
		t.Fatal(err)
	}
}

// TestStreamPartialLine: text with no line end yet is held back until its
// line ends (or the input does), so a token cut by a read is seen whole.
func TestStreamPartialLine(t *testing.T) {
	s := newLiveStream(t)
	s.write("key ghp_aB3dE5gH7jaB3d")
	s.write("E5gH7jaB3dE5gH7jaB3dE5 end\n")
	if got, want := s.line(), "key [REDACTED:github-token] end\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	s.write("tail without newline")
	s.in.Close()
	if rest, _ := io.ReadAll(s.out); string(rest) != "tail without newline" {
		t.Fatalf("got %q", rest)
	}
	if err := <-s.done; err != nil {
		t.Fatal(err)
	}
}
