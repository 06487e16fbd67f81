// Package clients_test drives airlock's MCP server with real coding
// agents, headless: Claude Code (`claude -p`) and the Codex CLI (`codex
// exec`), each with airlock configured as an MCP server through both doors
// (`airlock mcp` over stdio, `airlock serve` over Streamable HTTP at /mcp),
// against a scripted model server on loopback (model_test.go) that makes
// the agent call airlock's tools. Each check reads what really happened:
// the temporary workspace's files, airlock's audit log and approvals, and
// the tool results the agent sent back to the model.
//
// The agents are npm packages pinned in package-lock.json; setup.sh
// installs them (test.sh runs it). Without them the test fails under
// CI=true and is skipped otherwise, naming setup.sh.
//
// Isolation: TestMain builds airlock once, then runs the tests again in a
// network namespace of their own whose only interface is loopback, so that
// no agent can reach anything but the scripted model and airlock; each run
// has its own home, XDG, Codex and Claude directories; telemetry, error
// reports and update checks are off by each agent's own settings as well.
//
// By hand: go test -count=1 -v ./e2e/clients/ (needs root, or unprivileged
// user namespaces, for the network namespace). go test cannot see that
// airlock's sources changed, since only the build reads them: use -count=1.
package clients_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of the steps around the agents, generous on a loaded two-core
// machine.
const (
	buildTimeout   = 5 * time.Minute
	serveTimeout   = 20 * time.Second // airlock serve answering /healthz
	commandTimeout = 30 * time.Second // one airlock CLI command (approve, approvals)
)

// Variables TestMain hands to the tests it runs in the network namespace.
const (
	envInNetns = "AIRLOCK_CLIENTS_NETNS" // set inside the namespace
	envBinDir  = "AIRLOCK_CLIENTS_BIN"   // where airlock was built
)

// The agents' binaries under node_modules, as the npm packages ship them:
// each package's native build sits in an optional dependency for the
// platform, and runs without the packages' install scripts.
var (
	claudeBin = filepath.Join("node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
	codexBin  = filepath.Join("node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
)

func TestMain(m *testing.M) {
	if os.Getenv(envInNetns) != "" {
		if err := loopbackOnly(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e/clients: in the test's network namespace: %v\n", err)
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	os.Exit(outside())
}

// outside builds airlock (the Go toolchain may need the network for
// modules) and runs this test binary again, with the same arguments, in a
// new network namespace.
func outside() int {
	dir, err := os.MkdirTemp("", "airlock-clients-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if agentsInstalled() {
		if err := buildAirlock(dir); err != nil {
			fmt.Fprintf(os.Stderr, "e2e/clients: %v\n", err)
			return 1
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envInNetns+"=1", envBinDir+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		// Without root, a user namespace of our own, mapping us to its
		// root, lets us make the network namespace.
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintf(os.Stderr, "e2e/clients: running the tests in a network namespace of their own failed (%v); they need root or unprivileged user namespaces\n", err)
		return 1
	}
	return 0
}

// buildAirlock builds the airlock CLI and its sandbox helper, static, into
// dir.
func buildAirlock(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "../../cmd/airlock", "../../cmd/airlock-sandbox-init")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/airlock ./cmd/airlock-sandbox-init: %v\n%s", err, out)
	}
	return nil
}

// loopbackOnly brings up the namespace's loopback interface and checks
// that it is the only one.
func loopbackOnly() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifaces {
		if i.Name != "lo" {
			return fmt.Errorf("interface %s is here besides lo", i.Name)
		}
	}
	return nil
}

func agentsInstalled() bool {
	for _, bin := range []string{claudeBin, codexBin} {
		if _, err := os.Stat(bin); err != nil {
			return false
		}
	}
	return true
}

// agents returns the two agents, or fails (CI=true) or skips the test
// when setup.sh has not installed them.
func agents(t *testing.T) []agent {
	t.Helper()
	if !agentsInstalled() {
		msg := "the agents are not installed: run bash e2e/clients/setup.sh (npm ci of e2e/clients/package-lock.json)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var list []agent
	for _, a := range []agent{
		{name: "claude", bin: claudeBin, configure: configureClaude, answers: true},
		{name: "codex", bin: codexBin, configure: configureCodex},
	} {
		abs, err := filepath.Abs(a.bin)
		if err != nil {
			t.Fatal(err)
		}
		a.bin = abs
		list = append(list, a)
	}
	return list
}

// airlockBin returns the airlock binary TestMain built.
func airlockBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(os.Getenv(envBinDir), "airlock")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("airlock was not built (%v)", err)
	}
	return bin
}

// scenario is one thing an agent does through airlock, and the check of
// what actually happened.
type scenario struct {
	name string
	// steps is the scripted model's script for the run r.
	steps func(t *testing.T, r *run) []step
	// check reads the outcome: the workspace, airlock's audit log and
	// approvals, the tool results the model got.
	check func(t *testing.T, r *run)
	// answers says the scenario needs an agent that can answer airlock's
	// question headless (agent.answers).
	answers bool
	// hook gives an agent that can answer airlock's question headless its
	// answering hook (answerScript), which approves.
	hook bool
	// airlockArgs are more flags for the door (airlock mcp or serve).
	airlockArgs []string
}

// run is one agent's run through one door in one scenario.
type run struct {
	agent     agent
	door      door
	airlock   string // the binary
	home      string
	workspace string
	env       []string // isolatedEnv(home) plus the token, for airlock's CLI
	model     *scriptedModel
	secret    string // in notes.txt, for the read
	// question is where the answering hook, when installed, keeps the
	// question it got.
	question string
}

// airlockCLI runs one airlock command on the run's workspace, as the
// person at the machine would, with the agent's home (and so the same
// approval key), and returns its standard output.
func (r *run) airlockCLI(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.airlock, append(args, "--workspace", r.workspace)...)
	cmd.Env = r.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("airlock %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out), nil
}

// auditRecord is the part of one entry of .airlock/audit.jsonl the
// checks read.
type auditRecord struct {
	Tool     string `json:"tool"`
	Decision string `json:"decision"`
	Code     string `json:"code"`
	Session  string `json:"session"`
	Stages   []struct {
		Name     string `json:"name"`
		Decision string `json:"decision"`
		Code     string `json:"code"`
	} `json:"stages"`
}

// audit reads the workspace's audit log.
func (r *run) audit(t *testing.T) []auditRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(r.workspace, ".airlock", "audit.jsonl"))
	if err != nil {
		t.Fatalf("airlock's audit log: %v", err)
	}
	defer f.Close()
	var recs []auditRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Entry auditRecord `json:"entry"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		recs = append(recs, line.Entry)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// result returns the result the model got for step i, failing the test
// when the agent sent none.
func (r *run) result(t *testing.T, i int) toolResult {
	t.Helper()
	res, ok := r.model.Result(i)
	if !ok {
		t.Fatalf("the model got no result for call %d", i)
	}
	return res
}

const (
	notesFile  = "notes.txt"
	outFile    = "out.txt"
	outContent = "written through airlock\n"
)

var writeArgs = fmt.Sprintf(`{"path":%q,"content":%q}`, outFile, outContent)

var scenarios = []scenario{
	{
		name: "read",
		steps: func(t *testing.T, r *run) []step {
			return []step{{Tool: "read_file", Args: `{"path":"notes.txt"}`}}
		},
		check: func(t *testing.T, r *run) {
			if res := r.result(t, 0); !strings.Contains(res.Text, r.secret) {
				t.Errorf("the model got %q; want the content of notes.txt, %q", res.Text, r.secret)
			}
			if recs := r.audit(t); !hasRecord(recs, "read_file", "allow", "") {
				t.Errorf("the audit log has no allowed read_file: %+v", recs)
			}
		},
	},
	{
		name: "refusal",
		steps: func(t *testing.T, r *run) []step {
			return []step{{Tool: "read_file", Args: `{"path":"../etc/passwd"}`}}
		},
		check: func(t *testing.T, r *run) {
			res := r.result(t, 0)
			// Claude Code gives its model the result's text, Codex its
			// structured content as JSON: both hold the code, the hint
			// and the argument at fault.
			for _, want := range []string{"invalid_arguments", "Fix every listed argument and call again", "/path"} {
				if !strings.Contains(res.Text, want) {
					t.Errorf("the model got %q; want it to hold %q", res.Text, want)
				}
			}
			if strings.Contains(res.Text, "root:") {
				t.Errorf("the model got /etc/passwd: %q", res.Text)
			}
			if recs := r.audit(t); !hasRecord(recs, "read_file", "deny", "invalid_arguments") {
				t.Errorf("the audit log has no refused read_file: %+v", recs)
			}
		},
	},
	{
		// In mode ask, write_file needs a person's approval. Neither agent
		// gives one headless (codex exec declines airlock's question,
		// claude -p cancels it): the file must not be written, the model
		// must learn that the approval was refused, and a refusal is
		// final.
		name: "approval-declined",
		steps: func(t *testing.T, r *run) []step {
			return []step{{Tool: "write_file", Args: writeArgs}}
		},
		check: func(t *testing.T, r *run) {
			if _, err := os.Lstat(filepath.Join(r.workspace, outFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s after a declined approval: %v; want it absent", outFile, err)
			}
			if recs := r.audit(t); hasRecord(recs, "write_file", "allow", "") {
				t.Errorf("the audit log has an allowed write_file: %+v", recs)
			}
			if res := r.result(t, 0); !strings.Contains(res.Text, "approval_denied") {
				t.Errorf("the model got %q; want code approval_denied", res.Text)
			}
			// Refused means decided: nothing is left for `airlock
			// approve` to turn into a yes later.
			if pending, err := r.pending(); err != nil || len(pending) != 0 {
				t.Errorf("airlock approvals after the refusal lists %q (%v); want nothing pending", pending, err)
			}
		},
	},
	{
		// A person approves the write when asked, and it runs: Claude
		// Code's Elicitation hook answers airlock's question for the
		// person (answerScript), through either door.
		name:    "approval-granted",
		answers: true,
		hook:    true,
		steps: func(t *testing.T, r *run) []step {
			return []step{{Tool: "write_file", Args: writeArgs}}
		},
		check: func(t *testing.T, r *run) {
			checkWritten(t, r, r.result(t, 0))
			question, err := os.ReadFile(r.question)
			if err != nil {
				t.Fatalf("nobody was asked: %v", err)
			}
			for _, want := range []string{"write_file", outFile} {
				if !strings.Contains(string(question), want) {
					t.Errorf("the question the person got, %s, does not name %q", question, want)
				}
			}
		},
	},
	{
		// With --approvals out-of-band airlock never asks the client,
		// even one whose hook would approve: the write parks as
		// approval_required, the test approves it with `airlock approve
		// ID` before the model's next turn, as the person at the terminal
		// would, and the model's repeat call runs. This is how a headless
		// Codex gets a write approved.
		name:        "approval-granted-out-of-band",
		hook:        true,
		airlockArgs: []string{"--approvals", "out-of-band"},
		steps: func(t *testing.T, r *run) []step {
			return []step{
				{Tool: "write_file", Args: writeArgs},
				{Tool: "write_file", Args: writeArgs, Before: func(results []toolResult) error {
					first := results[len(results)-1].Text
					id := approvalID(first)
					if !strings.Contains(first, "approval_required") || id == "" {
						return fmt.Errorf("the write's result is not approval_required naming a pending approval: %q", first)
					}
					if _, err := os.Lstat(filepath.Join(r.workspace, outFile)); !errors.Is(err, os.ErrNotExist) {
						return fmt.Errorf("%s before the approval: %v; want it absent", outFile, err)
					}
					if pending, err := r.pending(); err != nil || len(pending) != 1 || pending[0] != id {
						return fmt.Errorf("airlock approvals lists %q (%v); want the parked write's approval %s alone", pending, err, id)
					}
					_, err := r.airlockCLI("approve", id)
					return err
				}},
			}
		},
		check: func(t *testing.T, r *run) {
			if first := r.result(t, 0); !strings.Contains(first.Text, "approval_required") {
				t.Errorf("the first write: the model got %q; want approval_required", first.Text)
			}
			checkWritten(t, r, r.result(t, 1))
			if r.question != "" {
				if q, err := os.ReadFile(r.question); err == nil {
					t.Errorf("airlock asked the client under --approvals out-of-band: %s", q)
				}
			}
		},
	},
}

// checkWritten checks an approved write: the file holds what the model
// wrote, the audit log has the write that ran, the model got its result
// and no approval is left pending.
func checkWritten(t *testing.T, r *run, last toolResult) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(r.workspace, outFile))
	if err != nil || string(got) != outContent {
		t.Errorf("%s after the approval: %q, %v; want %q", outFile, got, err, outContent)
	}
	if recs := r.audit(t); !hasRecord(recs, "write_file", "allow", "") {
		t.Errorf("the audit log has no write_file that ran: %+v", recs)
	}
	if strings.Contains(last.Text, "approval_") || strings.Contains(last.Text, "error") || !strings.Contains(last.Text, "wrote "+outFile) {
		t.Errorf("the approved write: the model got %q", last.Text)
	}
	if pending, err := r.pending(); err != nil || len(pending) != 0 {
		t.Errorf("airlock approvals after the write ran lists %q (%v); want nothing pending", pending, err)
	}
}

// pending returns the ids of the approvals `airlock approvals --json`
// lists as pending.
func (r *run) pending() ([]string, error) {
	out, err := r.airlockCLI("approvals", "--json")
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var a struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.ID == "" {
			return nil, fmt.Errorf("airlock approvals --json line %q: %v", line, err)
		}
		ids = append(ids, a.ID)
	}
	return ids, nil
}

// answerScript is the command Claude Code's Elicitation hook runs in the
// person's stead: it keeps the question it got (the hook's input, JSON on
// standard input) for the test, and accepts airlock's form with approve
// set.
const answerScript = `#!/bin/sh
cat >"$(dirname "$0")/question.json"
printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept","content":{"approve":true}}}'
`

// approvalIDPattern finds the approval's id in the text or the structured
// content of an approval_required result ("approval ID is pending"): the
// agents give their models one or the other.
var approvalIDPattern = regexp.MustCompile(`approval ([0-9a-f]{16,}) is pending`)

func approvalID(text string) string {
	if m := approvalIDPattern.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

func hasRecord(recs []auditRecord, tool, decision, code string) bool {
	for _, r := range recs {
		if r.Tool == tool && r.Decision == decision && (code == "" || r.Code == code) {
			return true
		}
	}
	return false
}

// offLoopback finds, in an agent's output, the traces of a connection it
// tried beyond loopback: the network namespace lets none through, and
// each agent's settings should have kept it from trying.
var offLoopback = regexp.MustCompile(`(?i).*(could not resolve host|dns error|failed to lookup address|ENOTFOUND|EAI_AGAIN|ENETUNREACH|network is unreachable).*`)

// TestAgents runs every scenario with every agent through both doors.
func TestAgents(t *testing.T) {
	list := agents(t)
	bin := airlockBin(t)
	start := time.Now()
	for _, a := range list {
		for _, doorName := range []string{"stdio", "http"} {
			for _, sc := range scenarios {
				t.Run(a.name+"/"+doorName+"/"+sc.name, func(t *testing.T) {
					if sc.answers && !a.answers {
						// Documented in README.md, "Add airlock to a client".
						t.Skipf("%s has no setting that answers an MCP server's question headless: it declines every one, and airlock takes that as the person's refusal (approval-granted-out-of-band is its way)", a.name)
					}
					runScenario(t, a, bin, doorName, sc)
				})
			}
		}
	}
	t.Logf("every agent run: %.1fs", time.Since(start).Seconds())
}

func runScenario(t *testing.T, a agent, bin, doorName string, sc scenario) {
	r := newRun(t, a, bin, doorName, sc.airlockArgs)
	r.model = startModel(t, sc.steps(t, r))
	run := &agentRun{home: r.home, workspace: r.workspace, model: r.model, door: r.door,
		prompt: "Use airlock's tools as the task needs, then say Done.", env: r.env[len(isolatedEnv(r.home)):]}
	if sc.hook && a.answers {
		dir := t.TempDir()
		run.answer = filepath.Join(dir, "answer.sh")
		r.question = filepath.Join(dir, "question.json")
		if err := os.WriteFile(run.answer, []byte(answerScript), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runAgent(t, a, run)
	defer func() {
		if dbg := os.Getenv(envDebug); dbg != "" {
			os.CopyFS(filepath.Join(dbg, debugName(t)+"-airlock"), os.DirFS(filepath.Join(r.workspace, ".airlock")))
		}
		if t.Failed() {
			t.Logf("%s\n%s output:\n%s", r.model.Report(), a.name, tail(out, 8000))
		}
	}()
	if err != nil {
		t.Errorf("%s: %v", a.name, err)
	}
	for _, p := range r.model.Problems() {
		t.Errorf("model server: %s", p)
	}
	for _, line := range offLoopback.FindAllString(out, -1) {
		t.Errorf("%s tried to reach beyond loopback: %s", a.name, line)
	}
	sc.check(t, r)
}

// envDebug names a directory where, when set, the test leaves what it
// saw: every request to the scripted model, Claude Code's debug log and a
// copy of each workspace's .airlock.
const envDebug = "AIRLOCK_CLIENTS_DEBUG"

// debugName is a test's name as a file name.
func debugName(t *testing.T) string { return strings.ReplaceAll(t.Name(), "/", "_") }

// newRun makes the run's home and workspace and, for the HTTP door,
// starts airlock serve on it.
func newRun(t *testing.T, a agent, bin, doorName string, airlockArgs []string) *run {
	t.Helper()
	r := &run{agent: a, airlock: bin, home: newHome(t), workspace: t.TempDir(), secret: "secret " + rand.Text()}
	r.env = isolatedEnv(r.home)
	if err := os.WriteFile(filepath.Join(r.workspace, notesFile), []byte(r.secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpArgs := append([]string{"--workspace", r.workspace, "--mode", "ask"}, airlockArgs...)
	switch doorName {
	case "stdio":
		r.door = door{name: doorName, command: bin, args: append([]string{"mcp"}, mcpArgs...)}
	case "http":
		token := rand.Text() + rand.Text()
		addr := serve(t, bin, append(r.env, "AIRLOCK_TOKENS="+token+"=operator"), mcpArgs)
		r.door = door{name: doorName, url: "http://" + addr + "/mcp", tokenEnv: "AIRLOCK_TOKEN"}
		r.env = append(r.env, "AIRLOCK_TOKEN="+token)
	}
	return r
}

// serve starts airlock serve on a free loopback port and returns its
// address once /healthz answers; it is stopped when the test ends.
func serve(t *testing.T, bin string, env, args []string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr}, args...)...)
	cmd.Env = env
	logFile, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(killGrace):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			log, _ := os.ReadFile(logFile.Name())
			t.Logf("airlock serve's log:\n%s", tail(string(log), 8000))
		}
		logFile.Close()
	})
	deadline := time.Now().Add(serveTimeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(logFile.Name())
	t.Fatalf("airlock serve did not answer /healthz within %v:\n%s", serveTimeout, log)
	return ""
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
