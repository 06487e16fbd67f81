package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentTimeout bounds one headless agent run: start, MCP start-up, a few
// model turns against the scripted model, exit. A run takes seconds; the
// bound is for a loaded two-core machine.
const agentTimeout = 2 * time.Minute

// killGrace is how long an agent's process group has after SIGTERM
// before SIGKILL.
const killGrace = 5 * time.Second

// door is how the agent reaches airlock: the stdio door (the agent starts
// `airlock mcp`) or the Streamable HTTP door (a running `airlock serve`).
type door struct {
	name string
	// command and args start `airlock mcp` (stdio).
	command string
	args    []string
	// url is `airlock serve`'s /mcp and tokenEnv the variable that holds
	// its bearer token (http).
	url, tokenEnv string
}

// agentRun is one headless run of an agent.
type agentRun struct {
	home      string // HOME, with the XDG directories under it
	workspace string
	model     *scriptedModel
	door      door
	prompt    string
	env       []string // more variables, e.g. the token
	// answer, when set, is a command the agent runs to answer an MCP
	// server's question (elicitation) in the person's stead; only an
	// agent with such a setting (answers) takes it.
	answer string
}

// agent is a coding agent driven headless.
type agent struct {
	name string
	// configure writes the agent's configuration for run under run.home
	// and returns the command line and the agent's own variables.
	configure func(t *testing.T, bin string, run *agentRun) (args, env []string)
	bin       string
	// answers says the agent has a setting that answers an MCP server's
	// question headless (Claude Code's Elicitation hook); without one,
	// it declines every question (codex exec).
	answers bool
}

// isolatedEnv is the environment every agent and airlock process of a run
// gets: its own home and XDG directories, no proxy, no colour, and
// nothing of the caller's beyond PATH.
func isolatedEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"USER=airlock-e2e",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"NO_COLOR=1",
		"TERM=dumb",
	}
}

// newHome makes a home directory with its XDG and temporary directories.
func newHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for _, d := range []string{".config", ".cache", ".local/share", ".local/state", "tmp"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// runAgent runs the agent once, bounded by agentTimeout, in its own
// process group, and returns its output (stdout, then stderr).
func runAgent(t *testing.T, a agent, run *agentRun) (string, error) {
	t.Helper()
	args, env := a.configure(t, a.bin, run)
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.bin, args...)
	cmd.Dir = run.workspace
	cmd.Env = append(append(isolatedEnv(run.home), env...), run.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = killGrace
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	// The agent's children (airlock mcp) go with it, whatever it did.
	killGroup(cmd.Process.Pid)
	out := stdout.String() + "\n--- stderr ---\n" + stderr.String()
	t.Logf("%s ran %.1fs", a.name, time.Since(start).Seconds())
	if ctx.Err() != nil {
		return out, fmt.Errorf("%s did not finish within agentTimeout (%v)", a.name, agentTimeout)
	}
	return out, err
}

// killGroup ends a process group: SIGTERM, then SIGKILL after killGrace.
func killGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		return err
	}
	go func() {
		time.Sleep(killGrace)
		syscall.Kill(-pgid, syscall.SIGKILL)
	}()
	return nil
}

// --- Claude Code ---

// claudeModel is the model Claude Code is told to use; the scripted model
// answers to any name.
const claudeModel = "claude-sonnet-4-5"

// claudeMCPConfig is the --mcp-config JSON for the door: what README.md
// shows under "Add airlock to a client".
func claudeMCPConfig(d door) ([]byte, error) {
	server := map[string]any{"type": "stdio", "command": d.command, "args": d.args}
	if d.url != "" {
		server = map[string]any{"type": "http", "url": d.url,
			"headers": map[string]string{"Authorization": "Bearer ${" + d.tokenEnv + "}"}}
	}
	return json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"airlock": server}}, "", "  ")
}

func configureClaude(t *testing.T, bin string, run *agentRun) (args, env []string) {
	t.Helper()
	cfg, err := claudeMCPConfig(run.door)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(run.home, "airlock-mcp.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	args = []string{"-p", run.prompt,
		"--mcp-config", path, "--strict-mcp-config",
		// Claude Code asks its own permission for each MCP tool, which
		// nobody answers in -p: airlock's tools are allowed, so that
		// airlock's gate alone decides.
		"--allowedTools", "mcp__airlock",
		// No built-in tools: the scripted model calls only airlock's.
		"--tools", "",
		"--model", claudeModel,
		"--output-format", "stream-json", "--verbose",
		"--no-session-persistence",
	}
	if run.answer != "" {
		// The Elicitation hook answers airlock's question in -p, where
		// nobody can: without it, Claude Code cancels the question.
		settings, err := json.Marshal(map[string]any{"hooks": map[string]any{"Elicitation": []any{map[string]any{
			"matcher": "airlock",
			"hooks":   []any{map[string]any{"type": "command", "command": run.answer}},
		}}}})
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--settings", string(settings))
	}
	if dbg := os.Getenv(envDebug); dbg != "" {
		args = append(args, "--debug-file", filepath.Join(dbg, debugName(t)+"-claude.log"))
	}
	env = []string{
		"CLAUDE_CONFIG_DIR=" + filepath.Join(run.home, ".claude"),
		"ANTHROPIC_BASE_URL=" + run.model.URL,
		"ANTHROPIC_API_KEY=scripted-model-key",
		// No telemetry, error reports, update checks or other traffic
		// beyond the model API.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_NON_ESSENTIAL_MODEL_CALLS=1",
		"CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1",
		// The MCP server's start-up and each tool call are bounded well
		// inside agentTimeout.
		"MCP_TIMEOUT=30000",
		"MCP_TOOL_TIMEOUT=60000",
	}
	return args, env
}

// --- Codex ---

// codexConfig is the config.toml for the door: the [mcp_servers.airlock]
// table is what README.md shows under "Add airlock to a client"; the
// rest points Codex at the scripted model and turns off its own traffic.
func codexConfig(d door, modelURL string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `model = "scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

# Off: each reaches a service of its own on start-up (the curated plugins'
# git repository, ChatGPT's apps), and the shell snapshot runs a login
# shell for Codex's own shell tool, which these runs never call.
[features]
plugins = false
remote_plugin = false
apps = false
shell_snapshot = false

[model_providers.scripted]
name = "scripted model"
base_url = %s
wire_api = "responses"
env_key = "SCRIPTED_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0

`, strconv.Quote(modelURL+"/v1"))
	b.WriteString("[mcp_servers.airlock]\n")
	if d.url != "" {
		fmt.Fprintf(&b, "url = %s\nbearer_token_env_var = %s\n", strconv.Quote(d.url), strconv.Quote(d.tokenEnv))
	} else {
		quoted := make([]string, len(d.args))
		for i, a := range d.args {
			quoted[i] = strconv.Quote(a)
		}
		fmt.Fprintf(&b, "command = %s\nargs = [%s]\n", strconv.Quote(d.command), strings.Join(quoted, ", "))
	}
	b.WriteString("required = true\ndefault_tools_approval_mode = \"approve\"\n")
	return b.String()
}

func configureCodex(t *testing.T, bin string, run *agentRun) (args, env []string) {
	t.Helper()
	codexHome := filepath.Join(run.home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(codexConfig(run.door, run.model.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	args = []string{"exec", "--json", "--skip-git-repo-check", "--ephemeral", "--strict-config",
		"-C", run.workspace, run.prompt}
	env = []string{
		"CODEX_HOME=" + codexHome,
		"SCRIPTED_MODEL_KEY=scripted-model-key",
		"RUST_LOG=warn",
	}
	return args, env
}
