package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRedactLivePipe: over real pipes, a line written to airlock redact
// comes back masked while the input is still open, as a live log needs.
func TestRedactLivePipe(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	defer outR.Close()
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), []string{"redact"}, inR, outW, io.Discard)
		outW.Close()
		done <- code
	}()

	token := "ghp_" + strings.Repeat("aB3dE5gH7j", 4)[:36]
	if _, err := inW.WriteString("login with " + token + "\n"); err != nil {
		t.Fatal(err)
	}
	outR.SetReadDeadline(time.Now().Add(10 * time.Second))
	out := bufio.NewReader(outR)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("no line back before the input closed: %v (got %q)", err, line)
	}
	if line != "login with [REDACTED:github-token]\n" {
		t.Fatalf("got %q", line)
	}

	inW.WriteString("bye\n")
	inW.Close()
	rest, _ := io.ReadAll(out)
	if string(rest) != "bye\n" {
		t.Fatalf("after the first line: %q", rest)
	}
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d", code)
	}
}
