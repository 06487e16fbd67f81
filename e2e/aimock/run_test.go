package aimock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runTimeout bounds one airlock run against aimock.
const runTimeout = 2 * time.Minute

// buildAirlock builds the CLI once for the test.
func buildAirlock(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "airlock")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/airlock").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/airlock: %v\n%s", err, out)
	}
	return bin
}

type summary struct {
	Type      string `json:"type"`
	Success   bool   `json:"success"`
	Answer    string `json:"answer"`
	Model     string `json:"model"`
	Steps     int    `json:"steps"`
	Attempts  int    `json:"attempts"`
	Fallbacks int    `json:"fallbacks"`
	Tokens    int    `json:"tokens"`
	Reason    string `json:"reason"`
}

// airlockRun runs `airlock run --json` and returns its last line, the
// summary.
func airlockRun(t *testing.T, bin string, args ...string) summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	ws := t.TempDir()
	full := append([]string{"run", "--workspace", ws, "--mode", "auto", "--json"}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(),
		"OPENAI_API_KEY=mock", "ANTHROPIC_API_KEY=mock"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var s summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || s.Type != "summary" {
		t.Fatalf("airlock run printed no summary line (%v):\n%s\nstderr:\n%s", err, out, stderr.Bytes())
	}
	return s
}

// TestAirlockRun drives the whole CLI's agent loop against aimock: the
// mock proposes a calculate call, airlock runs it through the gate, and
// the mock answers once the tool result comes back, over both wire
// formats; with a broken primary, the fallback answers.
func TestAirlockRun(t *testing.T) {
	node, cli := setup(t)
	url := startWith(t, node, cli, "fixtures/agent.json")
	bin := buildAirlock(t)
	const task = "What is 12*(3+4)?"
	for _, spec := range []string{"openai:mock-model@" + url + "/v1", "anthropic:mock-model@" + url} {
		t.Run(strings.SplitN(spec, ":", 2)[0], func(t *testing.T) {
			s := airlockRun(t, bin, "--model", spec, task)
			if !s.Success || s.Reason != "finished" || s.Answer != "The answer is 84." || s.Steps != 2 || s.Model != spec {
				t.Errorf("summary = %+v", s)
			}
		})
	}
	t.Run("fallback", func(t *testing.T) {
		broken := startWith(t, node, cli, "fixtures/agent.json", "--chaos-drop", "1")
		primary := "openai:broken@" + broken + "/v1"
		backup := "anthropic:mock-model@" + url
		s := airlockRun(t, bin, "--model", primary, "--model", backup, task)
		if !s.Success || s.Answer != "The answer is 84." || s.Model != backup || s.Fallbacks < 1 || s.Attempts < 4 {
			t.Errorf("summary = %+v; want the backup's answer after the primary's retries", s)
		}
	})
	t.Run("degraded", func(t *testing.T) {
		broken := startWith(t, node, cli, "fixtures/agent.json", "--chaos-drop", "1")
		s := airlockRun(t, bin, "--model", "openai:broken@"+broken+"/v1", task)
		if s.Success || s.Reason != "degraded" || s.Answer == "" {
			t.Errorf("summary = %+v; want a degraded run with the safe answer", s)
		}
	})
}
