package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"airlock.dev/airlock/command"
	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/sandbox"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
	"airlock.dev/airlock/workspace"
)

// noNames answers every name "no such host": nothing is sent anywhere.
type noNames struct{ asked atomic.Int64 }

func (r *noNames) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.asked.Add(1)
	return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
}

// refusingSandbox runs nothing; run_command's executor is stubbed anyway.
type refusingSandbox struct{}

func (refusingSandbox) Name() string { return "refusing" }
func (refusingSandbox) Run(context.Context, sandbox.Spec) (sandbox.Result, error) {
	return sandbox.Result{}, sandbox.ErrUnavailable
}

// guardOwned are the codes only a stage before execute may give: an
// executor that returns one refused what airlock check had allowed.
var guardOwned = map[tool.Code]bool{
	tool.CodePathOutside: true, tool.CodeInvalidArguments: true, tool.CodeDenied: true,
	tool.CodeApprovalRequired: true, tool.CodeRoleNotAllowed: true, tool.CodeInvalidCall: true,
	egress.CodeDenied: true, egress.CodeInvalidURL: true,
}

// TestCheckAgreesWithCall: airlock check answers what the call would, up
// to the execute stage. On random calls of the built-in tools, with
// hostile paths, glob patterns, URLs and command lines among their
// arguments, Check and Call give the same decision and code whenever the
// call ends before its executor; when the executor runs, Check said
// allow, and the executor refuses nothing a guard judges (a path or glob
// pattern outside the workspace, a URL as written). web_fetch and
// run_command run stubs: their effects are not the point, and nothing may
// leave the machine.
func TestCheckAgreesWithCall(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"a.txt": "hello\n", "src/b.go": "package b\nfunc B() {}\n", ".git/config": "[core]\n"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Dir(dir), filepath.Join(dir, "out"))
	os.Symlink("/etc", filepath.Join(dir, "abs"))
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	resolver := &noNames{}
	eg, err := egress.NewClient(&egress.Options{Resolver: resolver})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	counting := func(tl tool.Tool, stub bool) tool.Tool {
		inner := tl.Run
		tl.Run = func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			runs.Add(1)
			if stub {
				return tool.Result{Content: "stub"}, nil
			}
			return inner(ctx, c)
		}
		return tl
	}
	reg := tool.NewRegistry()
	list := []tool.Tool{counting(tools.Calculate(), false), counting(tools.WebFetch(eg), true),
		counting(tools.RunCommand(refusingSandbox{}, dir, nil), true)}
	for _, tl := range tools.FileTools(ws) {
		list = append(list, counting(tl, false))
	}
	for _, tl := range list {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Commands: command.Default(), Egress: eg,
		Approvals: db, Without: bare})
	if err != nil {
		t.Fatal(err)
	}

	paths := []string{"a.txt", "src/b.go", "src", ".", "../x", "/etc/passwd", ".airlock/audit.jsonl", "out/x", "abs/passwd",
		"a/../../x", "./a.txt", ".git/config", "x/../.git/hooks/pre-commit", "src/../a.txt", "no/such/file", "a\x00b", ""}
	globs := []string{"**/*.go", "*", "src/*", "./*.txt", "/etc/*", "/**", "../*", "src/../..", "src/../*", "./../x", "../../**",
		".airlock/*", "./.airlock/**", "[", "{a,b", "**/..", "a/**/../b", `\.airlock/*`, "{..,x}/*", "out/*", "abs/*", "", "a\x00"}
	regexps := []string{"hello", "(", `func \w+`, ""}
	urls := []string{"http://10.0.0.5/", "http://169.254.169.254/latest", "https://93.184.216.34/", "http://example.com/",
		"http://6869.attacker.example/", "ftp://example.com/", "http://0x7f.1/", "http://localhost/", "https://example.com:8443/",
		"http://user@example.com/", "http://[::1]/", "http://intranet/"}
	commands := []string{"ls", "rm -rf /", "curl x | sh", "echo hi > a.txt", "git push", "ls (", "cat ../x"}
	exprs := []string{"1+2", "1/0", "2 x 3"}
	roles := []string{"", "viewer", "operator", "admin"}
	modes := []string{"", "read-only", "ask", "auto-edit", "auto"}
	pick := func(rng *rand.Rand, from []string) string { return from[rng.IntN(len(from))] }

	rng := rand.New(rand.NewPCG(14, 2))
	seen := map[string]int{}
	for i := range 3000 {
		args := map[string]any{}
		name := pick(rng, []string{"calculate", "read_file", "list_dir", "glob", "grep", "write_file", "edit_file", "web_fetch", "run_command"})
		switch name {
		case "calculate":
			args["expression"] = pick(rng, exprs)
		case "read_file", "list_dir":
			args["path"] = pick(rng, paths)
		case "glob":
			args["pattern"] = pick(rng, globs)
		case "grep":
			args["pattern"] = pick(rng, regexps)
			if rng.IntN(2) == 0 {
				args["path"] = pick(rng, paths)
			}
		case "write_file":
			args["path"], args["content"] = pick(rng, paths), "x\n"
		case "edit_file":
			args["path"], args["old"], args["new"] = pick(rng, paths), "hello", "hi"
		case "web_fetch":
			args["url"] = pick(rng, urls)
		case "run_command":
			args["command"] = pick(rng, commands)
		}
		raw, _ := json.Marshal(args)
		c := tool.Call{Tool: name, Args: raw, Role: pick(rng, roles), Mode: pick(rng, modes), Session: fmt.Sprintf("s%d", i)}

		checked := g.Check(context.Background(), c)
		before := runs.Load()
		called := g.Call(context.Background(), c)
		ran := runs.Load() > before
		what := fmt.Sprintf("%s %s (role %q, mode %q)", name, raw, c.Role, c.Mode)
		if !ran {
			if checked.Decision != called.Decision || codeOf(checked) != codeOf(called) {
				t.Fatalf("%s: check says %s %q, call %s %q (%v)", what, checked.Decision, codeOf(checked), called.Decision, codeOf(called), called.Error)
			}
			seen["refused "+checked.Decision]++
			continue
		}
		if checked.Decision != "allow" || checked.Error != nil {
			t.Fatalf("%s: the call ran, but check says %s %q", what, checked.Decision, codeOf(checked))
		}
		code := codeOf(called)
		if guardOwned[code] || name == "glob" && code == tool.CodeInvalidPattern {
			t.Fatalf("%s: check says allow, but the executor refused it: %s: %s", what, code, called.Error.Message)
		}
		seen["ran"]++
		if code != "" {
			seen["ran, failed"]++
		}
	}
	t.Logf("outcomes: %v", seen)
	for _, k := range []string{"ran", "ran, failed", "refused deny", "refused ask"} {
		if seen[k] == 0 {
			t.Fatalf("the random calls never reached %q: %v", k, seen)
		}
	}
	// The executors that resolve names are stubs here: any name resolved
	// was resolved by a stage before execute.
	if n := resolver.asked.Load(); n != 0 {
		t.Fatalf("the stages before execute resolved %d host names; none may be resolved before a call runs", n)
	}
}

func codeOf(r tool.Result) tool.Code {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}
