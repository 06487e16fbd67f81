package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/model/modeltest"
)

// jsonLines splits --json output into its lines, each decoded.
func jsonLines(t *testing.T, out string) []map[string]json.RawMessage {
	t.Helper()
	var lines []map[string]json.RawMessage
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestRunUnpricedCost: a model with no known price has an unknown cost,
// null in the summary and in each model event, and the summary names the
// model; it is not priced at a made-up rate. With --price the cost is
// exact.
func TestRunUnpricedCost(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Reply: func(int, []byte) modeltest.Reply {
		return modeltest.Reply{Text: "done", InputTokens: 100, OutputTokens: 20}
	}})
	defer srv.Close()
	spec := "openai:house-model@" + srv.BaseURL()
	ws := t.TempDir()

	code, out, errOut := runCLI(t, "run", "--workspace", ws, "--mode", "auto", "--json", "--model", spec, "say done")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	lines := jsonLines(t, out)
	sum := lines[len(lines)-1]
	if string(sum["cost_usd"]) != "null" || string(sum["unpriced_models"]) != `["house-model"]` {
		t.Errorf("summary %s: want cost_usd null and the model named", out)
	}
	if string(lines[0]["type"]) != `"model"` || string(lines[0]["cost_usd"]) != "null" {
		t.Errorf("first event %v: want a model event with cost_usd null", lines[0])
	}
	if srv.Count() != 1 {
		t.Errorf("%d requests, want 1", srv.Count())
	}

	code, _, errOut = runCLI(t, "run", "--workspace", ws, "--mode", "auto", "--model", spec, "say done")
	if code != exitOK || !strings.Contains(errOut, "cost unknown") || !strings.Contains(errOut, "--price house-model=") {
		t.Errorf("exit %d, stderr %q: want the unknown cost and the model to price", code, errOut)
	}

	// $1 and $2 per million tokens: 100*1 + 20*2 = 140 micro-dollars.
	code, out, errOut = runCLI(t, "run", "--workspace", ws, "--mode", "auto", "--json", "--model", spec, "--price", "house-model=1,2", "say done")
	lines = jsonLines(t, out)
	if sum := lines[len(lines)-1]; code != exitOK || string(sum["cost_usd"]) != "0.00014" || sum["unpriced_models"] != nil {
		t.Errorf("exit %d, summary %s %s: want cost_usd 0.00014", code, out, errOut)
	}
}

// TestResumeUsesCheckpointModels: a run parked on an approval resumes
// with the models and prices it started with, named in its checkpoint;
// no --model is needed again, and no API key is stored.
func TestResumeUsesCheckpointModels(t *testing.T) {
	const key = "sk-test-0123456789abcdefKEY"
	t.Setenv("OPENAI_API_KEY", key)
	srv := modeltest.NewOpenAI(modeltest.Config{Reply: func(_ int, body []byte) modeltest.Reply {
		if bytes.Contains(body, []byte("call_w")) { // the request carries the write's result
			return modeltest.Reply{Text: "written", InputTokens: 100, OutputTokens: 5}
		}
		return modeltest.Reply{Calls: []modeltest.Call{{ID: "call_w", Name: "write_file", Args: `{"path":"r.txt","content":"ok\n"}`}},
			InputTokens: 100, OutputTokens: 20}
	}})
	defer srv.Close()
	ws := t.TempDir()

	code, out, errOut := runCLI(t, "run", "--workspace", ws, "--mode", "ask", "--session", "s1", "--json",
		"--model", "openai:house-model@"+srv.BaseURL(), "--price", "house-model=1,2", "write the report")
	if code != exitRefused || !strings.Contains(out, `"reason":"waiting_approval"`) {
		t.Fatalf("run: exit %d: %s %s", code, out, errOut)
	}
	_, out, _ = runCLI(t, "approvals", "--workspace", ws, "--json")
	var pending struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &pending); err != nil || pending.ID == "" {
		t.Fatalf("approvals: %q", out)
	}
	if code, _, errOut := runCLI(t, "approve", "--workspace", ws, pending.ID); code != exitOK {
		t.Fatalf("approve: %s", errOut)
	}

	code, out, errOut = runCLI(t, "resume", "--workspace", ws, "--json", "s1")
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s %s", code, out, errOut)
	}
	lines := jsonLines(t, out)
	sum := lines[len(lines)-1]
	if string(sum["answer"]) != `"written"` || string(sum["cost_usd"]) == "null" {
		t.Errorf("summary %s: want the answer, at the run's prices", out)
	}
	if body, err := os.ReadFile(filepath.Join(ws, "r.txt")); err != nil || string(body) != "ok\n" {
		t.Errorf("r.txt = %q, %v", body, err)
	}
	if srv.Count() != 2 {
		t.Errorf("the model got %d requests, want 2", srv.Count())
	}
	// The store's files, its write-ahead log included.
	files, _ := filepath.Glob(filepath.Join(ws, ".airlock", "state.db*"))
	var state []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		state = append(state, b...)
	}
	if bytes.Contains(state, []byte(key)) || !bytes.Contains(state, []byte("openai:house-model@")) {
		t.Errorf("the store (%q) holds the API key, or not the model", files)
	}
}
