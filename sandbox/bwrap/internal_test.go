package bwrap

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"airlock.dev/airlock/sandbox"
)

func TestParseOwnCgroup(t *testing.T) {
	in := []byte("12:pids:/user.slice\n4:memory:/process_api/abc\n3:cpu,cpuacct:/x\n0::/\nbroken line\n")
	for _, c := range []struct {
		controller, want string
		ok               bool
	}{
		{"pids", "/user.slice", true},
		{"memory", "/process_api/abc", true},
		{"cpuacct", "/x", true},
		{"cpu", "/x", true},
		{"blkio", "", false},
		{"", "", false},
	} {
		got, err := parseOwnCgroup(in, c.controller)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("parseOwnCgroup(%q) = %q, %v; want %q, ok %v", c.controller, got, err, c.want, c.ok)
		}
	}
}

func FuzzParseOwnCgroup(f *testing.F) {
	f.Add([]byte("4:memory:/a\n0::/\n"), "memory")
	f.Add([]byte("::::\n\n:memory"), "memory")
	f.Fuzz(func(t *testing.T, b []byte, controller string) {
		got, err := parseOwnCgroup(b, controller)
		if err == nil && !bytes.Contains(b, []byte(got)) {
			t.Errorf("path %q is not in the input", got)
		}
	})
}

func TestEnvironment(t *testing.T) {
	for _, c := range []struct {
		in, want []string
	}{
		{nil, []string{"HOME=/tmp", "PATH=" + sandbox.DefaultPath}},
		{[]string{"A=", "HOME=/h"}, []string{"A=", "HOME=/h", "PATH=" + sandbox.DefaultPath}},
		{[]string{"PATH=/bin", "X=a=b"}, []string{"PATH=/bin", "X=a=b", "HOME=/tmp"}},
	} {
		got, err := sandbox.CommandEnv(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("CommandEnv(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzBuildArgs feeds any Dir, environment entry and command name: the
// result is arguments or an error, never a panic, and the command's own
// words always come after bwrap's "--" and env's.
func FuzzBuildArgs(f *testing.F) {
	f.Add("sub", "A=b", "ls", true)
	f.Add("../x", "=", "a=b", false)
	f.Add("", "PWD=/x", "--help", true)
	ws := f.TempDir()
	f.Fuzz(func(t *testing.T, dir, env, argv0 string, writable bool) {
		spec := sandbox.Spec{Argv: []string{argv0, "--", "x"}, Dir: dir, Env: []string{env}, Workspace: ws, WorkspaceWritable: writable}
		if spec.Check() != nil {
			return
		}
		args, err := buildArgs(&spec, nil)
		if err != nil {
			if !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Fatalf("error %v is not ErrInvalidSpec", err)
			}
			return
		}
		tail := args[len(args)-3:]
		if !slices.Equal(tail, spec.Argv) {
			t.Fatalf("args end %q, want the command %q", tail, spec.Argv)
		}
		i := slices.Index(args, "--")
		if i < 0 || args[i+1] != EnvBinary {
			t.Fatalf("no bwrap -- followed by env in %q", args)
		}
		if strings.Contains(argv0, "=") {
			t.Fatalf("argv[0] %q with '=' was accepted", argv0)
		}
	})
}

func TestDefaults(t *testing.T) {
	s := New(nil)
	if s.opts.CgroupRoot != DefaultCgroupRoot || s.opts.CgroupParent != DefaultCgroupParent || !slices.Equal(s.opts.HiddenPaths, DefaultHiddenPaths) {
		t.Errorf("New(nil) options %+v", s.opts)
	}
	if StartTimeout <= 0 || cgroupRemoveWait <= 0 {
		t.Error("a timeout is not positive")
	}
	// An empty, non-nil list hides nothing: it is not replaced.
	if got := New(&Options{HiddenPaths: []string{}}).opts.HiddenPaths; len(got) != 0 {
		t.Errorf("HiddenPaths []string{} became %q", got)
	}
}
