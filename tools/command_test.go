package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/tool"
)

// recordingSandbox answers with a fixed Result and keeps the Spec it was
// handed: run_command's own logic, apart from any backend (the backends
// have their own conformance suite).
type recordingSandbox struct {
	res  sandbox.Result
	err  error
	spec sandbox.Spec
}

func (s *recordingSandbox) Name() string { return "recording" }

func (s *recordingSandbox) Run(_ context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	s.spec = spec
	return s.res, s.err
}

func TestRunCommandSpec(t *testing.T) {
	for _, c := range []struct {
		args     string
		limits   sandbox.Limits
		wantWall time.Duration
	}{
		{`{"command":"ls"}`, sandbox.Limits{}, 0},
		{`{"command":"ls","timeout_seconds":5}`, sandbox.Limits{}, 5 * time.Second},
		{`{"command":"ls","timeout_seconds":5}`, sandbox.Limits{Wall: 2 * time.Second}, 2 * time.Second},
		{`{"command":"ls","timeout_seconds":5}`, sandbox.Limits{Wall: time.Minute}, 5 * time.Second},
	} {
		sb := &recordingSandbox{}
		rc := RunCommand(sb, "/w", &RunCommandOptions{Limits: c.limits})
		if _, err := rc.Run(context.Background(), &tool.Call{Args: json.RawMessage(c.args)}); err != nil {
			t.Fatal(err)
		}
		got := sb.spec
		if want := []string{"/bin/bash", "-c", "ls"}; strings.Join(got.Argv, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("%s: argv %q, want %q", c.args, got.Argv, want)
		}
		if got.Workspace != "/w" || !got.WorkspaceWritable {
			t.Errorf("%s: workspace %q writable %v, want /w read-write", c.args, got.Workspace, got.WorkspaceWritable)
		}
		if got.Limits.Wall != c.wantWall {
			t.Errorf("%s with %v: wall %v, want %v", c.args, c.limits.Wall, got.Limits.Wall, c.wantWall)
		}
		if strings.Join(got.Env, " ") != strings.Join(DefaultCommandEnv, " ") {
			t.Errorf("env %q, want the default %q", got.Env, DefaultCommandEnv)
		}
	}
}

func TestRunCommandReport(t *testing.T) {
	for _, c := range []struct {
		res  sandbox.Result
		want string
	}{
		{sandbox.Result{ExitCode: 0, Stdout: []byte("hi\n")}, "exit code: 0\n--- stdout\nhi\n"},
		{sandbox.Result{ExitCode: 2, Stderr: []byte("no such file")}, "exit code: 2\n--- stderr\nno such file\n"},
		{sandbox.Result{ExitCode: 137, Killed: sandbox.KilledWall, TimedOut: true},
			"exit code: 137 (killed: wall: it ran past its time limit; give a larger timeout_seconds or do less in one command)\n"},
		{sandbox.Result{ExitCode: 137, Killed: sandbox.KilledOutput, Truncated: true, Stdout: []byte("yyy")},
			"exit code: 137 (killed: output: it printed more than the limit; redirect to a file and read parts of it)\n--- stdout\nyyy\n--- output was cut at its limit\n"},
		{sandbox.Result{Stdout: []byte("a\xffb\n")}, "exit code: 0\n--- stdout\na\uFFFDb\n\n"},
	} {
		sb := &recordingSandbox{res: c.res}
		res, err := RunCommand(sb, "/w", nil).Run(context.Background(), &tool.Call{Args: json.RawMessage(`{"command":"x"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Content != c.want || res.Error != nil {
			t.Errorf("report of %+v:\n got %q (error %v)\nwant %q", c.res, res.Content, res.Error, c.want)
		}
		if res.Provenance.Source != "sandbox:recording" {
			t.Errorf("provenance %q", res.Provenance.Source)
		}
	}
}

func TestRunCommandUnavailable(t *testing.T) {
	sb := &recordingSandbox{err: fmt.Errorf("%w: no Landlock", sandbox.ErrUnavailable)}
	res, err := RunCommand(sb, "/w", nil).Run(context.Background(), &tool.Call{Args: json.RawMessage(`{"command":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Code != tool.CodeSandboxUnavailable || res.Error.Hint == "" {
		t.Fatalf("got %+v, want sandbox_unavailable with a hint", res.Error)
	}
	sb.err = fmt.Errorf("backend fault")
	if _, err := RunCommand(sb, "/w", nil).Run(context.Background(), &tool.Call{Args: json.RawMessage(`{"command":"x"}`)}); err == nil {
		t.Fatal("a backend fault must be a Go error (tool_failed at the gate)")
	}
}

func TestRunCommandProxy(t *testing.T) {
	sb := &recordingSandbox{}
	if _, err := RunCommand(sb, "/w", &RunCommandOptions{Proxy: "/run/p.sock"}).Run(context.Background(), &tool.Call{Args: json.RawMessage(`{"command":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	if sb.spec.Network != sandbox.NetworkProxy || sb.spec.Proxy != "/run/p.sock" {
		t.Fatalf("with a proxy: network %q proxy %q", sb.spec.Network, sb.spec.Proxy)
	}
	RunCommand(sb, "/w", nil).Run(context.Background(), &tool.Call{Args: json.RawMessage(`{"command":"x"}`)})
	if sb.spec.Network != "" || sb.spec.Proxy != "" {
		t.Fatalf("without one: network %q proxy %q, want none", sb.spec.Network, sb.spec.Proxy)
	}
}
