// Package aimock_test drives airlock's model package, through the official
// OpenAI and Anthropic SDKs, against @copilotkit/aimock: a mock server of
// both APIs written by others, so that our wire format is checked by
// something other than our own fake (model/modeltest). Its chaos flags
// inject 500s and 429s with Retry-After, which the chain must survive.
//
// The test runs setup.sh itself (a no-op once node_modules matches the
// lock file) and fails, naming setup.sh, when that cannot be done: a
// missing aimock is a failure, never a skip.
package aimock_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"airlock.dev/airlock/model"
)

// Bounds of each step, generous on a loaded two-core machine.
const (
	setupTimeout = 5 * time.Minute // npm ci on a fresh clone; a no-op otherwise
	startTimeout = 30 * time.Second
	callTimeout  = 30 * time.Second
)

// setup runs setup.sh and returns the Node 22 binary and aimock's CLI.
func setup(t *testing.T) (node, cli string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(dir, "setup.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("e2e/aimock/setup.sh failed (%v); it needs npm and the npm registry (install: apt-get install npm, then run bash e2e/aimock/setup.sh):\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	node = lines[len(lines)-1]
	cli = filepath.Join(dir, "node_modules", "@copilotkit", "aimock", "dist", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("aimock is not installed (%v): run bash e2e/aimock/setup.sh", err)
	}
	return node, cli
}

var listening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// start runs one aimock server on a free port with the fixtures and extra
// flags, and returns its URL. The server is killed when the test ends.
func start(t *testing.T, node, cli string, flags ...string) string {
	t.Helper()
	return startWith(t, node, cli, "fixtures/airlock.json", flags...)
}

// startWith is start with another fixture file.
func startWith(t *testing.T, node, cli, fixtures string, flags ...string) string {
	t.Helper()
	args := append([]string{cli, "-p", "0", "-h", "127.0.0.1", "-f", fixtures}, flags...)
	cmd := exec.Command(node, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting aimock: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group this test made
		cmd.Wait()
	})
	found := make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(startTimeout):
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("aimock did not say where it listens within %s; its output:\n%s", startTimeout, log.String())
	}
	return ""
}

func entry(t *testing.T, p model.Provider, base, name string) model.Entry {
	t.Helper()
	if p == model.ProviderOpenAI {
		base += "/v1"
	}
	e, err := model.New(model.Spec{Provider: p, Model: name, BaseURL: base}, &model.ClientOptions{APIKey: model.NewAPIKey("mock")})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func call(t *testing.T, c model.Client, req *model.Request) *model.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := c.Complete(ctx, req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

func TestAimock(t *testing.T) {
	node, cli := setup(t)
	url := start(t, node, cli)

	hello := &model.Request{Messages: []model.Message{model.System("Be brief."), model.User("hello")}}
	weather := &model.Request{
		Messages: []model.Message{model.User("What is the weather in Paris?")},
		Tools: []model.ToolDef{{
			Name: "get_weather", Description: "Current weather in a city",
			Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":100}},"required":["city"],"additionalProperties":false}`),
		}},
	}
	for _, p := range []model.Provider{model.ProviderOpenAI, model.ProviderAnthropic} {
		t.Run(string(p), func(t *testing.T) {
			e := entry(t, p, url, "mock-model")
			resp := call(t, e.Client, hello)
			if resp.Text != "Hello from aimock." || resp.StopReason != model.StopEnd || len(resp.ToolCalls) != 0 {
				t.Errorf("hello: got %+v", resp)
			}
			resp = call(t, e.Client, weather)
			if resp.StopReason != model.StopToolCalls || len(resp.ToolCalls) != 1 {
				t.Fatalf("weather: got %+v, want one tool call", resp)
			}
			tc := resp.ToolCalls[0]
			var args map[string]any
			if tc.Name != "get_weather" || tc.ID == "" || json.Unmarshal(tc.Args, &args) != nil || args["city"] != "Paris" {
				t.Errorf("weather: got call %+v with args %s", tc, tc.Args)
			}
			// A conversation that carries the call and its result back.
			follow := &model.Request{Messages: append(append([]model.Message{}, weather.Messages...),
				model.Message{Role: model.RoleAssistant, ToolCalls: resp.ToolCalls},
				model.ToolResult(tc.ID, "18 °C, clear", false),
				model.User("hello"))}
			if resp := call(t, e.Client, follow); resp.Text != "Hello from aimock." {
				t.Errorf("follow-up: got %+v", resp)
			}
		})
	}

	t.Run("chaos", func(t *testing.T) {
		// One server that always answers 500, one that always answers 429
		// with Retry-After, and a healthy one: the chain falls through
		// both to the healthy one, honouring the Retry-After it was sent.
		broken := start(t, node, cli, "--chaos-drop", "1")
		limited := start(t, node, cli, "--chaos-ratelimit", "1")
		var mu sync.Mutex
		var waits []time.Duration
		pol := &model.Policy{MaxAttempts: 2, Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return ctx.Err()
		}}
		a, b, c := entry(t, model.ProviderOpenAI, broken, "a"), entry(t, model.ProviderAnthropic, limited, "b"), entry(t, model.ProviderOpenAI, url, "c")
		chain, err := model.NewChain([]model.Entry{a, b, c}, &model.Options{Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		resp := call(t, chain, hello)
		if !resp.Success || resp.Text != "Hello from aimock." || resp.Badge.Model != c.Name || resp.Badge.Attempts != 5 {
			t.Fatalf("got %+v", resp)
		}
		fb := resp.Badge.Fallbacks
		if len(fb) != 2 || fb[0].Reason != model.CodeServerError || fb[1].Reason != model.CodeRateLimited {
			t.Errorf("fallbacks %+v", fb)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(waits) != 2 {
			t.Fatalf("waits %v, want one per model that was retried", waits)
		}
		if waits[0] < 0 || waits[0] >= pol.Envelope(0) {
			t.Errorf("the backoff after the 500 was %s, outside [0, %s)", waits[0], pol.Envelope(0))
		}
		t.Logf("waits: %v", waits)
		if waits[1] <= 0 || waits[1] > model.DefaultMaxRetryAfter || waits[1]%time.Second != 0 {
			t.Errorf("the wait after the 429 was %s, not the Retry-After aimock sent", waits[1])
		}
	})
}
