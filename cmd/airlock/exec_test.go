package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExecStatuses: the command's own status passes through; airlock
// exec's own failures are 125, apart from any status a command gives.
func TestExecStatuses(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--workspace", ws, "--", "/bin/sh", "-c", "exit 7"}, 7},
		{[]string{"--workspace", ws, "--", "/bin/true"}, 0},
		{[]string{"--workspace", ws, "--json", "--", "/bin/false"}, 1},
		{[]string{"--workspace", ws, "--backend", "nope", "--", "/bin/true"}, exitSandbox},
		{[]string{"--workspace", ws, "--memory", "lots", "--", "/bin/true"}, exitSandbox},
		{[]string{"--workspace", ws, "--pids", "999999", "--", "/bin/true"}, exitSandbox}, // over sandbox.MaxPids: an invalid spec
		{[]string{"--workspace", ws}, exitSandbox},
	} {
		var out, errOut bytes.Buffer
		got := run(context.Background(), append([]string{"exec"}, c.args...), strings.NewReader(""), &out, &errOut)
		if got != c.want {
			t.Errorf("exec %q: status %d, want %d (stderr %q)", c.args, got, c.want, errOut.String())
		}
	}
}
